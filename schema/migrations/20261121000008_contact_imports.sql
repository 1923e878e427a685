-- CSV imports of contacts: the upload is kept until seven days after completion; counts stay.
CREATE TABLE contact_imports (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    status          text NOT NULL DEFAULT 'queued'
                    CONSTRAINT contact_imports_status_check CHECK (status IN ('queued', 'in_progress', 'completed', 'failed')),
    on_conflict     text NOT NULL CONSTRAINT contact_imports_on_conflict_check CHECK (on_conflict IN ('skip', 'upsert')),
    -- { email, first_name, last_name, unsubscribed, properties: { key: { column, type } } }
    column_map      jsonb NOT NULL,
    segment_ids     uuid[] NOT NULL DEFAULT '{}',
    -- [{ id, subscription }]
    topics          jsonb NOT NULL DEFAULT '[]',
    file_size       bigint NOT NULL,
    -- Data rows already processed: a resumed job starts after them.
    rows_done       bigint NOT NULL DEFAULT 0,
    total           bigint NOT NULL DEFAULT 0,
    created         bigint NOT NULL DEFAULT 0,
    updated         bigint NOT NULL DEFAULT 0,
    skipped         bigint NOT NULL DEFAULT 0,
    failed          bigint NOT NULL DEFAULT 0,
    -- The first 1,000 failed rows: [{ row, email, reason, message }].
    failures        jsonb NOT NULL DEFAULT '[]',
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz
);
CREATE INDEX contact_imports_team_idx ON contact_imports (team_id, id);
CREATE INDEX contact_imports_team_status_idx ON contact_imports (team_id, status, id);

CREATE TABLE contact_import_files (
    import_id       uuid PRIMARY KEY REFERENCES contact_imports (id) ON DELETE CASCADE,
    data            bytea NOT NULL
);
