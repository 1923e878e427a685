//! Replies: an answer to the customer, sent through the ordinary send path (an email row with
//! its quota, suppressions, sandbox and DKIM on the channel's domain) from the channel's own name
//! and address, with `In-Reply-To` and `References` so the customer's client threads it, and
//! recorded in the conversation in the same transaction.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::routes::emails::accept;
use crate::routes::emails::send_body::SendEmail;
use crate::routes::inbox::actor::Actor;
use crate::routes::inbox::rules;
use crate::routes::inbox::views::{self, InboxMessage};
use crate::routes::{Tag, path_id};
use crate::state::{AppState, Caller};
use chrono::Utc;
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::email::Mailbox;
use schema::inbox::Facts;
use schema::store::inbox_messages::{self, NewMessage};
use schema::store::{conversations, events, inbox};
use serde::Deserialize;
use serde_json::json;

pub struct InboxRepliesApi;

/// Body of `POST /inbox/conversations/{conversation_id}/replies`.
#[derive(Object, Deserialize)]
pub struct CreateInboxReply {
    /// The reply as text; `text` and `html` together up to 2 MB, at least one of them.
    pub text: Option<String>,
    /// The reply as HTML.
    pub html: Option<String>,
    /// Addresses copied on the reply.
    #[oai(validator(max_items = 49))]
    pub cc: Option<Vec<String>>,
    /// The customer message this answers: when it is not the latest one, the reply is
    /// `409 conversation_conflict` with `details.latest_message_id` (read it, then reply again).
    pub in_reply_to: Option<String>,
}

#[derive(ApiResponse)]
pub enum ReplyResponse {
    /// Accepted for sending and recorded in the conversation.
    #[oai(status = 201)]
    Created(Json<InboxMessage>),
}

#[poem_openapi::OpenApi(tag = "Tag::Inbox")]
impl InboxRepliesApi {
    /// Reply to the customer (access `write`): sent from the channel's name and address through
    /// the send path, threaded under the customer's latest message. A conversation in spam or
    /// trash, a teammate's draft saved in the last minute, or an `in_reply_to` that is not the
    /// latest customer message, is `409 conversation_conflict`. The replying person's own draft
    /// is dropped.
    #[oai(path = "/inbox/conversations/:conversation_id/replies", method = "post", operation_id = "create-inbox-reply")]
    async fn reply(&self, state: Data<&AppState>, caller: Data<&Caller>, conversation_id: Path<String>, body: Body<CreateInboxReply>) -> ApiResult<ReplyResponse> {
        let id = path_id(&conversation_id.0, "Conversation")?;
        let body = body.0;
        rules::check_body(body.text.as_deref(), body.html.as_deref())?;
        let cc: Vec<String> = body.cc.unwrap_or_default().iter().enumerate().map(|(i, raw)| Mailbox::parse(raw).map(|m| m.key()).map_err(|e| ApiError::invalid_field(&format!("cc[{i}]"), e))).collect::<ApiResult<_>>()?;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let conversation = conversations::get(&mut tx, actor.team_id, id, &actor.reach, true).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        rules::check_not_binned(&conversation)?;
        let me = match actor.who {
            crate::routes::inbox::actor::Who::Person { person_id } => Some(person_id),
            crate::routes::inbox::actor::Who::Key { .. } => None,
        };
        if let Some(teammate) = schema::store::inbox_people::replying(&mut tx, conversation.id, me).await? {
            return Err(ApiError::new(ErrorKind::ConversationConflict, format!("{teammate} is replying to this conversation (a draft saved in the last minute).")));
        }
        let latest = conversation.latest_customer_message_id;
        if let Some(named) = body.in_reply_to.as_deref()
            && latest.is_some_and(|latest| latest.to_string() != named.trim())
        {
            return Err(ApiError::new(ErrorKind::ConversationConflict, "A newer customer message arrived: read it, then reply naming it in `in_reply_to`.")
                .with_details(json!({ "latest_message_id": latest })));
        }
        let channel = inbox::get(&mut tx, actor.team_id, conversation.channel_id, None).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        let thread = inbox_messages::thread_of(&mut tx, conversation.id).await?;
        let subject = if conversation.subject.to_ascii_lowercase().starts_with("re:") { conversation.subject.clone() } else { format!("Re: {}", conversation.subject).trim().to_string() };
        let mut headers = serde_json::Map::new();
        if let Some(parent) = thread.parent {
            headers.insert("In-Reply-To".into(), json!(format!("<{parent}>")));
        }
        if !thread.references.is_empty() {
            headers.insert("References".into(), json!(thread.references.iter().map(|id| format!("<{id}>")).collect::<Vec<_>>().join(" ")));
        }
        let send: SendEmail = serde_json::from_value(json!({
            "from": format!("{} <{}>", channel.name.replace(['"', '<', '>'], ""), channel.address),
            "to": conversation.customer_email,
            "cc": cc,
            "subject": subject,
            "text": body.text,
            "html": body.html,
            "headers": headers,
        }))
        .map_err(|e| anyhow::anyhow!("building the reply's send: {e}"))?;
        let now = Utc::now();
        let prepared = accept::prepare(&state, &caller, vec![send], false, false, now).await?;
        let email = prepared.emails.into_iter().next().ok_or_else(|| anyhow::anyhow!("the reply's send was dropped"))?;
        let message_id = email.message_id.clone();
        let email_ids = accept::accept(&mut tx, actor.team_id, vec![email], now).await?;
        let (person, key, key_name) = actor.author();
        let search = format!("{} {}", body.text.as_deref().unwrap_or_default(), body.html.as_deref().map(schema::inbox::html_words).unwrap_or_default());
        let reply = NewMessage {
            conversation_id: conversation.id,
            kind: "reply",
            email_id: email_ids.first().copied(),
            message_id: Some(&message_id),
            from_email: &channel.address,
            from_name: &channel.name,
            to: std::slice::from_ref(&conversation.customer_email),
            cc: &cc,
            subject: &subject,
            text: body.text.as_deref(),
            html: body.html.as_deref(),
            author_person_id: person,
            author_key_id: key,
            author_name: key_name,
            search_text: &search,
            ..NewMessage::default()
        };
        let (message, _) = inbox_messages::add(&mut tx, actor.team_id, &reply).await?;
        if let Some(person) = me {
            schema::store::inbox_people::drop_draft(&mut tx, conversation.id, person).await?;
        }
        let facts = Facts { team_id: actor.team_id, conversation_id: conversation.id, channel_id: channel.id, subject: &conversation.subject };
        events::emit(&mut tx, &[facts.reply(message, email_ids.first().copied())]).await?;
        let written = inbox_messages::get(&mut tx, conversation.id, message).await?.ok_or_else(|| anyhow::anyhow!("the reply just written is gone"))?;
        tx.commit().await?;
        Ok(ReplyResponse::Created(Json(views::message(written))))
    }
}
