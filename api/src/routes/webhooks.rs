//! Webhook endpoints: create (the signing secret is shown once), list, read, update, delete.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::paging::{page_of, page_request};
use crate::http::fields::{Choice, IdText, Nullable};
use crate::routes::{Deleted, Tag, Updated, path_id};
use crate::state::{AppState, Caller};
use base64::Engine;
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use rand::RngCore;
use schema::store::webhooks::{self, Change, DeliveredEvent, EVENT_TYPES, Endpoint};
use serde::Deserialize;

pub struct WebhooksApi;

crate::choices! {
    /// An event type Herald delivers.
    EventType = EVENT_TYPES;
    /// `enabled` or `disabled`.
    EndpointStatus = &["enabled", "disabled"];
}

/// Body of `POST /webhooks`.
#[derive(Object, Deserialize)]
pub struct CreateWebhook {
    /// The http(s) URL deliveries are POSTed to. It must resolve to public addresses unless
    /// the operator allows private ones.
    pub endpoint: String,
    /// The event types to deliver (document C's list), at least one.
    #[oai(validator(min_items = 1))]
    pub events: Vec<Choice<EventType>>,
}

/// The new endpoint. The signing secret is never shown again.
#[derive(Object)]
pub struct CreatedWebhook {
    /// Always `webhook`.
    pub object: String,
    /// The endpoint's id.
    pub id: String,
    /// `whsec_` + base64 of the HMAC key.
    pub signing_secret: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// The endpoint was created.
    #[oai(status = 201)]
    Created(Json<CreatedWebhook>),
}

/// A webhook endpoint.
#[derive(Object)]
pub struct WebhookView {
    /// Always `webhook`.
    pub object: String,
    /// The endpoint's id.
    pub id: String,
    /// The http(s) URL deliveries are POSTed to.
    pub endpoint: String,
    /// The event types delivered to it.
    pub events: Vec<String>,
    /// Whether the endpoint receives deliveries.
    pub status: Choice<EndpointStatus>,
    /// `manual`, or `failing` when Herald disabled it after failing every delivery for too long.
    pub disabled_reason: Nullable<String>,
    /// When the endpoint was created.
    pub created_at: DateTime<Utc>,
    /// When the endpoint was last changed.
    pub updated_at: DateTime<Utc>,
}

/// A page of endpoints.
#[derive(Object)]
pub struct WebhookList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<WebhookView>,
}

/// Body of `PATCH /webhooks/{webhook_id}`.
#[derive(Object, Deserialize)]
pub struct UpdateWebhook {
    /// The http(s) URL deliveries are POSTed to, under the same rules as on create.
    pub endpoint: Option<String>,
    /// The event types to deliver, at least one.
    #[oai(validator(min_items = 1))]
    pub events: Option<Vec<Choice<EventType>>>,
    /// `enabled` clears a failure record.
    pub status: Option<Choice<EndpointStatus>>,
}

/// An event as delivered to an endpoint.
#[derive(Object)]
pub struct WebhookEventView {
    /// Always `webhook_event`.
    pub object: String,
    /// The event's id (the `hook-id` of every delivery of it).
    pub id: String,
    /// The event type, such as `email.delivered`.
    #[oai(rename = "type")]
    pub event_type: String,
    /// When the event happened (the envelope's `created_at`).
    pub created_at: DateTime<Utc>,
    /// `pending` (not tried yet), `attempting` (tried, to be tried again), `success` or
    /// `failed`: the Resend SDKs' values.
    pub status: String,
    /// Attempts made so far to deliver it.
    pub attempts: i32,
    /// When it was last attempted, or `null` before the first attempt.
    pub last_attempt_at: Nullable<DateTime<Utc>>,
    /// When a pending delivery is tried next.
    pub next_attempt_at: Nullable<DateTime<Utc>>,
    /// The envelope's `data`.
    pub data: serde_json::Value,
    /// The envelope as delivered: `{ type, created_at, data }`.
    pub payload: serde_json::Value,
}

/// A page of delivered events.
#[derive(Object)]
pub struct WebhookEventList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<WebhookEventView>,
}

/// One attempt to deliver an event.
#[derive(Object)]
pub struct AttemptView {
    /// Always `webhook_attempt`.
    pub object: String,
    /// The attempt's id.
    pub id: String,
    /// The endpoint's HTTP status, when it answered.
    pub status_code: Nullable<i32>,
    /// Why there was no answer (`timed out`, `connection refused or unreachable`, ...).
    pub error: Nullable<String>,
    /// The first 2,048 bytes of the answer.
    pub response_body: Nullable<String>,
    /// Milliseconds the attempt took, until the answer or the error.
    pub latency_ms: i32,
    /// Whether a replay asked for it.
    pub replay: bool,
    /// When the attempt was made.
    pub created_at: DateTime<Utc>,
    /// The endpoint's HTTP status, `0` when it did not answer (the Resend SDKs' field).
    pub http_status_code: i32,
    /// The answer's first 2,048 bytes, or why there was none (the Resend SDKs' field).
    pub response: String,
    /// When the attempt was made (the Resend SDKs' field).
    pub sent_at: DateTime<Utc>,
}

/// An event's attempts, oldest first.
#[derive(Object)]
pub struct AttemptList {
    /// Always `list`.
    pub object: String,
    /// Whether more attempts follow this page.
    pub has_more: bool,
    /// The attempts, oldest first.
    pub data: Vec<AttemptView>,
}

/// How long the previous signing secret keeps signing after a rotation.
pub const ROTATION_OVERLAP_SECONDS: f64 = 24.0 * 3600.0;

#[poem_openapi::OpenApi(tag = "Tag::Webhooks")]
impl WebhooksApi {
    /// Create an endpoint subscribed to event types. Answers its signing secret, once.
    #[oai(path = "/webhooks", method = "post", operation_id = "create-webhook")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateWebhook>) -> ApiResult<CreateResponse> {
        let body = body.0;
        let events = event_types(&body.events)?;
        let url = routable(&state, &body.endpoint).await?;
        let (key, signing_secret) = new_key();
        let mut tx = state.pool.begin().await?;
        let limit = schema::store::teams::lock_webhook_limit(&mut tx, caller.team_id).await?;
        if webhooks::count(&mut tx, caller.team_id).await? >= limit as i64 {
            return Err(ApiError::refused(format!("Webhook endpoint limit reached: the plan allows {limit}.")));
        }
        let endpoint = webhooks::insert(&mut tx, caller.team_id, &url, &events, &key).await?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(CreatedWebhook {
            object: "webhook".into(),
            id: endpoint.id.to_string(),
            signing_secret,
        })))
    }

    /// List the team's endpoints, newest first.
    #[oai(path = "/webhooks", method = "get", operation_id = "list-webhooks")]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this id.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<WebhookList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let page = webhooks::list(&mut *state.pool.acquire().await?, caller.team_id, &page).await?;
        Ok(Json(WebhookList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(view).collect() }))
    }

    /// Retrieve an endpoint (without its secret).
    #[oai(path = "/webhooks/:webhook_id", method = "get", operation_id = "get-webhook")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, webhook_id: Path<String>) -> ApiResult<Json<WebhookView>> {
        let id = path_id(&webhook_id.0, "Webhook")?;
        let found = webhooks::get(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
        Ok(Json(view(found.ok_or_else(|| ApiError::not_found("Webhook"))?)))
    }

    /// Change an endpoint's URL, event types or status (`enabled` clears a failure record).
    #[oai(path = "/webhooks/:webhook_id", method = "patch", operation_id = "update-webhook")]
    async fn update(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        webhook_id: Path<String>,
        body: Body<UpdateWebhook>,
    ) -> ApiResult<Json<Updated>> {
        let id = path_id(&webhook_id.0, "Webhook")?;
        let body = body.0;
        let events = body.events.as_deref().map(event_types).transpose()?;
        if let Some(status) = &body.status
            && !matches!(status.as_str(), "enabled" | "disabled")
        {
            return Err(ApiError::refused("`status` must be `enabled` or `disabled`.").with_error("status", "must be enabled or disabled"));
        }
        let url = match &body.endpoint {
            Some(raw) => Some(routable(&state, raw).await?),
            None => None,
        };
        let change = Change { url, events, status: body.status.map(Choice::into_string) };
        let updated = webhooks::update(&mut *state.pool.acquire().await?, caller.team_id, id, &change).await?;
        let updated = updated.ok_or_else(|| ApiError::not_found("Webhook"))?;
        Ok(Json(Updated { object: "webhook".into(), id: updated.id.to_string() }))
    }

    /// List the events delivered (or being delivered) to an endpoint, newest first.
    #[oai(path = "/webhooks/:webhook_id/events", method = "get", operation_id = "list-webhook-events")]
    async fn events(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        webhook_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this event id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this event id.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<WebhookEventList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let endpoint = endpoint_of(&state, &caller, &webhook_id.0).await?;
        let page = webhooks::deliveries(&mut *state.pool.acquire().await?, endpoint.id, &page).await?;
        Ok(Json(WebhookEventList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(event_view).collect() }))
    }

    /// Retrieve one event as delivered to an endpoint.
    #[oai(path = "/webhooks/:webhook_id/events/:event_id", method = "get", operation_id = "get-webhook-event")]
    async fn event(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        webhook_id: Path<String>,
        event_id: Path<String>,
    ) -> ApiResult<Json<WebhookEventView>> {
        let (_, event) = delivered(&state, &caller, &webhook_id.0, &event_id.0).await?;
        Ok(Json(event_view(event)))
    }

    /// List the attempts to deliver one event to an endpoint, oldest first.
    #[oai(path = "/webhooks/:webhook_id/events/:event_id/attempts", method = "get", operation_id = "list-webhook-event-attempts")]
    async fn attempts(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        webhook_id: Path<String>,
        event_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<AttemptList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let (_, event) = delivered(&state, &caller, &webhook_id.0, &event_id.0).await?;
        let attempts = page_of(webhooks::attempts(&mut *state.pool.acquire().await?, event.delivery_id).await?, |a| a.id, &page)?;
        let has_more = attempts.has_more;
        let data = attempts
            .data
            .into_iter()
            .map(|a| AttemptView {
                object: "webhook_attempt".into(),
                id: a.id.to_string(),
                http_status_code: a.status_code.unwrap_or(0),
                response: a.response_body.clone().or_else(|| a.error.clone()).unwrap_or_default(),
                sent_at: a.created_at,
                status_code: a.status_code.into(),
                error: a.error.into(),
                response_body: a.response_body.into(),
                latency_ms: a.latency_ms,
                replay: a.replay,
                created_at: a.created_at,
            })
            .collect();
        Ok(Json(AttemptList { object: "list".into(), has_more, data }))
    }

    /// Deliver an event to an endpoint once more, now, with the same `hook-id` (one attempt, no
    /// retries). A disabled endpoint: `422 validation_error`.
    #[oai(path = "/webhooks/:webhook_id/events/:event_id/replay", method = "post", operation_id = "replay-webhook-event")]
    async fn replay(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        webhook_id: Path<String>,
        event_id: Path<String>,
    ) -> ApiResult<Json<Updated>> {
        let (endpoint, event) = delivered(&state, &caller, &webhook_id.0, &event_id.0).await?;
        if endpoint.status != "enabled" {
            return Err(ApiError::refused("The endpoint is disabled; enable it before replaying events to it."));
        }
        webhooks::replay(&mut *state.pool.acquire().await?, event.delivery_id).await?;
        Ok(Json(Updated { object: "webhook_event".into(), id: event.event_id.to_string() }))
    }

    /// Replace the endpoint's signing secret. For 24 hours deliveries carry two `v1,`
    /// signatures, one per secret, so receivers can switch without losing any.
    #[oai(path = "/webhooks/:webhook_id/signing-secret/rotate", method = "post", operation_id = "rotate-webhook-signing-secret")]
    async fn rotate(&self, state: Data<&AppState>, caller: Data<&Caller>, webhook_id: Path<String>) -> ApiResult<Json<CreatedWebhook>> {
        let id = path_id(&webhook_id.0, "Webhook")?;
        let (key, signing_secret) = new_key();
        let rotated = webhooks::rotate_key(&mut *state.pool.acquire().await?, caller.team_id, id, &key, ROTATION_OVERLAP_SECONDS).await?;
        if !rotated {
            return Err(ApiError::not_found("Webhook"));
        }
        Ok(Json(CreatedWebhook { object: "webhook".into(), id: id.to_string(), signing_secret }))
    }

    /// Delete an endpoint; its pending deliveries are dropped.
    #[oai(path = "/webhooks/:webhook_id", method = "delete", operation_id = "delete-webhook")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, webhook_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let id = path_id(&webhook_id.0, "Webhook")?;
        if !webhooks::delete(&mut *state.pool.acquire().await?, caller.team_id, id).await? {
            return Err(ApiError::not_found("Webhook"));
        }
        Ok(Json(Deleted { object: "webhook".into(), id: id.to_string(), deleted: true }))
    }
}

/// The team's endpoint, or 404.
async fn endpoint_of(state: &AppState, caller: &Caller, raw: &str) -> ApiResult<Endpoint> {
    let id = path_id(raw, "Webhook")?;
    let found = webhooks::get(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
    found.ok_or_else(|| ApiError::not_found("Webhook"))
}

/// The endpoint's delivery of an event, or 404.
async fn delivered(state: &AppState, caller: &Caller, webhook_id: &str, event_id: &str) -> ApiResult<(Endpoint, DeliveredEvent)> {
    let endpoint = endpoint_of(state, caller, webhook_id).await?;
    let event_id = path_id(event_id, "Event")?;
    let found = webhooks::delivery(&mut *state.pool.acquire().await?, endpoint.id, event_id).await?;
    Ok((endpoint, found.ok_or_else(|| ApiError::not_found("Event"))?))
}

fn event_view(event: DeliveredEvent) -> WebhookEventView {
    let status = match (event.status.as_str(), event.attempts) {
        ("succeeded", _) => "success",
        ("pending", 0) => "pending",
        ("pending", _) => "attempting",
        _ => "failed",
    };
    WebhookEventView {
        object: "webhook_event".into(),
        id: event.event_id.to_string(),
        payload: serde_json::json!({ "type": event.event_type, "created_at": event.event_created_at, "data": event.data }),
        event_type: event.event_type,
        created_at: event.event_created_at,
        next_attempt_at: (event.status == "pending").then_some(event.next_attempt_at).into(),
        status: status.into(),
        attempts: event.attempts,
        last_attempt_at: event.last_attempt_at.into(),
        data: event.data,
    }
}

/// A new signing key and the secret that names it.
fn new_key() -> ([u8; 32], String) {
    let mut key = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut key);
    (key, format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(key)))
}


/// At least one event type, each from document C's list; duplicates dropped.
fn event_types(raw: &[Choice<EventType>]) -> ApiResult<Vec<String>> {
    if raw.is_empty() {
        return Err(ApiError::refused("`events` must name at least one event type.").with_error("events", "must not be empty"));
    }
    let mut error: Option<ApiError> = None;
    let mut events = Vec::new();
    for (i, event) in raw.iter().enumerate() {
        if !EVENT_TYPES.contains(&event.as_str()) {
            let refused = error.take().unwrap_or_else(|| ApiError::refused(format!("`{event}` is not an event type Herald delivers.")));
            error = Some(refused.with_error(format!("events[{i}]"), "is not a known event type"));
        } else if !events.iter().any(|e| e == event.as_str()) {
            events.push(event.to_string());
        }
    }
    match error {
        Some(error) => Err(error),
        None => Ok(events),
    }
}

/// An http(s) URL with a host that resolves only to public addresses (unless allowed).
async fn routable(state: &AppState, raw: &str) -> ApiResult<String> {
    let unroutable = |why: String| ApiError::refused(format!("The endpoint URL is unroutable: {why}.")).with_error("endpoint", why);
    let url = reqwest::Url::parse(raw.trim()).map_err(|_| unroutable("it is not a URL".into()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(unroutable("it must be an http or https URL with a host".into()));
    }
    if !state.config.webhook_allow_private {
        jobs::webhooks::check_public(&url).await.map_err(unroutable)?;
    }
    Ok(url.to_string())
}

fn view(endpoint: Endpoint) -> WebhookView {
    WebhookView {
        object: "webhook".into(),
        id: endpoint.id.to_string(),
        endpoint: endpoint.url,
        events: endpoint.events,
        status: endpoint.status.into(),
        disabled_reason: endpoint.disabled_reason.into(),
        created_at: endpoint.created_at,
        updated_at: endpoint.updated_at,
    }
}
