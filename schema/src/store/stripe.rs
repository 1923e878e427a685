//! The payment provider's side of billing: each team's Stripe customer, the prices found by
//! lookup key, Stripe's events kept once per id, and the subscription and invoice state they
//! report, applied only forwards.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

/// Something Herald sells monthly: a plan or an add-on, with its Stripe lookup key.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Priced {
    /// `plan` or `addon`.
    pub kind: String,
    pub code: String,
    pub name: String,
    pub monthly_price_cents: i32,
    pub per_unit: bool,
    pub lookup_key: String,
}

/// The plan or add-on with `code` (`None`: nothing is sold by that code).
pub async fn priced(conn: &mut PgConnection, kind: &str, code: &str) -> sqlx::Result<Option<Priced>> {
    sqlx::query_as(
        "SELECT * FROM (
             SELECT 'plan' AS kind, code, name, monthly_price_cents, false AS per_unit, stripe_lookup_key AS lookup_key FROM plans WHERE stripe_lookup_key IS NOT NULL
             UNION ALL SELECT 'addon', code, name, monthly_price_cents, per_unit, stripe_lookup_key FROM billing_addons
         ) p WHERE kind = $1 AND code = $2",
    )
    .bind(kind)
    .bind(code)
    .fetch_optional(conn)
    .await
}

/// The team's Stripe customer, and its name for a new one.
pub async fn customer(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<(Option<String>, String)> {
    sqlx::query_as("SELECT tb.stripe_customer_id, t.name FROM teams t LEFT JOIN team_billing tb ON tb.team_id = t.id WHERE t.id = $1")
        .bind(team_id)
        .fetch_one(conn)
        .await
}

/// Keeps the team's Stripe customer (the first one kept wins); answers the one kept.
pub async fn keep_customer(conn: &mut PgConnection, team_id: Uuid, customer_id: &str) -> sqlx::Result<String> {
    sqlx::query_scalar(
        "INSERT INTO team_billing AS tb (team_id, stripe_customer_id) VALUES ($1, $2)
         ON CONFLICT (team_id) DO UPDATE SET stripe_customer_id = COALESCE(tb.stripe_customer_id, excluded.stripe_customer_id), updated_at = now()
         RETURNING stripe_customer_id",
    )
    .bind(team_id)
    .bind(customer_id)
    .fetch_one(conn)
    .await
}

/// The Stripe price kept for `lookup_key`.
pub async fn price(conn: &mut PgConnection, lookup_key: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT price_id FROM stripe_prices WHERE lookup_key = $1").bind(lookup_key).fetch_optional(conn).await
}

/// Keeps the Stripe price found or created for `lookup_key`.
pub async fn keep_price(conn: &mut PgConnection, lookup_key: &str, price_id: &str) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO stripe_prices (lookup_key, price_id) VALUES ($1, $2) ON CONFLICT (lookup_key) DO UPDATE SET price_id = excluded.price_id, found_at = now()")
        .bind(lookup_key)
        .bind(price_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Keeps a verified event; false when its id was kept before (a redelivery).
pub async fn keep_event(conn: &mut PgConnection, id: &str, kind: &str, created: DateTime<Utc>, payload: &Value) -> sqlx::Result<bool> {
    let done = sqlx::query("INSERT INTO stripe_events (id, type, created, payload) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING")
        .bind(id)
        .bind(kind)
        .bind(created)
        .bind(payload)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A kept event not processed yet, locked for processing.
pub async fn pending_event(conn: &mut PgConnection, id: &str) -> sqlx::Result<Option<Value>> {
    sqlx::query_scalar("SELECT payload FROM stripe_events WHERE id = $1 AND processed_at IS NULL FOR UPDATE").bind(id).fetch_optional(conn).await
}

/// Marks an event processed with what it did.
pub async fn finish_event(conn: &mut PgConnection, id: &str, outcome: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE stripe_events SET processed_at = now(), outcome = $2 WHERE id = $1").bind(id).bind(outcome).execute(conn).await?;
    Ok(())
}

/// The team a Stripe customer belongs to, else the team an object's metadata names (when it exists).
pub async fn team_of(conn: &mut PgConnection, customer: Option<&str>, named: Option<Uuid>) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar(
        "SELECT team_id FROM team_billing WHERE stripe_customer_id = $1
         UNION ALL SELECT id FROM teams WHERE id = $2 LIMIT 1",
    )
    .bind(customer)
    .bind(named)
    .fetch_optional(conn)
    .await
}

/// What the plan and add-ons of a subscription's items are, by their prices: `(kind, code)` per
/// price id Herald knows.
pub async fn codes_of_prices(conn: &mut PgConnection, price_ids: &[String]) -> sqlx::Result<Vec<(String, String, String)>> {
    sqlx::query_as(
        "SELECT sp.price_id, CASE WHEN p.code IS NOT NULL THEN 'plan' ELSE 'addon' END, COALESCE(p.code, a.code)
         FROM stripe_prices sp
         LEFT JOIN plans p ON p.stripe_lookup_key = sp.lookup_key
         LEFT JOIN billing_addons a ON a.stripe_lookup_key = sp.lookup_key
         WHERE sp.price_id = ANY($1) AND (p.code IS NOT NULL OR a.code IS NOT NULL)",
    )
    .bind(price_ids)
    .fetch_all(conn)
    .await
}

/// A subscription as an event reports it.
#[derive(Debug, Clone)]
pub struct Subscription {
    pub id: String,
    pub customer: Option<String>,
    pub status: String,
    pub current_period_start: Option<DateTime<Utc>>,
    pub current_period_end: Option<DateTime<Utc>>,
    pub trial_ends_at: Option<DateTime<Utc>>,
    /// `automatic` or `send_invoice`.
    pub invoicing: String,
    pub cancel_at_period_end: bool,
    /// The plan its items hold (`None`: none Herald sells, e.g. a storage-only subscription).
    pub plan_code: Option<String>,
    /// `{ addon_code: quantity }`.
    pub addons: Value,
}

impl Subscription {
    /// Whether the subscription still grants its plan.
    pub fn live(&self) -> bool {
        matches!(self.status.as_str(), "active" | "trialing" | "past_due")
    }
}

/// Applies a subscription's state unless a newer event was applied already; the team's plan
/// follows a live subscription and falls back to `free` when it ends. True when applied.
pub async fn apply_subscription(conn: &mut PgConnection, team_id: Uuid, s: &Subscription, event_at: DateTime<Utc>) -> sqlx::Result<bool> {
    let applied = sqlx::query(
        "INSERT INTO team_billing AS tb (team_id, stripe_customer_id, stripe_subscription_id, subscription_status, current_period_start,
             current_period_end, trial_ends_at, invoicing, cancel_at_period_end, addons, subscription_event_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (team_id) DO UPDATE SET stripe_customer_id = COALESCE(tb.stripe_customer_id, excluded.stripe_customer_id),
             stripe_subscription_id = excluded.stripe_subscription_id, subscription_status = excluded.subscription_status,
             current_period_start = excluded.current_period_start, current_period_end = excluded.current_period_end,
             trial_ends_at = excluded.trial_ends_at, invoicing = excluded.invoicing, cancel_at_period_end = excluded.cancel_at_period_end,
             addons = excluded.addons, subscription_event_at = excluded.subscription_event_at, updated_at = now()
         WHERE tb.subscription_event_at IS NULL OR tb.subscription_event_at <= excluded.subscription_event_at",
    )
    .bind(team_id)
    .bind(&s.customer)
    .bind(&s.id)
    .bind(&s.status)
    .bind(s.current_period_start)
    .bind(s.current_period_end)
    .bind(s.trial_ends_at)
    .bind(&s.invoicing)
    .bind(s.cancel_at_period_end)
    .bind(&s.addons)
    .bind(event_at)
    .execute(&mut *conn)
    .await?;
    if applied.rows_affected() == 0 {
        return Ok(false);
    }
    if !s.live() {
        sqlx::query("UPDATE team_billing SET pending_plan_code = NULL, pending_effective_at = NULL WHERE team_id = $1").bind(team_id).execute(&mut *conn).await?;
    }
    let plan = if s.live() { s.plan_code.as_deref().unwrap_or("free") } else { "free" };
    sqlx::query("UPDATE teams SET plan_code = $2 WHERE id = $1 AND plan_code <> $2").bind(team_id).bind(plan).execute(conn).await?;
    Ok(true)
}

/// Applies an invoice's outcome unless a newer invoice event was applied already: its status,
/// and `payment_state` `past_due` after a failed payment, `ok` after a paid one.
pub async fn apply_invoice(conn: &mut PgConnection, team_id: Uuid, status: &str, payment_state: &str, event_at: DateTime<Utc>) -> sqlx::Result<bool> {
    let applied = sqlx::query(
        "INSERT INTO team_billing AS tb (team_id, latest_invoice_status, payment_state, invoice_event_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (team_id) DO UPDATE SET latest_invoice_status = excluded.latest_invoice_status, payment_state = excluded.payment_state,
             invoice_event_at = excluded.invoice_event_at, updated_at = now()
         WHERE tb.invoice_event_at IS NULL OR tb.invoice_event_at <= excluded.invoice_event_at",
    )
    .bind(team_id)
    .bind(status)
    .bind(payment_state)
    .bind(event_at)
    .execute(conn)
    .await?;
    Ok(applied.rows_affected() == 1)
}

/// Keeps the card on file as Stripe reports it (`None`: no payment method), then settles the
/// team's sending tier with `why`.
pub async fn set_payment_method(conn: &mut PgConnection, team_id: Uuid, card: Option<(&str, &str)>, why: &str) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO team_billing AS tb (team_id, payment_method_brand, payment_method_last4) VALUES ($1, $2, $3)
         ON CONFLICT (team_id) DO UPDATE SET payment_method_brand = excluded.payment_method_brand,
             payment_method_last4 = excluded.payment_method_last4, updated_at = now()",
    )
    .bind(team_id)
    .bind(card.map(|c| c.0))
    .bind(card.map(|c| c.1))
    .execute(&mut *conn)
    .await?;
    settle_tier(conn, team_id, why).await
}

/// Moves the team's sending tier to what its domains and payments allow, logging a move.
pub async fn settle_tier(conn: &mut PgConnection, team_id: Uuid, why: &str) -> sqlx::Result<()> {
    sqlx::query("SELECT settle_sending_tier($1, $2)").bind(team_id).bind(why).execute(conn).await?;
    Ok(())
}

/// Moves a team to `trusted` (an operator's review), or takes the trust back to what its
/// domains and payments allow; logs the move and answers the tier (`None`: no such team).
pub async fn trust(conn: &mut PgConnection, team_id: Uuid, trusted: bool) -> sqlx::Result<Option<i16>> {
    let was: Option<i16> = sqlx::query_scalar("SELECT sending_tier FROM teams WHERE id = $1 FOR NO KEY UPDATE").bind(team_id).fetch_optional(&mut *conn).await?;
    let Some(was) = was else { return Ok(None) };
    if trusted && was != 3 {
        sqlx::query("UPDATE teams SET sending_tier = 3 WHERE id = $1").bind(team_id).execute(&mut *conn).await?;
        sqlx::query("INSERT INTO sending_tier_moves (id, team_id, from_tier, to_tier, reason) VALUES ($1, $2, $3, 3, 'an operator reviewed the team')")
            .bind(crate::ids::new_id())
            .bind(team_id)
            .bind(was)
            .execute(&mut *conn)
            .await?;
    } else if !trusted && was == 3 {
        sqlx::query("SELECT settle_sending_tier($1, 'an operator took the trust back', true)").bind(team_id).execute(&mut *conn).await?;
    }
    sqlx::query_scalar("SELECT sending_tier FROM teams WHERE id = $1").bind(team_id).fetch_optional(conn).await
}
