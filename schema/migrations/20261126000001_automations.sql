-- Automations (#12): custom event definitions, recorded event sends, automations with immutable
-- versions, and their per-contact runs.

-- A declared custom event. Deleted definitions stay (recorded sends name them) and free the name.
CREATE TABLE event_definitions (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name        text NOT NULL,
    schema      jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
CREATE UNIQUE INDEX event_definitions_name_idx ON event_definitions (team_id, name) WHERE deleted_at IS NULL;
CREATE INDEX event_definitions_team_idx ON event_definitions (team_id, id) WHERE deleted_at IS NULL;

-- One `POST /events/send`: the event as fired, for one contact.
CREATE TABLE custom_events (
    id             uuid PRIMARY KEY,
    team_id        uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    definition_id  uuid NOT NULL,
    name           text NOT NULL,
    contact_id     uuid NOT NULL,
    payload        jsonb NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX custom_events_team_idx ON custom_events (team_id, id);

CREATE TABLE automations (
    id               uuid PRIMARY KEY,
    team_id          uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name             text NOT NULL,
    status           text NOT NULL DEFAULT 'disabled'
                     CONSTRAINT automations_status_check CHECK (status IN ('enabled', 'disabled')),
    current_version  integer NOT NULL,
    -- The current version's trigger: what enrols contacts, read by every event that may.
    trigger_event    text NOT NULL,
    -- `svc:segment.entered`: the segment; `svc:topic.subscribed`: the topic, when named.
    trigger_segment_id uuid,
    trigger_topic_id   uuid,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    deleted_at       timestamptz
);
CREATE INDEX automations_team_idx ON automations (team_id, id) WHERE deleted_at IS NULL;
-- Enrolment: the team's enabled automations a trigger names.
CREATE INDEX automations_trigger_idx ON automations (team_id, trigger_event) WHERE status = 'enabled' AND deleted_at IS NULL;

-- A version is never changed once written.
CREATE TABLE automation_versions (
    automation_id  uuid NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    version        integer NOT NULL,
    steps          jsonb NOT NULL,
    connections    jsonb NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (automation_id, version)
);

-- One contact's run through one version. `step` is the next step to execute (null before the
-- trigger has run, and once finished); `due_at` is when (a delay parks the run until then).
CREATE TABLE automation_runs (
    id             uuid PRIMARY KEY,
    team_id        uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    automation_id  uuid NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    version        integer NOT NULL,
    contact_id     uuid NOT NULL,
    trigger_event  text NOT NULL,
    -- The recorded custom event (null for built-in triggers).
    event_id       uuid,
    -- The trigger's data: a custom event's payload, or the built-in event's data.
    event_data     jsonb NOT NULL DEFAULT '{}',
    status         text NOT NULL DEFAULT 'running'
                   CONSTRAINT automation_runs_status_check CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    step           text,
    due_at         timestamptz NOT NULL DEFAULT now(),
    -- Failed attempts at the current step (a database or render error), for backoff.
    attempts       integer NOT NULL DEFAULT 0,
    error          text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    completed_at   timestamptz
);
CREATE INDEX automation_runs_due_idx ON automation_runs (due_at) WHERE status = 'running';
CREATE INDEX automation_runs_automation_idx ON automation_runs (automation_id, id);
CREATE INDEX automation_runs_running_idx ON automation_runs (automation_id) WHERE status = 'running';

-- What each executed step did: written in the transaction that executed it.
CREATE TABLE automation_run_steps (
    run_id        uuid NOT NULL REFERENCES automation_runs (id) ON DELETE CASCADE,
    key           text NOT NULL,
    -- `completed`, `waiting` (a delay until its time) or `failed`.
    status        text NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    completed_at  timestamptz,
    outcome       jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, key)
);
