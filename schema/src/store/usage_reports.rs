//! Each closed billing period's metered usage, worked out once when the period closes and
//! reported to the payment provider as one charge per meter (`billing_usage_reports`).

use super::billing::{contact_overage_cents, email_overage_cents};
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// The subscription and period a team's billing row holds, locked for the transaction that is
/// about to apply a newer state of the subscription.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct KeptPeriod {
    pub stripe_customer_id: String,
    pub stripe_subscription_id: String,
    pub current_period_start: DateTime<Utc>,
    pub current_period_end: DateTime<Utc>,
    /// The plan the period was on.
    pub plan_code: String,
}

/// The team's kept subscription period, if it has a live subscription with one.
pub async fn kept_period(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Option<KeptPeriod>> {
    sqlx::query_as(
        "SELECT tb.stripe_customer_id, tb.stripe_subscription_id, tb.current_period_start, tb.current_period_end, t.plan_code
         FROM team_billing tb JOIN teams t ON t.id = tb.team_id
         WHERE tb.team_id = $1 AND tb.subscription_status IN ('active', 'trialing', 'past_due') AND tb.stripe_customer_id IS NOT NULL
             AND tb.stripe_subscription_id IS NOT NULL AND tb.current_period_start IS NOT NULL AND tb.current_period_end IS NOT NULL
         FOR NO KEY UPDATE OF tb",
    )
    .bind(team_id)
    .fetch_optional(conn)
    .await
}

/// What a period used, and the plan's prices that bill it.
#[derive(Debug, sqlx::FromRow)]
struct Used {
    plan_code: String,
    monthly_price_cents: i32,
    included_emails: i32,
    overage_per_1000_cents: Option<i32>,
    contact_limit: Option<i32>,
    contact_overage_per_1000_cents: Option<i32>,
    pay_as_you_go: bool,
    spend_cap_cents: Option<i32>,
    emails: i64,
    peak_contacts: i64,
}

/// Splits what a spend cap leaves past the plan's price between the meters, emails first:
/// `(email_billed, contact_billed)`.
pub fn capped(email_cents: i64, contact_cents: i64, monthly_price_cents: i32, spend_cap_cents: Option<i32>) -> (i64, i64) {
    let room = spend_cap_cents.map_or(i64::MAX, |cap| (i64::from(cap) - i64::from(monthly_price_cents)).max(0));
    let emails = email_cents.min(room);
    (emails, contact_cents.min(room - emails))
}

/// Works out the usage of the period `kept` holds (emails by UTC day from its first day to
/// the day before its end; the peak of billable contacts over the months it spans) at the
/// prices of the plan it was on and the team's overage settings, and keeps it to be reported. True when this call kept it (a
/// period is kept once; `ended` leaves the charges to the customer's next invoice).
pub async fn close_period(conn: &mut PgConnection, team_id: Uuid, kept: &KeptPeriod, ended: bool) -> sqlx::Result<bool> {
    let used: Used = sqlx::query_as(
        "SELECT p.code AS plan_code, p.monthly_price_cents, p.included_emails, p.overage_per_1000_cents, p.contact_limit,
                p.contact_overage_per_1000_cents, COALESCE(tb.pay_as_you_go, false) AS pay_as_you_go, tb.spend_cap_cents,
                (SELECT COALESCE(sum(emails), 0) FROM send_usage WHERE team_id = t.id AND period_kind = 'day'
                     AND period_start >= ($2 AT TIME ZONE 'UTC')::date AND period_start < ($3 AT TIME ZONE 'UTC')::date)::int8 AS emails,
                (SELECT COALESCE(max(peak), 0) FROM billable_contact_peaks WHERE team_id = t.id
                     AND month >= date_trunc('month', $2 AT TIME ZONE 'UTC')::date AND month < ($3 AT TIME ZONE 'UTC')::date)::int8 AS peak_contacts
         FROM teams t JOIN plans p ON p.code = $4 LEFT JOIN team_billing tb ON tb.team_id = t.id WHERE t.id = $1",
    )
    .bind(team_id)
    .bind(kept.current_period_start)
    .bind(kept.current_period_end)
    .bind(&kept.plan_code)
    .fetch_one(&mut *conn)
    .await?;
    let email_cents = email_overage_cents(used.emails, used.included_emails, used.overage_per_1000_cents);
    let contact_cents = contact_overage_cents(used.peak_contacts, used.contact_limit, used.contact_overage_per_1000_cents, used.pay_as_you_go);
    let (email_billed, contact_billed) = capped(email_cents, contact_cents, used.monthly_price_cents, used.spend_cap_cents);
    let kept_now = sqlx::query(
        "INSERT INTO billing_usage_reports (team_id, period_start, period_end, stripe_customer_id, stripe_subscription_id, plan_code,
             emails, included_emails, email_overage_cents, peak_contacts, contacts_included, contact_overage_cents, spend_cap_cents,
             email_billed_cents, contact_billed_cents)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT (team_id, period_start) DO NOTHING",
    )
    .bind(team_id)
    .bind(kept.current_period_start)
    .bind(kept.current_period_end)
    .bind(&kept.stripe_customer_id)
    .bind((!ended).then_some(&kept.stripe_subscription_id))
    .bind(&used.plan_code)
    .bind(used.emails)
    .bind(used.included_emails)
    .bind(email_cents)
    .bind(used.peak_contacts)
    .bind(used.contact_limit)
    .bind(contact_cents)
    .bind(used.spend_cap_cents)
    .bind(email_billed)
    .bind(contact_billed)
    .execute(conn)
    .await?;
    Ok(kept_now.rows_affected() == 1)
}

/// A kept period's report, as far as it has gone.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Report {
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub stripe_customer_id: String,
    pub stripe_subscription_id: Option<String>,
    pub plan_code: String,
    pub emails: i64,
    pub peak_contacts: i64,
    pub email_billed_cents: i64,
    pub contact_billed_cents: i64,
    pub email_item_id: Option<String>,
    pub contact_item_id: Option<String>,
    pub status: String,
}

/// The report of the team's period that started at `period_start`.
pub async fn report(conn: &mut PgConnection, team_id: Uuid, period_start: DateTime<Utc>) -> sqlx::Result<Option<Report>> {
    sqlx::query_as(
        "SELECT period_start, period_end, stripe_customer_id, stripe_subscription_id, plan_code, emails, peak_contacts, email_billed_cents,
             contact_billed_cents, email_item_id, contact_item_id, status
         FROM billing_usage_reports WHERE team_id = $1 AND period_start = $2",
    )
    .bind(team_id)
    .bind(period_start)
    .fetch_optional(conn)
    .await
}

/// Keeps the provider's id of a meter's charge (`emails` or `contacts`) the moment it exists.
pub async fn keep_item(conn: &mut PgConnection, team_id: Uuid, period_start: DateTime<Utc>, meter: &str, item_id: &str) -> sqlx::Result<()> {
    let column = if meter == "emails" { "email_item_id" } else { "contact_item_id" };
    sqlx::query(sqlx::AssertSqlSafe(format!("UPDATE billing_usage_reports SET {column} = $3 WHERE team_id = $1 AND period_start = $2")))
        .bind(team_id)
        .bind(period_start)
        .bind(item_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Marks a period reported.
pub async fn finish(conn: &mut PgConnection, team_id: Uuid, period_start: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query("UPDATE billing_usage_reports SET status = 'reported', reported_at = now() WHERE team_id = $1 AND period_start = $2")
        .bind(team_id)
        .bind(period_start)
        .execute(conn)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::capped;

    #[test]
    fn a_spend_cap_bounds_the_overage_billed_emails_first() {
        assert_eq!(capped(270, 300, 2000, None), (270, 300));
        assert_eq!(capped(270, 300, 2000, Some(2400)), (270, 130));
        assert_eq!(capped(270, 300, 2000, Some(2100)), (100, 0));
        assert_eq!(capped(270, 300, 2000, Some(1000)), (0, 0), "a cap below the plan's price leaves no room");
    }
}
