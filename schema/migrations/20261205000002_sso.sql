-- Single sign-on through a team's OpenID provider, configured by a team admin in the dashboard
-- session. The client secret is sealed (AES-256-GCM under the service's `sso` key).
CREATE TABLE team_sso (
    team_id         uuid PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
    issuer          text NOT NULL,
    client_id       text NOT NULL,
    client_secret   bytea NOT NULL,
    -- Password sign-in is refused for addresses on the domains (the team's admins excepted).
    enforced        boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- The email domains a team's single sign-on covers: each domain belongs to one team at most.
CREATE TABLE sso_domains (
    domain          text PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES team_sso (team_id) ON DELETE CASCADE
);
CREATE INDEX sso_domains_team_idx ON sso_domains (team_id);

-- A sign-in on its way through the provider, found by the hash of its `state`: the nonce and
-- PKCE verifier it was started with. Used once, within ten minutes.
CREATE TABLE sso_logins (
    state_hash      bytea PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    nonce           text NOT NULL,
    pkce_verifier   text NOT NULL,
    expires_at      timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sso_logins_expires_idx ON sso_logins (expires_at);
