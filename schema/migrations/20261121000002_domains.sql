-- Sending domains, their DNS records, claims between teams, and the event rows every
-- resource change writes (delivered to webhooks by the webhooks issue).

CREATE TABLE domains (
    id                      uuid PRIMARY KEY,
    team_id                 uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    -- Lower-case ASCII (IDNA) form; `zone` is the registrable domain holding it.
    name                    text NOT NULL,
    zone                    text NOT NULL,
    region                  text NOT NULL
                            CONSTRAINT domains_region_check CHECK (region IN ('us-east-1', 'eu-west-1', 'sa-east-1', 'ap-northeast-1')),
    tls                     text NOT NULL DEFAULT 'opportunistic'
                            CONSTRAINT domains_tls_check CHECK (tls IN ('opportunistic', 'enforced')),
    custom_return_path      text NOT NULL DEFAULT 'send',
    receiving_host          text NOT NULL DEFAULT '@',
    sending_enabled         boolean NOT NULL DEFAULT true,
    receiving_enabled       boolean NOT NULL DEFAULT false,
    open_tracking           boolean NOT NULL DEFAULT false,
    click_tracking          boolean NOT NULL DEFAULT false,
    status                  text NOT NULL DEFAULT 'not_started'
                            CONSTRAINT domains_status_check CHECK (status IN
                                ('not_started', 'pending', 'verified', 'drifted', 'failed', 'temporary_failure', 'claiming', 'claim_expired', 'disabled')),
    -- The unique part of the mail-from CNAME target `<code>.{mail_from_host}`.
    mail_from_code          text NOT NULL,
    -- DKIM key in use (PKCS#1 PEM private key; base64 SubjectPublicKeyInfo for `p=`), and the
    -- key a rotation waits to see published.
    dkim_private_key        text NOT NULL,
    dkim_public_key         text NOT NULL,
    dkim_next_private_key   text,
    dkim_next_public_key    text,
    dkim_rotation_started_at timestamptz,
    -- When the domain last became verified (kept while verified; a claim waits 72 h after it),
    -- when it was first verified, last checked, last sent from (set by sending).
    verified_at             timestamptz,
    first_verified_at       timestamptz,
    checked_at              timestamptz,
    last_sent_at            timestamptz,
    disabled_at             timestamptz,
    -- A DNS provider token kept for auto-configuration, AES-256-GCM sealed.
    autoconfigure_provider  text,
    autoconfigure_credential bytea,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX domains_team_id_idx ON domains (team_id, id);
-- A team holds one live copy of a name.
CREATE UNIQUE INDEX domains_team_name_key ON domains (team_id, name) WHERE status <> 'disabled';
-- Across teams a name is held by whoever verified it, until it is deleted or claimed away.
CREATE UNIQUE INDEX domains_held_name_key ON domains (name)
    WHERE first_verified_at IS NOT NULL AND status NOT IN ('disabled', 'claiming', 'claim_expired');
CREATE INDEX domains_name_idx ON domains (name);

ALTER TABLE api_keys ADD CONSTRAINT api_keys_domain_id_fkey
    FOREIGN KEY (domain_id) REFERENCES domains (id) ON DELETE SET NULL;

-- One row per record the domain publishes. `status` is what DNS said at `checked_at`.
CREATE TABLE domain_records (
    domain_id   uuid NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    kind        text NOT NULL CONSTRAINT domain_records_kind_check CHECK (kind IN ('dkim', 'mail_from', 'receiving', 'tracking')),
    status      text NOT NULL DEFAULT 'not_started'
                CONSTRAINT domain_records_status_check CHECK (status IN
                    ('not_started', 'pending', 'verified', 'drifted', 'failed', 'temporary_failure')),
    -- What a failing check found at the name instead, for the dashboard.
    found       text,
    verified_at timestamptz,
    checked_at  timestamptz,
    CONSTRAINT domain_records_pkey PRIMARY KEY (domain_id, kind)
);

CREATE TABLE domain_claims (
    id              uuid PRIMARY KEY,
    -- The claiming team and its copy of the domain (status `claiming` until the transfer).
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    domain_id       uuid NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    name            text NOT NULL,
    token           text NOT NULL,
    status          text NOT NULL DEFAULT 'pending'
                    CONSTRAINT domain_claims_status_check CHECK (status IN ('pending', 'completed', 'expired')),
    blocked_reason  text
                    CONSTRAINT domain_claims_blocked_reason_check CHECK (blocked_reason IN
                        ('record_not_found', 'owner_recently_verified', 'owner_recently_sent', 'owner_has_scheduled_mail')),
    checked_at      timestamptz,
    expires_at      timestamptz NOT NULL,
    completed_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX domain_claims_pending_domain_key ON domain_claims (domain_id) WHERE status = 'pending';
CREATE INDEX domain_claims_domain_id_idx ON domain_claims (domain_id, id);
CREATE INDEX domain_claims_pending_idx ON domain_claims (expires_at) WHERE status = 'pending';

-- Every event Herald emits, written in the transaction of the change it describes.
CREATE TABLE events (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    type        text NOT NULL,
    data        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_team_id_idx ON events (team_id, id);
CREATE INDEX events_team_type_idx ON events (team_id, type, id);
