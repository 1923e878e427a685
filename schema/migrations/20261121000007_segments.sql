-- Segments: a filter evaluated on read (membership by filter is never stored) plus contacts
-- added explicitly. Retired, not deleted, so the name frees up.
CREATE TABLE segments (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name        text NOT NULL,
    filter      jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
CREATE INDEX segments_team_idx ON segments (team_id, id) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX segments_live_name_key ON segments (team_id, lower(name)) WHERE deleted_at IS NULL;

-- Explicit members; an erased contact leaves with its row.
CREATE TABLE segment_members (
    segment_id  uuid NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
    contact_id  uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (segment_id, contact_id)
);
CREATE INDEX segment_members_contact_idx ON segment_members (contact_id);
