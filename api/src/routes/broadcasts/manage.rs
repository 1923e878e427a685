//! Broadcasts: one message to a segment. A draft is written freely; a send passes the
//! compliance gate (in document A's order) and the content checks, then a job fans it out into
//! one ordinary email per recipient.

use schema::status as stored;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices, IdText, Required, Search};
use crate::http::paging::{page_request, search_text};
use crate::routes::{Deleted, Tag, Updated};
use crate::routes::emails::send_body::Addresses;
use crate::state::{AppState, Caller};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::email::{self as rules, Mailbox};
use schema::store::broadcasts::{self, Fields};
use schema::store::templates::{self, Key};
use schema::store::{segments, topics};
use serde::Deserialize;
use sqlx::PgConnection;
use uuid::Uuid;
use crate::routes::broadcasts::gate::start;
use crate::routes::broadcasts::views::{BroadcastView, view, found, draft_only, scheduled, BroadcastTemplate};
use crate::routes::broadcasts::views::{BroadcastStatus, BroadcastRef};

pub struct BroadcastsApi;

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
    /// Reply-To addresses.
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
    /// `Name <address>` on a verified domain of the team.
    pub from: Option<String>,
    /// One line, at most 998 bytes; `{{{KEY}}}` merge variables allowed.
    pub subject: Option<String>,
    /// Up to 200 characters (for the team's own reference).
    #[oai(validator(max_length = 200))]
    pub name: Option<String>,
    /// The segment sent to.
    pub segment_id: Option<IdText>,
    /// Deprecated alias of `segment_id`.
    #[oai(deprecated)]
    pub audience_id: Option<IdText>,
    /// Reply-To addresses.
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
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Created (and, with `send: true`, queued or scheduled).
    #[oai(status = 201)]
    Created(Json<BroadcastRef>),
}

/// A page of broadcasts.
#[derive(Object)]
pub struct BroadcastList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<BroadcastView>,
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
        let status = match status.0 {
            Some(text) => Some(stored::BroadcastStatus::parse(text.as_str()).ok_or_else(|| {
                ApiError::invalid_parameter("status", format!("must be one of {}, not {:?}", BroadcastStatus::VALUES.join(", "), text.as_str()))
            })?),
            None => None,
        };
        let mut conn = state.pool.acquire().await?;
        let page = broadcasts::list(&mut conn, caller.team_id, &page, search.as_deref(), status).await?;
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
}

/// A broadcast's fields as sent (or as they stand, for an update).
pub struct Draft {
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
pub async fn checked(conn: &mut PgConnection, team_id: Uuid, draft: Draft) -> ApiResult<Fields> {
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
    rules::check_body_size(draft.html.as_deref(), draft.text.as_deref()).map_err(|message| ApiError::invalid_field("html", message))?;
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
