//! Saved blocks: a block or a section kept for reuse; templates embed a copy and are
//! recompiled when it changes.

use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A saved block.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SavedBlock {
    pub id: Uuid,
    pub name: String,
    /// `block` or `section`.
    pub kind: String,
    pub content: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, name, kind, content, created_at, updated_at";

pub async fn insert(conn: &mut PgConnection, team_id: Uuid, name: &str, kind: &str, content: &Value) -> sqlx::Result<SavedBlock> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO saved_blocks (id, team_id, name, kind, content) VALUES ($1, $2, $3, $4, $5) RETURNING {COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(name)
    .bind(kind)
    .bind(content)
    .fetch_one(conn)
    .await
}

/// One of the team's saved blocks; `lock` takes it for update.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid, lock: bool) -> sqlx::Result<Option<SavedBlock>> {
    let lock = if lock { " FOR UPDATE" } else { "" };
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM saved_blocks WHERE team_id = $1 AND id = $2{lock}")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The team's saved blocks among `ids` (what a document references).
pub async fn many(conn: &mut PgConnection, team_id: Uuid, ids: &[Uuid]) -> sqlx::Result<Vec<SavedBlock>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM saved_blocks WHERE team_id = $1 AND id = ANY($2)")))
        .bind(team_id)
        .bind(ids)
        .fetch_all(conn)
        .await
}

/// The team's saved blocks, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<SavedBlock>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM saved_blocks WHERE team_id = "));
    query.push_bind(team_id);
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// Changes a saved block's name or content.
pub async fn update(conn: &mut PgConnection, team_id: Uuid, id: Uuid, name: Option<&str>, content: Option<&Value>) -> sqlx::Result<Option<SavedBlock>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE saved_blocks SET name = COALESCE($3, name), content = COALESCE($4, content), updated_at = now()
         WHERE team_id = $1 AND id = $2 RETURNING {COLUMNS}"
    )))
    .bind(team_id)
    .bind(id)
    .bind(name)
    .bind(content)
    .fetch_optional(conn)
    .await
}

/// Deletes a saved block; templates keep the copy they embed.
pub async fn delete(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM saved_blocks WHERE team_id = $1 AND id = $2").bind(team_id).bind(id).execute(conn).await?;
    Ok(done.rows_affected() == 1)
}
