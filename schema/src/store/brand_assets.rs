//! Images uploaded for the team's brand, kept in PostgreSQL and served back byte-for-byte.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// An uploaded image without its bytes.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Asset {
    pub id: Uuid,
    pub content_type: String,
    pub size: i32,
    pub created_at: DateTime<Utc>,
}

/// Stores an image.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, content_type: &str, bytes: &[u8]) -> sqlx::Result<Asset> {
    sqlx::query_as(
        "INSERT INTO brand_assets (id, team_id, content_type, size, bytes) VALUES ($1, $2, $3, $4, $5)
         RETURNING id, content_type, size, created_at",
    )
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(content_type)
    .bind(i32::try_from(bytes.len()).unwrap_or(i32::MAX))
    .bind(bytes)
    .fetch_one(conn)
    .await
}

/// An image's type and bytes, for serving (no team: the link is public, as an image in an email must be).
pub async fn bytes(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<(String, Vec<u8>)>> {
    sqlx::query_as("SELECT content_type, bytes FROM brand_assets WHERE id = $1").bind(id).fetch_optional(conn).await
}

/// The sizes of the team's images among `ids` (for the image-weight check).
pub async fn sizes(conn: &mut PgConnection, team_id: Uuid, ids: &[Uuid]) -> sqlx::Result<Vec<(Uuid, i32)>> {
    sqlx::query_as("SELECT id, size FROM brand_assets WHERE team_id = $1 AND id = ANY($2)").bind(team_id).bind(ids).fetch_all(conn).await
}
