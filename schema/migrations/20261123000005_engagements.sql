-- Opens and clicks (#10): one row per hit on a tracking link, written by the drain of the
-- tracking spool. `id` is made when the hit is spooled, so draining a spool file twice writes
-- each hit once.
CREATE TABLE email_engagements (
    id            uuid PRIMARY KEY,
    team_id       uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    email_id      uuid NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
    broadcast_id  uuid,
    kind          text NOT NULL CONSTRAINT email_engagements_kind_check CHECK (kind IN ('open', 'click')),
    link          text,
    ip_address    text,
    user_agent    text,
    occurred_at   timestamptz NOT NULL
);
CREATE INDEX email_engagements_email_idx ON email_engagements (email_id, kind);
CREATE INDEX email_engagements_broadcast_idx ON email_engagements (broadcast_id, kind, link) WHERE broadcast_id IS NOT NULL;
