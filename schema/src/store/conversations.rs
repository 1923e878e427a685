//! Inbox conversations and their messages. Every read goes through the channel's reach
//! ([`crate::store::inbox::Reach`]), so a conversation in a channel the caller does not reach
//! answers as missing.

use crate::page::{Page, PageRequest};
use crate::store::inbox::Reach;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A conversation with what its list item shows.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Conversation {
    pub id: Uuid,
    pub team_id: Uuid,
    pub channel_id: Uuid,
    pub channel_address: String,
    pub subject: String,
    pub status: String,
    pub place: String,
    pub folder_id: Option<Uuid>,
    pub assignee_id: Option<Uuid>,
    pub assignee_name: Option<String>,
    pub external_id: Option<String>,
    pub customer_email: String,
    pub customer_name: String,
    pub email_id: Option<Uuid>,
    pub version: i32,
    pub latest_message_id: Option<Uuid>,
    pub latest_customer_message_id: Option<Uuid>,
    pub message_count: i32,
    pub last_message_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// `[{ id, name, colour }]`.
    pub labels: serde_json::Value,
}

/// A conversation's columns, from `v` (the conversation), `c` (its channel) and `p` (its assignee).
pub(crate) const COLUMNS: &str = "v.id, v.team_id, v.channel_id, c.address AS channel_address, v.subject, v.status, v.place, v.folder_id,
        v.assignee_id, p.name AS assignee_name, v.external_id, v.customer_email, v.customer_name, v.email_id, v.version,
        v.latest_message_id, v.latest_customer_message_id, v.message_count, v.last_message_at, v.created_at, v.updated_at,
        COALESCE((SELECT jsonb_agg(jsonb_build_object('id', l.id, 'name', l.name, 'colour', l.colour) ORDER BY l.name, l.id)
                  FROM inbox_conversation_labels cl JOIN inbox_labels l ON l.id = cl.label_id WHERE cl.conversation_id = v.id), '[]') AS labels";

/// The joins [`COLUMNS`] reads, after `inbox_conversations v`.
pub(crate) const JOINS: &str = "JOIN inbox_channels c ON c.id = v.channel_id LEFT JOIN people p ON p.id = v.assignee_id";

fn select() -> String {
    format!("SELECT {COLUMNS} FROM inbox_conversations v {JOINS} WHERE v.team_id = ")
}

/// A new conversation.
pub struct NewConversation<'a> {
    pub channel_id: Uuid,
    pub subject: &'a str,
    pub customer_email: &'a str,
    pub customer_name: &'a str,
    pub external_id: Option<&'a str>,
    pub email_id: Option<Uuid>,
}

/// Opens a conversation; `None` when its channel already has one with the same `external_id`.
pub async fn open(conn: &mut PgConnection, team_id: Uuid, new: &NewConversation<'_>) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar(
        "INSERT INTO inbox_conversations (id, team_id, channel_id, subject, customer_email, customer_name, external_id, email_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (channel_id, external_id) DO NOTHING RETURNING id",
    )
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(new.channel_id)
    .bind(new.subject)
    .bind(new.customer_email)
    .bind(new.customer_name)
    .bind(new.external_id)
    .bind(new.email_id)
    .fetch_optional(conn)
    .await
}

/// The conversation of `channel_id` with `external_id`, in any place.
pub async fn by_external_id(conn: &mut PgConnection, team_id: Uuid, channel_id: Uuid, external_id: &str) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar("SELECT id FROM inbox_conversations WHERE team_id = $1 AND channel_id = $2 AND external_id = $3")
        .bind(team_id)
        .bind(channel_id)
        .bind(external_id)
        .fetch_optional(conn)
        .await
}

/// The conversation (id and subject) of `channel_id` holding a message with one of
/// `message_ids` (the `In-Reply-To` and `References` of a message that arrived), latest first.
pub async fn thread(conn: &mut PgConnection, team_id: Uuid, channel_id: Uuid, message_ids: &[String]) -> sqlx::Result<Option<(Uuid, String)>> {
    if message_ids.is_empty() {
        return Ok(None);
    }
    sqlx::query_as(
        "SELECT m.conversation_id, v.subject FROM inbox_messages m JOIN inbox_conversations v ON v.id = m.conversation_id
         WHERE m.team_id = $1 AND m.message_id = ANY($3) AND v.channel_id = $2 ORDER BY m.id DESC LIMIT 1",
    )
    .bind(team_id)
    .bind(channel_id)
    .bind(message_ids)
    .fetch_optional(conn)
    .await
}

/// One conversation that `reach` reaches; `lock` takes its row for an update.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid, reach: &Reach, lock: bool) -> sqlx::Result<Option<Conversation>> {
    let mut query = QueryBuilder::new(select());
    query.push_bind(team_id).push(" AND v.id = ").push_bind(id);
    reach.push(&mut query, "c");
    if lock {
        query.push(" FOR UPDATE OF v");
    }
    query.build_query_as().fetch_optional(conn).await
}

/// The list's filters (`None`: any).
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub channel_id: Option<Uuid>,
    pub status: Option<String>,
    /// `Some(None)`: unassigned.
    pub assignee_id: Option<Option<Uuid>>,
    pub external_id: Option<String>,
    pub label_id: Option<Uuid>,
    pub folder_id: Option<Uuid>,
    /// `None` with an `external_id`: every place.
    pub place: Option<String>,
}

/// The conversations `reach` reaches that match `filters`, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, reach: &Reach, filters: &Filters, page: &PageRequest) -> sqlx::Result<Page<Conversation>> {
    let mut query = QueryBuilder::new(select());
    query.push_bind(team_id);
    reach.push_among(&mut query, team_id, "v.channel_id");
    if let Some(place) = &filters.place {
        query.push(" AND v.place = ").push_bind(place.clone());
    }
    if let Some(channel_id) = filters.channel_id {
        query.push(" AND v.channel_id = ").push_bind(channel_id);
    }
    if let Some(status) = &filters.status {
        query.push(" AND v.status = ").push_bind(status.clone());
    }
    match filters.assignee_id {
        Some(Some(person)) => {
            query.push(" AND v.assignee_id = ").push_bind(person);
        }
        Some(None) => {
            query.push(" AND v.assignee_id IS NULL");
        }
        None => {}
    }
    if let Some(external_id) = &filters.external_id {
        query.push(" AND v.external_id = ").push_bind(external_id.clone());
    }
    if let Some(folder_id) = filters.folder_id {
        query.push(" AND v.folder_id = ").push_bind(folder_id);
    }
    if let Some(label_id) = filters.label_id {
        query.push(" AND EXISTS (SELECT 1 FROM inbox_conversation_labels cl WHERE cl.conversation_id = v.id AND cl.label_id = ").push_bind(label_id).push(")");
    }
    page.push_to(&mut query, "v.id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// What a conversation update changes (`None` leaves a field alone; `Some(None)` clears).
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub status: Option<String>,
    pub place: Option<String>,
    pub folder_id: Option<Option<Uuid>>,
    pub assignee_id: Option<Option<Uuid>>,
    pub label_ids: Option<Vec<Uuid>>,
}

/// Applies a change to a conversation (locked by the caller) and bumps its version; answers
/// the new version.
pub async fn update(conn: &mut PgConnection, id: Uuid, change: &Change) -> sqlx::Result<i32> {
    let version = sqlx::query_scalar(
        "UPDATE inbox_conversations SET status = COALESCE($2, status), place = COALESCE($3, place),
             folder_id = CASE WHEN $4 THEN $5 ELSE folder_id END, assignee_id = CASE WHEN $6 THEN $7 ELSE assignee_id END,
             version = version + 1, updated_at = now()
         WHERE id = $1 RETURNING version",
    )
    .bind(id)
    .bind(change.status.as_deref())
    .bind(change.place.as_deref())
    .bind(change.folder_id.is_some())
    .bind(change.folder_id.flatten())
    .bind(change.assignee_id.is_some())
    .bind(change.assignee_id.flatten())
    .fetch_one(&mut *conn)
    .await?;
    if let Some(labels) = &change.label_ids {
        sqlx::query("DELETE FROM inbox_conversation_labels WHERE conversation_id = $1 AND NOT (label_id = ANY($2))").bind(id).bind(labels).execute(&mut *conn).await?;
        sqlx::query("INSERT INTO inbox_conversation_labels (conversation_id, label_id) SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING")
            .bind(id)
            .bind(labels)
            .execute(conn)
            .await?;
    }
    Ok(version)
}
