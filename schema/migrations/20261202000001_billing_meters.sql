-- Billing (#24), third part: each closed period's metered usage as reported to Stripe, the
-- spend cap bounding email overage as it bounds contacts, the storage add-on raising the
-- Inbox's storage quota, and each sending tier's daily cap.

-- What each sending tier may send a day (UTC), whatever the plan allows: a new team's mail is
-- held to a trickle until its domain verifies, a card on file raises it again, and an
-- operator's review lifts it (NULL: the plan's cap alone). Data, as plans are: an operator
-- may change the numbers, and a reviewed limit request (`daily_emails`) overrides them.
CREATE TABLE sending_tiers (
    tier        smallint PRIMARY KEY CONSTRAINT sending_tiers_tier_check CHECK (tier BETWEEN 0 AND 3),
    name        text NOT NULL UNIQUE,
    daily_cap   integer CONSTRAINT sending_tiers_daily_cap_check CHECK (daily_cap > 0)
);
INSERT INTO sending_tiers (tier, name, daily_cap) VALUES
    (0, 'new', 100),
    (1, 'verified', 10000),
    (2, 'paid', 100000),
    (3, 'trusted', NULL);

-- A closed billing period's usage, worked out once when the period closes (in the transaction
-- that applies Stripe's renewal or ending of the subscription, before the plan can move) and
-- then reported to Stripe as one invoice item per meter. The primary key makes a period's
-- report happen once; each item id is kept as soon as Stripe answers, so a retried job never
-- adds an item twice (Stripe's idempotency key covers the moment between).
CREATE TABLE billing_usage_reports (
    team_id                 uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    period_start            timestamptz NOT NULL,
    period_end              timestamptz NOT NULL,
    stripe_customer_id      text NOT NULL,
    -- The subscription whose next invoice carries the items (NULL once it has ended).
    stripe_subscription_id  text,
    plan_code               text NOT NULL REFERENCES plans (code),
    emails                  bigint NOT NULL,
    included_emails         integer NOT NULL,
    email_overage_cents     bigint NOT NULL,
    peak_contacts           bigint NOT NULL,
    contacts_included       integer,
    contact_overage_cents   bigint NOT NULL,
    spend_cap_cents         integer,
    -- What is billed after the spend cap.
    email_billed_cents      bigint NOT NULL,
    contact_billed_cents    bigint NOT NULL,
    email_item_id           text,
    contact_item_id         text,
    status                  text NOT NULL DEFAULT 'pending'
                            CONSTRAINT billing_usage_reports_status_check CHECK (status IN ('pending', 'reported')),
    created_at              timestamptz NOT NULL DEFAULT now(),
    reported_at             timestamptz,
    PRIMARY KEY (team_id, period_start)
);

-- The limits that apply to each team (see 20261201000004): as before; the daily cap is the
-- lower of the plan's and the sending tier's unless an operator granted one; with a spend cap on
-- a live subscription, email overage stops where the cap leaves no room past the plan's price;
-- `inbound_storage_bytes` is the plan's Inbox storage plus 100 GB per storage add-on held.
CREATE OR REPLACE VIEW team_limits AS
SELECT t.id AS team_id,
       COALESCE(o.daily_emails, LEAST(p.daily_cap, st.daily_cap)) AS daily_cap,
       COALESCE(o.monthly_emails, p.monthly_limit,
                CASE WHEN tb.spend_cap_cents IS NOT NULL AND p.overage_per_1000_cents IS NOT NULL
                          AND tb.subscription_status IN ('active', 'trialing', 'past_due')
                     THEN LEAST(2147483647, p.included_emails::int8
                          + GREATEST(0, tb.spend_cap_cents - p.monthly_price_cents)::int8 / p.overage_per_1000_cents * 1000)::int4 END) AS monthly_limit,
       CASE WHEN COALESCE(tb.pay_as_you_go, false) AND p.contact_overage_per_1000_cents IS NOT NULL
                 AND tb.subscription_status IN ('active', 'trialing', 'past_due')
            THEN CASE WHEN tb.spend_cap_cents IS NULL THEN NULL
                      ELSE COALESCE(o.contacts, p.contact_limit)
                           + GREATEST(0, tb.spend_cap_cents - p.monthly_price_cents) / p.contact_overage_per_1000_cents * 1000 END
            ELSE COALESCE(o.contacts, p.contact_limit)
       END AS contact_limit,
       COALESCE(o.domains, p.domain_limit) AS domain_limit,
       COALESCE(o.webhook_endpoints, p.webhook_endpoint_limit) AS webhook_endpoint_limit,
       p.inbound_storage_bytes
           + CASE WHEN tb.subscription_status IN ('active', 'trialing', 'past_due')
                  THEN 107374182400::int8 * COALESCE((tb.addons ->> 'inbox_storage_100gb')::int8, 0) ELSE 0 END AS inbound_storage_bytes
FROM teams t
JOIN plans p ON p.code = t.plan_code
JOIN sending_tiers st ON st.tier = t.sending_tier
LEFT JOIN team_limit_overrides o ON o.team_id = t.id
LEFT JOIN team_billing tb ON tb.team_id = t.id;

-- AI assist credits a plan includes each month (#25 meters them; NULL: no allowance of its own).
ALTER TABLE plans ADD COLUMN ai_credits_monthly integer CONSTRAINT plans_ai_credits_monthly_check CHECK (ai_credits_monthly >= 0);
UPDATE plans SET ai_credits_monthly = CASE code WHEN 'free' THEN 25 WHEN 'pro' THEN 500 WHEN 'scale' THEN 2500 END;
