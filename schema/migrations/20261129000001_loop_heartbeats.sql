-- The background loops of each running process (webhook dispatcher, automation executor,
-- schedules, the hit spool's drain, the inbound committer): when each last went round, written
-- by its process every few seconds. Readiness fails when a live process has a loop that has not
-- gone round within its bound (stuck), which a dead process cannot show.
CREATE TABLE loop_heartbeats (
    process        text NOT NULL,
    loop_name      text NOT NULL,
    -- When the loop last completed a round.
    beat_at        timestamptz NOT NULL,
    -- How long a round may take before the loop counts as stuck.
    bound_seconds  double precision NOT NULL,
    -- When its process last wrote this row (the process is alive).
    seen_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (process, loop_name)
);
CREATE INDEX loop_heartbeats_seen_idx ON loop_heartbeats (seen_at);
