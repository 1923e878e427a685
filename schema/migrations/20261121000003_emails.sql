-- Transactional sending: emails, their recipients and attachments, share links, suppressions,
-- the per-team usage counters quotas read, and each email's event timeline.

CREATE TABLE emails (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    api_key_id      uuid,
    domain_id       uuid REFERENCES domains (id) ON DELETE SET NULL,
    -- `from` as sent (`Name <address>` or an address) and its bare, lower-case address.
    from_header     text NOT NULL,
    from_email      text NOT NULL,
    subject         text NOT NULL,
    html            text,
    text            text,
    reply_to        text[] NOT NULL DEFAULT '{}',
    headers         jsonb NOT NULL DEFAULT '{}'::jsonb,
    tags            jsonb NOT NULL DEFAULT '{}'::jsonb,
    message_id      text NOT NULL,
    last_event      text NOT NULL
                    CONSTRAINT emails_last_event_check CHECK (last_event IN ('queued', 'scheduled', 'sent', 'delivered',
                        'delivery_delayed', 'bounced', 'complained', 'failed', 'canceled', 'suppressed')),
    scheduled_at    timestamptz,
    -- Set once a worker has started delivering: from then on it cannot be rescheduled or canceled.
    dispatched_at   timestamptz,
    failed_reason   text,
    size_bytes      integer NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX emails_team_id_idx ON emails (team_id, id);
CREATE INDEX emails_team_last_event_idx ON emails (team_id, last_event, id);
CREATE INDEX emails_api_key_idx ON emails (team_id, api_key_id, id);
CREATE INDEX emails_tags_idx ON emails USING gin (tags jsonb_path_ops);
-- Claim transfers wait while the holder has mail scheduled from the domain.
CREATE INDEX emails_scheduled_domain_idx ON emails (domain_id) WHERE last_event = 'scheduled';

CREATE TABLE email_recipients (
    email_id        uuid NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
    position        smallint NOT NULL,
    kind            text NOT NULL CONSTRAINT email_recipients_kind_check CHECK (kind IN ('to', 'cc', 'bcc')),
    -- The address as sent (may carry a display name) and its bare, lower-case address.
    address         text NOT NULL,
    email           text NOT NULL,
    status          text NOT NULL DEFAULT 'queued'
                    CONSTRAINT email_recipients_status_check CHECK (status IN ('queued', 'sending', 'delayed', 'sent',
                        'delivered', 'bounced', 'complained', 'failed', 'suppressed', 'ambiguous', 'canceled')),
    attempts        integer NOT NULL DEFAULT 0,
    last_response   text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT email_recipients_pkey PRIMARY KEY (email_id, position)
);
CREATE INDEX email_recipients_email_idx ON email_recipients (email);

CREATE TABLE email_attachments (
    id              uuid PRIMARY KEY,
    email_id        uuid NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
    position        smallint NOT NULL,
    filename        text NOT NULL,
    content_type    text NOT NULL,
    content_id      text,
    size            integer NOT NULL,
    content         bytea NOT NULL
);
CREATE INDEX email_attachments_email_idx ON email_attachments (email_id, position);

CREATE TABLE email_shares (
    id              uuid PRIMARY KEY,
    email_id        uuid NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
    token_hash      bytea NOT NULL CONSTRAINT email_shares_token_hash_key UNIQUE,
    expires_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE suppressions (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    email           text NOT NULL,
    origin          text NOT NULL
                    CONSTRAINT suppressions_origin_check CHECK (origin IN ('bounce', 'complaint', 'manual', 'unsubscribe')),
    source_id       uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT suppressions_team_email_key UNIQUE (team_id, email)
);
CREATE INDEX suppressions_team_id_idx ON suppressions (team_id, id);

-- Emails accepted per team and period (`day` rows and `month` rows), for the plan quotas.
CREATE TABLE send_usage (
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    period_kind     text NOT NULL CONSTRAINT send_usage_period_kind_check CHECK (period_kind IN ('day', 'month')),
    period_start    date NOT NULL,
    emails          integer NOT NULL,
    CONSTRAINT send_usage_pkey PRIMARY KEY (team_id, period_kind, period_start)
);

ALTER TABLE plans ADD COLUMN monthly_limit integer;
UPDATE plans SET monthly_limit = included_emails WHERE code = 'free';

-- An email's events are its timeline.
ALTER TABLE events ADD COLUMN email_id uuid;
CREATE INDEX events_email_idx ON events (email_id, id) WHERE email_id IS NOT NULL;
