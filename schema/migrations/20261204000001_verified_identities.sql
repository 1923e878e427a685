-- Addresses a team proved it reads (a link mailed to each): the sending sandbox delivers to
-- them as it does to the team's verified domains.
CREATE TABLE verified_identities (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    -- Bare and lower-case.
    email           text NOT NULL,
    -- The mailed link's token, until it is used; then null, so a link works once.
    token_hash      bytea,
    expires_at      timestamptz NOT NULL,
    confirmed_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT verified_identities_team_email_key UNIQUE (team_id, email)
);
CREATE INDEX verified_identities_team_idx ON verified_identities (team_id, id);
CREATE UNIQUE INDEX verified_identities_token_key ON verified_identities (token_hash) WHERE token_hash IS NOT NULL;
