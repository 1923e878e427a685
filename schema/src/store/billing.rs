//! A team's billing: its plan's prices, its subscription as the payment provider last reported
//! it, and its usage this period from Herald's own counters (the daily send counters and the
//! billable contacts).

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// What `GET /billing` reads, in one row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Billing {
    pub plan_code: String,
    pub plan_name: String,
    pub monthly_price_cents: i32,
    pub included_emails: i32,
    pub overage_per_1000_cents: Option<i32>,
    pub contact_overage_per_1000_cents: Option<i32>,
    pub daily_cap: Option<i32>,
    pub monthly_limit: Option<i32>,
    pub contact_limit: Option<i32>,
    pub inbox_seats_included: i32,
    pub subscription_status: Option<String>,
    pub current_period_start: Option<DateTime<Utc>>,
    pub current_period_end: Option<DateTime<Utc>>,
    pub invoicing: Option<String>,
    pub latest_invoice_status: Option<String>,
    pub trial_ends_at: Option<DateTime<Utc>>,
    pub pay_as_you_go: bool,
    pub spend_cap_cents: Option<i32>,
    pub stripe_subscription_id: Option<String>,
    /// A plan change waiting for the period's end, and when it applies.
    pub pending_plan_code: Option<String>,
    pub pending_effective_at: Option<DateTime<Utc>>,
    pub payment_method_brand: Option<String>,
    pub payment_method_last4: Option<String>,
    pub payment_state: String,
    /// Whether the subscription ends at its period's end.
    pub cancel_at_period_end: bool,
    /// The add-ons the subscription holds: `{ code: quantity }`.
    pub addons: serde_json::Value,
    /// Emails accepted in the period (every kind of send).
    pub emails: i64,
    /// Emails accepted today (UTC).
    pub emails_today: i64,
    /// Average emails a day over the last 30 days.
    pub avg_daily_sends_30d: i64,
}

impl Billing {
    /// Whether a subscription is live (it grants its plan and add-ons).
    pub fn subscribed(&self) -> bool {
        matches!(self.subscription_status.as_deref(), Some("active" | "trialing" | "past_due"))
    }

    /// How many of an add-on the subscription holds.
    pub fn addon(&self, code: &str) -> i64 {
        self.addons[code].as_i64().unwrap_or(0)
    }

    /// The period usage is counted over: the subscription's, else the calendar month (UTC).
    pub fn period(&self, now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
        match (self.current_period_start, self.current_period_end) {
            (Some(start), Some(end)) => (start, end),
            _ => calendar_month(now),
        }
    }
}

/// The UTC calendar month holding `now`.
pub fn calendar_month(now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let first = NaiveDate::from_ymd_opt(now.year(), now.month(), 1).unwrap_or(now.date_naive());
    let next = if now.month() == 12 { NaiveDate::from_ymd_opt(now.year() + 1, 1, 1) } else { NaiveDate::from_ymd_opt(now.year(), now.month() + 1, 1) };
    let at = |day: NaiveDate| Utc.from_utc_datetime(&day.and_hms_opt(0, 0, 0).unwrap_or_default());
    (at(first), at(next.unwrap_or(first)))
}

/// The team's billing row, with its send counts for the period that holds `now` (counted by
/// UTC day: the days from the period's first to today).
pub async fn read(conn: &mut PgConnection, team_id: Uuid, now: DateTime<Utc>) -> sqlx::Result<Billing> {
    let (month_start, _) = calendar_month(now);
    sqlx::query_as(
        "WITH b AS (
             SELECT p.code AS plan_code, p.name AS plan_name, p.monthly_price_cents, p.included_emails, p.overage_per_1000_cents,
                    p.contact_overage_per_1000_cents, l.daily_cap, l.monthly_limit, p.contact_limit, p.inbox_seats_included,
                    tb.subscription_status, tb.current_period_start, tb.current_period_end, tb.invoicing, tb.latest_invoice_status,
                    tb.trial_ends_at, COALESCE(tb.pay_as_you_go, false) AS pay_as_you_go, tb.spend_cap_cents, tb.stripe_subscription_id,
                    tb.pending_plan_code, tb.pending_effective_at, tb.payment_method_brand,
                    tb.payment_method_last4, COALESCE(tb.payment_state, 'ok') AS payment_state,
                    COALESCE(tb.cancel_at_period_end, false) AS cancel_at_period_end, COALESCE(tb.addons, '{}') AS addons,
                    (COALESCE(tb.current_period_start, $3) AT TIME ZONE 'UTC')::date AS from_day
             FROM teams t JOIN plans p ON p.code = t.plan_code JOIN team_limits l ON l.team_id = t.id LEFT JOIN team_billing tb ON tb.team_id = t.id
             WHERE t.id = $1
         )
         SELECT b.*,
             (SELECT COALESCE(sum(emails), 0) FROM send_usage WHERE team_id = $1 AND period_kind = 'day' AND period_start >= b.from_day AND period_start <= $2)::int8 AS emails,
             (SELECT COALESCE(sum(emails), 0) FROM send_usage WHERE team_id = $1 AND period_kind = 'day' AND period_start = $2)::int8 AS emails_today,
             (SELECT COALESCE(sum(emails), 0) / 30 FROM send_usage WHERE team_id = $1 AND period_kind = 'day' AND period_start > $2 - 30 AND period_start <= $2)::int8 AS avg_daily_sends_30d
         FROM b",
    )
    .bind(team_id)
    .bind(now.date_naive())
    .bind(month_start)
    .fetch_one(conn)
    .await
}

/// The email overage of a period: each started 1,000 past the included emails at the plan's
/// rate (none without a rate: such a plan stops at its limit).
pub fn email_overage_cents(emails: i64, included: i32, rate: Option<i32>) -> i64 {
    match rate {
        Some(rate) if emails > i64::from(included) => (emails - i64::from(included) + 999) / 1000 * i64::from(rate),
        _ => 0,
    }
}

impl Billing {
    /// What the period costs so far: the plan's price, its email overage and, with
    /// pay-as-you-go, the contact overage of the period's `peak`.
    pub fn period_charges_cents(&self, peak: i64) -> i64 {
        i64::from(self.monthly_price_cents)
            + email_overage_cents(self.emails, self.included_emails, self.overage_per_1000_cents)
            + contact_overage_cents(peak, self.contact_limit, self.contact_overage_per_1000_cents, self.pay_as_you_go)
    }
}

/// The contact overage a period's peak of billable contacts costs: each started 1,000 past the
/// plan's contacts at the plan's rate; nothing without pay-as-you-go, a rate or an allowance.
pub fn contact_overage_cents(peak: i64, included: Option<i32>, rate: Option<i32>, pay_as_you_go: bool) -> i64 {
    match (included, rate) {
        (Some(included), Some(rate)) if pay_as_you_go && peak > i64::from(included) => (peak - i64::from(included) + 999) / 1000 * i64::from(rate),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_started_thousand_past_the_plan_costs_the_rate_and_only_with_pay_as_you_go() {
        assert_eq!(contact_overage_cents(50_000, Some(50_000), Some(100), true), 0);
        assert_eq!(contact_overage_cents(50_001, Some(50_000), Some(100), true), 100);
        assert_eq!(contact_overage_cents(52_000, Some(50_000), Some(100), true), 200);
        assert_eq!(contact_overage_cents(52_001, Some(50_000), Some(100), true), 300);
        assert_eq!(contact_overage_cents(90_000, Some(50_000), Some(100), false), 0);
        assert_eq!(contact_overage_cents(90_000, Some(50_000), None, true), 0);
        assert_eq!(contact_overage_cents(90_000, None, Some(100), true), 0);
    }

    #[test]
    fn email_overage_is_each_started_thousand_past_the_included_emails() {
        assert_eq!(email_overage_cents(50_000, 50_000, Some(90)), 0);
        assert_eq!(email_overage_cents(50_001, 50_000, Some(90)), 90);
        assert_eq!(email_overage_cents(52_500, 50_000, Some(90)), 270);
        assert_eq!(email_overage_cents(90_000, 3_000, None), 0);
    }

    #[test]
    fn the_calendar_month_runs_from_its_first_day_to_the_next_months() {
        let (start, end) = calendar_month(Utc.with_ymd_and_hms(2026, 12, 31, 23, 59, 0).unwrap());
        assert_eq!((start, end), (Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(), Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap()));
    }
}
