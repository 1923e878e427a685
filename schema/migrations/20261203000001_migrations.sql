-- Migrations (#26): a team's audience moved in from Resend, Mailchimp or listmonk, through the
-- platform's API or its export file. A job reads the source a page at a time into chunks of
-- items in Herald's shape (each page and the cursor past it commit together, so a rerun resumes
-- there); the review is worked out from the chunks; once started, the job applies the chunks
-- in order, each batch and the count of chunks applied committing together.

CREATE TABLE migrations (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    source          text NOT NULL CONSTRAINT migrations_source_check CHECK (source IN ('resend', 'mailchimp', 'listmonk')),
    mode            text NOT NULL CONSTRAINT migrations_mode_check CHECK (mode IN ('api', 'file')),
    status          text NOT NULL DEFAULT 'connecting'
                    CONSTRAINT migrations_status_check CHECK (status IN ('connecting', 'review', 'running', 'completed', 'failed', 'canceled')),
    -- The platform's credentials, sealed under HERALD_SECRET_KEY; erased once read.
    credentials     bytea,
    -- Where the read of the source stands (the platform's cursor), and what it found besides
    -- contacts: properties, topics, segments, templates, domains.
    cursor          jsonb NOT NULL DEFAULT '{}',
    found           jsonb NOT NULL DEFAULT '{}',
    chunks_read     integer NOT NULL DEFAULT 0,
    chunks_applied  integer NOT NULL DEFAULT 0,
    review          jsonb,
    total           bigint NOT NULL DEFAULT 0,
    created         bigint NOT NULL DEFAULT 0,
    updated         bigint NOT NULL DEFAULT 0,
    suppressed      bigint NOT NULL DEFAULT 0,
    failed          bigint NOT NULL DEFAULT 0,
    failures        jsonb NOT NULL DEFAULT '[]',
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    started_at      timestamptz,
    completed_at    timestamptz
);
CREATE INDEX migrations_team_idx ON migrations (team_id, id DESC);

-- An uploaded export file, kept until the migration ends.
CREATE TABLE migration_files (
    migration_id    uuid PRIMARY KEY REFERENCES migrations (id) ON DELETE CASCADE,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    data            bytea NOT NULL
);

-- Items read from the source, in Herald's shape, in the order read; dropped when it ends.
CREATE TABLE migration_chunks (
    migration_id    uuid NOT NULL REFERENCES migrations (id) ON DELETE CASCADE,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    seq             integer NOT NULL,
    items           jsonb NOT NULL,
    PRIMARY KEY (migration_id, seq)
);

-- The failed records an import or a migration keeps: the first `cap`, later ones dropped.
CREATE FUNCTION append_capped(kept jsonb, more jsonb, cap bigint) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_array_length(kept) >= cap THEN kept
                ELSE (SELECT COALESCE(jsonb_agg(f), '[]') FROM (SELECT f FROM jsonb_array_elements(kept || more) AS f LIMIT cap) AS k) END
$$;

-- A topic choice rechecks only the contacts whose flag it could change: an opt-in where the
-- contact is not billable, an opt-out where it is (or the flag is not known). A bulk write that
-- sets the flag right from the start (a migration) then costs no recheck per contact.
CREATE OR REPLACE FUNCTION contact_topics_recheck() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM contacts_recheck_billable(ARRAY(SELECT contact_id FROM old_rows));
    ELSE
        PERFORM contacts_recheck_billable(ARRAY(
            SELECT n.contact_id FROM new_rows n JOIN contacts c ON c.id = n.contact_id
            WHERE c.billable IS DISTINCT FROM (n.subscription = 'opt_in')));
    END IF;
    RETURN NULL;
END $$;
