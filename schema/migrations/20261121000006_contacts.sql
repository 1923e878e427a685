-- The audience: contacts with typed properties, and the consent records of their choices.
CREATE TABLE contacts (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    -- Bare and lower-case: addresses match case-insensitively.
    email           text NOT NULL,
    first_name      text,
    last_name       text,
    unsubscribed    boolean NOT NULL DEFAULT false,
    properties      jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT contacts_team_email_key UNIQUE (team_id, email)
);
CREATE INDEX contacts_team_idx ON contacts (team_id, id);

CREATE TABLE contact_properties (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    key             text NOT NULL,
    type            text NOT NULL CONSTRAINT contact_properties_type_check CHECK (type IN ('string', 'number', 'boolean')),
    fallback_value  jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT contact_properties_team_key_key UNIQUE (team_id, key)
);

-- Kept after erasure (contact_id becomes null) under a hash of the address.
CREATE TABLE consent_records (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    contact_id      uuid REFERENCES contacts (id) ON DELETE SET NULL,
    email_hash      bytea NOT NULL,
    topic_id        uuid,
    choice          text NOT NULL CONSTRAINT consent_records_choice_check
                    CHECK (choice IN ('subscribed', 'unsubscribed', 'opt_in', 'opt_out')),
    source          text NOT NULL,
    ip_address      text,
    user_agent      text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX consent_records_contact_idx ON consent_records (contact_id, id);
CREATE INDEX consent_records_created_idx ON consent_records (created_at);
