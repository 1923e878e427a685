-- Billing (#24), first part: each plan's prices as data beside its limits, and each team's
-- billing state as the payment provider last reported it (no row: never subscribed).

-- Prices in US cents. `overage_per_1000_cents` NULL: sending stops at the monthly limit;
-- `contact_overage_per_1000_cents` NULL: a new contact past the plan is refused.
-- `stripe_lookup_key` finds (or creates) the plan's Stripe price.
ALTER TABLE plans
    ADD COLUMN monthly_price_cents            integer NOT NULL DEFAULT 0,
    ADD COLUMN overage_per_1000_cents         integer,
    ADD COLUMN contact_overage_per_1000_cents integer,
    ADD COLUMN stripe_lookup_key              text,
    -- Inbox seats (people who answer in the Inbox) the plan includes.
    ADD COLUMN inbox_seats_included           integer NOT NULL DEFAULT 1;

UPDATE plans SET monthly_price_cents = 2000, overage_per_1000_cents = 90, contact_overage_per_1000_cents = 100,
    stripe_lookup_key = 'herald_pro_monthly', inbox_seats_included = 3 WHERE code = 'pro';
UPDATE plans SET monthly_price_cents = 9000, overage_per_1000_cents = 90, contact_overage_per_1000_cents = 80,
    stripe_lookup_key = 'herald_scale_monthly', inbox_seats_included = 10 WHERE code = 'scale';

CREATE TABLE team_billing (
    team_id                 uuid PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
    stripe_customer_id      text,
    -- As Stripe reports it (`active`, `trialing`, `past_due`, `canceled`, ...); NULL: none.
    subscription_status     text,
    current_period_start    timestamptz,
    current_period_end      timestamptz,
    -- `automatic` (charged) or `send_invoice`.
    invoicing               text,
    latest_invoice_status   text,
    trial_ends_at           timestamptz,
    pay_as_you_go           boolean NOT NULL DEFAULT false,
    spend_cap_cents         integer,
    payment_method_brand    text,
    payment_method_last4    text,
    -- `ok`, or `past_due` after a failed payment.
    payment_state           text NOT NULL DEFAULT 'ok',
    updated_at              timestamptz NOT NULL DEFAULT now()
);
