//! `GET /billing`: the team's plan and its prices, the subscription as the payment provider last
//! reported it, and the period's usage from Herald's own counters.

use crate::http::error::ApiResult;
use crate::http::fields::{Choice, Nullable};
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::payload::Json;
use super::plan::BillingChange;
use crate::http::body::Body;
use schema::store::billing::{self, Billing};

pub struct BillingApi;

crate::choices! {
    /// How a storage add-on would be bought now: `add_item` (added to the subscription),
    /// `checkout` (a checkout starts a subscription), `held` (the team holds it already) or
    /// `unavailable` (no payment provider is configured).
    StorageAddonPurchase = &["add_item", "checkout", "held", "unavailable"];
}

/// Average sends a day from which a dedicated IP address is worth warming and keeping.
const DEDICATED_IP_MIN_DAILY: i64 = 5_000;

/// The plan and its prices.
#[derive(Object)]
pub struct BillingPlan {
    /// The plan's code (`free`, `pro`, `scale`).
    pub code: String,
    /// The plan's display name.
    pub name: String,
    /// The monthly price in US cents.
    pub monthly_price_cents: i32,
    /// Emails a period the plan includes.
    pub included_emails: i32,
    /// The price of each started 1,000 emails past those included, in US cents, or `null` when
    /// sending stops at the plan's monthly limit instead.
    pub overage_per_1000_cents: Nullable<i32>,
}

/// The subscription, as the payment provider last reported it.
#[derive(Object)]
pub struct BillingSubscription {
    /// The provider's status (`active`, `trialing`, `past_due`, `canceled`, ...).
    pub status: String,
    /// The start of the current billing period.
    pub current_period_start: Nullable<DateTime<Utc>>,
    /// The end of the current billing period.
    pub current_period_end: Nullable<DateTime<Utc>>,
    /// `automatic` (charged to the payment method) or `send_invoice`.
    pub invoicing: Nullable<String>,
    /// The status of the latest invoice, or `null` before the first.
    pub latest_invoice_status: Nullable<String>,
    /// When the trial ends, or `null` without one.
    pub trial_ends_at: Nullable<DateTime<Utc>>,
}

/// Usage this period, from Herald's own counters.
#[derive(Object)]
pub struct BillingUsage {
    /// The period's start: the subscription's, else the calendar month's (UTC).
    pub period_start: DateTime<Utc>,
    /// The period's end.
    pub period_end: DateTime<Utc>,
    /// Emails accepted this period: API, campaign and flow sends together.
    pub emails: i64,
    /// Emails the plan includes a period.
    pub included_emails: i32,
    /// Emails accepted today, counted against `daily_limit`.
    pub emails_today: i64,
    /// When today's count started: 00:00 UTC.
    pub day_start: DateTime<Utc>,
    /// Emails a day, or `null` for no daily limit.
    pub daily_limit: Nullable<i32>,
    /// Emails a period, or `null` when sending past the included emails is billed instead.
    pub monthly_limit: Nullable<i32>,
    /// Billable contacts the plan includes, or `null` for no limit.
    pub contacts_included: Nullable<i32>,
    /// Contacts billed now: subscribed to at least one topic and not suppressed.
    pub billable_contacts: i64,
    /// The most billable contacts this period.
    pub peak_billable_contacts: i64,
    /// The price of each started 1,000 billable contacts past the plan, in US cents, or `null`
    /// when new contacts past the plan are refused.
    pub contact_overage_per_1000_cents: Nullable<i32>,
    /// What the period's peak costs past the plan so far, in US cents (0 without pay-as-you-go).
    pub estimated_contact_overage_cents: i64,
}

/// Pay-as-you-go: overage billed rather than refused.
#[derive(Object)]
pub struct PayAsYouGo {
    /// Whether overage is billed.
    pub enabled: bool,
    /// The most a period's charges may reach, in US cents (plan and overage together); overage
    /// past it is refused as without pay-as-you-go. `null`: no cap.
    pub spend_cap_cents: Nullable<i32>,
}

/// The payment method on file.
#[derive(Object)]
pub struct PaymentMethod {
    /// Whether one is on file.
    pub present: bool,
    /// The card's brand, or `null`.
    pub brand: Nullable<String>,
    /// The card's last four digits, or `null`.
    pub last4: Nullable<String>,
}

/// An add-on the team holds.
#[derive(Object)]
pub struct BillingAddon {
    /// The add-on's code (`inbox_storage_100gb`, `inbox_seat`).
    pub code: String,
    /// How many the team holds.
    pub quantity: i32,
}

/// A plan change that takes effect at the period's end.
#[derive(Object)]
pub struct PendingChange {
    /// The plan the team moves to.
    pub plan_code: String,
    /// When it takes effect.
    pub effective_at: DateTime<Utc>,
}

/// Inbox seats: people who answer in the Inbox.
#[derive(Object)]
pub struct InboxSeats {
    /// The add-on's code: `inbox_seat`.
    pub code: String,
    /// Seats bought beyond those included.
    pub quantity: i32,
    /// Seats the plan includes.
    pub included: i32,
}

/// Whether a dedicated IP address is worth it.
#[derive(Object)]
pub struct DedicatedIp {
    /// Average sends a day from which one is recommended.
    pub recommended_min_daily: i64,
    /// The team's average sends a day over the last 30 days.
    pub avg_daily_sends_30d: i64,
}

/// The team's billing.
#[derive(Object)]
pub struct BillingView {
    /// Always `billing`.
    pub object: String,
    /// The plan and its prices.
    pub plan: BillingPlan,
    /// The plan whose limits apply now.
    pub effective_plan_code: String,
    /// The subscription, or `null` when the team has none.
    pub subscription: Nullable<BillingSubscription>,
    /// Usage this period.
    pub usage: BillingUsage,
    /// Whether overage is billed rather than refused.
    pub pay_as_you_go: PayAsYouGo,
    /// The payment method on file.
    pub payment_method: PaymentMethod,
    /// The add-ons the team holds.
    pub addons: Vec<BillingAddon>,
    /// A plan change waiting for the period's end, or `null`.
    pub pending_change: Nullable<PendingChange>,
    /// `ok`, or `past_due` after a failed payment.
    pub payment_state: String,
    /// True when the team has no subscription, so a checkout starts one.
    pub checkout_available: bool,
    /// Whether the team pays for a plan (a free-plan team may hold a storage-only subscription).
    pub paid_plan: bool,
    /// How a storage add-on would be bought now.
    pub storage_addon_purchase: Choice<StorageAddonPurchase>,
    /// Inbox seats.
    pub inbox_seats: InboxSeats,
    /// Whether a dedicated IP address is worth it.
    pub dedicated_ip: DedicatedIp,
}

#[poem_openapi::OpenApi(tag = "Tag::Billing")]
impl BillingApi {
    /// The team's plan, subscription and usage this period (`full_access`, or a token with
    /// `billing:read`).
    #[oai(path = "/billing", method = "get", operation_id = "get-billing")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>) -> ApiResult<Json<BillingView>> {
        Ok(Json(current(&state, caller.team_id).await?))
    }

    /// Turn pay-as-you-go on or off and set the spend cap (`full_access`). Pay-as-you-go needs a
    /// subscription (`422` with `details.next: "checkout"` without one); a cap below what the
    /// period has cost so far is refused.
    #[oai(path = "/billing", method = "patch", operation_id = "update-billing")]
    async fn update(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<BillingChange>) -> ApiResult<Json<BillingView>> {
        Ok(Json(super::plan::update(&state, &caller, body.0).await?))
    }
}

/// The team's billing object now.
pub async fn current(state: &AppState, team_id: uuid::Uuid) -> ApiResult<BillingView> {
    let now = Utc::now();
    let mut conn = state.pool.acquire().await?;
    let found = billing::read(&mut conn, team_id, now).await?;
    let (billable, peak) = schema::store::contacts::billable(&mut conn, team_id).await?;
    Ok(view(found, billable, peak, now, state.stripe.is_some()))
}

/// How a storage add-on would be bought now.
fn storage_purchase(b: &Billing, provider: bool) -> &'static str {
    match () {
        _ if !provider => "unavailable",
        _ if b.subscribed() && b.addon("inbox_storage_100gb") > 0 => "held",
        _ if b.subscribed() => "add_item",
        _ => "checkout",
    }
}

fn view(b: Billing, billable: i64, peak: i64, now: DateTime<Utc>, provider: bool) -> BillingView {
    let (period_start, period_end) = b.period(now);
    let subscribed = b.subscribed();
    let seats = if subscribed { b.addon("inbox_seat") as i32 } else { 0 };
    let addons = if subscribed { b.addons.as_object().cloned().unwrap_or_default() } else { Default::default() };
    let day_start = now.date_naive().and_hms_opt(0, 0, 0).unwrap_or_default().and_utc();
    BillingView {
        object: "billing".into(),
        effective_plan_code: b.plan_code.clone(),
        paid_plan: subscribed && b.monthly_price_cents > 0,
        checkout_available: !subscribed,
        storage_addon_purchase: Choice::new(storage_purchase(&b, provider)),
        subscription: Nullable(b.subscription_status.clone().map(|status| BillingSubscription {
            status,
            current_period_start: Nullable(b.current_period_start),
            current_period_end: Nullable(b.current_period_end),
            invoicing: Nullable(b.invoicing.clone()),
            latest_invoice_status: Nullable(b.latest_invoice_status.clone()),
            trial_ends_at: Nullable(b.trial_ends_at),
        })),
        usage: BillingUsage {
            period_start,
            period_end,
            emails: b.emails,
            included_emails: b.included_emails,
            emails_today: b.emails_today,
            day_start,
            daily_limit: Nullable(b.daily_cap),
            monthly_limit: Nullable(b.monthly_limit),
            contacts_included: Nullable(b.contact_limit),
            billable_contacts: billable,
            peak_billable_contacts: peak,
            contact_overage_per_1000_cents: Nullable(b.contact_overage_per_1000_cents),
            estimated_contact_overage_cents: billing::contact_overage_cents(peak, b.contact_limit, b.contact_overage_per_1000_cents, b.pay_as_you_go),
        },
        pay_as_you_go: PayAsYouGo { enabled: b.pay_as_you_go, spend_cap_cents: Nullable(b.spend_cap_cents) },
        payment_method: PaymentMethod {
            present: b.payment_method_last4.is_some(),
            brand: Nullable(b.payment_method_brand),
            last4: Nullable(b.payment_method_last4),
        },
        addons: addons.iter().map(|(code, quantity)| BillingAddon { code: code.clone(), quantity: quantity.as_i64().unwrap_or(0) as i32 }).collect(),
        pending_change: Nullable(b.pending_plan_code.clone().zip(b.pending_effective_at).map(|(plan_code, effective_at)| PendingChange { plan_code, effective_at })),
        payment_state: b.payment_state,
        inbox_seats: InboxSeats { code: "inbox_seat".into(), quantity: seats, included: b.inbox_seats_included },
        dedicated_ip: DedicatedIp { recommended_min_daily: DEDICATED_IP_MIN_DAILY, avg_daily_sends_30d: b.avg_daily_sends_30d },
        plan: BillingPlan {
            code: b.plan_code,
            name: b.plan_name,
            monthly_price_cents: b.monthly_price_cents,
            included_emails: b.included_emails,
            overage_per_1000_cents: Nullable(b.overage_per_1000_cents),
        },
    }
}
