//! A closed period's metered usage reported to Stripe: one invoice item per meter with a
//! charge (email overage, contact overage), on the subscription's next invoice, or on an
//! invoice of its own when the subscription has ended. Each item's id is kept the moment Stripe
//! answers and each call carries an idempotency key made of the team, the period and the meter,
//! so a retried job adds nothing twice.

use crate::stripe::{InvoiceItemRequest, Stripe};
use chrono::{DateTime, Utc};
use schema::store::usage_reports::{self, Report};
use sqlx::PgPool;
use uuid::Uuid;

/// Reports the team's period that started at `period_start`, if it is kept and not reported.
pub async fn report(pool: &PgPool, client: Option<&Stripe>, team_id: Uuid, period_start: DateTime<Utc>) -> anyhow::Result<&'static str> {
    let Some(client) = client else { return Ok("no_provider") };
    let Some(report) = usage_reports::report(&mut *pool.acquire().await?, team_id, period_start).await? else { return Ok("no_report") };
    if report.status == "reported" {
        return Ok("already_reported");
    }
    let team = team_id.to_string();
    let key = |meter: &str| format!("herald-usage-{team}-{}-{meter}", period_start.timestamp());
    let meters = [
        ("emails", report.email_billed_cents, &report.email_item_id, format!("Email overage: {} emails on the {} plan", report.emails, report.plan_code)),
        ("contacts", report.contact_billed_cents, &report.contact_item_id, format!("Contact overage: a peak of {} billable contacts on the {} plan", report.peak_contacts, report.plan_code)),
    ];
    let mut charged = false;
    for (meter, cents, kept, description) in meters {
        if cents <= 0 {
            continue;
        }
        charged = true;
        if kept.is_some() {
            continue;
        }
        let item = client.create_invoice_item(&request(&report, &team, meter, cents, &description, &key(meter))).await?;
        usage_reports::keep_item(&mut *pool.acquire().await?, team_id, period_start, meter, &item.id).await?;
    }
    if charged && report.stripe_subscription_id.is_none() {
        client.invoice_pending_items(&report.stripe_customer_id, &key("invoice")).await?;
    }
    usage_reports::finish(&mut *pool.acquire().await?, team_id, period_start).await?;
    Ok(if charged { "reported" } else { "nothing_to_bill" })
}

fn request<'a>(report: &'a Report, team: &'a str, meter: &'a str, cents: i64, description: &'a str, key: &'a str) -> InvoiceItemRequest<'a> {
    InvoiceItemRequest {
        customer: &report.stripe_customer_id,
        subscription: report.stripe_subscription_id.as_deref(),
        amount_cents: cents,
        description,
        period_start: report.period_start.timestamp(),
        period_end: report.period_end.timestamp(),
        team_id: team,
        meter,
        idempotency_key: key,
    }
}
