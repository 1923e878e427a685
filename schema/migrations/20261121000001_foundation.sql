-- Platform foundation: plans, teams, API keys, rate-limit state, idempotency records,
-- request logs and schedule ticks. Every table carries team_id (where it belongs to a team),
-- created_at, named keys and an index for each list query.

CREATE TABLE plans (
    code                    text PRIMARY KEY,
    name                    text NOT NULL,
    included_emails         integer NOT NULL,
    daily_cap               integer,
    domain_limit            integer NOT NULL,
    webhook_endpoint_limit  integer NOT NULL,
    retention_days          integer NOT NULL,
    contact_limit           integer,
    created_at              timestamptz NOT NULL DEFAULT now()
);

INSERT INTO plans (code, name, included_emails, daily_cap, domain_limit, webhook_endpoint_limit, retention_days, contact_limit) VALUES
    ('free',  'Free',  3000,   100,  1,    1,  30, 1000),
    ('pro',   'Pro',   50000,  NULL, 10,   10, 90, 50000),
    ('scale', 'Scale', 100000, NULL, 1000, 20, 365, NULL);

CREATE TABLE teams (
    id                  uuid PRIMARY KEY,
    name                text NOT NULL CONSTRAINT teams_name_length CHECK (char_length(name) BETWEEN 1 AND 80),
    slug                text NOT NULL CONSTRAINT teams_slug_key UNIQUE,
    risk_state          text NOT NULL DEFAULT 'normal'
                        CONSTRAINT teams_risk_state_check CHECK (risk_state IN ('normal', 'under_review', 'suspended')),
    plan_code           text NOT NULL DEFAULT 'free' REFERENCES plans (code),
    sending_tier        smallint NOT NULL DEFAULT 0 CONSTRAINT teams_sending_tier_check CHECK (sending_tier BETWEEN 0 AND 3),
    sandbox_regions     text[] NOT NULL DEFAULT ARRAY['us-east-1', 'eu-west-1', 'sa-east-1', 'ap-northeast-1'],
    sender_name         text,
    postal_address      jsonb,
    ai_assist_enabled   boolean NOT NULL DEFAULT false,
    brand_kit           jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id                          uuid PRIMARY KEY,
    team_id                     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name                        text NOT NULL CONSTRAINT api_keys_name_length CHECK (char_length(name) BETWEEN 1 AND 255),
    permission                  text NOT NULL CONSTRAINT api_keys_permission_check CHECK (permission IN ('full_access', 'sending_access')),
    domain_id                   uuid,
    token_hash                  bytea NOT NULL CONSTRAINT api_keys_token_hash_key UNIQUE,
    key_prefix                  text NOT NULL,
    status                      text NOT NULL DEFAULT 'active'
                                CONSTRAINT api_keys_status_check CHECK (status IN ('active', 'suspended', 'revoked')),
    inbox_access                text NOT NULL DEFAULT 'none'
                                CONSTRAINT api_keys_inbox_access_check CHECK (inbox_access IN ('none', 'create', 'read', 'write')),
    inbox_channel_ids           uuid[],
    last_used_at                timestamptz,
    last_used_request_log_id    uuid,
    revoked_at                  timestamptz,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT api_keys_domain_needs_sending_access CHECK (domain_id IS NULL OR permission = 'sending_access')
);
CREATE INDEX api_keys_team_id_idx ON api_keys (team_id, id);

-- Token bucket per team, shared by every key of the team and every Herald process.
CREATE TABLE rate_limits (
    team_id     uuid PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
    tokens      double precision NOT NULL,
    allowed     boolean NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE idempotency_records (
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    key             text NOT NULL,
    fingerprint     bytea NOT NULL,
    response_status smallint,
    response_body   jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT idempotency_records_pkey PRIMARY KEY (team_id, key)
);
CREATE INDEX idempotency_records_created_at_idx ON idempotency_records (created_at);

CREATE TABLE request_logs (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL,
    endpoint        text NOT NULL,
    path            text NOT NULL,
    method          text NOT NULL,
    response_status smallint NOT NULL,
    user_agent      text NOT NULL,
    source          text NOT NULL,
    request_id      text NOT NULL,
    latency_ms      integer NOT NULL,
    api_key_id      uuid,
    email_id        uuid,
    request_body    jsonb,
    response_body   jsonb
);
CREATE INDEX request_logs_team_id_idx ON request_logs (team_id, id);
CREATE INDEX request_logs_created_at_idx ON request_logs (created_at);

-- One row per (schedule, period): whichever worker inserts it first enqueues that period's job.
CREATE TABLE schedule_ticks (
    schedule    text NOT NULL,
    period      timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT schedule_ticks_pkey PRIMARY KEY (schedule, period)
);
