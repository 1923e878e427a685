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

-- Topics a contact can opt in to or out of; names are unique among live topics.
CREATE TABLE topics (
    id                      uuid PRIMARY KEY,
    team_id                 uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name                    text NOT NULL,
    description             text,
    default_subscription    text NOT NULL CONSTRAINT topics_default_check CHECK (default_subscription IN ('opt_in', 'opt_out')),
    visibility              text NOT NULL DEFAULT 'private' CONSTRAINT topics_visibility_check CHECK (visibility IN ('public', 'private')),
    created_at              timestamptz NOT NULL DEFAULT now(),
    deleted_at              timestamptz
);
CREATE INDEX topics_team_idx ON topics (team_id, id) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX topics_live_name_key ON topics (team_id, lower(name)) WHERE deleted_at IS NULL;

-- A contact's own choices; without one the topic's default applies.
CREATE TABLE contact_topics (
    contact_id      uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    topic_id        uuid NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    subscription    text NOT NULL CONSTRAINT contact_topics_subscription_check CHECK (subscription IN ('opt_in', 'opt_out')),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (contact_id, topic_id)
);
CREATE INDEX contact_topics_topic_idx ON contact_topics (topic_id, contact_id);
