//! A signed-in person's reply draft of a conversation (the dashboard session only: a key or
//! token has none). A draft saved in the last minute tells teammates that its author is
//! replying: their replies are `409 conversation_conflict` meanwhile.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Nullable;
use crate::routes::inbox::actor::Actor;
use crate::routes::{Deleted, Tag, path_id};
use crate::state::{AppState, SessionCaller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use schema::store::{conversations, inbox_people};
use serde::Deserialize;

pub struct InboxDraftsApi;

/// Body of `PUT /inbox/conversations/{conversation_id}/draft`.
#[derive(Object, Deserialize)]
pub struct SaveInboxDraft {
    /// The draft as text; `text` and `html` together up to 2 MB.
    pub text: Option<String>,
    /// The draft as HTML.
    pub html: Option<String>,
}

/// The signed-in person's draft.
#[derive(Object)]
pub struct InboxDraft {
    /// Always `inbox_draft`.
    pub object: String,
    /// The conversation.
    pub conversation_id: String,
    /// The text, or `null`.
    pub text: Nullable<String>,
    /// The HTML, or `null`.
    pub html: Nullable<String>,
    /// When it was saved.
    pub updated_at: DateTime<Utc>,
}

#[poem_openapi::OpenApi(tag = "Tag::Inbox")]
impl InboxDraftsApi {
    /// Read the signed-in person's reply draft (dashboard session only); `404` when they have
    /// none.
    #[oai(path = "/inbox/conversations/:conversation_id/draft", method = "get", operation_id = "get-inbox-draft")]
    async fn get(&self, state: Data<&AppState>, session: Data<&SessionCaller>, conversation_id: Path<String>) -> ApiResult<Json<InboxDraft>> {
        let id = path_id(&conversation_id.0, "Conversation")?;
        let mut conn = state.pool.acquire().await?;
        let actor = Actor::of_session(&mut conn, &session.0.session).await?;
        let conversation = conversations::get(&mut conn, actor.team_id, id, &actor.reach, false).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        let draft = inbox_people::read_draft(&mut conn, actor.team_id, conversation.id, session.0.session.person_id).await?.ok_or_else(|| ApiError::not_found("Draft"))?;
        Ok(Json(view(id, draft)))
    }

    /// Save the signed-in person's reply draft (dashboard session only).
    #[oai(path = "/inbox/conversations/:conversation_id/draft", method = "put", operation_id = "save-inbox-draft")]
    async fn save(&self, state: Data<&AppState>, session: Data<&SessionCaller>, conversation_id: Path<String>, body: Body<SaveInboxDraft>) -> ApiResult<Json<InboxDraft>> {
        let id = path_id(&conversation_id.0, "Conversation")?;
        let body = body.0;
        schema::email::check_body_size(body.html.as_deref(), body.text.as_deref()).map_err(|e| ApiError::invalid_field("html", e))?;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of_session(&mut tx, &session.0.session).await?;
        let conversation = conversations::get(&mut tx, actor.team_id, id, &actor.reach, false).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        let draft = inbox_people::save_draft(&mut tx, actor.team_id, conversation.id, session.0.session.person_id, body.text.as_deref(), body.html.as_deref()).await?;
        tx.commit().await?;
        Ok(Json(view(id, draft)))
    }

    /// Drop the signed-in person's reply draft (dashboard session only).
    #[oai(path = "/inbox/conversations/:conversation_id/draft", method = "delete", operation_id = "delete-inbox-draft")]
    async fn delete(&self, state: Data<&AppState>, session: Data<&SessionCaller>, conversation_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let id = path_id(&conversation_id.0, "Conversation")?;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of_session(&mut tx, &session.0.session).await?;
        let conversation = conversations::get(&mut tx, actor.team_id, id, &actor.reach, false).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        if !inbox_people::drop_draft(&mut tx, conversation.id, session.0.session.person_id).await? {
            return Err(ApiError::not_found("Draft"));
        }
        tx.commit().await?;
        Ok(Json(Deleted { object: "inbox_draft".into(), id: id.to_string(), deleted: true }))
    }
}

fn view(conversation_id: uuid::Uuid, draft: inbox_people::Draft) -> InboxDraft {
    InboxDraft { object: "inbox_draft".into(), conversation_id: conversation_id.to_string(), text: draft.text.into(), html: draft.html.into(), updated_at: draft.updated_at }
}
