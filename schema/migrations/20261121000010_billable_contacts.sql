-- The highest number of billable contacts (subscribed to at least one topic, not
-- unsubscribed, not suppressed) each team had in a month, sampled hourly.
CREATE TABLE billable_contact_peaks (
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    month       date NOT NULL,
    peak        bigint NOT NULL,
    counted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, month)
);
