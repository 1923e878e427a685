//! `POST /billing/stripe/webhook`: Stripe's events, checked by `Stripe-Signature` over the
//! bytes that arrived, kept once per event id with the job that applies them.

use crate::http::body::RawJson;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::routes::Tag;
use crate::state::AppState;
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::param::Header;
use poem_openapi::payload::Json;
use schema::jobs::{BillingJob, enqueue};

pub struct StripeEventsApi;

/// What Herald did with an event.
#[derive(Object)]
pub struct StripeEventReceipt {
    /// Always true: the event is kept (now or before).
    pub received: bool,
    /// False when this event id arrived before (a redelivery changes nothing).
    pub first_delivery: bool,
}

#[poem_openapi::OpenApi(tag = "Tag::Billing")]
impl StripeEventsApi {
    /// Stripe's webhook endpoint (no credential: the `Stripe-Signature` header is checked with
    /// `HERALD_STRIPE_WEBHOOK_SECRET`, its timestamp within 300 seconds). A bad signature is
    /// `400` and changes nothing; each event id is kept and applied once, in a job.
    #[oai(path = "/billing/stripe/webhook", method = "post", operation_id = "receive-stripe-event")]
    async fn receive(
        &self,
        state: Data<&AppState>,
        /// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.
        #[oai(name = "Stripe-Signature")]
        signature: Header<Option<String>>,
        body: RawJson,
    ) -> ApiResult<Json<StripeEventReceipt>> {
        let secret = state.config.stripe.as_ref().and_then(|s| s.webhook_secret.as_deref()).ok_or_else(|| {
            ApiError::new(ErrorKind::ServiceUnavailable, "Stripe's webhook is not configured on this Herald (HERALD_STRIPE_WEBHOOK_SECRET is unset).")
        })?;
        let header = signature.0.unwrap_or_default();
        jobs::stripe::verify_signature(secret, &header, &body.0, Utc::now().timestamp())
            .map_err(|e| ApiError::new(ErrorKind::Invalid, format!("The Stripe signature does not verify: {e}.")))?;
        let payload: serde_json::Value =
            serde_json::from_slice(&body.0).map_err(|e| ApiError::new(ErrorKind::Invalid, format!("The event is not JSON: {e}.")))?;
        let event: jobs::stripe::Event =
            serde_json::from_value(payload.clone()).map_err(|e| ApiError::new(ErrorKind::Invalid, format!("The event is not a Stripe event: {e}.")))?;
        let created = DateTime::from_timestamp(event.created, 0).unwrap_or_else(Utc::now);
        let mut tx = state.pool.begin().await?;
        let first = schema::store::stripe::keep_event(&mut tx, &event.id, &event.kind, created, &payload).await?;
        if first {
            enqueue(&mut tx, &BillingJob::StripeEvent { event_id: event.id.clone() }).await.map_err(anyhow::Error::from)?;
        }
        tx.commit().await?;
        Ok(Json(StripeEventReceipt { received: true, first_delivery: first }))
    }
}
