-- The counts of `GET /emails/metrics` (and the dashboard's overview), kept per team by the UTC
-- hour each email was accepted in (its id's time), as of a watermark id. Reads add what came
-- after the watermark exactly: see schema::store::email_metrics.

-- The time a UUIDv7 was minted (its first 48 bits, milliseconds since the epoch).
CREATE FUNCTION herald_id_time(id uuid) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN to_timestamp((('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint) / 1000.0);

-- The smallest UUIDv7 minted at `at` (as schema::ids::first_at).
CREATE FUNCTION herald_id_floor(at timestamptz) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN (lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid;

CREATE TABLE email_metrics_hourly (
    team_id  uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    -- The UTC hour the emails were accepted in.
    hour     timestamptz NOT NULL,
    -- `received`, or an event type: how many of that hour's emails have at least one such event.
    kind     text NOT NULL,
    count    bigint NOT NULL,
    PRIMARY KEY (team_id, hour, kind)
);

-- One row: emails and events with ids up to `through` are counted in email_metrics_hourly.
CREATE TABLE email_metrics_watermark (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    through    uuid NOT NULL
);
INSERT INTO email_metrics_watermark (through) VALUES ('00000000-0000-0000-0000-000000000000');
