-- OAuth 2.1 (#13): public clients registered dynamically, authorization requests waiting for
-- consent, single-use authorization codes, the grants people give a client in a team, and the
-- access and refresh tokens issued under them. Every secret is stored as its SHA-256 only.

CREATE TABLE oauth_clients (
    id                          uuid PRIMARY KEY,
    client_id                   text NOT NULL CONSTRAINT oauth_clients_client_id_key UNIQUE,
    registration_token_hash     bytea NOT NULL CONSTRAINT oauth_clients_registration_token_key UNIQUE,
    client_name                 text NOT NULL,
    redirect_uris               text[] NOT NULL,
    grant_types                 text[] NOT NULL,
    response_types              text[] NOT NULL,
    scope                       text,
    client_uri                  text,
    logo_uri                    text,
    software_id                 text,
    software_version            text,
    registered_from             text,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    disabled_at                 timestamptz
);
CREATE INDEX oauth_clients_registered_idx ON oauth_clients (created_at);
CREATE INDEX oauth_clients_registered_from_idx ON oauth_clients (registered_from, created_at);

-- An authorization request between `/oauth/authorize` and the person's answer on the consent page.
CREATE TABLE oauth_requests (
    id              uuid PRIMARY KEY,
    token_hash      bytea NOT NULL CONSTRAINT oauth_requests_token_key UNIQUE,
    client_id       uuid NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri    text NOT NULL,
    code_challenge  text NOT NULL,
    scopes          text[] NOT NULL,
    state           text NOT NULL,
    resource        text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL
);

-- What a person allowed a client to do in one team; one live grant per person, team and client.
CREATE TABLE oauth_grants (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    person_id   uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    client_id   uuid NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    scopes      text[] NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE UNIQUE INDEX oauth_grants_live_key ON oauth_grants (team_id, person_id, client_id) WHERE revoked_at IS NULL;
CREATE INDEX oauth_grants_team_idx ON oauth_grants (team_id, created_at);

-- A single-use authorization code (`rkc_`).
CREATE TABLE oauth_codes (
    code_hash       bytea PRIMARY KEY,
    grant_id        uuid NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    client_id       uuid NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri    text NOT NULL,
    code_challenge  text NOT NULL,
    scopes          text[] NOT NULL,
    resource        text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz
);

-- Access (`rko_`) and refresh (`rkr_`) tokens. Refresh tokens rotate: a used one marks
-- `used_at`; its `family_id` names every token descended from one code, revoked together.
CREATE TABLE oauth_tokens (
    id          uuid PRIMARY KEY,
    token_hash  bytea NOT NULL CONSTRAINT oauth_tokens_token_key UNIQUE,
    kind        text NOT NULL CONSTRAINT oauth_tokens_kind CHECK (kind IN ('access', 'refresh')),
    grant_id    uuid NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    family_id   uuid NOT NULL,
    code_hash   bytea,
    scopes      text[] NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    revoked_at  timestamptz
);
CREATE INDEX oauth_tokens_family_idx ON oauth_tokens (family_id);
CREATE INDEX oauth_tokens_grant_idx ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_code_idx ON oauth_tokens (code_hash) WHERE code_hash IS NOT NULL;

-- Serving processes cache what an access token acts as (like keys, in `auth_cache`): a token
-- revoked, a grant revoked or changed, a client disabled, or a membership changed drops every
-- cached token, whatever wrote it. Statement-level: these writes are rare.
CREATE FUNCTION notify_oauth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('herald_auth', 'oauth');
    RETURN NULL;
END $$;

CREATE TRIGGER oauth_tokens_notify_auth AFTER UPDATE OF revoked_at OR DELETE ON oauth_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION notify_oauth_changed();
CREATE TRIGGER oauth_grants_notify_auth AFTER UPDATE OR DELETE ON oauth_grants
    FOR EACH STATEMENT EXECUTE FUNCTION notify_oauth_changed();
CREATE TRIGGER oauth_clients_notify_auth AFTER UPDATE OF disabled_at OR DELETE ON oauth_clients
    FOR EACH STATEMENT EXECUTE FUNCTION notify_oauth_changed();
CREATE TRIGGER memberships_notify_auth AFTER UPDATE OR DELETE ON memberships
    FOR EACH STATEMENT EXECUTE FUNCTION notify_oauth_changed();
