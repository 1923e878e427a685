//! What the Inbox routes answer: conversations (list item and detail alike) and messages.

use crate::http::fields::{Choice, Nullable};
use chrono::{DateTime, Utc};
use poem_openapi::Object;
use schema::store::conversations::Conversation;
use schema::store::inbox_messages::Message;

crate::choices! {
    /// `open`, `pending` or `done`.
    ConversationStatus = &["open", "pending", "done"];
    /// `inbox` (folders included), `archive`, `spam` or `trash`.
    ConversationPlace = &["inbox", "archive", "spam", "trash"];
    /// `received` (mail in), `customer` (opened through the API), `reply` (sent) or `note` (internal).
    InboxMessageKind = &["received", "customer", "reply", "note"];
}

/// A conversation's channel.
#[derive(Object)]
pub struct InboxChannelRef {
    /// The channel's id.
    pub id: String,
    /// Its receiving address.
    pub address: String,
}

/// A teammate a conversation is assigned to.
#[derive(Object)]
pub struct ConversationAssignee {
    /// The person's id.
    pub id: String,
    /// The person's name.
    pub name: String,
}

/// A label on a conversation.
#[derive(Object, serde::Deserialize)]
pub struct InboxLabelRef {
    /// The label's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its colour (`#rrggbb`).
    pub colour: String,
}

/// Who wrote to the team.
#[derive(Object)]
pub struct InboxCustomer {
    /// The address.
    pub email: String,
    /// The display name, empty when none was given.
    pub name: String,
}

/// A conversation.
#[derive(Object)]
pub struct InboxConversation {
    /// Always `inbox_conversation`.
    pub object: String,
    /// The conversation's id.
    pub id: String,
    /// Its channel.
    pub channel: InboxChannelRef,
    /// Its subject (the first message's).
    pub subject: String,
    /// `open`, `pending` or `done`.
    pub status: Choice<ConversationStatus>,
    /// `inbox` (folders included), `archive`, `spam` or `trash`.
    pub place: Choice<ConversationPlace>,
    /// The teammate it is assigned to, or `null`.
    pub assignee: Nullable<ConversationAssignee>,
    /// Its labels.
    pub labels: Vec<InboxLabelRef>,
    /// The folder it is filed in, or `null`.
    pub folder_id: Nullable<String>,
    /// The caller's own id for it, unique per channel, or `null`.
    pub external_id: Nullable<String>,
    /// Who wrote in.
    pub customer: InboxCustomer,
    /// The sent email whose recipient's answer opened it, or `null`.
    pub email_id: Nullable<String>,
    /// Bumped by every change and message; sent back in `If-Match` to update only this version.
    pub version: i32,
    /// The latest message that is not a note, or `null`.
    pub latest_message_id: Nullable<String>,
    /// The latest message from the customer, or `null`: a reply names it in `in_reply_to`.
    pub latest_customer_message_id: Nullable<String>,
    /// Messages and notes in all.
    pub message_count: i32,
    /// When the latest message or note was added.
    pub last_message_at: DateTime<Utc>,
    /// When it was opened.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// The signed-in person's own read mark, star and snooze (dashboard session only; `null`
    /// for a key or token, which have none).
    pub mine: Nullable<InboxMine>,
}

/// A person's own state of a conversation.
#[derive(Object, Clone)]
pub struct InboxMine {
    /// Whether the person marked it read (and has not marked it unread since).
    pub read: bool,
    /// Whether the person starred it.
    pub starred: bool,
    /// When the person's snooze wakes it, or `null`.
    pub snoozed_until: Nullable<DateTime<Utc>>,
}

/// Fills in `mine` for a person signed in to the dashboard.
pub async fn fill_mine(conn: &mut sqlx::PgConnection, actor: &crate::routes::inbox::actor::Actor, views: &mut [InboxConversation]) -> crate::http::error::ApiResult<()> {
    let schema::store::inbox::Reach::Person { person_id, personal: true, .. } = actor.reach else { return Ok(()) };
    let ids: Vec<uuid::Uuid> = views.iter().filter_map(|v| schema::ids::parse_id(&v.id)).collect();
    let states = schema::store::inbox_people::mine(conn, person_id, &ids).await?;
    for view in views {
        let state = states.iter().find(|s| s.conversation_id.to_string() == view.id);
        view.mine = Some(InboxMine {
            read: state.is_some_and(|s| s.read_at.is_some()),
            starred: state.is_some_and(|s| s.starred),
            snoozed_until: state.and_then(|s| s.snoozed_until).into(),
        })
        .into();
    }
    Ok(())
}

pub fn conversation(c: Conversation) -> InboxConversation {
    let labels: Vec<InboxLabelRef> = serde_json::from_value(c.labels).unwrap_or_default();
    InboxConversation {
        object: "inbox_conversation".into(),
        id: c.id.to_string(),
        channel: InboxChannelRef { id: c.channel_id.to_string(), address: c.channel_address },
        subject: c.subject,
        status: c.status.into(),
        place: c.place.into(),
        assignee: c.assignee_id.map(|id| ConversationAssignee { id: id.to_string(), name: c.assignee_name.unwrap_or_default() }).into(),
        labels,
        folder_id: c.folder_id.map(|id| id.to_string()).into(),
        external_id: c.external_id.into(),
        customer: InboxCustomer { email: c.customer_email, name: c.customer_name },
        email_id: c.email_id.map(|id| id.to_string()).into(),
        version: c.version,
        latest_message_id: c.latest_message_id.map(|id| id.to_string()).into(),
        latest_customer_message_id: c.latest_customer_message_id.map(|id| id.to_string()).into(),
        message_count: c.message_count,
        last_message_at: c.last_message_at,
        created_at: c.created_at,
        updated_at: c.updated_at,
        mine: None.into(),
    }
}

/// An attachment of a received message.
#[derive(Object, serde::Deserialize)]
pub struct InboxAttachment {
    /// The attachment's id (read it through the received email's attachments).
    pub id: String,
    /// Its file name.
    pub filename: String,
    /// Its content type.
    pub content_type: String,
    /// Its size in bytes.
    pub size: i64,
}

/// Who wrote a reply or a note.
#[derive(Object)]
pub struct MessageAuthor {
    /// `person` or `api_key`.
    pub kind: String,
    /// The person's or the key's id.
    pub id: String,
    /// The person's name, or the key's name as it was when it wrote.
    pub name: String,
}

/// A message of a conversation: mail in, a reply, or an internal note.
#[derive(Object)]
pub struct InboxMessage {
    /// Always `inbox_message`.
    pub object: String,
    /// The message's id.
    pub id: String,
    /// `received`, `customer`, `reply` or `note`.
    pub kind: Choice<InboxMessageKind>,
    /// `inbound` (from the customer), `outbound` (a reply) or `internal` (a note).
    pub direction: String,
    /// The sender's address (empty for a note).
    pub from: String,
    /// The sender's name.
    pub from_name: String,
    /// The recipients.
    pub to: Vec<String>,
    /// The copied recipients.
    pub cc: Vec<String>,
    /// The subject.
    pub subject: String,
    /// The text body, or `null`.
    pub text: Nullable<String>,
    /// The HTML body as received or sent, or `null`.
    pub html: Nullable<String>,
    /// The attachments of a received message.
    pub attachments: Vec<InboxAttachment>,
    /// The received email it is, or `null`.
    pub received_email_id: Nullable<String>,
    /// The sent email a reply is, or `null`.
    pub email_id: Nullable<String>,
    /// Who wrote a reply or note, or `null`.
    pub author: Nullable<MessageAuthor>,
    /// When it was added.
    pub created_at: DateTime<Utc>,
}

pub fn message(m: Message) -> InboxMessage {
    let direction = match m.kind.as_str() {
        "received" | "customer" => "inbound",
        "reply" => "outbound",
        _ => "internal",
    };
    let author = match (m.author_person_id, m.author_key_id) {
        (Some(person), _) => Some(MessageAuthor { kind: "person".into(), id: person.to_string(), name: m.author_name.clone().unwrap_or_default() }),
        (None, Some(key)) => Some(MessageAuthor { kind: "api_key".into(), id: key.to_string(), name: m.author_name.clone().unwrap_or_default() }),
        (None, None) => None,
    };
    InboxMessage {
        object: "inbox_message".into(),
        id: m.id.to_string(),
        kind: m.kind.into(),
        direction: direction.into(),
        from: m.from_email,
        from_name: m.from_name,
        to: m.to_addresses,
        cc: m.cc,
        subject: m.subject,
        text: m.text.into(),
        html: m.html.into(),
        attachments: serde_json::from_value(m.attachments).unwrap_or_default(),
        received_email_id: m.received_email_id.map(|id| id.to_string()).into(),
        email_id: m.email_id.map(|id| id.to_string()).into(),
        author: author.into(),
        created_at: m.created_at,
    }
}
