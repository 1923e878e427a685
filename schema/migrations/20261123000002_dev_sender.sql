-- The development sender: while HERALD_ENV=development every team has the domain
-- `dev.herald.localhost`, verified without DNS (the name is under the reserved `.localhost`, never
-- published, never checked, and refused to `POST /domains`). Its mail never leaves the machine:
-- the deliver job signs it and keeps it here, shown at `GET /outbox`.
ALTER TABLE domains ADD COLUMN development boolean NOT NULL DEFAULT false;

CREATE TABLE dev_outbox (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    email_id    uuid NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
    recipient   text NOT NULL,
    -- The message as it would have gone out: DKIM-signed, CRLF line endings.
    message     bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dev_outbox_created_at_idx ON dev_outbox (created_at DESC);
CREATE INDEX dev_outbox_email_id_idx ON dev_outbox (email_id);
