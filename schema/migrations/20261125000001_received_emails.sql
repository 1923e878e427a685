-- Receiving: messages accepted by the inbound SMTP server, their attachments and raw source.
-- A received email is never a sent-email row (its own table and ID space).

-- Each plan's inbound allowances: messages stored per UTC day and bytes stored in all (NULL: no cap).
ALTER TABLE plans ADD COLUMN inbound_daily_cap integer, ADD COLUMN inbound_storage_bytes bigint;
UPDATE plans SET inbound_daily_cap = 1000, inbound_storage_bytes = 1073741824 WHERE code = 'free';
UPDATE plans SET inbound_daily_cap = NULL, inbound_storage_bytes = 53687091200 WHERE code = 'pro';
UPDATE plans SET inbound_daily_cap = NULL, inbound_storage_bytes = NULL WHERE code = 'scale';

CREATE TABLE received_emails (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    -- The SMTP envelope: MAIL FROM (empty for a bounce) and the team's RCPT TO addresses.
    mail_from       text NOT NULL,
    received_for    text[] NOT NULL,
    -- The header fields as decoded (empty when the message did not parse).
    from_header     text NOT NULL DEFAULT '',
    from_email      text NOT NULL DEFAULT '',
    from_name       text NOT NULL DEFAULT '',
    to_addresses    text[] NOT NULL DEFAULT '{}',
    cc              text[] NOT NULL DEFAULT '{}',
    bcc             text[] NOT NULL DEFAULT '{}',
    reply_to        text[] NOT NULL DEFAULT '{}',
    subject         text NOT NULL DEFAULT '',
    message_id      text,
    -- Set on a stored message only: bodies as decoded, never sanitised; headers in order.
    html            text COMPRESSION lz4,
    text            text COMPRESSION lz4,
    headers         jsonb COMPRESSION lz4,
    dropped_reason  text CONSTRAINT received_emails_dropped_reason_check CHECK (dropped_reason IN
                        ('storage_quota', 'daily_cap', 'virus', 'parse_failed', 'no_mailbox', 'team_blocked')),
    -- The raw source's size (what the storage quota counts).
    size_bytes      integer NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX received_emails_team_idx ON received_emails (team_id, id);
-- Dropped records age out on the plan's retention window.
CREATE INDEX received_emails_dropped_idx ON received_emails (created_at) WHERE dropped_reason IS NOT NULL;

-- The raw source, kept apart so listing never reads it; none for a record dropped before parsing
-- could matter (every dropped reason but parse_failed).
CREATE TABLE received_sources (
    received_email_id uuid PRIMARY KEY REFERENCES received_emails (id) ON DELETE CASCADE,
    -- lz4, not pglz: compressing every message as it arrives is on the path to `250`.
    raw             bytea COMPRESSION lz4 NOT NULL
);

CREATE TABLE received_attachments (
    id              uuid PRIMARY KEY,
    received_email_id uuid NOT NULL REFERENCES received_emails (id) ON DELETE CASCADE,
    position        smallint NOT NULL,
    filename        text NOT NULL,
    content_type    text NOT NULL,
    content_disposition text NOT NULL,
    content_id      text,
    size            integer NOT NULL,
    -- NULL for a refused part (listed with its size, never downloadable).
    content         bytea COMPRESSION lz4
);
CREATE INDEX received_attachments_email_idx ON received_attachments (received_email_id, position);

-- Messages stored per team per UTC day (the inbound daily cap) and bytes stored (the storage
-- quota), each spread over 16 shards: concurrent deliveries to one team add to different rows,
-- so they do not queue on one row lock until commit; a check reads the sum.
CREATE TABLE received_usage (
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    day             date NOT NULL,
    shard           smallint NOT NULL,
    messages        integer NOT NULL,
    PRIMARY KEY (team_id, day, shard)
);
CREATE TABLE received_storage (
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    shard           smallint NOT NULL,
    bytes           bigint NOT NULL,
    PRIMARY KEY (team_id, shard)
);

-- Lookups of the inbound server: a receiving domain by the host mail is addressed to, and a
-- return-path host.
CREATE INDEX domains_receiving_host_idx ON domains ((CASE WHEN receiving_host = '@' THEN name ELSE receiving_host || '.' || name END))
    WHERE receiving_enabled AND first_verified_at IS NOT NULL AND status NOT IN ('disabled', 'claiming', 'claim_expired');
CREATE INDEX domains_return_path_host_idx ON domains ((custom_return_path || '.' || name))
    WHERE first_verified_at IS NOT NULL AND status NOT IN ('disabled', 'claiming', 'claim_expired');
