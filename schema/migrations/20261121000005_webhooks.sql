-- Webhook endpoints, one delivery per (event, subscribed endpoint), and every attempt.
CREATE TABLE webhook_endpoints (
    id                      uuid PRIMARY KEY,
    team_id                 uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    url                     text NOT NULL,
    events                  text[] NOT NULL CONSTRAINT webhook_endpoints_events_check CHECK (cardinality(events) > 0),
    status                  text NOT NULL DEFAULT 'enabled'
                            CONSTRAINT webhook_endpoints_status_check CHECK (status IN ('enabled', 'disabled')),
    disabled_reason         text,
    -- The raw HMAC key (the secret shown once is `whsec_` + base64 of it); the previous key
    -- keeps signing until previous_key_expires_at after a rotation.
    signing_key             bytea NOT NULL,
    previous_signing_key    bytea,
    previous_key_expires_at timestamptz,
    failing_since           timestamptz,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_team_idx ON webhook_endpoints (team_id, id);

CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    status          text NOT NULL DEFAULT 'pending'
                    CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    -- The delivery rows are the queue: due ones are leased (locked_until) by a dispatcher; a
    -- dispatcher that dies lets its lease run out and another takes the delivery.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    locked_until    timestamptz,
    -- A replay asked for one more attempt, without retries.
    replaying       boolean NOT NULL DEFAULT false,
    last_attempt_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_deliveries_endpoint_event_key UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, event_id DESC);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased_idx ON webhook_deliveries (endpoint_id) WHERE status = 'pending' AND locked_until IS NOT NULL;

CREATE TABLE webhook_attempts (
    id              uuid PRIMARY KEY,
    delivery_id     uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    status_code     integer,
    error           text,
    response_body   text,
    latency_ms      integer NOT NULL,
    replay          boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);

-- A time-ordered id minted in SQL (fan-out rows are created by INSERT … SELECT).
CREATE FUNCTION herald_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    placing substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;
