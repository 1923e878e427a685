-- The support Inbox (#23): channels on receiving addresses, conversations threaded from inbound
-- mail, their messages (received, replies, notes), labels and folders.

-- A channel: a receiving address of one of the team's domains, shared by its teammates (or, when
-- `restricted`, by its members), or one person's own (`personal_person_id`), which no key or
-- token reaches. A closed channel takes no new mail into conversations.
CREATE TABLE inbox_channels (
    id                  uuid PRIMARY KEY,
    team_id             uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    domain_id           uuid NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    -- Bare and lower-case.
    address             text NOT NULL,
    name                text NOT NULL,
    restricted          boolean NOT NULL DEFAULT false,
    personal_person_id  uuid REFERENCES people (id) ON DELETE CASCADE,
    closed              boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT inbox_channels_address_key UNIQUE (team_id, address)
);
-- Inbound mail finds the channel of an address it was accepted for.
CREATE INDEX inbox_channels_address_idx ON inbox_channels (address) WHERE NOT closed;

-- The members of a restricted channel.
CREATE TABLE inbox_channel_members (
    channel_id  uuid NOT NULL REFERENCES inbox_channels (id) ON DELETE CASCADE,
    person_id   uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    PRIMARY KEY (channel_id, person_id)
);
CREATE INDEX inbox_channel_members_person_idx ON inbox_channel_members (person_id);

-- Folders nest within one channel.
CREATE TABLE inbox_folders (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    channel_id  uuid NOT NULL REFERENCES inbox_channels (id) ON DELETE CASCADE,
    parent_id   uuid REFERENCES inbox_folders (id) ON DELETE CASCADE,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbox_folders_team_idx ON inbox_folders (team_id, id);

-- Labels: team-wide (`channel_id` NULL) or one channel's.
CREATE TABLE inbox_labels (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    channel_id  uuid REFERENCES inbox_channels (id) ON DELETE CASCADE,
    name        text NOT NULL,
    colour      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbox_labels_team_idx ON inbox_labels (team_id, id);

CREATE TABLE inbox_conversations (
    id                          uuid PRIMARY KEY,
    team_id                     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    channel_id                  uuid NOT NULL REFERENCES inbox_channels (id) ON DELETE CASCADE,
    subject                     text NOT NULL,
    status                      text NOT NULL DEFAULT 'open' CONSTRAINT inbox_conversations_status CHECK (status IN ('open', 'pending', 'done')),
    place                       text NOT NULL DEFAULT 'inbox' CONSTRAINT inbox_conversations_place CHECK (place IN ('inbox', 'archive', 'spam', 'trash')),
    folder_id                   uuid REFERENCES inbox_folders (id) ON DELETE SET NULL,
    assignee_id                 uuid REFERENCES people (id) ON DELETE SET NULL,
    external_id                 text,
    -- The customer: who wrote in.
    customer_email              text NOT NULL,
    customer_name               text NOT NULL DEFAULT '',
    -- A sent email whose recipient's answer opened the conversation (the `inbox` send field).
    email_id                    uuid,
    -- Bumped by every change and every new message; `ETag` and `If-Match` carry it.
    version                     integer NOT NULL DEFAULT 1,
    latest_message_id           uuid,
    latest_customer_message_id  uuid,
    message_count               integer NOT NULL DEFAULT 0,
    last_message_at             timestamptz NOT NULL DEFAULT now(),
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT inbox_conversations_external_key UNIQUE (channel_id, external_id)
);
-- The list: a channel's place, newest first, filtered by status; and by assignee.
CREATE INDEX inbox_conversations_list_idx ON inbox_conversations (team_id, place, channel_id, status, id DESC);
CREATE INDEX inbox_conversations_assignee_idx ON inbox_conversations (team_id, assignee_id, id DESC);
CREATE INDEX inbox_conversations_folder_idx ON inbox_conversations (folder_id, id DESC) WHERE folder_id IS NOT NULL;

CREATE TABLE inbox_conversation_labels (
    conversation_id uuid NOT NULL REFERENCES inbox_conversations (id) ON DELETE CASCADE,
    label_id        uuid NOT NULL REFERENCES inbox_labels (id) ON DELETE CASCADE,
    PRIMARY KEY (conversation_id, label_id)
);
CREATE INDEX inbox_conversation_labels_label_idx ON inbox_conversation_labels (label_id, conversation_id);

-- A conversation's messages: `received` (mail in, read from its received email, not copied),
-- `customer` (opened through the API), `reply` (sent through the send path) and `note`
-- (internal). `message_id` is the RFC 5322 Message-ID replies thread on.
CREATE TABLE inbox_messages (
    id                  uuid PRIMARY KEY,
    team_id             uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    conversation_id     uuid NOT NULL REFERENCES inbox_conversations (id) ON DELETE CASCADE,
    kind                text NOT NULL CONSTRAINT inbox_messages_kind CHECK (kind IN ('received', 'customer', 'reply', 'note')),
    received_email_id   uuid REFERENCES received_emails (id) ON DELETE SET NULL,
    email_id            uuid,
    message_id          text,
    from_email          text NOT NULL DEFAULT '',
    from_name           text NOT NULL DEFAULT '',
    to_addresses        text[] NOT NULL DEFAULT '{}',
    cc                  text[] NOT NULL DEFAULT '{}',
    subject             text NOT NULL DEFAULT '',
    -- Bodies of messages that are not received emails (those are read from the received email).
    text                text COMPRESSION lz4,
    html                text COMPRESSION lz4,
    -- Who wrote a reply or note: a person, or a key (its name kept as it was).
    author_person_id    uuid REFERENCES people (id) ON DELETE SET NULL,
    author_key_id       uuid,
    author_name         text,
    -- What search matches: subject, body text and addresses.
    search              tsvector NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbox_messages_conversation_idx ON inbox_messages (conversation_id, id);
-- Threading: a team's messages by Message-ID.
CREATE INDEX inbox_messages_message_id_idx ON inbox_messages (team_id, message_id) WHERE message_id IS NOT NULL;
CREATE INDEX inbox_messages_search_idx ON inbox_messages USING gin (search);

-- Sent emails that named a channel in the `inbox` send field: the recipient's answer (its
-- `In-Reply-To` naming the email's Message-ID) opens a conversation there, linked to the email.
CREATE TABLE inbox_email_links (
    email_id    uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    channel_id  uuid NOT NULL REFERENCES inbox_channels (id) ON DELETE CASCADE,
    message_id  text NOT NULL
);
CREATE INDEX inbox_email_links_message_idx ON inbox_email_links (team_id, message_id);

-- A person's own state of a conversation: read mark, star, snooze and reply draft. Keys have none.
CREATE TABLE inbox_person_state (
    conversation_id     uuid NOT NULL REFERENCES inbox_conversations (id) ON DELETE CASCADE,
    person_id           uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    team_id             uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    read_at             timestamptz,
    starred             boolean NOT NULL DEFAULT false,
    snoozed_until       timestamptz,
    draft_text          text,
    draft_html          text,
    draft_updated_at    timestamptz,
    PRIMARY KEY (conversation_id, person_id)
);
-- The schedules' tick wakes due snoozes.
CREATE INDEX inbox_person_state_snooze_idx ON inbox_person_state (snoozed_until) WHERE snoozed_until IS NOT NULL;
