-- Billing (#24) through Stripe: add-ons as data, the prices found (or created) by lookup key,
-- Stripe's webhook events kept once per event id, and the subscription Stripe last reported.

-- Add-ons a team buys beside its plan. `per_unit`: bought in a quantity (1 to 100).
CREATE TABLE billing_addons (
    code                text PRIMARY KEY,
    name                text NOT NULL,
    monthly_price_cents integer NOT NULL,
    per_unit            boolean NOT NULL,
    stripe_lookup_key   text NOT NULL UNIQUE
);
INSERT INTO billing_addons (code, name, monthly_price_cents, per_unit, stripe_lookup_key) VALUES
    ('inbox_storage_100gb', 'Inbox storage, 100 GB', 1000, false, 'herald_inbox_storage_100gb_monthly'),
    ('inbox_seat', 'Inbox seat', 800, true, 'herald_inbox_seat_monthly');

-- Stripe's price for each lookup key, once found or created (a cache: Stripe is the truth).
CREATE TABLE stripe_prices (
    lookup_key  text PRIMARY KEY,
    price_id    text NOT NULL UNIQUE,
    found_at    timestamptz NOT NULL DEFAULT now()
);

-- Each Stripe event once: a redelivery finds its id and changes nothing.
CREATE TABLE stripe_events (
    id              text PRIMARY KEY,
    type            text NOT NULL,
    -- When Stripe created the event: a subscription's state never moves back to an older one.
    created         timestamptz NOT NULL,
    payload         jsonb NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    processed_at    timestamptz,
    -- What processing did (`applied`, `stale`, `ignored`, `unknown_customer`).
    outcome         text
);

ALTER TABLE team_billing
    ADD COLUMN stripe_subscription_id   text,
    -- The creation time of the last subscription event applied.
    ADD COLUMN subscription_event_at    timestamptz,
    -- The creation time of the last invoice event applied.
    ADD COLUMN invoice_event_at         timestamptz,
    ADD COLUMN cancel_at_period_end     boolean NOT NULL DEFAULT false,
    -- The add-ons the subscription holds: { code: quantity }.
    ADD COLUMN addons                   jsonb NOT NULL DEFAULT '{}';
CREATE UNIQUE INDEX team_billing_customer_key ON team_billing (stripe_customer_id) WHERE stripe_customer_id IS NOT NULL;
