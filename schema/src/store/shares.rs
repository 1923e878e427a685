//! Read-only view links of sent emails: only the token's hash is stored.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A view link as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Share {
    pub id: Uuid,
    pub email_id: Uuid,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

/// Records a link to an email, by its token's hash.
pub async fn create(conn: &mut PgConnection, email_id: Uuid, token_hash: &[u8], expires_at: DateTime<Utc>) -> sqlx::Result<Share> {
    sqlx::query_as(
        "INSERT INTO email_shares (id, email_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)
         RETURNING id, email_id, expires_at, created_at",
    )
    .bind(crate::ids::new_id())
    .bind(email_id)
    .bind(token_hash)
    .bind(expires_at)
    .fetch_one(conn)
    .await
}

/// The email a live link (not expired, not revoked) shows.
pub async fn live_email(conn: &mut PgConnection, token_hash: &[u8]) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar(
        "SELECT email_id FROM email_shares WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > now()",
    )
    .bind(token_hash)
    .fetch_optional(conn)
    .await
}

/// Revokes every live link of an email; answers how many.
pub async fn revoke_all(conn: &mut PgConnection, email_id: Uuid) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE email_shares SET revoked_at = now() WHERE email_id = $1 AND revoked_at IS NULL AND expires_at > now()",
    )
    .bind(email_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
