//! Stripe's events applied to billing: each kept event once, in one transaction with its
//! effect. A subscription's state and an invoice's outcome only move forwards: an event older
//! than the last applied one of its kind changes nothing.

use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use chrono::{DateTime, Utc};
use crate::stripe::{PriceSpec, Stripe, StripeError};
use schema::jobs::{BillingJob, enqueue};
use schema::store::{billing_changes, usage_reports};
use schema::store::stripe::{self, Priced, Subscription};
use serde_json::{Map, Value, json};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// The billing queue's handler.
pub async fn handle(job: BillingJob, pool: Data<PgPool>, client: Data<Option<Stripe>>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    let done = match &job {
        BillingJob::StripeEvent { event_id } => apply(&pool, client.as_ref(), event_id).await,
        BillingJob::PlanChange { team_id } => change_plan_now(&pool, client.as_ref(), *team_id).await,
        BillingJob::ReportUsage { team_id, period_start } => crate::billing_usage::report(&pool, client.as_ref(), *team_id, *period_start).await,
    };
    match done {
        Ok(outcome) => {
            tracing::info!(?job, outcome, "billing job done");
            Ok(())
        }
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Events after which the customer's card may have changed: Herald asks Stripe for it.
const CARD_EVENTS: &[&str] = &["checkout.session.completed", "customer.updated", "customer.subscription.created", "payment_method.attached"];

/// Applies a kept event if it is not processed yet; answers what it did. The customer's card is
/// asked of Stripe before the transaction (never while holding its locks).
pub async fn apply(pool: &PgPool, client: Option<&Stripe>, event_id: &str) -> anyhow::Result<&'static str> {
    let Some(payload) = stripe::pending_event(&mut *pool.acquire().await?, event_id).await? else { return Ok("already_processed") };
    let event: crate::stripe::Event = serde_json::from_value(payload)?;
    let object = &event.data.object;
    let card = match (client, customer_of(object)) {
        (Some(client), Some(customer)) if CARD_EVENTS.contains(&event.kind.as_str()) => Some(client.default_card(customer).await?),
        _ => None,
    };
    let mut tx = pool.begin().await?;
    if stripe::pending_event(&mut tx, event_id).await?.is_none() {
        return Ok("already_processed");
    }
    let at = DateTime::from_timestamp(event.created, 0).unwrap_or_else(Utc::now);
    let outcome = match event.kind.as_str() {
        "customer.subscription.created" | "customer.subscription.updated" | "customer.subscription.deleted" => {
            let deleted = event.kind.ends_with("deleted");
            match team(&mut tx, object).await? {
                None => "unknown_customer",
                Some(team_id) => {
                    let subscription = read_subscription(&mut tx, object, deleted).await?;
                    let kept = usage_reports::kept_period(&mut tx, team_id).await?;
                    if stripe::apply_subscription(&mut tx, team_id, &subscription, at).await? {
                        close_period(&mut tx, team_id, kept, &subscription).await?;
                        "applied"
                    } else {
                        "stale"
                    }
                }
            }
        }
        "invoice.payment_failed" | "invoice.payment_succeeded" | "invoice.paid" => match team(&mut tx, object).await? {
            None => "unknown_customer",
            Some(team_id) => {
                let failed = event.kind == "invoice.payment_failed";
                let status = object["status"].as_str().unwrap_or(if failed { "open" } else { "paid" });
                let state = if failed { "past_due" } else { "ok" };
                if stripe::apply_invoice(&mut tx, team_id, status, state, at).await? {
                    stripe::settle_tier(&mut tx, team_id, if failed { "a payment failed" } else { "a payment succeeded" }).await?;
                    "applied"
                } else {
                    "stale"
                }
            }
        },
        "checkout.session.completed" => match team(&mut tx, object).await? {
            None => "unknown_customer",
            Some(team_id) => {
                if let Some(customer) = object["customer"].as_str() {
                    stripe::keep_customer(&mut tx, team_id, customer).await?;
                }
                "applied"
            }
        },
        _ => "ignored",
    };
    if let Some(card) = card
        && let Some(team_id) = team(&mut tx, object).await?
    {
        let why = if card.is_some() { "a payment method was added" } else { "the payment method was removed" };
        stripe::set_payment_method(&mut tx, team_id, card.as_ref().map(|(b, l)| (b.as_str(), l.as_str())), why).await?;
    }
    stripe::finish_event(&mut tx, event_id, outcome).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// When the subscription just left the period Herald kept (renewed into the next one, or
/// ended), keeps that period's usage as it stands, before the plan can move, and enqueues its
/// report to Stripe.
async fn close_period(tx: &mut PgConnection, team_id: Uuid, kept: Option<usage_reports::KeptPeriod>, now: &Subscription) -> anyhow::Result<()> {
    let Some(kept) = kept else { return Ok(()) };
    let renewed = now.id == kept.stripe_subscription_id && now.current_period_start.is_some_and(|start| start > kept.current_period_start);
    let ended = now.id == kept.stripe_subscription_id && !now.live();
    if (renewed || ended) && usage_reports::close_period(tx, team_id, &kept, ended).await? {
        enqueue(tx, &BillingJob::ReportUsage { team_id, period_start: kept.current_period_start }).await?;
    }
    Ok(())
}

/// The customer an object belongs to (a customer object is its own).
fn customer_of(object: &Value) -> Option<&str> {
    object["customer"].as_str().or_else(|| (object["object"] == "customer").then(|| object["id"].as_str()).flatten())
}

/// The team an object belongs to: by its customer, else by the team its metadata or
/// `client_reference_id` names.
async fn team(conn: &mut PgConnection, object: &Value) -> sqlx::Result<Option<Uuid>> {
    let named = [&object["metadata"]["team_id"], &object["client_reference_id"]]
        .into_iter()
        .find_map(|v| v.as_str().and_then(|s| s.parse::<Uuid>().ok()));
    stripe::team_of(conn, customer_of(object), named).await
}

/// The Stripe price of a plan or add-on: kept from an earlier call, else found by its lookup
/// key, else created with its product; the id is kept.
pub async fn price_for(pool: &PgPool, client: &Stripe, priced: &Priced) -> Result<String, PriceError> {
    if let Some(id) = stripe::price(&mut *pool.acquire().await?, &priced.lookup_key).await? {
        return Ok(id);
    }
    let found = match client.price_by_lookup_key(&priced.lookup_key).await? {
        Some(price) => price,
        None => client.create_price(&PriceSpec { lookup_key: &priced.lookup_key, name: &priced.name, unit_amount_cents: i64::from(priced.monthly_price_cents) }).await?,
    };
    stripe::keep_price(&mut *pool.acquire().await?, &priced.lookup_key, &found.id).await?;
    Ok(found.id)
}

/// Why a price could not be had.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    #[error(transparent)]
    Stripe(#[from] StripeError),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Applies a subscription object Stripe answered (to an update Herald made) as of now.
pub async fn apply_answer(conn: &mut PgConnection, team_id: Uuid, object: &Value) -> sqlx::Result<()> {
    let subscription = read_subscription(conn, object, false).await?;
    stripe::apply_subscription(conn, team_id, &subscription, Utc::now()).await?;
    Ok(())
}

/// Applies a team's pending plan change if it is due: the subscription moves to the plan's
/// price without proration (the period that ends was paid at the old price).
pub async fn change_plan_now(pool: &PgPool, client: Option<&Stripe>, team_id: Uuid) -> anyhow::Result<&'static str> {
    let Some(client) = client else { return Ok("no_provider") };
    let mut conn = pool.acquire().await?;
    let Some((code, Some(subscription_id))) = billing_changes::due_change(&mut conn, team_id).await? else { return Ok("not_due") };
    drop(conn);
    if code == "free" {
        // Stripe ends the subscription at the period's end; its `deleted` event moves the plan.
        return Ok("ends_with_the_subscription");
    }
    let Some(priced) = stripe::priced(&mut *pool.acquire().await?, "plan", &code).await? else { return Ok("unknown_plan") };
    let price = price_for(pool, client, &priced).await?;
    let current = client.subscription(&subscription_id).await?;
    let Some(item) = plan_item(&mut *pool.acquire().await?, &current).await? else { return Ok("no_plan_item") };
    let key = format!("herald-plan-change-{team_id}-{code}-{}", current["current_period_end"].as_i64().unwrap_or_default());
    let updated = client
        .update_subscription(&subscription_id, &[("items[0][id]", &item), ("items[0][price]", &price), ("proration_behavior", "none")], &key)
        .await?;
    let mut tx = pool.begin().await?;
    if billing_changes::due_change(&mut tx, team_id).await?.is_some() {
        apply_answer(&mut tx, team_id, &updated).await?;
        billing_changes::set_pending(&mut tx, team_id, None).await?;
    }
    tx.commit().await?;
    Ok("applied")
}

/// An item of a subscription that Herald sells: a plan or an add-on.
#[derive(Debug, Clone)]
pub struct SoldItem {
    /// Stripe's subscription item id.
    pub id: String,
    /// `plan` or `addon`.
    pub kind: String,
    pub code: String,
    pub quantity: i64,
}

/// The items of a subscription object that Herald sells, found by their prices (`price.id`, or
/// `plan.id` on older API versions).
pub async fn sold_items(conn: &mut PgConnection, object: &Value) -> sqlx::Result<Vec<SoldItem>> {
    let items = object["items"]["data"].as_array().cloned().unwrap_or_default();
    let price_of = |item: &Value| item["price"]["id"].as_str().or(item["plan"]["id"].as_str()).map(str::to_string);
    let prices: Vec<String> = items.iter().filter_map(price_of).collect();
    let codes = stripe::codes_of_prices(conn, &prices).await?;
    let mut sold = Vec::new();
    for item in &items {
        let Some(price) = price_of(item) else { continue };
        for (_, kind, code) in codes.iter().filter(|(p, _, _)| *p == price) {
            let id = item["id"].as_str().unwrap_or_default().to_string();
            sold.push(SoldItem { id, kind: kind.clone(), code: code.clone(), quantity: item["quantity"].as_i64().unwrap_or(1) });
        }
    }
    Ok(sold)
}

/// The id of the subscription's plan item (`None`: a subscription to add-ons only).
pub async fn plan_item(conn: &mut PgConnection, object: &Value) -> sqlx::Result<Option<String>> {
    Ok(sold_items(conn, object).await?.into_iter().find(|item| item.kind == "plan").map(|item| item.id))
}

/// A Stripe subscription object as Herald keeps it: its plan and add-ons (quantities summed
/// per add-on) found by the prices of its items.
pub async fn read_subscription(conn: &mut PgConnection, object: &Value, deleted: bool) -> sqlx::Result<Subscription> {
    let sold = sold_items(conn, object).await?;
    let plan_code = sold.iter().find(|item| item.kind == "plan").map(|item| item.code.clone());
    let mut addons = Map::new();
    for item in sold.iter().filter(|item| item.kind == "addon") {
        let held = addons.get(&item.code).and_then(Value::as_i64).unwrap_or(0);
        addons.insert(item.code.clone(), json!(held + item.quantity));
    }
    let items = object["items"]["data"].as_array().cloned().unwrap_or_default();
    let time = |v: &Value| v.as_i64().and_then(|t| DateTime::from_timestamp(t, 0));
    let first = items.first().cloned().unwrap_or(Value::Null);
    let status = if deleted { "canceled".to_string() } else { object["status"].as_str().unwrap_or("incomplete").to_string() };
    Ok(Subscription {
        id: object["id"].as_str().unwrap_or_default().to_string(),
        customer: object["customer"].as_str().map(str::to_string),
        status,
        current_period_start: time(&object["current_period_start"]).or_else(|| time(&first["current_period_start"])),
        current_period_end: time(&object["current_period_end"]).or_else(|| time(&first["current_period_end"])),
        trial_ends_at: time(&object["trial_end"]),
        invoicing: if object["collection_method"].as_str() == Some("send_invoice") { "send_invoice" } else { "automatic" }.to_string(),
        cancel_at_period_end: object["cancel_at_period_end"].as_bool().unwrap_or(false),
        plan_code,
        addons: Value::Object(addons),
    })
}
