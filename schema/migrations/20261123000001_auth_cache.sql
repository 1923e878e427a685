-- Every serving process keeps the keys it has seen in memory and leases rate-limit tokens in
-- small grants, so an authenticated request usually touches no table.

-- The bucket hands out grants: `granted` is what the last take got (0 when it was empty).
ALTER TABLE rate_limits DROP COLUMN allowed;
ALTER TABLE rate_limits ADD COLUMN granted integer NOT NULL DEFAULT 0;

-- The serving processes that cache keys. Each listens on the `herald_auth` channel, drops what a
-- notification names, and records the highest barrier it has read; a change that must take
-- effect at once (a revoke) answers only when every live process has read a barrier sent after
-- it committed. A process whose heartbeat is older than ten seconds is not waited for: it has
-- stopped trusting its cache three seconds after its last heartbeat.
CREATE TABLE auth_listeners (
    id            uuid PRIMARY KEY,
    seen_barrier  bigint NOT NULL,
    heartbeat_at  timestamptz NOT NULL
);

CREATE SEQUENCE auth_barriers;

-- Any change to a key (revoked, suspended, its permission, pin or Inbox access, or its
-- last use) drops it from every cache.
CREATE FUNCTION notify_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('herald_auth', 'key ' || COALESCE(NEW.id, OLD.id)::text);
    RETURN NULL;
END $$;

CREATE TRIGGER api_keys_notify_auth
    AFTER UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION notify_key_changed();

-- A team suspended or reinstated drops all its keys from every cache.
CREATE FUNCTION notify_team_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('herald_auth', 'team ' || NEW.id::text);
    RETURN NULL;
END $$;

CREATE TRIGGER teams_notify_auth
    AFTER UPDATE OF risk_state ON teams
    FOR EACH ROW WHEN (OLD.risk_state IS DISTINCT FROM NEW.risk_state)
    EXECUTE FUNCTION notify_team_changed();
