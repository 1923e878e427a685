//! `POST /billing/plan` and `PATCH /billing`: a plan change (an upgrade at once with
//! proration, a downgrade at the period's end) and pay-as-you-go with its spend cap.

use super::overview::{BillingView, current};
use super::provider;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices};
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::Utc;
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use schema::jobs::{BillingJob, enqueue_at};
use schema::store::{billing, billing_changes, stripe};
use serde::Deserialize;
use serde_json::json;

pub struct PlanApi;

crate::choices! {
    /// A plan: `free`, `pro` or `scale`.
    PlanCode = &["free", "pro", "scale"];
}

/// The plan to move to.
#[derive(Object, Deserialize)]
pub struct PlanChange {
    /// The plan's code.
    pub plan_code: Choice<PlanCode>,
}

/// Pay-as-you-go, as set.
#[derive(Object, Deserialize)]
pub struct PayAsYouGoChange {
    /// Whether overage past the plan is billed rather than refused.
    pub enabled: bool,
}

/// What to change.
#[derive(Object, Deserialize)]
pub struct BillingChange {
    /// Bill overage past the plan (contacts, emails) rather than refuse it.
    pub pay_as_you_go: Option<PayAsYouGoChange>,
    /// The most a period's charges may reach, in US cents (plan and overage together), or
    /// `null` for no cap; never below what the period has cost so far.
    #[oai(validator(minimum(value = "0"), maximum(value = "100000000")))]
    #[serde(default)]
    pub spend_cap_cents: MaybeUndefined<i64>,
}

/// `422` pointing at a checkout: the team has no subscription to change.
pub(super) fn needs_checkout(what: &str) -> ApiError {
    ApiError::refused(format!("The team has no subscription to {what}; start one with `POST /billing/checkout`.")).with_details(json!({ "next": "checkout" }))
}

#[poem_openapi::OpenApi(tag = "Tag::Billing")]
impl PlanApi {
    /// Move the team to another plan (`full_access`): an upgrade applies at once with a
    /// prorated charge; a downgrade waits for the period's end (`pending_change`), and is
    /// refused while the team's usage is over the target plan's limits, each limit named.
    /// Asking for the current plan cancels a pending change.
    #[oai(path = "/billing/plan", method = "post", operation_id = "change-plan")]
    async fn change(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<PlanChange>) -> ApiResult<Json<BillingView>> {
        let code = body.0.plan_code;
        if !PlanCode::allows(code.as_str()) {
            return Err(ApiError::refused_field("plan_code", format!("must be one of {}", PlanCode::VALUES.join(", "))));
        }
        let client = provider::client(&state)?;
        let team_id = caller.team_id;
        let mut conn = state.pool.acquire().await?;
        let now = Utc::now();
        let billing = billing::read(&mut conn, team_id, now).await?;
        let target = billing_changes::plan(&mut conn, code.as_str()).await?.ok_or_else(|| ApiError::refused_field("plan_code", "there is no such plan"))?;
        let subscription_id = match (&billing.stripe_subscription_id, billing.subscribed()) {
            (Some(id), true) => id.clone(),
            _ if target.code == billing.plan_code => return Ok(Json(current(&state, team_id).await?)),
            _ => return Err(needs_checkout("change")),
        };
        let over = billing_changes::over_limits(&mut conn, team_id, &target.code).await?;
        if !over.is_empty() {
            let mut refused = ApiError::refused(format!("The team's usage is over the {} plan's limits.", target.code));
            for (limit, used, allowed) in over {
                refused = refused.with_error("plan_code", format!("{limit}: {used} in use, the {} plan allows {allowed}", target.code));
            }
            return Err(refused);
        }
        drop(conn);
        let key = format!("herald-plan-{}", schema::ids::new_id());
        if target.code == billing.plan_code {
            if billing.cancel_at_period_end {
                let updated = client.update_subscription(&subscription_id, &[("cancel_at_period_end", "false")], &key).await.map_err(provider::failed)?;
                let mut tx = state.pool.begin().await?;
                jobs::billing::apply_answer(&mut tx, team_id, &updated).await?;
                billing_changes::set_pending(&mut tx, team_id, None).await?;
                tx.commit().await?;
            } else {
                billing_changes::set_pending(&mut *state.pool.acquire().await?, team_id, None).await?;
            }
        } else if target.monthly_price_cents > billing.monthly_price_cents {
            let priced = stripe::priced(&mut *state.pool.acquire().await?, "plan", &target.code).await?.ok_or_else(|| ApiError::refused_field("plan_code", "is not sold"))?;
            let price = provider::price(&state, client, &priced).await?;
            let subscription = client.subscription(&subscription_id).await.map_err(provider::failed)?;
            // A subscription to add-ons only gains the plan as a new item.
            let item = jobs::billing::plan_item(&mut *state.pool.acquire().await?, &subscription).await?;
            let mut form = vec![("items[0][price]", price.as_str()), ("proration_behavior", "create_prorations"), ("cancel_at_period_end", "false")];
            if let Some(item) = &item {
                form.push(("items[0][id]", item.as_str()));
            }
            let updated = client.update_subscription(&subscription_id, &form, &key).await.map_err(provider::failed)?;
            let mut tx = state.pool.begin().await?;
            jobs::billing::apply_answer(&mut tx, team_id, &updated).await?;
            billing_changes::set_pending(&mut tx, team_id, None).await?;
            tx.commit().await?;
        } else {
            let effective_at = billing.current_period_end.unwrap_or(now);
            let updated = if target.code == "free" {
                Some(client.update_subscription(&subscription_id, &[("cancel_at_period_end", "true")], &key).await.map_err(provider::failed)?)
            } else {
                None
            };
            let mut tx = state.pool.begin().await?;
            if let Some(updated) = &updated {
                jobs::billing::apply_answer(&mut tx, team_id, updated).await?;
            }
            billing_changes::set_pending(&mut tx, team_id, Some((&target.code, effective_at))).await?;
            enqueue_at(&mut tx, &BillingJob::PlanChange { team_id }, effective_at.into()).await.map_err(anyhow::Error::from)?;
            tx.commit().await?;
        }
        Ok(Json(current(&state, team_id).await?))
    }
}

/// `PATCH /billing` (served with `GET /billing`): pay-as-you-go and the spend cap.
pub async fn update(state: &AppState, caller: &Caller, body: BillingChange) -> ApiResult<BillingView> {
    let cap = match body.spend_cap_cents {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(None),
        MaybeUndefined::Value(cents) if !(0..=100_000_000).contains(&cents) => return Err(ApiError::invalid_field("spend_cap_cents", "must be 0 to 100000000")),
        MaybeUndefined::Value(cents) => Some(Some(cents as i32)),
    };
    provider::client(state)?;
    let team_id = caller.team_id;
    let mut tx = state.pool.begin().await?;
    let billing = billing::read(&mut tx, team_id, Utc::now()).await?;
    if body.pay_as_you_go.as_ref().is_some_and(|p| p.enabled) && !billing.subscribed() {
        return Err(needs_checkout("bill overage to"));
    }
    if let Some(Some(cap)) = cap {
        let (_, peak) = schema::store::contacts::billable(&mut tx, team_id).await?;
        let charged = billing.period_charges_cents(peak);
        if i64::from(cap) < charged {
            return Err(ApiError::refused_field("spend_cap_cents", format!("is below what this period has cost so far ({charged} cents)")));
        }
    }
    billing_changes::set_overage(&mut tx, team_id, body.pay_as_you_go.map(|p| p.enabled), cap).await?;
    tx.commit().await?;
    current(state, team_id).await
}
