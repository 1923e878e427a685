//! Verified identities: addresses a team confirmed through a mailed link, which the sending
//! sandbox delivers to.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A verified identity (or one waiting for its link to be used).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Identity {
    pub id: Uuid,
    pub team_id: Uuid,
    pub email: String,
    pub expires_at: DateTime<Utc>,
    pub confirmed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, team_id, email, expires_at, confirmed_at, created_at";

/// Records the address with a fresh link; a repeat request for an address replaces its link
/// (a confirmed address stays confirmed).
pub async fn request(conn: &mut PgConnection, team_id: Uuid, email: &str, token_hash: &[u8], expires_at: DateTime<Utc>) -> sqlx::Result<Identity> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO verified_identities (id, team_id, email, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (team_id, email) DO UPDATE SET token_hash = excluded.token_hash, expires_at = excluded.expires_at
         RETURNING {COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(email)
    .bind(token_hash)
    .bind(expires_at)
    .fetch_one(conn)
    .await
}

/// The team's identities, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Vec<Identity>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM verified_identities WHERE team_id = $1 ORDER BY id DESC")))
        .bind(team_id)
        .fetch_all(conn)
        .await
}

/// Deletes one of the team's identities; whether it was there.
pub async fn delete(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM verified_identities WHERE team_id = $1 AND id = $2").bind(team_id).bind(id).execute(conn).await?;
    Ok(done.rows_affected() == 1)
}

/// The identity a link names while the link is unused and unexpired.
pub async fn by_token(conn: &mut PgConnection, token_hash: &[u8]) -> sqlx::Result<Option<Identity>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM verified_identities WHERE token_hash = $1 AND expires_at > now()")))
        .bind(token_hash)
        .fetch_optional(conn)
        .await
}

/// Confirms the identity a link names and uses the link up; `None` when the link is unknown,
/// used or expired.
pub async fn confirm(conn: &mut PgConnection, token_hash: &[u8]) -> sqlx::Result<Option<Identity>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE verified_identities SET confirmed_at = COALESCE(confirmed_at, now()), token_hash = NULL
         WHERE token_hash = $1 AND expires_at > now() RETURNING {COLUMNS}"
    )))
    .bind(token_hash)
    .fetch_optional(conn)
    .await
}
