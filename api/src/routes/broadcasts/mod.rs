//! Broadcasts: one message to a segment. A draft is written freely; a send passes the
//! compliance gate (in document A's order) and the content checks, then a job fans it out into
//! one ordinary email per recipient.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices, IdText, Nullable, Required, Search};
use crate::http::paging::{page_request, search_text};
use crate::routes::{Deleted, Tag, Updated, path_id};
use crate::routes::emails::accept::Addresses;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::domain::DomainStatus;
use schema::email::{self as rules, Mailbox};
use schema::jobs::{SendBroadcast, enqueue_at};
use schema::model::RiskState;
use schema::store::broadcasts::{self, Broadcast, Fields};
use schema::store::templates::{self, Content, Key};
use schema::store::{domains, segments, teams, topics};
use serde::Deserialize;
use serde_json::json;
use sqlx::PgConnection;
use std::time::SystemTime;
use uuid::Uuid;

pub struct BroadcastsApi;

crate::choices! {
    /// A broadcast's status: `draft`, `scheduled`, `queued`, `sending`, `sent`, `canceled` or `failed`.
    BroadcastStatus = &["draft", "scheduled", "queued", "sending", "sent", "canceled", "failed"];
    /// A recipient filter: `sent`, `delivered`, `opened`, `clicked`, `bounced`, `complained`,
    /// `unsubscribed` or `suppressed`.
    RecipientType = &["sent", "delivered", "opened", "clicked", "bounced", "complained", "unsubscribed", "suppressed"];
}

/// The template of a broadcast.
#[derive(Object, Deserialize, Clone, Debug)]
pub struct BroadcastTemplate {
    /// A template id or alias; it must be published when the broadcast is sent.
    pub id: Required<String>,
}

/// Body of `POST /broadcasts`.
#[derive(Object, Deserialize)]
pub struct CreateBroadcast {
    /// `Name <address>` on a verified domain of the team.
    pub from: Required<String>,
    /// One line, at most 998 bytes; `{{{KEY}}}` merge variables allowed.
    pub subject: Required<String>,
    /// Up to 200 characters (for the team's own reference).
    #[oai(validator(max_length = 200))]
    pub name: Option<String>,
    /// The segment sent to.
    pub segment_id: Option<IdText>,
    /// Deprecated alias of `segment_id`.
    #[oai(deprecated)]
    pub audience_id: Option<IdText>,
    pub reply_to: Option<Addresses>,
    /// HTML with `{{{KEY}}}` merge variables.
    pub html: Option<String>,
    /// Plain text with `{{{KEY}}}` merge variables.
    pub text: Option<String>,
    /// The preview line mail clients show after the subject (up to 150 characters advised).
    #[oai(validator(max_length = 500))]
    pub preview_text: Option<String>,
    /// The topic: contacts opted out of it are left out, and its unsubscribe link leaves it.
    pub topic_id: Option<IdText>,
    /// A template instead of `html` and `text`.
    pub template: Option<BroadcastTemplate>,
    /// Send now (or at `scheduled_at`); a gate refusal then creates nothing.
    pub send: Option<bool>,
    /// Only with `send: true`: an ISO 8601 instant or phrase, 1 minute to 30 days ahead.
    pub scheduled_at: Option<String>,
    /// Send even when a content check fails.
    pub acknowledge_checks: Option<bool>,
}

/// Body of `PATCH /broadcasts/{id}` (drafts only): the fields sent replace the draft's.
#[derive(Object, Deserialize)]
pub struct UpdateBroadcast {
    pub from: Option<String>,
    pub subject: Option<String>,
    #[oai(validator(max_length = 200))]
    pub name: Option<String>,
    pub segment_id: Option<IdText>,
    #[oai(deprecated)]
    pub audience_id: Option<IdText>,
    pub reply_to: Option<Addresses>,
    pub html: Option<String>,
    pub text: Option<String>,
    #[oai(validator(max_length = 500))]
    pub preview_text: Option<String>,
    pub topic_id: Option<IdText>,
    pub template: Option<BroadcastTemplate>,
}

/// Body of `POST /broadcasts/{id}/send`.
#[derive(Object, Deserialize, Default)]
pub struct SendBroadcastRequest {
    /// An ISO 8601 instant or phrase, 1 minute to 30 days ahead; omitted sends now.
    pub scheduled_at: Option<String>,
    /// Send even when a content check fails.
    pub acknowledge_checks: Option<bool>,
}

/// `{ object: "broadcast", id }`.
#[derive(Object)]
pub struct BroadcastRef {
    pub object: String,
    pub id: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Created (and, with `send: true`, queued or scheduled).
    #[oai(status = 201)]
    Created(Json<BroadcastRef>),
}

/// Recipients by outcome.
#[derive(Object)]
pub struct BroadcastCounts {
    /// Contacts the send resolved so far.
    pub recipients: i64,
    /// Left out (unsubscribed, opted out of the topic, suppressed).
    pub excluded: i64,
    /// Emails created.
    pub sent: i64,
    pub delivered: i64,
    pub bounced: i64,
    pub complained: i64,
    pub failed: i64,
    /// Recipients who opened at least once (counted when the domain's open tracking is on).
    pub opened: i64,
    /// Recipients who clicked a link at least once (counted when click tracking is on).
    pub clicked: i64,
}

/// One link of a broadcast and how it was clicked.
#[derive(Object)]
pub struct BroadcastClickedLink {
    /// The address as written in the broadcast.
    pub link: String,
    /// Every click, repeated ones included.
    pub clicks: i64,
    /// Recipients who clicked it at least once.
    pub unique_clickers: i64,
}

/// A broadcast's clicked links, most clicked first (at most 1,000).
#[derive(Object)]
pub struct BroadcastClickedLinks {
    /// Always `list`.
    pub object: String,
    pub data: Vec<BroadcastClickedLink>,
}

/// A broadcast.
#[derive(Object)]
pub struct BroadcastView {
    /// Always `broadcast`.
    pub object: String,
    pub id: String,
    pub name: Nullable<String>,
    pub segment_id: Nullable<String>,
    /// Deprecated: the same as `segment_id`.
    pub audience_id: Nullable<String>,
    pub topic_id: Nullable<String>,
    pub template_id: Nullable<String>,
    pub from: String,
    pub subject: String,
    pub reply_to: Vec<String>,
    pub html: Nullable<String>,
    pub text: Nullable<String>,
    pub preview_text: Nullable<String>,
    pub status: Choice<BroadcastStatus>,
    pub scheduled_at: Nullable<DateTime<Utc>>,
    pub sent_at: Nullable<DateTime<Utc>>,
    /// Why the broadcast failed.
    pub failed_reason: Nullable<String>,
    pub counts: BroadcastCounts,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A page of broadcasts.
#[derive(Object)]
pub struct BroadcastList {
    /// Always `list`.
    pub object: String,
    pub has_more: bool,
    pub data: Vec<BroadcastView>,
}

/// One step of the compliance gate.
#[derive(Object)]
pub struct GateStep {
    /// `sending_domain`, `postal_address`, `segment`, `body`, `marketing_enabled` or `team_standing`.
    pub name: String,
    pub passed: bool,
    pub message: String,
}

/// The gate, run without sending.
#[derive(Object)]
pub struct BroadcastChecklist {
    /// Always `broadcast_checklist`.
    pub object: String,
    /// Whether every step passes.
    pub ready: bool,
    /// The steps in document A's order.
    pub steps: Vec<GateStep>,
}

/// One content check.
#[derive(Object)]
pub struct BroadcastCheck {
    pub name: String,
    /// `pass`, `warn` or `fail`.
    pub status: String,
    pub message: String,
}

/// The content checks of a broadcast.
#[derive(Object)]
pub struct BroadcastChecks {
    /// Always `broadcast_checks`.
    pub object: String,
    /// Whether a check fails (a send then needs `acknowledge_checks: true`).
    pub has_failures: bool,
    pub checks: Vec<BroadcastCheck>,
}

/// A contact a send resolved.
#[derive(Object)]
pub struct BroadcastRecipient {
    pub contact_id: String,
    pub email: String,
    /// The email created for the contact, or `null` when it was left out.
    pub email_id: Nullable<String>,
    /// Why the contact was left out: `unsubscribed`, `topic_opt_out` or `suppressed`.
    pub excluded_reason: Nullable<String>,
    /// The email's latest event.
    pub last_event: Nullable<String>,
}

/// A page of recipients.
#[derive(Object)]
pub struct BroadcastRecipientList {
    /// Always `list`.
    pub object: String,
    pub has_more: bool,
    pub data: Vec<BroadcastRecipient>,
}

#[poem_openapi::OpenApi(tag = "Tag::Broadcasts")]
impl BroadcastsApi {
    /// Create a broadcast as a draft, or with `send: true` send it (or schedule it) at once: a
    /// gate refusal or a failing content check then creates nothing.
    #[oai(path = "/broadcasts", method = "post", operation_id = "create-broadcast")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateBroadcast>) -> ApiResult<CreateResponse> {
        let body = body.0;
        let send = body.send.unwrap_or(false);
        if body.scheduled_at.is_some() && !send {
            return Err(ApiError::invalid_parameter("scheduled_at", "goes with `send: true` only"));
        }
        let scheduled_at = body.scheduled_at.as_deref().map(scheduled).transpose()?;
        let mut tx = state.pool.begin().await?;
        let draft = Draft {
            from: body.from.0,
            subject: body.subject.0,
            name: body.name,
            segment_id: body.segment_id.or(body.audience_id),
            reply_to: body.reply_to.map(Addresses::into_vec),
            html: body.html,
            text: body.text,
            preview_text: body.preview_text,
            topic_id: body.topic_id,
            template: body.template,
        };
        let fields = checked(&mut tx, caller.team_id, draft).await?;
        let broadcast = broadcasts::insert(&mut tx, caller.team_id, &fields).await?;
        if send {
            start(&mut tx, &state, caller.team_id, &broadcast, scheduled_at, body.acknowledge_checks.unwrap_or(false)).await?;
        }
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(BroadcastRef { object: "broadcast".into(), id: broadcast.id.to_string() })))
    }

    /// List the team's broadcasts, newest first.
    #[oai(path = "/broadcasts", method = "get", operation_id = "list-broadcasts")]
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
        /// Matches the name or subject (case-insensitive; `%` and `_` literal).
        search: Query<Option<Search<200>>>,
        /// Only broadcasts in this status.
        status: Query<Option<Choice<BroadcastStatus>>>,
    ) -> ApiResult<Json<BroadcastList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let search = search_text(search.0)?;
        if let Some(status) = status.0.as_ref().filter(|s| !BroadcastStatus::allows(s.as_str())) {
            return Err(ApiError::invalid_parameter("status", format!("must be one of {}, not {:?}", BroadcastStatus::VALUES.join(", "), status.as_str())));
        }
        let mut conn = state.pool.acquire().await?;
        let page = broadcasts::list(&mut conn, caller.team_id, &page, search.as_deref(), status.0.as_ref().map(|s| s.as_str())).await?;
        let ids: Vec<Uuid> = page.data.iter().map(|b| b.id).collect();
        let mut counts = broadcasts::counts(&mut conn, &ids).await?;
        let data = page.data.into_iter().map(|b| view(counts.remove(&b.id).unwrap_or_default(), b)).collect();
        Ok(Json(BroadcastList { object: "list".into(), has_more: page.has_more, data }))
    }

    /// Retrieve a broadcast with its status and its recipients' outcomes.
    #[oai(path = "/broadcasts/:broadcast_id", method = "get", operation_id = "get-broadcast")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<Json<BroadcastView>> {
        let mut conn = state.pool.acquire().await?;
        let broadcast = found(&mut conn, caller.team_id, &broadcast_id.0, false).await?;
        let counts = broadcasts::counts(&mut conn, &[broadcast.id]).await?.remove(&broadcast.id).unwrap_or_default();
        Ok(Json(view(counts, broadcast)))
    }

    /// Change a draft; any other status is `422 validation_error`.
    #[oai(path = "/broadcasts/:broadcast_id", method = "patch", operation_id = "update-broadcast")]
    async fn update(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>, body: Body<UpdateBroadcast>) -> ApiResult<Json<Updated>> {
        let body = body.0;
        let mut tx = state.pool.begin().await?;
        let current = found(&mut tx, caller.team_id, &broadcast_id.0, true).await?;
        draft_only(&current, "updated")?;
        let draft = Draft {
            from: Some(body.from.unwrap_or(current.from_header.clone())),
            subject: Some(body.subject.unwrap_or(current.subject.clone())),
            name: body.name.or(current.name.clone()),
            segment_id: body.segment_id.or(body.audience_id).or(current.segment_id.map(|id| IdText(id.to_string()))),
            reply_to: Some(body.reply_to.map_or(current.reply_to.clone(), Addresses::into_vec)),
            html: body.html.or(current.html.clone()),
            text: body.text.or(current.text.clone()),
            preview_text: body.preview_text.or(current.preview_text.clone()),
            topic_id: body.topic_id.or(current.topic_id.map(|id| IdText(id.to_string()))),
            template: body.template.or(current.template_id.map(|id| BroadcastTemplate { id: Required(Some(id.to_string())) })),
        };
        let fields = checked(&mut tx, caller.team_id, draft).await?;
        broadcasts::update(&mut tx, current.id, &fields).await?;
        tx.commit().await?;
        Ok(Json(Updated { object: "broadcast".into(), id: current.id.to_string() }))
    }

    /// Delete a draft; any other status is `422 validation_error`.
    #[oai(path = "/broadcasts/:broadcast_id", method = "delete", operation_id = "delete-broadcast")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let mut tx = state.pool.begin().await?;
        let current = found(&mut tx, caller.team_id, &broadcast_id.0, true).await?;
        draft_only(&current, "deleted")?;
        broadcasts::delete(&mut tx, current.id).await?;
        tx.commit().await?;
        Ok(Json(Deleted { object: "broadcast".into(), id: current.id.to_string(), deleted: true }))
    }

    /// Send a draft now or at `scheduled_at`: the gate, then the content checks.
    #[oai(path = "/broadcasts/:broadcast_id/send", method = "post", operation_id = "send-broadcast")]
    async fn send(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>, body: Body<Option<SendBroadcastRequest>>) -> ApiResult<Json<BroadcastRef>> {
        let request = body.0.unwrap_or_default();
        let scheduled_at = request.scheduled_at.as_deref().map(scheduled).transpose()?;
        let mut tx = state.pool.begin().await?;
        let current = found(&mut tx, caller.team_id, &broadcast_id.0, true).await?;
        draft_only(&current, "sent")?;
        start(&mut tx, &state, caller.team_id, &current, scheduled_at, request.acknowledge_checks.unwrap_or(false)).await?;
        tx.commit().await?;
        Ok(Json(BroadcastRef { object: "broadcast".into(), id: current.id.to_string() }))
    }

    /// Cancel a scheduled or queued broadcast; a sending one stops at its next page of
    /// recipients (emails already created still go out).
    #[oai(path = "/broadcasts/:broadcast_id/cancel", method = "post", operation_id = "cancel-broadcast")]
    async fn cancel(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<Json<BroadcastRef>> {
        let mut tx = state.pool.begin().await?;
        let current = found(&mut tx, caller.team_id, &broadcast_id.0, true).await?;
        if !matches!(current.status.as_str(), "scheduled" | "queued" | "sending") {
            return Err(ApiError::refused(format!("A {} broadcast cannot be canceled.", current.status)).with_error("status", current.status.clone()));
        }
        broadcasts::set_status(&mut tx, current.id, "canceled", current.scheduled_at, None).await?;
        tx.commit().await?;
        Ok(Json(BroadcastRef { object: "broadcast".into(), id: current.id.to_string() }))
    }

    /// Copy a broadcast's fields into a new draft named "<name> (copy)".
    #[oai(path = "/broadcasts/:broadcast_id/duplicate", method = "post", operation_id = "duplicate-broadcast")]
    async fn duplicate(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<CreateResponse> {
        let mut tx = state.pool.begin().await?;
        let current = found(&mut tx, caller.team_id, &broadcast_id.0, false).await?;
        let fields = Fields {
            name: Some(format!("{} (copy)", current.name.as_deref().unwrap_or("Broadcast")).chars().take(200).collect()),
            segment_id: current.segment_id,
            topic_id: current.topic_id,
            template_id: current.template_id,
            from_header: current.from_header,
            subject: current.subject,
            reply_to: current.reply_to,
            html: current.html,
            text: current.text,
            preview_text: current.preview_text,
        };
        let copy = broadcasts::insert(&mut tx, caller.team_id, &fields).await?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(BroadcastRef { object: "broadcast".into(), id: copy.id.to_string() })))
    }

    /// Run the compliance gate without sending: each step in document A's order.
    #[oai(path = "/broadcasts/:broadcast_id/checklist", method = "get", operation_id = "get-broadcast-checklist")]
    async fn checklist(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<Json<BroadcastChecklist>> {
        let mut conn = state.pool.acquire().await?;
        let broadcast = found(&mut conn, caller.team_id, &broadcast_id.0, false).await?;
        let steps = gate(&mut conn, caller.team_id, &broadcast).await?;
        let ready = steps.iter().all(|s| s.passed);
        Ok(Json(BroadcastChecklist { object: "broadcast_checklist".into(), ready, steps: steps.into_iter().map(GateResult::into_view).collect() }))
    }

    /// Run the content checks (links are read as written, never fetched).
    #[oai(path = "/broadcasts/:broadcast_id/checks", method = "post", operation_id = "check-broadcast")]
    async fn checks(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<Json<BroadcastChecks>> {
        let mut conn = state.pool.acquire().await?;
        let broadcast = found(&mut conn, caller.team_id, &broadcast_id.0, false).await?;
        let checks = content_checks(&mut conn, &state, caller.team_id, &broadcast).await?;
        let has_failures = checks.iter().any(|c| c.status == "fail");
        Ok(Json(BroadcastChecks { object: "broadcast_checks".into(), has_failures, checks }))
    }

    /// The contacts a send resolved, newest first: each sent one with its email, each left-out
    /// one with the reason.
    #[oai(path = "/broadcasts/:broadcast_id/recipients", method = "get", operation_id = "list-broadcast-recipients")]
    #[allow(clippy::too_many_arguments)]
    async fn recipients(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        broadcast_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after this contact id.
        after: Query<Option<IdText>>,
        /// Return items before this contact id.
        before: Query<Option<IdText>>,
        /// Only recipients with this outcome.
        #[oai(name = "type")]
        kind: Query<Option<Choice<RecipientType>>>,
    ) -> ApiResult<Json<BroadcastRecipientList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        if let Some(kind) = kind.0.as_ref().filter(|k| !RecipientType::allows(k.as_str())) {
            return Err(ApiError::invalid_parameter("type", format!("must be one of {}, not {:?}", RecipientType::VALUES.join(", "), kind.as_str())));
        }
        let mut conn = state.pool.acquire().await?;
        let broadcast = found(&mut conn, caller.team_id, &broadcast_id.0, false).await?;
        let page = broadcasts::recipients(&mut conn, broadcast.id, &page, kind.0.as_ref().map(|k| k.as_str())).await?;
        let data = page
            .data
            .into_iter()
            .map(|r| BroadcastRecipient {
                contact_id: r.contact_id.to_string(),
                email: r.email,
                email_id: Nullable(r.email_id.map(|id| id.to_string())),
                excluded_reason: Nullable(r.excluded_reason),
                last_event: Nullable(r.last_event),
            })
            .collect();
        Ok(Json(BroadcastRecipientList { object: "list".into(), has_more: page.has_more, data }))
    }

    /// The links recipients clicked (click tracking on the sending domain), each with its
    /// clicks and unique clickers, most clicked first.
    #[oai(path = "/broadcasts/:broadcast_id/clicked-links", method = "get", operation_id = "list-broadcast-clicked-links")]
    async fn clicked_links(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<Json<BroadcastClickedLinks>> {
        let mut conn = state.pool.acquire().await?;
        let broadcast = found(&mut conn, caller.team_id, &broadcast_id.0, false).await?;
        let data = schema::store::engagements::clicked_links(&mut conn, broadcast.id)
            .await?
            .into_iter()
            .map(|l| BroadcastClickedLink { link: l.link, clicks: l.clicks, unique_clickers: l.unique_clickers })
            .collect();
        Ok(Json(BroadcastClickedLinks { object: "list".into(), data }))
    }
}

/// A broadcast's fields as sent (or as they stand, for an update).
struct Draft {
    from: Option<String>,
    subject: Option<String>,
    name: Option<String>,
    segment_id: Option<IdText>,
    reply_to: Option<Vec<String>>,
    html: Option<String>,
    text: Option<String>,
    preview_text: Option<String>,
    topic_id: Option<IdText>,
    template: Option<BroadcastTemplate>,
}

/// Checks a draft's fields: `from` and `reply_to` addresses, the subject line, the merge
/// variables' formats, and that the segment, topic and template are the team's.
async fn checked(conn: &mut PgConnection, team_id: Uuid, draft: Draft) -> ApiResult<Fields> {
    let from = draft.from.ok_or_else(|| ApiError::missing_field("from"))?;
    let subject = draft.subject.ok_or_else(|| ApiError::missing_field("subject"))?;
    crate::routes::templates::content::check_header_length("from", &from)?;
    let from = Mailbox::parse(&from).map_err(|m| ApiError::invalid_field("from", m))?.header_form();
    rules::check_subject(&subject).map_err(|m| ApiError::invalid_field("subject", m))?;
    let mut reply_to = Vec::new();
    for (i, raw) in draft.reply_to.unwrap_or_default().iter().enumerate() {
        crate::routes::templates::content::check_header_length(&format!("reply_to[{i}]"), raw)?;
        reply_to.push(Mailbox::parse(raw).map_err(|m| ApiError::invalid_field(&format!("reply_to[{i}]"), m))?.header_form());
    }
    for (path, value, max) in [("name", &draft.name, 200), ("preview_text", &draft.preview_text, 500)] {
        if value.as_ref().is_some_and(|v| v.chars().count() > max) {
            return Err(ApiError::invalid_field(path, format!("must be at most {max} characters")));
        }
    }
    if draft.html.as_ref().map_or(0, String::len) + draft.text.as_ref().map_or(0, String::len) > rules::MAX_BODY_BYTES {
        return Err(ApiError::invalid_field("html", "`html` and `text` together must be at most 2 MB"));
    }
    if draft.template.is_some() && (draft.html.is_some() || draft.text.is_some()) {
        return Err(ApiError::invalid_parameter("template", "cannot be combined with `html` or `text`"));
    }
    render::Compiled::from_parts(Some(&subject), draft.html.as_deref(), draft.text.as_deref()).map_err(crate::routes::templates::content::problems)?;
    let segment_id = match draft.segment_id.as_deref().map(schema::ids::parse_id) {
        Some(Some(id)) if segments::live_ids(conn, team_id, &[id]).await?.contains(&id) => Some(id),
        Some(_) => return Err(ApiError::invalid_parameter("segment_id", "is not one of the team's segments")),
        None => None,
    };
    let topic_id = match draft.topic_id.as_deref().map(schema::ids::parse_id) {
        Some(Some(id)) if topics::get(conn, team_id, id).await?.is_some() => Some(id),
        Some(_) => return Err(ApiError::invalid_parameter("topic_id", "is not one of the team's topics")),
        None => None,
    };
    let template_id = match draft.template.and_then(|t| t.id.0) {
        Some(key) => {
            let found = templates::find(conn, team_id, &Key::parse(&key), false).await?;
            Some(found.ok_or_else(|| ApiError::invalid_parameter("template.id", "is not one of the team's templates"))?.id)
        }
        None => None,
    };
    Ok(Fields {
        name: draft.name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty()),
        segment_id,
        topic_id,
        template_id,
        from_header: from,
        subject,
        reply_to,
        html: draft.html,
        text: draft.text,
        preview_text: draft.preview_text,
    })
}

fn scheduled(raw: &str) -> ApiResult<DateTime<Utc>> {
    schema::when::parse_scheduled_at(raw, Utc::now()).map_err(|e| ApiError::invalid_field("scheduled_at", e.message()))
}

async fn found(conn: &mut PgConnection, team_id: Uuid, raw: &str, lock: bool) -> ApiResult<Broadcast> {
    let id = path_id(raw, "Broadcast")?;
    broadcasts::get(conn, team_id, id, lock).await?.ok_or_else(|| ApiError::not_found("Broadcast"))
}

fn draft_only(broadcast: &Broadcast, what: &str) -> ApiResult<()> {
    if broadcast.status != "draft" {
        return Err(ApiError::refused(format!("Only a draft can be {what}; this broadcast is {}.", broadcast.status))
            .with_error("status", broadcast.status.clone()));
    }
    Ok(())
}

/// One gate step's verdict, with the answer a send gets when it is the first to fail.
struct GateResult {
    name: &'static str,
    passed: bool,
    message: String,
    status: StatusCode,
}

impl GateResult {
    fn into_view(self) -> GateStep {
        GateStep { name: self.name.into(), passed: self.passed, message: self.message }
    }
}

/// The compliance gate in document A's order: verified sending domain, postal address, live
/// segment, a body, marketing not paused, team in good standing.
async fn gate(conn: &mut PgConnection, team_id: Uuid, b: &Broadcast) -> ApiResult<Vec<GateResult>> {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let mut steps = Vec::new();
    let from_domain = Mailbox::parse(&b.from_header).map(|m| m.domain().to_string()).unwrap_or_default();
    let domain = domains::find_by_name(conn, team_id, &from_domain).await?;
    let verified = domain.as_ref().is_some_and(|d| d.status == DomainStatus::Verified && d.sending_enabled && !d.development);
    steps.push(GateResult {
        name: "sending_domain",
        passed: verified,
        message: if verified { format!("{from_domain} is verified") } else { format!("{from_domain} is not a verified sending domain of the team: verify it with `POST /domains/{{id}}/verify`") },
        status: unprocessable,
    });
    let team = teams::get(conn, team_id).await?.ok_or_else(|| ApiError::not_found("Team"))?;
    let address = team.postal_address.is_some();
    steps.push(GateResult {
        name: "postal_address",
        passed: address,
        message: if address { "the sender identity has a postal address".into() } else { "set the team's postal address with `PATCH /team` (`postal_address`): every marketing email carries it".into() },
        status: unprocessable,
    });
    let segment = match b.segment_id {
        Some(id) => segments::get(conn, team_id, id).await?.is_some(),
        None => false,
    };
    steps.push(GateResult {
        name: "segment",
        passed: segment,
        message: if segment { "the segment is live".into() } else { "`segment_id` must name a live segment of the team".into() },
        status: unprocessable,
    });
    let body = match b.template_id {
        Some(id) => templates::find(conn, team_id, &Key::Id(id), false).await?.is_some_and(|t| t.published_version.is_some()),
        None => b.html.is_some() || b.text.is_some(),
    };
    steps.push(GateResult {
        name: "body",
        passed: body,
        message: if body { "the broadcast has a body".into() } else { "give the broadcast `html`, `text` or a published template".into() },
        status: unprocessable,
    });
    let paused = broadcasts::marketing_paused(conn).await?;
    steps.push(GateResult {
        name: "marketing_enabled",
        passed: !paused,
        message: if paused { "marketing sends are paused on this Herald by its operator".into() } else { "marketing sends are on".into() },
        status: StatusCode::FORBIDDEN,
    });
    let standing = team.risk_state == RiskState::Normal;
    steps.push(GateResult {
        name: "team_standing",
        passed: standing,
        message: if standing { "the team is in good standing".into() } else { "the team is under review or suspended and cannot send marketing".into() },
        status: StatusCode::FORBIDDEN,
    });
    Ok(steps)
}

/// The content checks over the broadcast's own content or its template's.
async fn content_checks(conn: &mut PgConnection, state: &AppState, team_id: Uuid, b: &Broadcast) -> ApiResult<Vec<BroadcastCheck>> {
    let (html, text) = match b.template_id {
        Some(id) => match templates::find(conn, team_id, &Key::Id(id), false).await? {
            Some(t) => (t.content.html, t.content.text),
            None => (None, None),
        },
        None => (b.html.clone(), b.text.clone()),
    };
    let content = Content { subject: Some(b.subject.clone()), html, text, ..Content::default() };
    let checks = crate::routes::templates::content::checks(conn, &state.config.public_url, team_id, &content, b.preview_text.as_deref()).await?;
    Ok(checks.into_iter().map(|c| BroadcastCheck { name: c.name.into(), status: c.status.as_str().into(), message: c.message }).collect())
}

/// Sends a draft: the gate (the first failing step answers), then the content checks (a
/// failure answers `422 validation_error` with `details.checks` unless acknowledged), then the
/// status and the fan-out job, in the caller's transaction.
async fn start(conn: &mut PgConnection, state: &AppState, team_id: Uuid, b: &Broadcast, scheduled_at: Option<DateTime<Utc>>, acknowledged: bool) -> ApiResult<()> {
    let steps = gate(conn, team_id, b).await?;
    if let Some(failed) = steps.iter().find(|s| !s.passed) {
        return Err(ApiError::new(failed.status, "validation_error", format!("The broadcast cannot be sent: {}.", failed.message))
            .with_error(failed.name, failed.message.clone()));
    }
    let checks = content_checks(conn, state, team_id, b).await?;
    if !acknowledged && checks.iter().any(|c| c.status == "fail") {
        let failing: Vec<&str> = checks.iter().filter(|c| c.status == "fail").map(|c| c.name.as_str()).collect();
        let details = json!({ "checks": checks.iter().map(|c| json!({ "name": c.name, "status": c.status, "message": c.message })).collect::<Vec<_>>() });
        return Err(ApiError::refused(format!(
            "Content checks fail ({}); fix them, or send with `acknowledge_checks: true`.",
            failing.join(", ")
        ))
        .with_details(details));
    }
    // The marketing meter: the segment's members now, on top of this month's broadcast emails.
    let (allowance, used) = broadcasts::marketing_meter(conn, team_id).await?;
    if let Some(allowance) = allowance {
        let segment = segments::get(conn, team_id, b.segment_id.unwrap_or_default()).await?.ok_or_else(|| ApiError::not_found("Segment"))?;
        let membership = segments::membership(conn, &segment).await?;
        let members = segments::count_members(conn, team_id, &membership).await?;
        if used + members > i64::from(allowance) {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "marketing_quota_exceeded",
                format!(
                    "The team's plan allows {allowance} broadcast emails a month; {used} are used and this segment has {members} contacts. The meter resets at the start of next month or with a plan change."
                ),
            ));
        }
    }
    let status = if scheduled_at.is_some() { "scheduled" } else { "queued" };
    broadcasts::set_status(conn, b.id, status, scheduled_at, None).await?;
    let at = scheduled_at.map_or_else(SystemTime::now, SystemTime::from);
    enqueue_at(conn, &SendBroadcast { broadcast_id: b.id }, at).await.map_err(anyhow::Error::from)?;
    Ok(())
}

fn view(c: broadcasts::Counts, b: Broadcast) -> BroadcastView {
    let segment = b.segment_id.map(|id| id.to_string());
    BroadcastView {
        object: "broadcast".into(),
        id: b.id.to_string(),
        name: Nullable(b.name),
        audience_id: Nullable(segment.clone()),
        segment_id: Nullable(segment),
        topic_id: Nullable(b.topic_id.map(|id| id.to_string())),
        template_id: Nullable(b.template_id.map(|id| id.to_string())),
        from: b.from_header,
        subject: b.subject,
        reply_to: b.reply_to,
        html: Nullable(b.html),
        text: Nullable(b.text),
        preview_text: Nullable(b.preview_text),
        status: Choice::new(b.status),
        scheduled_at: Nullable(b.scheduled_at),
        sent_at: Nullable(b.sent_at),
        failed_reason: Nullable(b.failed_reason),
        counts: BroadcastCounts {
            recipients: c.recipients,
            excluded: c.excluded,
            sent: c.sent,
            delivered: c.delivered,
            bounced: c.bounced,
            complained: c.complained,
            failed: c.failed,
            opened: c.opened,
            clicked: c.clicked,
        },
        created_at: b.created_at,
        updated_at: b.updated_at,
    }
}
