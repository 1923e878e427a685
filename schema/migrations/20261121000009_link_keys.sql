-- Keys the service makes for itself, shared by every process: `links` signs the hosted
-- preference and unsubscribe links.
CREATE TABLE service_keys (
    name        text PRIMARY KEY,
    secret      bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
