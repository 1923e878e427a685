//! A conversation's messages, and internal notes (never mailed; a key's note keeps the key's
//! name as it was).

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::IdText;
use crate::http::paging::page_request;
use crate::routes::inbox::actor::Actor;
use crate::routes::inbox::rules;
use crate::routes::inbox::views::{self, InboxMessage};
use crate::routes::{Tag, path_id};
use crate::state::{AppState, Caller};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::inbox::Facts;
use schema::store::inbox_messages::{self, NewMessage};
use schema::store::{conversations, events};
use serde::Deserialize;
use serde_json::json;

pub struct InboxMessagesApi;

/// Body of `POST /inbox/conversations/{conversation_id}/notes`.
#[derive(Object, Deserialize)]
pub struct CreateInboxNote {
    /// The note, 1 character to 2 MB.
    pub text: String,
}

/// A page of messages.
#[derive(Object)]
pub struct InboxMessageList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The messages, oldest first.
    pub data: Vec<InboxMessage>,
}

#[derive(ApiResponse)]
pub enum NoteResponse {
    /// Added.
    #[oai(status = 201)]
    Created(Json<InboxMessage>),
}

#[poem_openapi::OpenApi(tag = "Tag::Inbox")]
impl InboxMessagesApi {
    /// A conversation's messages and notes, oldest first (`after` pages toward newer ones).
    #[oai(path = "/inbox/conversations/:conversation_id/messages", method = "get", operation_id = "list-inbox-messages")]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        conversation_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (newer than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (older than) this id.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<InboxMessageList>> {
        let id = path_id(&conversation_id.0, "Conversation")?;
        let page = page_request(limit.0, after.0, before.0)?;
        let mut conn = state.pool.acquire().await?;
        let actor = Actor::of(&mut conn, &caller).await?;
        let conversation = conversations::get(&mut conn, actor.team_id, id, &actor.reach, false).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        let page = inbox_messages::list(&mut conn, conversation.id, &page).await?;
        Ok(Json(InboxMessageList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(views::message).collect() }))
    }

    /// Add an internal note (access `write`): never mailed. A conversation in spam or trash is
    /// `409 conversation_conflict`.
    #[oai(path = "/inbox/conversations/:conversation_id/notes", method = "post", operation_id = "create-inbox-note")]
    async fn note(&self, state: Data<&AppState>, caller: Data<&Caller>, conversation_id: Path<String>, body: Body<CreateInboxNote>) -> ApiResult<NoteResponse> {
        let id = path_id(&conversation_id.0, "Conversation")?;
        let text = body.0.text;
        rules::check_body(Some(&text), None).map_err(|_| ApiError::invalid_field("text", "must be 1 character to 2 MB"))?;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let conversation = conversations::get(&mut tx, actor.team_id, id, &actor.reach, true).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        rules::check_not_binned(&conversation)?;
        let (person, key, key_name) = actor.author();
        let note = NewMessage {
            conversation_id: conversation.id,
            kind: "note",
            text: Some(&text),
            author_person_id: person,
            author_key_id: key,
            author_name: key_name,
            search_text: &text,
            ..NewMessage::default()
        };
        let (message_id, _) = inbox_messages::add(&mut tx, actor.team_id, &note).await?;
        let author = match (person, key) {
            (Some(person), _) => json!({ "kind": "person", "id": person }),
            (None, key) => json!({ "kind": "api_key", "id": key, "name": key_name }),
        };
        let facts = Facts { team_id: actor.team_id, conversation_id: conversation.id, channel_id: conversation.channel_id, subject: &conversation.subject };
        events::emit(&mut tx, &[facts.note(message_id, author)]).await?;
        let written = inbox_messages::get(&mut tx, conversation.id, message_id).await?.ok_or_else(|| anyhow::anyhow!("the note just written is gone"))?;
        tx.commit().await?;
        Ok(NoteResponse::Created(Json(views::message(written))))
    }
}
