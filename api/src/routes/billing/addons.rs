//! `POST /billing/addons` and `DELETE /billing/addons/{addon_code}`: an add-on (Inbox storage,
//! Inbox seats) added to the team's subscription as an item of its own, prorated, or taken off.

use super::checkout::AddonCode;
use super::overview::{BillingView, current};
use super::plan::needs_checkout;
use super::provider;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices};
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::Utc;
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use schema::store::{billing, stripe};
use serde::Deserialize;

pub struct AddonsApi;

/// The add-on to hold, and how many.
#[derive(Object, Deserialize)]
pub struct AddonPurchase {
    /// The add-on: `inbox_storage_100gb` (one per team) or `inbox_seat` (sold per unit).
    pub addon_code: Choice<AddonCode>,
    /// How many the team holds afterwards, 1 to 100 (default 1): only `inbox_seat` is sold per
    /// unit. Asking again for what the team holds changes nothing.
    #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
    pub quantity: Option<i64>,
}

/// The subscription's id and Stripe's current object of it, or `422` pointing at a checkout.
async fn subscription(state: &AppState, team_id: uuid::Uuid) -> ApiResult<(String, serde_json::Value)> {
    let found = billing::read(&mut *state.pool.acquire().await?, team_id, Utc::now()).await?;
    let subscribed = found.subscribed();
    let Some(id) = found.stripe_subscription_id.filter(|_| subscribed) else { return Err(needs_checkout("add to")) };
    let client = provider::client(state)?;
    let object = client.subscription(&id).await.map_err(provider::failed)?;
    Ok((id, object))
}

/// Reads the subscription back from Stripe and keeps it; answers the billing object.
async fn settle(state: &AppState, team_id: uuid::Uuid, subscription_id: &str) -> ApiResult<BillingView> {
    let client = provider::client(state)?;
    let object = client.subscription(subscription_id).await.map_err(provider::failed)?;
    let mut tx = state.pool.begin().await?;
    jobs::billing::apply_answer(&mut tx, team_id, &object).await?;
    tx.commit().await?;
    current(state, team_id).await
}

#[poem_openapi::OpenApi(tag = "Tag::Billing")]
impl AddonsApi {
    /// Hold an add-on on the team's subscription (`full_access`): added as an item of its own,
    /// or its quantity set, prorated. Without a subscription: `422` with `details.next:
    /// "checkout"`; without a payment provider: `503`.
    #[oai(path = "/billing/addons", method = "post", operation_id = "add-billing-addon")]
    async fn add(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<AddonPurchase>) -> ApiResult<Json<BillingView>> {
        let body = body.0;
        if !AddonCode::allows(body.addon_code.as_str()) {
            return Err(ApiError::refused_field("addon_code", format!("must be one of {}", AddonCode::VALUES.join(", "))));
        }
        let code = body.addon_code.as_str();
        let priced = stripe::priced(&mut *state.pool.acquire().await?, "addon", code).await?.ok_or_else(|| ApiError::refused_field("addon_code", "is not sold"))?;
        let quantity = match body.quantity {
            None => 1,
            Some(n) if !(1..=100).contains(&n) => return Err(ApiError::invalid_field("quantity", "must be 1 to 100")),
            Some(_) if !priced.per_unit => return Err(ApiError::refused_field("quantity", format!("{code} is not sold per unit"))),
            Some(n) => n as u32,
        };
        let client = provider::client(&state)?;
        let team_id = caller.team_id;
        let (subscription_id, object) = subscription(&state, team_id).await?;
        let held = jobs::billing::sold_items(&mut *state.pool.acquire().await?, &object).await?.into_iter().find(|item| item.code == code);
        let key = format!("herald-addon-{}", schema::ids::new_id());
        match held {
            Some(item) if item.quantity == i64::from(quantity) => {}
            Some(item) => {
                client.update_subscription_item(&item.id, quantity, &key).await.map_err(provider::failed)?;
            }
            None => {
                let price = provider::price(&state, client, &priced).await?;
                client.create_subscription_item(&subscription_id, &price, quantity, &key).await.map_err(provider::failed)?;
            }
        }
        Ok(Json(settle(&state, team_id, &subscription_id).await?))
    }

    /// Take an add-on off the team's subscription (`full_access`), prorated. An add-on that is
    /// the subscription's only item ends with the subscription at the period's end.
    #[oai(path = "/billing/addons/:addon_code", method = "delete", operation_id = "remove-billing-addon")]
    async fn remove(&self, state: Data<&AppState>, caller: Data<&Caller>, addon_code: Path<String>) -> ApiResult<Json<BillingView>> {
        if !AddonCode::allows(&addon_code.0) {
            return Err(ApiError::not_found("add-on"));
        }
        let client = provider::client(&state)?;
        let team_id = caller.team_id;
        let (subscription_id, object) = subscription(&state, team_id).await?;
        let Some(item) = jobs::billing::sold_items(&mut *state.pool.acquire().await?, &object).await?.into_iter().find(|item| item.code == addon_code.0) else {
            return Err(ApiError::not_found("add-on"));
        };
        let items = object["items"]["data"].as_array().map_or(0, Vec::len);
        if items > 1 {
            client.delete_subscription_item(&item.id).await.map_err(provider::failed)?;
        } else {
            let key = format!("herald-addon-{}", schema::ids::new_id());
            client.update_subscription(&subscription_id, &[("cancel_at_period_end", "true")], &key).await.map_err(provider::failed)?;
        }
        Ok(Json(settle(&state, team_id, &subscription_id).await?))
    }
}
