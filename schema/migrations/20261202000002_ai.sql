-- AI assist (#25): credits spent per team and UTC calendar month against the plan's
-- `ai_credits_monthly`, and each team's requests per minute (10 a minute across processes).

CREATE TABLE ai_credit_usage (
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    month       date NOT NULL,
    used        integer NOT NULL CONSTRAINT ai_credit_usage_used_check CHECK (used >= 0),
    PRIMARY KEY (team_id, month)
);

-- One row per team and minute in which it called AI assist; housekeeping drops old minutes.
CREATE TABLE ai_request_windows (
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    minute      timestamptz NOT NULL,
    requests    integer NOT NULL,
    PRIMARY KEY (team_id, minute)
);
CREATE INDEX ai_request_windows_minute_idx ON ai_request_windows (minute);

-- Each email's latest diagnosis, with the newest event it saw: asked again while no event is
-- newer, it is read back at no cost.
CREATE TABLE ai_diagnoses (
    email_id        uuid PRIMARY KEY REFERENCES emails (id) ON DELETE CASCADE,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    last_event_id   uuid,
    summary         text NOT NULL,
    causes          jsonb NOT NULL,
    next_steps      jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
