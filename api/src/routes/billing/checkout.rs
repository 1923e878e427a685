//! `POST /billing/checkout` and `POST /billing/portal`: Stripe's hosted pages, where a team
//! subscribes, buys an add-on, changes its card or reads its invoices.

use super::provider;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Choice;
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use jobs::stripe::CheckoutRequest;
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::payload::Json;
use serde::Deserialize;

pub struct CheckoutApi;

crate::choices! {
    /// A plan bought through checkout: `pro` or `scale`.
    PaidPlanCode = &["pro", "scale"];
    /// An add-on: `inbox_storage_100gb` (one per team) or `inbox_seat` (sold per unit).
    AddonCode = &["inbox_storage_100gb", "inbox_seat"];
    /// Where the dashboard takes the person after checkout: `plan` (default), `inbox` or
    /// `inbox_settings`.
    ReturnTo = &["plan", "inbox", "inbox_settings"];
}

/// What to buy.
#[derive(Object, Deserialize)]
pub struct CheckoutBody {
    /// The plan to subscribe to; exactly one of `plan_code` and `addon_code`.
    pub plan_code: Option<Choice<PaidPlanCode>>,
    /// The add-on to buy.
    pub addon_code: Option<Choice<AddonCode>>,
    /// Where the browser returns, absolute https; `checkout=success` or `checkout=cancelled` is
    /// appended to its query.
    #[oai(validator(max_length = 2048, pattern = r"^https://[A-Za-z][A-Za-z0-9-]*(\.[A-Za-z][A-Za-z0-9-]*)*(:[0-9]{1,4})?([/?#]\S*)?$"))]
    pub return_url: String,
    /// Where the dashboard goes after returning (default `plan`).
    pub return_to: Option<Choice<ReturnTo>>,
    /// How many, 1 to 100: only with `addon_code`, and only `inbox_seat` is sold per unit.
    #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
    pub quantity: Option<i64>,
}

/// A hosted checkout page.
#[derive(Object)]
pub struct CheckoutSessionView {
    /// Always `checkout_session`.
    pub object: String,
    /// The page to send the person to.
    pub url: String,
    /// When the page stops accepting payment.
    pub expires_at: DateTime<Utc>,
}

/// Where the portal returns.
#[derive(Object, Deserialize)]
pub struct PortalBody {
    /// Where the browser returns, absolute https.
    #[oai(validator(max_length = 2048, pattern = r"^https://[A-Za-z][A-Za-z0-9-]*(\.[A-Za-z][A-Za-z0-9-]*)*(:[0-9]{1,4})?([/?#]\S*)?$"))]
    pub return_url: String,
}

/// A hosted billing portal page.
#[derive(Object)]
pub struct PortalSessionView {
    /// Always `billing_portal_session`.
    pub object: String,
    /// The page to send the person to.
    pub url: String,
}

/// `url` with `checkout=<outcome>` appended to its query.
fn returning(url: &url::Url, outcome: &str) -> String {
    let mut url = url.clone();
    url.query_pairs_mut().append_pair("checkout", outcome);
    url.into()
}

#[poem_openapi::OpenApi(tag = "Tag::Billing")]
impl CheckoutApi {
    /// Open Stripe's hosted checkout for a plan or an add-on (`full_access`). The subscription
    /// it starts reaches Herald through Stripe's webhook. A team that has a subscription
    /// already (`checkout_available: false`) changes its plan with `POST /billing/plan` and adds
    /// add-ons with `POST /billing/addons` instead (`422`).
    #[oai(path = "/billing/checkout", method = "post", operation_id = "create-checkout-session")]
    async fn checkout(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CheckoutBody>) -> ApiResult<Json<CheckoutSessionView>> {
        let body = body.0;
        let (kind, code) = match (&body.plan_code, &body.addon_code) {
            (Some(plan), None) => ("plan", plan.as_str()),
            (None, Some(addon)) => ("addon", addon.as_str()),
            (None, None) => return Err(ApiError::missing_field("plan_code")),
            (Some(_), Some(_)) => return Err(ApiError::refused("Give exactly one of `plan_code` and `addon_code`.")),
        };
        let return_url = crate::http::input::https_url("return_url", &body.return_url)?;
        if let Some(to) = &body.return_to {
            use crate::http::fields::Choices;
            if !ReturnTo::allows(to.as_str()) {
                return Err(ApiError::refused_field("return_to", format!("must be one of {}", ReturnTo::VALUES.join(", "))));
            }
        }
        let mut conn = state.pool.acquire().await?;
        let priced = schema::store::stripe::priced(&mut conn, kind, code).await?;
        let subscribed = schema::store::billing::read(&mut conn, caller.team_id, Utc::now()).await?.subscribed();
        drop(conn);
        let Some(priced) = priced else {
            let field = if kind == "plan" { "plan_code" } else { "addon_code" };
            return Err(ApiError::refused_field(field, format!("there is no {kind} {code:?} to buy")));
        };
        let quantity = match body.quantity {
            None => 1,
            Some(n) if !(1..=100).contains(&n) => return Err(ApiError::invalid_field("quantity", "must be 1 to 100")),
            Some(_) if kind == "plan" => return Err(ApiError::refused_field("quantity", "is only for an add-on")),
            Some(_) if !priced.per_unit => return Err(ApiError::refused_field("quantity", format!("{code} is not sold per unit"))),
            Some(n) => n as u32,
        };
        let stripe = provider::client(&state)?;
        if subscribed {
            let instead = if kind == "plan" { "change its plan with `POST /billing/plan`" } else { "add the add-on with `POST /billing/addons`" };
            return Err(ApiError::refused(format!("The team has a subscription already (`checkout_available` is false): {instead}.")));
        }
        let customer = provider::customer(&state, stripe, caller.team_id).await?;
        let price = provider::price(&state, stripe, &priced).await?;
        let team = caller.team_id.to_string();
        let attempt = format!("herald-checkout-{}", schema::ids::new_id());
        let request = CheckoutRequest {
            customer: &customer,
            price_id: &price,
            quantity,
            success_url: &returning(&return_url, "success"),
            cancel_url: &returning(&return_url, "cancelled"),
            team_id: &team,
            idempotency_key: &attempt,
        };
        let session = stripe.checkout_session(&request).await.map_err(provider::failed)?;
        let expires_at = DateTime::from_timestamp(session.expires_at, 0).unwrap_or_else(Utc::now);
        Ok(Json(CheckoutSessionView { object: "checkout_session".into(), url: session.url, expires_at }))
    }

    /// Open Stripe's hosted billing portal, where the team changes its card, reads invoices and
    /// cancels (`full_access`).
    #[oai(path = "/billing/portal", method = "post", operation_id = "create-billing-portal-session")]
    async fn portal(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<PortalBody>) -> ApiResult<Json<PortalSessionView>> {
        let return_url = crate::http::input::https_url("return_url", &body.0.return_url)?;
        let stripe = provider::client(&state)?;
        let customer = provider::customer(&state, stripe, caller.team_id).await?;
        let session = stripe.portal_session(&customer, return_url.as_str()).await.map_err(provider::failed)?;
        Ok(Json(PortalSessionView { object: "billing_portal_session".into(), url: session.url }))
    }
}
