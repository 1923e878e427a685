//! Inbox conversations: opened from a customer's message through the API, listed with filters,
//! read (with an `ETag` of the version), and updated (status, place, folder, assignee, labels)
//! with `If-Match`.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::fields::{Choice, Choices, IdText};
use crate::http::paging::page_request;
use crate::routes::inbox::actor::Actor;
use crate::routes::inbox::rules;
use crate::routes::inbox::views::{self, InboxConversation, ConversationPlace, ConversationStatus};
use crate::routes::{Tag, path_id};
use crate::state::{AppState, Caller};
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Object};
use schema::email::Mailbox;
use schema::inbox::Facts;
use schema::store::conversations::{self, Filters, NewConversation};
use schema::store::events;
use schema::store::inbox_messages::{self, NewMessage};
use serde::Deserialize;

pub struct InboxConversationsApi;

/// Who wrote in.
#[derive(Object, Deserialize)]
pub struct CustomerIn {
    /// Their address.
    #[oai(validator(max_length = 320))]
    pub email: String,
    /// Their name.
    #[oai(validator(max_length = 200))]
    pub name: Option<String>,
}

/// Body of `POST /inbox/conversations`: a customer's message, as a contact form or a chat
/// widget hands it over.
#[derive(Object, Deserialize)]
pub struct OpenInboxConversation {
    /// The channel's id or its address.
    #[oai(validator(max_length = 320))]
    pub channel_id: String,
    /// The customer.
    pub from: CustomerIn,
    /// Up to 998 bytes on one line.
    pub subject: Option<String>,
    /// The message as text; `text` and `html` together up to 2 MB, at least one of them.
    pub text: Option<String>,
    /// The message as HTML.
    pub html: Option<String>,
    /// The caller's own id for the conversation, unique per channel: a repeat answers the
    /// existing conversation with 200.
    #[oai(validator(max_length = 255))]
    pub external_id: Option<String>,
}

/// Body of `PATCH /inbox/conversations/{conversation_id}`.
#[derive(Object, Deserialize)]
pub struct UpdateInboxConversation {
    /// `open`, `pending` or `done`.
    pub status: Option<Choice<ConversationStatus>>,
    /// `inbox`, `archive`, `spam` or `trash`.
    pub place: Option<Choice<ConversationPlace>>,
    /// A folder of the conversation's channel; `null` takes it out of its folder.
    #[serde(default)]
    pub folder_id: MaybeUndefined<String>,
    /// A teammate who can open the channel; `null` unassigns.
    #[serde(default)]
    pub assignee_id: MaybeUndefined<String>,
    /// Labels of the team or of the conversation's channel; replaces its labels.
    #[oai(validator(max_items = 100))]
    pub label_ids: Option<Vec<String>>,
    /// The signed-in person's read mark (dashboard session only; a key or token has none:
    /// `422 invalid_parameter`). Not a change of the conversation: its version stays.
    pub read: Option<bool>,
    /// The signed-in person's star (dashboard session only, as `read`).
    pub starred: Option<bool>,
    /// When to bring it back (a person only, within a year): it is `pending` until then and
    /// `open` again from then on (woken within 30 seconds). A key cannot snooze
    /// (`422 snooze_needs_a_person`): it sets `pending` instead.
    pub snoozed_until: Option<chrono::DateTime<chrono::Utc>>,
}

/// A page of conversations.
#[derive(Object)]
pub struct InboxConversationList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The conversations, newest first.
    pub data: Vec<InboxConversation>,
}

#[derive(ApiResponse)]
pub enum OpenResponse {
    /// Opened.
    #[oai(status = 201)]
    Created(Json<InboxConversation>, #[oai(header = "ETag")] String),
    /// The channel already has a conversation with this `external_id`: that one.
    #[oai(status = 200)]
    Existing(Json<InboxConversation>, #[oai(header = "ETag")] String),
}

#[derive(ApiResponse)]
pub enum ConversationResponse {
    /// The conversation; `ETag` is its version.
    #[oai(status = 200)]
    Ok(Json<InboxConversation>, #[oai(header = "ETag")] String),
}

#[poem_openapi::OpenApi(tag = "Tag::Inbox")]
impl InboxConversationsApi {
    /// Open a conversation from a customer's message (access `create` or `write`). A channel
    /// the caller does not reach is `404 not_found`.
    #[oai(path = "/inbox/conversations", method = "post", operation_id = "create-inbox-conversation")]
    async fn open(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<OpenInboxConversation>) -> ApiResult<OpenResponse> {
        let body = body.0;
        let from = Mailbox::parse(&body.from.email).map_err(|e| ApiError::invalid_field("from.email", e))?;
        let name = body.from.name.as_deref().map(str::trim).unwrap_or_default();
        let subject = body.subject.as_deref().map(str::trim).unwrap_or_default();
        schema::email::check_subject(subject).map_err(|e| ApiError::invalid_field("subject", e))?;
        rules::check_body(body.text.as_deref(), body.html.as_deref())?;
        if body.external_id.as_deref().is_some_and(|id| id.trim().is_empty() || id.chars().count() > 255) {
            return Err(ApiError::invalid_field("external_id", "must be 1 to 255 characters"));
        }
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let channel = actor.channel(&mut tx, &body.channel_id).await?.ok_or_else(|| ApiError::not_found("Channel"))?;
        if let Some(external_id) = body.external_id.as_deref()
            && let Some(id) = conversations::by_external_id(&mut tx, actor.team_id, channel.id, external_id).await?
        {
            let found = conversations::get(&mut tx, actor.team_id, id, &actor.reach, false).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
            let etag = rules::etag(found.version);
            return Ok(OpenResponse::Existing(Json(views::conversation(found)), etag));
        }
        let new = NewConversation { channel_id: channel.id, subject, customer_email: &from.key(), customer_name: name, external_id: body.external_id.as_deref(), email_id: None };
        // A concurrent open with the same external_id lost the race: answer the winner's.
        let Some(id) = conversations::open(&mut tx, actor.team_id, &new).await? else {
            return Err(ApiError::new(ErrorKind::ConcurrentIdempotentRequests, "A conversation with this external_id is being opened; retry."));
        };
        let search = format!("{} {}", body.text.as_deref().unwrap_or_default(), body.html.as_deref().map(schema::inbox::html_words).unwrap_or_default());
        let message = NewMessage {
            conversation_id: id,
            kind: "customer",
            from_email: from.address(),
            from_name: name,
            to: &[channel.address.clone()],
            subject,
            text: body.text.as_deref(),
            html: body.html.as_deref(),
            search_text: &search,
            ..NewMessage::default()
        };
        let (message_id, _) = inbox_messages::add(&mut tx, actor.team_id, &message).await?;
        let facts = Facts { team_id: actor.team_id, conversation_id: id, channel_id: channel.id, subject };
        events::emit(&mut tx, &[facts.created(&from.key(), name, body.external_id.as_deref()), facts.received(message_id, from.address(), None)]).await?;
        let opened = conversations::get(&mut tx, actor.team_id, id, &actor.reach, false).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        tx.commit().await?;
        let etag = rules::etag(opened.version);
        Ok(OpenResponse::Created(Json(views::conversation(opened)), etag))
    }

    /// List the conversations of the channels the caller reaches, newest first. `place` is
    /// `inbox` unless given (with `external_id` and no `place`, every place).
    #[oai(path = "/inbox/conversations", method = "get", operation_id = "list-inbox-conversations")]
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
        /// Only this channel's.
        channel_id: Query<Option<IdText>>,
        /// Only conversations in this status.
        status: Query<Option<Choice<ConversationStatus>>>,
        /// Only those assigned to this teammate (an id), or `none` for the unassigned.
        #[oai(validator(pattern = r"^ *(none|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}) *$"))]
        assignee_id: Query<Option<String>>,
        /// Only the one with this external id.
        #[oai(validator(max_length = 255))]
        external_id: Query<Option<String>>,
        /// Only those with this label.
        label_id: Query<Option<IdText>>,
        /// Only those in this folder.
        folder_id: Query<Option<IdText>>,
        /// `inbox` (default), `archive`, `spam` or `trash`.
        place: Query<Option<Choice<ConversationPlace>>>,
    ) -> ApiResult<Json<InboxConversationList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let id_of = |name: &str, raw: Option<IdText>| raw.map(|raw| schema::ids::parse_id(&raw).ok_or_else(|| ApiError::invalid_parameter(name, "must be an id"))).transpose();
        let assignee = match assignee_id.0 {
            Some(raw) if raw.trim() == "none" => Some(None),
            other => id_of("assignee_id", other.map(|raw| IdText(raw.trim().to_string())))?.map(Some),
        };
        if let Some(status) = &status.0
            && !ConversationStatus::allows(status)
        {
            return Err(ApiError::invalid_parameter("status", "must be open, pending or done"));
        }
        if let Some(place) = &place.0
            && !ConversationPlace::allows(place)
        {
            return Err(ApiError::invalid_parameter("place", "must be inbox, archive, spam or trash"));
        }
        let place = match (place.0, &external_id.0) {
            (Some(place), _) => Some(place.to_string()),
            (None, Some(_)) => None,
            (None, None) => Some("inbox".to_string()),
        };
        let filters = Filters {
            channel_id: id_of("channel_id", channel_id.0)?,
            status: status.0.map(|s| s.to_string()),
            assignee_id: assignee,
            external_id: external_id.0,
            label_id: id_of("label_id", label_id.0)?,
            folder_id: id_of("folder_id", folder_id.0)?,
            place,
        };
        let mut conn = state.pool.acquire().await?;
        let actor = Actor::of(&mut conn, &caller).await?;
        let page = conversations::list(&mut conn, actor.team_id, &actor.reach, &filters, &page).await?;
        let mut data: Vec<InboxConversation> = page.data.into_iter().map(views::conversation).collect();
        views::fill_mine(&mut conn, &actor, &mut data).await?;
        Ok(Json(InboxConversationList { object: "list".into(), has_more: page.has_more, data }))
    }

    /// Retrieve a conversation; `ETag` carries its version for `If-Match`.
    #[oai(path = "/inbox/conversations/:conversation_id", method = "get", operation_id = "get-inbox-conversation")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, conversation_id: Path<String>) -> ApiResult<ConversationResponse> {
        let id = path_id(&conversation_id.0, "Conversation")?;
        let mut conn = state.pool.acquire().await?;
        let actor = Actor::of(&mut conn, &caller).await?;
        let found = conversations::get(&mut conn, actor.team_id, id, &actor.reach, false).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        let etag = rules::etag(found.version);
        let mut view = [views::conversation(found)];
        views::fill_mine(&mut conn, &actor, &mut view).await?;
        let [view] = view;
        Ok(ConversationResponse::Ok(Json(view), etag))
    }

    /// Change a conversation's status, place, folder, assignee or labels (access `write`). With
    /// `If-Match`, a stale version is `412 precondition_failed`. In `spam` or `trash` only moving
    /// it out is allowed (`409 conversation_conflict`).
    #[oai(path = "/inbox/conversations/:conversation_id", method = "patch", operation_id = "update-inbox-conversation")]
    async fn update(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        conversation_id: Path<String>,
        /// The version (`ETag`) this change was made against.
        #[oai(name = "If-Match", validator(pattern = r#"^(W/)?"?[1-9][0-9]{0,8}"?$"#))]
        if_match: Header<Option<String>>,
        body: Body<UpdateInboxConversation>,
    ) -> ApiResult<ConversationResponse> {
        let id = path_id(&conversation_id.0, "Conversation")?;
        let expected = if_match.0.as_deref().map(rules::version_of).transpose()?;
        let body = body.0;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let snooze = body.snoozed_until;
        let marks = (body.read, body.starred);
        let session_person = match actor.reach {
            schema::store::inbox::Reach::Person { person_id, personal: true, .. } => Some(person_id),
            _ => None,
        };
        if (marks.0.is_some() || marks.1.is_some()) && session_person.is_none() {
            return Err(ApiError::invalid_parameter(if marks.0.is_some() { "read" } else { "starred" }, "read marks and stars belong to a person signed in to the dashboard; a key or token has none"));
        }
        if let Some(until) = snooze {
            if actor.is_key() {
                return Err(ApiError::new(ErrorKind::SnoozeNeedsAPerson, "An API key cannot snooze a conversation; set its status to `pending` instead."));
            }
            let now = chrono::Utc::now();
            if until <= now || until > now + chrono::TimeDelta::days(365) {
                return Err(ApiError::invalid_parameter("snoozed_until", "must be in the future, within a year"));
            }
        }
        let current = conversations::get(&mut tx, actor.team_id, id, &actor.reach, true).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        rules::check_version(&current, expected)?;
        let mut change = rules::change(&mut tx, &actor, &current, body).await?;
        if let (Some(until), crate::routes::inbox::actor::Who::Person { person_id }) = (snooze, &actor.who) {
            // Snoozed: pending until it wakes (then open again).
            change.status.get_or_insert_with(|| "pending".to_string());
            schema::store::inbox_people::snooze(&mut tx, actor.team_id, current.id, *person_id, until).await?;
        }
        let facts = Facts { team_id: actor.team_id, conversation_id: current.id, channel_id: current.channel_id, subject: &current.subject };
        let mut new_events = Vec::new();
        if let Some(assignee) = change.assignee_id
            && assignee != current.assignee_id
        {
            new_events.push(facts.assigned(assignee, current.assignee_id));
        }
        if let Some(status) = &change.status
            && *status != current.status
        {
            new_events.push(facts.status_changed(status, &current.status));
        }
        if let Some(person) = session_person
            && (marks.0.is_some() || marks.1.is_some())
        {
            schema::store::inbox_people::mark(&mut tx, actor.team_id, current.id, person, marks.0, marks.1).await?;
        }
        let changes_conversation = change.status.is_some() || change.place.is_some() || change.folder_id.is_some() || change.assignee_id.is_some() || change.label_ids.is_some();
        if changes_conversation {
            conversations::update(&mut tx, current.id, &change).await?;
        }
        events::emit(&mut tx, &new_events).await?;
        let updated = conversations::get(&mut tx, actor.team_id, id, &actor.reach, false).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
        let etag = rules::etag(updated.version);
        let mut view = [views::conversation(updated)];
        views::fill_mine(&mut tx, &actor, &mut view).await?;
        tx.commit().await?;
        let [view] = view;
        Ok(ConversationResponse::Ok(Json(view), etag))
    }
}
