//! Sent email: send one or a batch, list and read them with their timeline, reschedule,
//! cancel, and read attachments.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::idempotency::{self, Begin, IdempotencyKey};
use crate::http::paging::{date_range, page_request, search_text};
use crate::http::fields::{Bounded, Choice, Choices, IdText, InstantOrDate, Nullable, Search};
use crate::routes::{Tag, Updated, path_id};
use crate::routes::emails::accept::{self, SendEmail};
use crate::state::{AppState, Caller};
use base64::Engine;
use chrono::{DateTime, Utc};
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::{ParseFromJSON, ToJSON};
use poem_openapi::{ApiResponse, Object};
use schema::jobs::Deliver;
use schema::store::emails::{self, Email, Recipient};
use schema::store::events::{self, NewEvent};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use uuid::Uuid;

pub struct EmailsApi;

crate::choices! {
    /// An email's latest event.
    EmailStatus = &[
        "queued", "scheduled", "sent", "delivered", "delivery_delayed", "bounced", "complained", "failed", "canceled", "suppressed",
    ];
}

/// `{ id }`: the email is durably recorded and accepted for sending (not delivered).
#[derive(Object, Clone)]
pub struct Sent {
    /// The email's id.
    pub id: String,
}

/// The answer of a batch: one `{ id }` per sent email, in order.
#[derive(Object)]
pub struct SentBatch {
    /// The accepted emails, in the order they were sent in.
    pub data: Vec<Sent>,
    /// With `x-batch-validation: permissive` only: the emails that were not sent, and why.
    #[oai(skip_serializing_if_is_none)]
    pub errors: Option<Vec<BatchRejection>>,
}

/// An email of a permissive batch that was refused (the others were sent).
#[derive(Object, Clone)]
pub struct BatchRejection {
    /// Its position in the request, from 0.
    pub index: u32,
    /// Why it was refused.
    pub message: String,
}

/// How a batch is validated (`x-batch-validation`).
#[derive(poem_openapi::Enum, Clone, Copy, PartialEq, Eq, Debug)]
#[oai(rename_all = "lowercase")]
pub enum BatchValidation {
    /// One bad email refuses the whole batch.
    Strict,
    /// The valid emails are sent; the answer's `errors` lists the others.
    Permissive,
}

/// The answer of `POST /emails`, which may be a replay of an idempotent request.
#[derive(ApiResponse)]
pub enum SendResponse {
    /// Accepted (or the original answer to this `Idempotency-Key`).
    #[oai(status = 200)]
    Ok(Json<Sent>),
}

/// The answer of `POST /emails/batch`, which may be a replay of an idempotent request.
#[derive(ApiResponse)]
pub enum BatchResponse {
    /// Accepted (or the original answer to this `Idempotency-Key`).
    #[oai(status = 200)]
    Ok(Json<SentBatch>),
}

/// One recipient and how its delivery stands.
#[derive(Object)]
pub struct RecipientView {
    /// The bare address.
    pub email: String,
    /// `to`, `cc` or `bcc`.
    pub kind: String,
    /// `queued`, `sending`, `delayed`, `sent`, `delivered`, `bounced`, `complained`, `failed`,
    /// `suppressed`, `ambiguous` or `canceled`.
    pub status: String,
    /// Submission attempts so far.
    pub attempts: i32,
    /// The last SMTP reply or failure.
    pub last_response: Nullable<String>,
}

/// One event of an email's timeline.
#[derive(Object)]
pub struct TimelineItem {
    pub id: String,
    /// The event type, such as `email.delivered`.
    #[oai(rename = "type")]
    pub event_type: String,
    pub created_at: DateTime<Utc>,
    /// The event's data, as webhooks deliver it.
    pub data: Value,
}

/// A sent email.
#[derive(Object)]
pub struct EmailView {
    /// Always `email`.
    pub object: String,
    pub id: String,
    pub from: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub reply_to: Vec<String>,
    pub subject: String,
    pub html: Nullable<String>,
    pub text: Nullable<String>,
    /// Custom headers, name to value.
    pub headers: BTreeMap<String, String>,
    /// Tags, name to value.
    pub tags: BTreeMap<String, String>,
    /// The Message-ID header's value (without angle brackets).
    pub message_id: String,
    /// The latest event: `queued`, `scheduled`, `sent`, `delivered`, `delivery_delayed`,
    /// `bounced`, `complained`, `failed`, `canceled` or `suppressed`.
    pub last_event: String,
    pub scheduled_at: Nullable<DateTime<Utc>>,
    /// Why the email failed (`ambiguous_submission`, `tls_required`).
    pub failed_reason: Nullable<String>,
    /// The key that sent it.
    pub api_key_id: Nullable<String>,
    /// Size of the bodies and attachments in bytes.
    pub size: i32,
    pub created_at: DateTime<Utc>,
    /// The template and the exact version the email was rendered from, or `null`.
    pub template: Nullable<EmailTemplate>,
    /// Per-recipient delivery (retrieve only).
    pub recipients: Nullable<Vec<RecipientView>>,
    /// The email's events, oldest first (retrieve only).
    pub events: Nullable<Vec<TimelineItem>>,
}

/// The template version a send used.
#[derive(Object)]
pub struct EmailTemplate {
    pub id: String,
    pub version: i32,
}

/// A page of emails.
#[derive(Object)]
pub struct EmailList {
    /// Always `list`.
    pub object: String,
    pub has_more: bool,
    pub data: Vec<EmailView>,
}

/// Of the emails accepted in a window, how many reached each outcome. Rates are fractions of
/// `received`.
#[derive(Object)]
pub struct EmailMetrics {
    /// Always `email_metrics`.
    pub object: String,
    pub start_date: DateTime<Utc>,
    pub end_date: DateTime<Utc>,
    /// Emails accepted from you for sending in the window (not inbound mail).
    pub received: i64,
    /// ...with at least one recipient's server accepting them (`email.sent`).
    pub sent: i64,
    /// ...delivered to at least one recipient's own mail server.
    pub delivered: i64,
    pub delivery_delayed: i64,
    pub bounced: i64,
    pub complained: i64,
    pub failed: i64,
    pub suppressed: i64,
    pub canceled: i64,
    /// Engagement: opened at least once (when open tracking is on).
    pub opened: i64,
    /// Engagement: a link clicked at least once (when click tracking is on).
    pub clicked: i64,
    pub delivery_rate: f64,
    pub bounce_rate: f64,
    pub complaint_rate: f64,
    pub open_rate: f64,
    pub click_rate: f64,
}

/// Body of `PATCH /emails/{email_id}`.
#[derive(Object, Deserialize)]
pub struct Reschedule {
    /// The new time: ISO 8601 or a phrase, 1 minute to 30 days ahead.
    pub scheduled_at: String,
}

/// An attachment of a sent email.
#[derive(Object)]
pub struct AttachmentView {
    /// Always `attachment`.
    pub object: String,
    pub id: String,
    pub filename: String,
    pub content_type: String,
    pub content_id: Nullable<String>,
    /// Bytes.
    pub size: i32,
    /// The bytes, base64 (retrieve only).
    pub content: Nullable<String>,
}

/// The attachments of an email.
#[derive(Object)]
pub struct AttachmentList {
    /// Always `list`.
    pub object: String,
    pub has_more: bool,
    pub data: Vec<AttachmentView>,
}

#[poem_openapi::OpenApi(tag = "Tag::Emails")]
impl EmailsApi {
    /// Send an email. Answers `{ id }` once the email, its recipients and its delivery job are
    /// committed: accepted for sending, not delivered.
    #[oai(path = "/emails", method = "post", operation_id = "send-email")]
    async fn send(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// 1 to 256 characters; a replay within 24 hours answers the original response.
        #[oai(name = "Idempotency-Key")]
        idempotency_key: Header<Option<Bounded<1, 256>>>,
        body: Body<SendEmail>,
    ) -> ApiResult<SendResponse> {
        let Body(body, raw) = body;
        let now = Utc::now();
        idempotent(&state, &caller, idempotency_key.0.as_deref(), "/emails", &raw, || async {
            let mut bodies = [body];
            let problems = accept::apply_templates(&mut *state.pool.acquire().await?, caller.team_id, &mut bodies, false).await?;
            if let Some(problems) = problems.into_iter().find(|p| !p.is_empty()) {
                return Err(accept::problems_error(problems));
            }
            let [body] = bodies;
            let parsed = accept::parse(body, None, now).map_err(accept::problems_error)?;
            let facts = accept::team_facts(&mut *state.pool.acquire().await?, caller.team_id, std::slice::from_ref(&parsed), state.config.is_development()).await?;
            Ok(vec![accept::authorize(&caller, &facts, parsed, &state.fetcher, None).await?])
        }, |ids| Sent { id: ids[0].to_string() })
        .await
        .map(|sent| SendResponse::Ok(Json(sent)))
    }

    /// Send up to 100 emails in one request, validated all or nothing (errors name the index).
    /// Uses one rate-limit token.
    #[oai(path = "/emails/batch", method = "post", operation_id = "send-batch-emails")]
    async fn batch(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// 1 to 256 characters; a replay within 24 hours answers the original response.
        #[oai(name = "Idempotency-Key")]
        idempotency_key: Header<Option<Bounded<1, 256>>>,
        /// `strict` (the default): one bad email refuses the whole batch. `permissive`: the
        /// valid emails are sent and `errors` lists the others.
        #[oai(name = "x-batch-validation")]
        validation: Header<Option<BatchValidation>>,
        body: Body<Vec<SendEmail>>,
    ) -> ApiResult<BatchResponse> {
        let Body(items, raw) = body;
        let now = Utc::now();
        if items.is_empty() || items.len() > schema::email::MAX_BATCH {
            return Err(ApiError::invalid_field("body", format!("a batch holds 1 to {} emails", schema::email::MAX_BATCH)));
        }
        let permissive = validation.0 == Some(BatchValidation::Permissive);
        let rejected = std::sync::Mutex::new(Vec::new());
        let reject = |index: usize, message: String| {
            rejected.lock().unwrap_or_else(|e| e.into_inner()).push(BatchRejection { index: index as u32, message });
        };
        idempotent(&state, &caller, idempotency_key.0.as_deref(), "/emails/batch", &raw, || async {
            let mut items = items;
            let template_problems = accept::apply_templates(&mut *state.pool.acquire().await?, caller.team_id, &mut items, true).await?;
            let (mut indexes, mut parsed) = (Vec::with_capacity(items.len()), Vec::with_capacity(items.len()));
            let mut problems = Vec::new();
            for ((index, item), found) in items.into_iter().enumerate().zip(template_problems) {
                let checked = if found.is_empty() { accept::parse(item, Some(index), now) } else { Err(found) };
                match checked {
                    Ok(one) => {
                        indexes.push(index);
                        parsed.push(one);
                    }
                    Err(found) if permissive => reject(index, accept::problems_error(found).message),
                    Err(found) => problems.extend(found),
                }
            }
            if !problems.is_empty() {
                return Err(accept::problems_error(problems));
            }
            let facts = accept::team_facts(&mut *state.pool.acquire().await?, caller.team_id, &parsed, state.config.is_development()).await?;
            let mut ready = Vec::with_capacity(parsed.len());
            for (index, one) in indexes.into_iter().zip(parsed) {
                match accept::authorize(&caller, &facts, one, &state.fetcher, Some(index)).await {
                    Ok(one) => ready.push(one),
                    Err(error) if permissive && error.status.is_client_error() => reject(index, error.message),
                    Err(error) => return Err(error),
                }
            }
            Ok(ready)
        }, |ids| SentBatch {
            data: ids.iter().map(|id| Sent { id: id.to_string() }).collect(),
            errors: permissive.then(|| rejected.lock().unwrap_or_else(|e| e.into_inner()).clone()),
        })
        .await
        .map(|sent| BatchResponse::Ok(Json(sent)))
    }

    /// List the team's emails, newest first.
    #[oai(path = "/emails", method = "get", operation_id = "list-emails")]
    #[allow(clippy::too_many_arguments)]
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
        /// Only emails whose latest event is this one.
        status: Query<Option<Choice<EmailStatus>>>,
        /// Only emails sent with this key.
        api_key_id: Query<Option<IdText>>,
        /// ISO 8601 instant or calendar date, inclusive.
        start_date: Query<Option<InstantOrDate>>,
        /// ISO 8601 instant or calendar date, inclusive.
        end_date: Query<Option<InstantOrDate>>,
        /// 1 to 200 characters, case-insensitive, against the subject, sender and recipients.
        search: Query<Option<Search<200>>>,
        /// Comma-separated `name` or `name:value`; every one must match.
        #[oai(validator(pattern = r"^ *([A-Za-z0-9_-]{1,252}(:[A-Za-z0-9_-]{1,256})?)? *(, *([A-Za-z0-9_-]{1,252}(:[A-Za-z0-9_-]{1,256})?)? *)*$"))]
        tags: Query<Option<String>>,
    ) -> ApiResult<Json<EmailList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let (start, end) = date_range(start_date.0, end_date.0, true)?;
        if let Some(status) = &status.0
            && !EmailStatus::allows(status)
        {
            return Err(ApiError::invalid_parameter("status", format!("must be one of {}", EmailStatus::VALUES.join(", "))));
        }
        let api_key_id = api_key_id
            .0
            .map(|raw| schema::ids::parse_id(&raw).ok_or_else(|| ApiError::invalid_parameter("api_key_id", "must be a key id")))
            .transpose()?;
        let (tag_names, tag_pairs) = tag_filter(tags.0.as_deref())?;
        let filter = emails::ListFilter { status: status.0.map(Choice::into_string), api_key_id, start, end, search: search_text(search.0)?, tag_names, tag_pairs };
        let mut conn = state.pool.acquire().await?;
        let page = emails::list(&mut conn, caller.team_id, &filter, &page).await?;
        let ids: Vec<Uuid> = page.data.iter().map(|e| e.id).collect();
        let recipients = emails::recipients(&mut conn, &ids).await?;
        let data = page.data.into_iter().map(|email| view(email, &recipients, false)).collect();
        Ok(Json(EmailList { object: "list".into(), has_more: page.has_more, data }))
    }

    /// Delivery, bounce, complaint and engagement counts of the emails accepted in a window
    /// (default the last 30 days), each email counted once per outcome.
    #[oai(path = "/emails/metrics", method = "get", operation_id = "get-email-metrics")]
    async fn metrics(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// ISO 8601 instant or calendar date, inclusive (default 30 days before `end_date`).
        start_date: Query<Option<InstantOrDate>>,
        /// ISO 8601 instant or calendar date, inclusive (default now, or `start_date` when that is later).
        end_date: Query<Option<InstantOrDate>>,
    ) -> ApiResult<Json<EmailMetrics>> {
        let (start, end) = date_range(start_date.0, end_date.0, true)?;
        let end = end.unwrap_or_else(|| start.map_or_else(Utc::now, |start| start.max(Utc::now())));
        let start = start.unwrap_or(end - chrono::TimeDelta::days(30));
        if end < start {
            return Err(ApiError::invalid_parameter("start_date", "must not be after `end_date`"));
        }
        let mut conn = state.pool.acquire().await?;
        let counts: HashMap<String, i64> = emails::metrics(&mut conn, caller.team_id, start, end).await?.into_iter().collect();
        let count = |kind: &str| counts.get(kind).copied().unwrap_or(0);
        let received = count("received");
        let rate = |n: i64| if received == 0 { 0.0 } else { n as f64 / received as f64 };
        Ok(Json(EmailMetrics {
            object: "email_metrics".into(),
            start_date: start,
            end_date: end,
            received,
            sent: count("email.sent"),
            delivered: count("email.delivered"),
            delivery_delayed: count("email.delivery_delayed"),
            bounced: count("email.bounced"),
            complained: count("email.complained"),
            failed: count("email.failed"),
            suppressed: count("email.suppressed"),
            canceled: count("email.canceled"),
            opened: count("email.opened"),
            clicked: count("email.clicked"),
            delivery_rate: rate(count("email.delivered")),
            bounce_rate: rate(count("email.bounced")),
            complaint_rate: rate(count("email.complained")),
            open_rate: rate(count("email.opened")),
            click_rate: rate(count("email.clicked")),
        }))
    }

    /// Retrieve an email with its recipients' delivery and its event timeline.
    #[oai(path = "/emails/:email_id", method = "get", operation_id = "get-email")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, email_id: Path<String>) -> ApiResult<Json<EmailView>> {
        let id = path_id(&email_id.0, "Email")?;
        let mut conn = state.pool.acquire().await?;
        let email = emails::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        let recipients = emails::recipients(&mut conn, &[id]).await?;
        let timeline = emails::timeline(&mut conn, id).await?;
        let mut view = view(email, &recipients, true);
        view.events = Nullable::from(Some(
            timeline
                .into_iter()
                .map(|e| TimelineItem { id: e.id.to_string(), event_type: e.event_type, created_at: e.created_at, data: e.data })
                .collect(),
        ));
        Ok(Json(view))
    }

    /// Reschedule a scheduled email. Once a worker has dispatched it: `409 resource_locked`.
    #[oai(path = "/emails/:email_id", method = "patch", operation_id = "update-email")]
    async fn update(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        email_id: Path<String>,
        body: Body<Reschedule>,
    ) -> ApiResult<Json<Updated>> {
        let id = path_id(&email_id.0, "Email")?;
        let at = schema::when::parse_scheduled_at(&body.0.scheduled_at, Utc::now())
            .map_err(|e| ApiError::invalid_field("scheduled_at", e.message()))?;
        let mut tx = state.pool.begin().await?;
        let email = emails::lock(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        if email.dispatched_at.is_some() || email.last_event != "scheduled" {
            return Err(locked(&email));
        }
        emails::reschedule(&mut tx, id, at).await?;
        schema::jobs::enqueue_at(&mut tx, &Deliver { email_id: id }, at.into()).await.map_err(anyhow::Error::from)?;
        tx.commit().await?;
        Ok(Json(Updated { object: "email".into(), id: id.to_string() }))
    }

    /// Cancel an email no worker has dispatched yet; emits `email.canceled`. Once dispatched:
    /// `409 resource_locked`.
    #[oai(path = "/emails/:email_id/cancel", method = "post", operation_id = "cancel-email")]
    async fn cancel(&self, state: Data<&AppState>, caller: Data<&Caller>, email_id: Path<String>) -> ApiResult<Json<Updated>> {
        let id = path_id(&email_id.0, "Email")?;
        let mut tx = state.pool.begin().await?;
        let email = emails::lock(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        if email.dispatched_at.is_some() || !matches!(email.last_event.as_str(), "scheduled" | "queued") {
            return Err(locked(&email));
        }
        emails::cancel(&mut tx, id).await?;
        let recipients = emails::recipients(&mut tx, &[id]).await?;
        let to: Vec<&str> = recipients.iter().map(|r| r.email.as_str()).collect();
        let event = NewEvent { team_id: caller.team_id, event_type: "email.canceled", data: email.event_data(&to, None), email_id: Some(id) };
        events::emit(&mut tx, &[event]).await?;
        tx.commit().await?;
        Ok(Json(Updated { object: "email".into(), id: id.to_string() }))
    }

    /// List an email's attachments (without their bytes).
    #[oai(path = "/emails/:email_id/attachments", method = "get", operation_id = "list-email-attachments")]
    async fn attachments(&self, state: Data<&AppState>, caller: Data<&Caller>, email_id: Path<String>) -> ApiResult<Json<AttachmentList>> {
        let id = path_id(&email_id.0, "Email")?;
        let mut conn = state.pool.acquire().await?;
        emails::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        let data = emails::attachments(&mut conn, id).await?.into_iter().map(|a| attachment_view(a, None)).collect();
        Ok(Json(AttachmentList { object: "list".into(), has_more: false, data }))
    }

    /// Retrieve one attachment with its bytes (base64).
    #[oai(path = "/emails/:email_id/attachments/:attachment_id", method = "get", operation_id = "get-email-attachment")]
    async fn attachment(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        email_id: Path<String>,
        attachment_id: Path<String>,
    ) -> ApiResult<Json<AttachmentView>> {
        let id = path_id(&email_id.0, "Email")?;
        let attachment_id = path_id(&attachment_id.0, "Attachment")?;
        let mut conn = state.pool.acquire().await?;
        emails::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        let found = emails::attachment(&mut conn, id, attachment_id).await?.ok_or_else(|| ApiError::not_found("Attachment"))?;
        Ok(Json(attachment_view(found.attachment, Some(base64::engine::general_purpose::STANDARD.encode(found.content)))))
    }
}

/// Runs a send under its idempotency key: a replay answers the stored response; otherwise
/// `prepare` builds the emails (reads only), then one transaction accepts them and stores the
/// answer `answer(ids)`.
async fn idempotent<F, Fut, A>(
    state: &AppState,
    caller: &Caller,
    key: Option<&str>,
    path: &str,
    raw: &[u8],
    prepare: F,
    answer: impl Fn(&[Uuid]) -> A,
) -> ApiResult<A>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ApiResult<Vec<schema::store::emails::NewEmail>>>,
    A: ToJSON + ParseFromJSON,
{
    let key = IdempotencyKey::parse(key)?;
    let print = idempotency::fingerprint("POST", path, raw);
    let claimed = match idempotency::begin(&state.pool, caller.team_id, key.as_ref(), &print).await? {
        Begin::Replay { body, .. } => {
            return A::parse_from_json(Some(body))
                .map_err(|error| ApiError::from(anyhow::anyhow!("stored answer of {path}: {}", error.into_message())));
        }
        Begin::Proceed(claimed) => claimed,
    };
    let result = async {
        let ready = prepare().await?;
        let mut tx = state.pool.begin().await?;
        // A permissive batch may have nothing left to send.
        let ids = if ready.is_empty() { Vec::new() } else { accept::accept(&mut tx, caller.team_id, ready, Utc::now()).await? };
        let body = answer(&ids);
        if let Some(claimed) = &claimed {
            claimed.complete(&mut tx, StatusCode::OK, &body.to_json().unwrap_or_default()).await?;
        }
        tx.commit().await?;
        Ok(body)
    }
    .await;
    match result {
        Ok(body) => Ok(body),
        Err(error) => {
            if let Some(claimed) = claimed {
                claimed.release(&state.pool).await;
            }
            Err(error)
        }
    }
}


fn locked(email: &Email) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "resource_locked",
        format!("The email is already {}; it can no longer be rescheduled or canceled.", match email.last_event.as_str() {
            "scheduled" | "queued" => "dispatched",
            other => other,
        }),
    )
}

/// `name` and `name:value` terms of the `tags` filter.
fn tag_filter(raw: Option<&str>) -> ApiResult<(Vec<String>, Value)> {
    let mut names = Vec::new();
    let mut pairs = BTreeMap::new();
    for term in raw.unwrap_or_default().split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match term.split_once(':') {
            Some((name, value)) => {
                schema::email::check_tag(name, value).map_err(|m| ApiError::invalid_parameter("tags", m))?;
                pairs.insert(name.to_string(), value.to_string());
            }
            None => {
                schema::email::check_tag(term, "x").map_err(|m| ApiError::invalid_parameter("tags", m))?;
                names.push(term.to_string());
            }
        }
    }
    Ok((names, json!(pairs)))
}

/// A stored name-to-value object (headers, tags) as the string map it holds.
fn string_map(stored: Value) -> BTreeMap<String, String> {
    let Value::Object(map) = stored else { return BTreeMap::new() };
    map.into_iter().map(|(name, value)| (name, value.as_str().map_or_else(|| value.to_string(), str::to_string))).collect()
}

fn view(email: Email, recipients: &[Recipient], full: bool) -> EmailView {
    let own: Vec<&Recipient> = recipients.iter().filter(|r| r.email_id == email.id).collect();
    let of_kind = |kind: &str| own.iter().filter(|r| r.kind == kind).map(|r| r.address.clone()).collect::<Vec<_>>();
    EmailView {
        object: "email".into(),
        id: email.id.to_string(),
        from: email.from_header,
        to: of_kind("to"),
        cc: of_kind("cc"),
        bcc: of_kind("bcc"),
        reply_to: email.reply_to,
        subject: email.subject,
        html: if full { email.html.into() } else { None.into() },
        text: if full { email.text.into() } else { None.into() },
        headers: string_map(email.headers),
        tags: string_map(email.tags),
        message_id: email.message_id,
        last_event: email.last_event,
        scheduled_at: email.scheduled_at.into(),
        failed_reason: email.failed_reason.into(),
        api_key_id: email.api_key_id.map(|id| id.to_string()).into(),
        size: email.size_bytes,
        created_at: email.created_at,
        template: Nullable(email.template_id.zip(email.template_version).map(|(id, version)| EmailTemplate { id: id.to_string(), version })),
        recipients: Nullable::from(full.then(|| {
            own.iter()
                .map(|r| RecipientView {
                    email: r.email.clone(),
                    kind: r.kind.clone(),
                    status: r.status.clone(),
                    attempts: r.attempts,
                    last_response: r.last_response.clone().into(),
                })
                .collect()
        })),
        events: None.into(),
    }
}

fn attachment_view(attachment: emails::Attachment, content: Option<String>) -> AttachmentView {
    AttachmentView {
        object: "attachment".into(),
        id: attachment.id.to_string(),
        filename: attachment.filename,
        content_type: attachment.content_type,
        content_id: attachment.content_id.into(),
        size: attachment.size,
        content: content.into(),
    }
}
