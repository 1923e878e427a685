-- Billing (#24): plan changes waiting for the period's end, limit requests an operator reviews,
-- the limits a review grants, and each sending-tier move with its reason.

ALTER TABLE team_billing
    ADD COLUMN pending_plan_code    text REFERENCES plans (code),
    ADD COLUMN pending_effective_at timestamptz;

-- Limits an operator granted above the plan's (NULL: the plan's own).
CREATE TABLE team_limit_overrides (
    team_id                 uuid PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
    daily_emails            integer,
    monthly_emails          integer,
    contacts                integer,
    domains                 integer,
    webhook_endpoints       integer,
    updated_at              timestamptz NOT NULL DEFAULT now()
);

-- The limits that apply to each team: an operator's grant, else the plan's. With
-- pay-as-you-go on a live subscription and a contact overage rate, contacts past the plan are
-- billed rather than refused: no contact limit, or with a spend cap as many more thousands as
-- the cap leaves room for past the plan's price.
CREATE VIEW team_limits AS
SELECT t.id AS team_id,
       COALESCE(o.daily_emails, p.daily_cap) AS daily_cap,
       COALESCE(o.monthly_emails, p.monthly_limit) AS monthly_limit,
       CASE WHEN COALESCE(tb.pay_as_you_go, false) AND p.contact_overage_per_1000_cents IS NOT NULL
                 AND tb.subscription_status IN ('active', 'trialing', 'past_due')
            THEN CASE WHEN tb.spend_cap_cents IS NULL THEN NULL
                      ELSE COALESCE(o.contacts, p.contact_limit)
                           + GREATEST(0, tb.spend_cap_cents - p.monthly_price_cents) / p.contact_overage_per_1000_cents * 1000 END
            ELSE COALESCE(o.contacts, p.contact_limit)
       END AS contact_limit,
       COALESCE(o.domains, p.domain_limit) AS domain_limit,
       COALESCE(o.webhook_endpoints, p.webhook_endpoint_limit) AS webhook_endpoint_limit
FROM teams t
JOIN plans p ON p.code = t.plan_code
LEFT JOIN team_limit_overrides o ON o.team_id = t.id
LEFT JOIN team_billing tb ON tb.team_id = t.id;

CREATE TABLE limit_requests (
    id              uuid PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    limit_name      text NOT NULL
                    CONSTRAINT limit_requests_limit_check CHECK (limit_name IN ('daily_emails', 'monthly_emails', 'contacts', 'domains', 'webhook_endpoints')),
    -- The limit when asked (NULL: none).
    current_value   integer,
    requested       integer NOT NULL CONSTRAINT limit_requests_requested_check CHECK (requested > 0),
    reason          text NOT NULL,
    status          text NOT NULL DEFAULT 'pending'
                    CONSTRAINT limit_requests_status_check CHECK (status IN ('pending', 'approved', 'declined')),
    review_note     text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    reviewed_at     timestamptz
);
CREATE INDEX limit_requests_team_idx ON limit_requests (team_id, id DESC);
CREATE UNIQUE INDEX limit_requests_one_pending_key ON limit_requests (team_id, limit_name) WHERE status = 'pending';

-- Each sending-tier move, with why.
CREATE TABLE sending_tier_moves (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    from_tier   smallint NOT NULL,
    to_tier     smallint NOT NULL,
    reason      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sending_tier_moves_team_idx ON sending_tier_moves (team_id, id DESC);
