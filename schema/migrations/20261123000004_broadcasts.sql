-- Broadcasts (#10): one message to a segment, fanned out into ordinary emails.

-- Operator switches that hold for every team (`herald marketing pause|resume`).
CREATE TABLE platform_switches (
    name        text PRIMARY KEY,
    enabled     boolean NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE broadcasts (
    id             uuid PRIMARY KEY,
    team_id        uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name           text,
    segment_id     uuid,
    topic_id       uuid,
    template_id    uuid,
    from_header    text NOT NULL,
    subject        text NOT NULL,
    reply_to       text[] NOT NULL DEFAULT '{}',
    html           text,
    text           text,
    preview_text   text,
    status         text NOT NULL DEFAULT 'draft'
                   CONSTRAINT broadcasts_status_check CHECK (status IN ('draft', 'scheduled', 'queued', 'sending', 'sent', 'canceled', 'failed')),
    scheduled_at   timestamptz,
    sent_at        timestamptz,
    failed_reason  text,
    -- The template version a send rendered from.
    template_version integer,
    -- Fan-out progress: the last contact id resolved (contacts are paged by id).
    cursor         uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    deleted_at     timestamptz
);
CREATE INDEX broadcasts_team_idx ON broadcasts (team_id, id) WHERE deleted_at IS NULL;

-- Every contact a send resolved: included (with its email) or excluded (with the reason).
CREATE TABLE broadcast_recipients (
    broadcast_id     uuid NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
    contact_id       uuid NOT NULL,
    email            text NOT NULL,
    email_id         uuid,
    -- `unsubscribed`, `topic_opt_out` or `suppressed`; null when the contact was sent to.
    excluded_reason  text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (broadcast_id, contact_id)
);

ALTER TABLE emails ADD COLUMN broadcast_id uuid;
CREATE INDEX emails_broadcast_idx ON emails (broadcast_id) WHERE broadcast_id IS NOT NULL;

-- The marketing meter: broadcast emails a team may create in a calendar month (UTC); null is
-- no meter.
ALTER TABLE plans ADD COLUMN marketing_monthly integer;
UPDATE plans SET marketing_monthly = CASE code WHEN 'free' THEN 2000 WHEN 'pro' THEN 250000 ELSE NULL END;
