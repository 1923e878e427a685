//! Billing's way to Stripe: the configured client (or `503`), the team's customer and each
//! plan's or add-on's price, found once and kept.

use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::state::AppState;
use jobs::stripe::{Stripe, StripeError};
use schema::store::stripe::{self, Priced};
use uuid::Uuid;

/// The configured Stripe client; `503 service_unavailable` when billing has no provider.
pub fn client(state: &AppState) -> ApiResult<&Stripe> {
    state.stripe.as_ref().ok_or_else(|| {
        ApiError::new(ErrorKind::ServiceUnavailable, "Billing has no payment provider on this Herald (HERALD_STRIPE_SECRET_KEY is unset); `GET /billing` still answers.")
    })
}

/// `503 service_unavailable` for a call Stripe did not complete; nothing was changed.
pub fn failed(error: StripeError) -> ApiError {
    tracing::warn!(%error, "stripe call failed");
    ApiError::new(ErrorKind::ServiceUnavailable, format!("{error}. Nothing was changed; retry in a moment."))
}

/// The team's Stripe customer, created (and kept) on first use.
pub async fn customer(state: &AppState, stripe: &Stripe, team_id: Uuid) -> ApiResult<String> {
    let mut conn = state.pool.acquire().await?;
    let (kept, name) = stripe::customer(&mut conn, team_id).await?;
    if let Some(id) = kept {
        return Ok(id);
    }
    drop(conn);
    let created = stripe.create_customer(&team_id.to_string(), &name, None).await.map_err(failed)?;
    let mut conn = state.pool.acquire().await?;
    Ok(stripe::keep_customer(&mut conn, team_id, &created.id).await?)
}

/// The Stripe price of a plan or add-on (found by lookup key or created, and kept).
pub async fn price(state: &AppState, stripe: &Stripe, priced: &Priced) -> ApiResult<String> {
    jobs::billing::price_for(&state.pool, stripe, priced).await.map_err(|error| match error {
        jobs::billing::PriceError::Stripe(error) => failed(error),
        jobs::billing::PriceError::Database(error) => error.into(),
    })
}
