-- Exports (#26): a team's contacts or suppressions as CSV, written by a job a page at a time
-- into chunks (a rerun resumes after the last page committed) and downloaded through a signed
-- link. Kept for seven days.

CREATE TABLE exports (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    kind            text NOT NULL CONSTRAINT exports_kind_check CHECK (kind IN ('contacts', 'suppressions')),
    status          text NOT NULL DEFAULT 'queued'
                    CONSTRAINT exports_status_check CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    -- The header row, fixed by the first page (the team's properties and topics then).
    columns         text[],
    -- The last row written (its id): the next page starts after it.
    cursor          uuid,
    rows            bigint NOT NULL DEFAULT 0,
    bytes           bigint NOT NULL DEFAULT 0,
    chunks          integer NOT NULL DEFAULT 0,
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz
);
CREATE INDEX exports_team_idx ON exports (team_id, id DESC);
CREATE INDEX exports_created_idx ON exports (created_at);

CREATE TABLE export_chunks (
    export_id   uuid NOT NULL REFERENCES exports (id) ON DELETE CASCADE,
    seq         integer NOT NULL,
    data        bytea NOT NULL,
    PRIMARY KEY (export_id, seq)
);
