//! The development outbox: what the development sender "delivered", kept for the browser.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// One message delivered into the outbox.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OutboxMessage {
    pub id: Uuid,
    pub email_id: Uuid,
    pub recipient: String,
    pub from_header: String,
    pub subject: String,
    pub html: Option<String>,
    pub text: Option<String>,
    /// The signed message as it would have gone out.
    pub message: Vec<u8>,
    pub created_at: DateTime<Utc>,
}

/// Keeps one signed message per recipient of an email.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, email_id: Uuid, kept: &[(&str, &[u8])]) -> sqlx::Result<()> {
    let ids: Vec<Uuid> = kept.iter().map(|_| crate::ids::new_id()).collect();
    let recipients: Vec<&str> = kept.iter().map(|(recipient, _)| *recipient).collect();
    let messages: Vec<&[u8]> = kept.iter().map(|(_, message)| *message).collect();
    sqlx::query(
        "INSERT INTO dev_outbox (id, team_id, email_id, recipient, message)
         SELECT id, $1, $2, recipient, message FROM unnest($3::uuid[], $4::text[], $5::bytea[]) AS r(id, recipient, message)",
    )
    .bind(team_id)
    .bind(email_id)
    .bind(&ids)
    .bind(&recipients)
    .bind(&messages)
    .execute(conn)
    .await?;
    Ok(())
}

/// The latest messages, newest first.
pub async fn latest(conn: &mut PgConnection, limit: i64) -> sqlx::Result<Vec<OutboxMessage>> {
    sqlx::query_as(
        "SELECT o.id, o.email_id, o.recipient, e.from_header, e.subject, e.html, e.text, o.message, o.created_at
         FROM dev_outbox o JOIN emails e ON e.id = o.email_id
         ORDER BY o.created_at DESC, o.id DESC LIMIT $1",
    )
    .bind(limit)
    .fetch_all(conn)
    .await
}
