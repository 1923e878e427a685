//! Stripe's events applied to billing: each kept event once, in one transaction with its
//! effect. A subscription's state and an invoice's outcome only move forwards: an event older
//! than the last applied one of its kind changes nothing.

use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use chrono::{DateTime, Utc};
use schema::jobs::ApplyStripeEvent;
use schema::store::stripe::{self, Subscription};
use serde_json::{Map, Value, json};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// The job handler.
pub async fn handle(job: ApplyStripeEvent, pool: Data<PgPool>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    match apply(&pool, &job.event_id).await {
        Ok(outcome) => {
            tracing::info!(event = %job.event_id, outcome, "stripe event processed");
            Ok(())
        }
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Applies a kept event if it is not processed yet; answers what it did.
pub async fn apply(pool: &PgPool, event_id: &str) -> anyhow::Result<&'static str> {
    let mut tx = pool.begin().await?;
    let Some(payload) = stripe::pending_event(&mut tx, event_id).await? else { return Ok("already_processed") };
    let event: crate::stripe::Event = serde_json::from_value(payload)?;
    let at = DateTime::from_timestamp(event.created, 0).unwrap_or_else(Utc::now);
    let object = &event.data.object;
    let outcome = match event.kind.as_str() {
        "customer.subscription.created" | "customer.subscription.updated" | "customer.subscription.deleted" => {
            let deleted = event.kind.ends_with("deleted");
            match team(&mut tx, object).await? {
                None => "unknown_customer",
                Some(team_id) => {
                    let subscription = read_subscription(&mut tx, object, deleted).await?;
                    if stripe::apply_subscription(&mut tx, team_id, &subscription, at).await? { "applied" } else { "stale" }
                }
            }
        }
        "invoice.payment_failed" | "invoice.payment_succeeded" | "invoice.paid" => match team(&mut tx, object).await? {
            None => "unknown_customer",
            Some(team_id) => {
                let failed = event.kind == "invoice.payment_failed";
                let status = object["status"].as_str().unwrap_or(if failed { "open" } else { "paid" });
                let state = if failed { "past_due" } else { "ok" };
                if stripe::apply_invoice(&mut tx, team_id, status, state, at).await? { "applied" } else { "stale" }
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
    stripe::finish_event(&mut tx, event_id, outcome).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// The team an object belongs to: by its customer, else by the team its metadata or
/// `client_reference_id` names.
async fn team(conn: &mut PgConnection, object: &Value) -> sqlx::Result<Option<Uuid>> {
    let named = [&object["metadata"]["team_id"], &object["client_reference_id"]]
        .into_iter()
        .find_map(|v| v.as_str().and_then(|s| s.parse::<Uuid>().ok()));
    stripe::team_of(conn, object["customer"].as_str(), named).await
}

/// A Stripe subscription object as Herald keeps it: its plan and add-ons found by the prices of
/// its items (`price.id`, or `plan.id` on older API versions).
async fn read_subscription(conn: &mut PgConnection, object: &Value, deleted: bool) -> sqlx::Result<Subscription> {
    let items = object["items"]["data"].as_array().cloned().unwrap_or_default();
    let price_of = |item: &Value| item["price"]["id"].as_str().or(item["plan"]["id"].as_str()).map(str::to_string);
    let prices: Vec<String> = items.iter().filter_map(price_of).collect();
    let codes = stripe::codes_of_prices(conn, &prices).await?;
    let mut plan_code = None;
    let mut addons = Map::new();
    for item in &items {
        let Some(price) = price_of(item) else { continue };
        for (_, kind, code) in codes.iter().filter(|(p, _, _)| *p == price) {
            if kind == "plan" {
                plan_code = Some(code.clone());
            } else {
                addons.insert(code.clone(), json!(item["quantity"].as_i64().unwrap_or(1)));
            }
        }
    }
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
