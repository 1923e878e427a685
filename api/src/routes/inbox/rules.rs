//! The Inbox's rules that more than one route applies: bodies, versions and `If-Match`, the
//! spam-and-trash rule, and what a conversation update may name (teammates, folders, labels).

use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::fields::Choices;
use crate::routes::inbox::actor::Actor;
use crate::routes::inbox::conversations::UpdateInboxConversation;
use crate::routes::inbox::views::{ConversationPlace, ConversationStatus};
use poem_openapi::types::MaybeUndefined;
use schema::store::conversations::{Change, Conversation};
use schema::store::inbox;
use sqlx::PgConnection;
use serde_json::json;
use uuid::Uuid;

/// A message's bodies: at least one of `text` and `html`, not blank, together at most 2 MB.
pub fn check_body(text: Option<&str>, html: Option<&str>) -> ApiResult<()> {
    if text.is_none_or(|t| t.trim().is_empty()) && html.is_none_or(|h| h.trim().is_empty()) {
        return Err(ApiError::missing_field("text"));
    }
    schema::email::check_body_size(html, text).map_err(|e| ApiError::invalid_field("html", e))
}

/// A version as an `ETag` (a strong validator).
pub fn etag(version: i32) -> String {
    format!("\"{version}\"")
}

/// The version an `If-Match` names (`"3"`, `W/"3"` or `3`); anything else is
/// `422 invalid_parameter`.
pub fn version_of(raw: &str) -> ApiResult<i32> {
    let bare = raw.trim().trim_start_matches("W/").trim_matches('"');
    bare.parse::<i32>().ok().filter(|v| *v > 0).ok_or_else(|| ApiError::invalid_parameter("If-Match", "must be a conversation's version, as its ETag gives it"))
}

/// `412 precondition_failed` when the conversation is no longer at the `expected` version.
pub fn check_version(current: &Conversation, expected: Option<i32>) -> ApiResult<()> {
    match expected {
        Some(version) if version != current.version => Err(ApiError::new(
            ErrorKind::PreconditionFailed,
            format!("The conversation changed since version {version}: it is at version {}. Read it again and retry.", current.version),
        )
        .with_details(json!({ "version": current.version }))),
        _ => Ok(()),
    }
}

/// `409 conversation_conflict` for a write to a conversation in spam or trash.
pub fn check_not_binned(current: &Conversation) -> ApiResult<()> {
    if matches!(current.place.as_str(), "spam" | "trash") {
        return Err(ApiError::new(ErrorKind::ConversationConflict, format!("The conversation is in {}: move it out first.", current.place)));
    }
    Ok(())
}

/// The change an update asks for, each named thing checked against the conversation's channel.
pub async fn change(conn: &mut PgConnection, actor: &Actor, current: &Conversation, body: UpdateInboxConversation) -> ApiResult<Change> {
    if let Some(status) = &body.status
        && !ConversationStatus::allows(status)
    {
        return Err(ApiError::invalid_field("status", "must be open, pending or done"));
    }
    if let Some(place) = &body.place
        && !ConversationPlace::allows(place)
    {
        return Err(ApiError::invalid_field("place", "must be inbox, archive, spam or trash"));
    }
    // In spam or trash, only a move out (with whatever comes with it) is taken.
    if body.place.as_deref().is_none_or(|place| matches!(place, "spam" | "trash")) {
        let writes = body.status.is_some() || !body.assignee_id.is_undefined() || body.label_ids.is_some() || !body.folder_id.is_undefined();
        if writes {
            check_not_binned(current)?;
        }
    }
    let channel = inbox::get(conn, actor.team_id, current.channel_id, None).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
    let id_in = |path: &str, raw: &str| schema::ids::parse_id(raw).ok_or_else(|| ApiError::invalid_parameter(path, format!("{raw} is not an id")));
    let assignee_id = match &body.assignee_id {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(None),
        MaybeUndefined::Value(raw) => {
            let person = id_in("assignee_id", raw)?;
            if !inbox::can_open(conn, &channel, person).await? {
                return Err(ApiError::invalid_parameter("assignee_id", "must be a teammate who can open the conversation's channel"));
            }
            Some(Some(person))
        }
    };
    let folder_id = match &body.folder_id {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(None),
        MaybeUndefined::Value(raw) => {
            let folder = id_in("folder_id", raw)?;
            if !inbox::folder_of_channel(conn, channel.id, folder).await? {
                return Err(ApiError::invalid_parameter("folder_id", "must be a folder of the conversation's channel"));
            }
            Some(Some(folder))
        }
    };
    let label_ids = match &body.label_ids {
        None => None,
        Some(raw) => {
            let labels: Vec<Uuid> = raw.iter().map(|raw| id_in("label_ids", raw)).collect::<ApiResult<_>>()?;
            let foreign = inbox::labels_outside(conn, actor.team_id, channel.id, &labels).await?;
            if let Some(label) = foreign.first() {
                return Err(ApiError::invalid_parameter("label_ids", format!("{label} is not a label of the team or of the conversation's channel")));
            }
            Some(labels)
        }
    };
    Ok(Change { status: body.status.map(|s| s.to_string()), place: body.place.map(|p| p.to_string()), folder_id, assignee_id, label_ids })
}
