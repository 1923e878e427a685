//! A person's own state of an Inbox conversation: reply drafts (which also tell teammates that
//! someone is replying), snoozes (woken by the schedules' tick), read marks and stars.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// How recently a saved draft means its author is replying.
pub const REPLYING_SECONDS: f64 = 60.0;

/// A person's draft.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Draft {
    pub text: Option<String>,
    pub html: Option<String>,
    pub updated_at: DateTime<Utc>,
}

/// Saves the person's draft of a reply.
pub async fn save_draft(conn: &mut PgConnection, team_id: Uuid, conversation_id: Uuid, person_id: Uuid, text: Option<&str>, html: Option<&str>) -> sqlx::Result<Draft> {
    sqlx::query_as(
        "INSERT INTO inbox_person_state (conversation_id, person_id, team_id, draft_text, draft_html, draft_updated_at) VALUES ($1, $2, $3, $4, $5, now())
         ON CONFLICT (conversation_id, person_id) DO UPDATE SET draft_text = $4, draft_html = $5, draft_updated_at = now()
         RETURNING draft_text AS text, draft_html AS html, draft_updated_at AS updated_at",
    )
    .bind(conversation_id)
    .bind(person_id)
    .bind(team_id)
    .bind(text)
    .bind(html)
    .fetch_one(conn)
    .await
}

/// The person's draft of a reply, when they have one.
pub async fn read_draft(conn: &mut PgConnection, team_id: Uuid, conversation_id: Uuid, person_id: Uuid) -> sqlx::Result<Option<Draft>> {
    sqlx::query_as(
        "SELECT draft_text AS text, draft_html AS html, draft_updated_at AS updated_at FROM inbox_person_state
         WHERE conversation_id = $1 AND person_id = $2 AND team_id = $3 AND draft_updated_at IS NOT NULL",
    )
    .bind(conversation_id)
    .bind(person_id)
    .bind(team_id)
    .fetch_optional(conn)
    .await
}

/// Drops the person's draft; answers whether there was one.
pub async fn drop_draft(conn: &mut PgConnection, conversation_id: Uuid, person_id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE inbox_person_state SET draft_text = NULL, draft_html = NULL, draft_updated_at = NULL
         WHERE conversation_id = $1 AND person_id = $2 AND draft_updated_at IS NOT NULL",
    )
    .bind(conversation_id)
    .bind(person_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The name of a teammate (not `except`) who saved a draft of this conversation within
/// [`REPLYING_SECONDS`].
pub async fn replying(conn: &mut PgConnection, conversation_id: Uuid, except: Option<Uuid>) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT p.name FROM inbox_person_state s JOIN people p ON p.id = s.person_id
         WHERE s.conversation_id = $1 AND s.person_id IS DISTINCT FROM $2 AND s.draft_updated_at > now() - make_interval(secs => $3)
         ORDER BY s.draft_updated_at DESC LIMIT 1",
    )
    .bind(conversation_id)
    .bind(except)
    .bind(REPLYING_SECONDS)
    .fetch_optional(conn)
    .await
}

/// Snoozes the conversation for the person until `until`.
pub async fn snooze(conn: &mut PgConnection, team_id: Uuid, conversation_id: Uuid, person_id: Uuid, until: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO inbox_person_state (conversation_id, person_id, team_id, snoozed_until) VALUES ($1, $2, $3, $4)
         ON CONFLICT (conversation_id, person_id) DO UPDATE SET snoozed_until = $4",
    )
    .bind(conversation_id)
    .bind(person_id)
    .bind(team_id)
    .bind(until)
    .execute(conn)
    .await?;
    Ok(())
}

/// A conversation a due snooze woke.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Woken {
    pub team_id: Uuid,
    pub conversation_id: Uuid,
    pub channel_id: Uuid,
    pub subject: String,
    pub previous_status: String,
}

/// Wakes every snooze due by now: the snooze is cleared and its conversation, if not `open`,
/// becomes `open` again. Rows other processes hold are left to their tick.
pub async fn wake_due(conn: &mut PgConnection) -> sqlx::Result<Vec<Woken>> {
    sqlx::query_as(
        "WITH due AS (
             SELECT conversation_id, person_id FROM inbox_person_state WHERE snoozed_until <= now() ORDER BY snoozed_until LIMIT 1000 FOR UPDATE SKIP LOCKED
         ), cleared AS (
             UPDATE inbox_person_state s SET snoozed_until = NULL FROM due WHERE s.conversation_id = due.conversation_id AND s.person_id = due.person_id
             RETURNING s.conversation_id
         ), before AS (
             SELECT v.id, v.status FROM inbox_conversations v WHERE v.id IN (SELECT conversation_id FROM cleared) AND v.status <> 'open' FOR UPDATE
         )
         UPDATE inbox_conversations v SET status = 'open', version = v.version + 1, updated_at = now()
         FROM before WHERE v.id = before.id
         RETURNING v.team_id, v.id AS conversation_id, v.channel_id, v.subject, before.status AS previous_status",
    )
    .fetch_all(conn)
    .await
}

/// Sets the person's read mark and star (`None` leaves one alone).
pub async fn mark(conn: &mut PgConnection, team_id: Uuid, conversation_id: Uuid, person_id: Uuid, read: Option<bool>, starred: Option<bool>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO inbox_person_state (conversation_id, person_id, team_id, read_at, starred) VALUES ($1, $2, $3, CASE WHEN $4 THEN now() END, COALESCE($5, false))
         ON CONFLICT (conversation_id, person_id) DO UPDATE SET
             read_at = CASE WHEN $4 IS NULL THEN inbox_person_state.read_at WHEN $4 THEN now() ELSE NULL END,
             starred = COALESCE($5, inbox_person_state.starred)",
    )
    .bind(conversation_id)
    .bind(person_id)
    .bind(team_id)
    .bind(read)
    .bind(starred)
    .execute(conn)
    .await?;
    Ok(())
}

/// A person's state of one conversation.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Mine {
    pub conversation_id: Uuid,
    pub read_at: Option<DateTime<Utc>>,
    pub starred: bool,
    pub snoozed_until: Option<DateTime<Utc>>,
}

/// The person's state of each of `conversation_ids` that has one.
pub async fn mine(conn: &mut PgConnection, person_id: Uuid, conversation_ids: &[Uuid]) -> sqlx::Result<Vec<Mine>> {
    sqlx::query_as("SELECT conversation_id, read_at, starred, snoozed_until FROM inbox_person_state WHERE person_id = $1 AND conversation_id = ANY($2)")
        .bind(person_id)
        .bind(conversation_ids)
        .fetch_all(conn)
        .await
}
