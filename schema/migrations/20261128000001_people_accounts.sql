-- People (#13, second part): single-use links mailed to a person (address verification and
-- password reset), invitations to a team, and TOTP multi-factor sign-in with recovery codes.

-- A link mailed to a person; only its token's SHA-256 is stored. `used_at` makes it single-use.
CREATE TABLE person_tokens (
    id          uuid PRIMARY KEY,
    person_id   uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    purpose     text NOT NULL CONSTRAINT person_tokens_purpose CHECK (purpose IN ('verify_email', 'reset_password')),
    token_hash  bytea NOT NULL CONSTRAINT person_tokens_token_key UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX person_tokens_person_idx ON person_tokens (person_id, purpose, created_at);

-- An invitation to join a team with a role, accepted by the link mailed to `email`.
CREATE TABLE invitations (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    email       text NOT NULL,
    role        text NOT NULL CONSTRAINT invitations_role CHECK (role IN ('admin', 'member', 'viewer')),
    invited_by  uuid REFERENCES people (id) ON DELETE SET NULL,
    token_hash  bytea NOT NULL CONSTRAINT invitations_token_key UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    revoked_at  timestamptz
);
-- One open invitation per address and team; a new one replaces it.
CREATE UNIQUE INDEX invitations_open_key ON invitations (team_id, email) WHERE accepted_at IS NULL AND revoked_at IS NULL;
CREATE INDEX invitations_team_idx ON invitations (team_id, created_at);

-- TOTP: the secret sealed with the service's `mfa` key; `totp_enabled_at` is set once a first
-- code confirms it; `totp_last_step` refuses a code used again within its window.
ALTER TABLE people
    ADD COLUMN totp_secret     bytea,
    ADD COLUMN totp_enabled_at timestamptz,
    ADD COLUMN totp_last_step  bigint;

-- Single-use recovery codes, stored as SHA-256.
CREATE TABLE recovery_codes (
    person_id   uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    code_hash   bytea NOT NULL,
    used_at     timestamptz,
    PRIMARY KEY (person_id, code_hash)
);

-- The client address a sign-up came from: at most ten accounts an hour from one address.
ALTER TABLE people ADD COLUMN signed_up_from text;
CREATE INDEX people_signed_up_from_idx ON people (signed_up_from, created_at);
