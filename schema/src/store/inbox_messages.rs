//! The messages of Inbox conversations. A received message is its received email (read from
//! it, never copied); a customer message opened through the API, a reply and a note carry their
//! own bodies. Each message keeps a `tsvector` of its subject, text and addresses for search.

use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A new message of a conversation.
#[derive(Debug, Clone, Default)]
pub struct NewMessage<'a> {
    pub conversation_id: Uuid,
    /// `received`, `customer`, `reply` or `note`.
    pub kind: &'a str,
    pub received_email_id: Option<Uuid>,
    pub email_id: Option<Uuid>,
    /// The RFC 5322 Message-ID, angle brackets removed.
    pub message_id: Option<&'a str>,
    pub from_email: &'a str,
    pub from_name: &'a str,
    pub to: &'a [String],
    pub cc: &'a [String],
    pub subject: &'a str,
    /// Kept for every kind but `received` (read from the received email).
    pub text: Option<&'a str>,
    pub html: Option<&'a str>,
    pub author_person_id: Option<Uuid>,
    pub author_key_id: Option<Uuid>,
    pub author_name: Option<&'a str>,
    /// The words search finds it by (for a received message, its text, which is not copied).
    pub search_text: &'a str,
}

/// Adds a message to its conversation (locked or just opened by the caller): counts it, makes
/// it the latest (a note is never the latest message), reopens a `done` conversation a customer
/// writes into, and bumps the version. Answers the message's id and the new version.
pub async fn add(conn: &mut PgConnection, team_id: Uuid, new: &NewMessage<'_>) -> sqlx::Result<(Uuid, i32)> {
    let id = crate::ids::new_id();
    let version = sqlx::query_scalar(
        "WITH m AS (
             INSERT INTO inbox_messages (id, team_id, conversation_id, kind, received_email_id, email_id, message_id, from_email, from_name,
                 to_addresses, cc, subject, text, html, author_person_id, author_key_id, author_name, search)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 setweight(to_tsvector('simple', $12), 'A') || to_tsvector('simple', $18) || to_tsvector('simple', $8 || ' ' || array_to_string($10 || $11, ' ')))
             RETURNING id, conversation_id, kind
         )
         UPDATE inbox_conversations v SET message_count = v.message_count + 1, version = v.version + 1,
             latest_message_id = CASE WHEN m.kind = 'note' THEN v.latest_message_id ELSE m.id END,
             latest_customer_message_id = CASE WHEN m.kind IN ('received', 'customer') THEN m.id ELSE v.latest_customer_message_id END,
             status = CASE WHEN m.kind IN ('received', 'customer') AND v.status = 'done' THEN 'open' ELSE v.status END,
             last_message_at = now(), updated_at = now()
         FROM m WHERE v.id = m.conversation_id RETURNING v.version",
    )
    .bind(id)
    .bind(team_id)
    .bind(new.conversation_id)
    .bind(new.kind)
    .bind(new.received_email_id)
    .bind(new.email_id)
    .bind(new.message_id)
    .bind(new.from_email)
    .bind(new.from_name)
    .bind(new.to)
    .bind(new.cc)
    .bind(new.subject)
    .bind(new.text)
    .bind(new.html)
    .bind(new.author_person_id)
    .bind(new.author_key_id)
    .bind(new.author_name)
    .bind(new.search_text)
    .fetch_one(conn)
    .await?;
    Ok((id, version))
}

/// A message as read.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Message {
    pub id: Uuid,
    pub kind: String,
    pub received_email_id: Option<Uuid>,
    pub email_id: Option<Uuid>,
    pub message_id: Option<String>,
    pub from_email: String,
    pub from_name: String,
    pub to_addresses: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    pub text: Option<String>,
    pub html: Option<String>,
    pub author_person_id: Option<Uuid>,
    pub author_key_id: Option<Uuid>,
    pub author_name: Option<String>,
    /// `[{ id, filename, content_type, size }]` of a received message.
    pub attachments: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

const SELECT: &str = "SELECT m.id, m.kind, m.received_email_id, m.email_id, m.message_id,
                COALESCE(r.from_email, m.from_email) AS from_email, COALESCE(r.from_name, m.from_name) AS from_name,
                COALESCE(r.to_addresses, m.to_addresses) AS to_addresses, COALESCE(r.cc, m.cc) AS cc,
                COALESCE(r.subject, m.subject) AS subject, COALESCE(r.text, m.text) AS text, COALESCE(r.html, m.html) AS html,
                m.author_person_id, m.author_key_id, COALESCE(p.name, m.author_name) AS author_name,
                COALESCE((SELECT jsonb_agg(jsonb_build_object('id', a.id, 'filename', a.filename, 'content_type', a.content_type, 'size', a.size) ORDER BY a.position)
                          FROM received_attachments a WHERE a.received_email_id = m.received_email_id), '[]') AS attachments,
                m.created_at
         FROM inbox_messages m LEFT JOIN received_emails r ON r.id = m.received_email_id LEFT JOIN people p ON p.id = m.author_person_id
         WHERE m.conversation_id = ";

/// One message of a conversation.
pub async fn get(conn: &mut PgConnection, conversation_id: Uuid, id: Uuid) -> sqlx::Result<Option<Message>> {
    let mut query = QueryBuilder::new(SELECT);
    query.push_bind(conversation_id).push(" AND m.id = ").push_bind(id);
    query.build_query_as().fetch_optional(conn).await
}

/// A conversation's messages, oldest first (`after` pages toward newer ones).
pub async fn list(conn: &mut PgConnection, conversation_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<Message>> {
    let mut query = QueryBuilder::new(SELECT);
    query.push_bind(conversation_id);
    // Oldest first: `after` is newer messages, `before` older ones.
    let descending = match page.cursor {
        None => false,
        Some(crate::page::Cursor::After(id)) => {
            query.push(" AND m.id > ").push_bind(id);
            false
        }
        Some(crate::page::Cursor::Before(id)) => {
            query.push(" AND m.id < ").push_bind(id);
            true
        }
    };
    query.push(if descending { " ORDER BY m.id DESC LIMIT " } else { " ORDER BY m.id ASC LIMIT " }).push_bind(page.limit + 1);
    let mut rows: Vec<Message> = query.build_query_as().fetch_all(conn).await?;
    let has_more = rows.len() as i64 > page.limit;
    rows.truncate(page.limit as usize);
    if descending {
        rows.reverse();
    }
    Ok(Page { has_more, data: rows })
}

/// What a reply threads under: the Message-ID of the latest customer message that has one
/// (`In-Reply-To`), and the conversation's Message-IDs oldest first, the last 20 (`References`).
#[derive(Debug, Clone, Default)]
pub struct Thread {
    pub parent: Option<String>,
    pub references: Vec<String>,
}

/// The [`Thread`] of a conversation.
pub async fn thread_of(conn: &mut PgConnection, conversation_id: Uuid) -> sqlx::Result<Thread> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT kind, message_id FROM (SELECT id, kind, message_id FROM inbox_messages
             WHERE conversation_id = $1 AND message_id IS NOT NULL ORDER BY id DESC LIMIT 20) latest ORDER BY id",
    )
    .bind(conversation_id)
    .fetch_all(conn)
    .await?;
    let parent = rows.iter().rev().find(|(kind, _)| kind == "received" || kind == "customer").map(|(_, id)| id.clone());
    Ok(Thread { parent, references: rows.into_iter().map(|(_, id)| id).collect() })
}
