-- People (#13, first part): accounts that sign in to the dashboard, their memberships in teams,
-- dashboard sessions, and failed sign-ins (for throttling).

-- An account. `email` is bare and lower-case; the password is an argon2id PHC string.
CREATE TABLE people (
    id                  uuid PRIMARY KEY,
    email               text NOT NULL CONSTRAINT people_email_key UNIQUE,
    name                text NOT NULL,
    password_hash       text NOT NULL,
    email_verified_at   timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- A person's place in a team.
CREATE TABLE memberships (
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    person_id   uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    role        text NOT NULL CONSTRAINT memberships_role CHECK (role IN ('admin', 'member', 'viewer')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, person_id)
);
CREATE INDEX memberships_person_idx ON memberships (person_id);

-- A dashboard session: the cookie's token is stored as its SHA-256 hash only. `team_id` is the
-- session's current team.
CREATE TABLE sessions (
    id          uuid PRIMARY KEY,
    token_hash  bytea NOT NULL CONSTRAINT sessions_token_key UNIQUE,
    person_id   uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    team_id     uuid REFERENCES teams (id) ON DELETE SET NULL,
    csrf_token  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX sessions_person_idx ON sessions (person_id);
CREATE INDEX sessions_expiry_idx ON sessions (expires_at);

-- A failed sign-in, by address and by client address; read over the last 15 minutes.
CREATE TABLE sign_in_failures (
    id          uuid PRIMARY KEY,
    email       text NOT NULL,
    ip_address  text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_failures_email_idx ON sign_in_failures (email, created_at);
CREATE INDEX sign_in_failures_ip_idx ON sign_in_failures (ip_address, created_at);
