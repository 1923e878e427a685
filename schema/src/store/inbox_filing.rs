//! Inbox labels (team-wide or one channel's) and folders (one channel's, nesting by parent).
//! Reads go through the channel's reach: a label or folder of a channel the caller does not
//! reach answers as missing; team-wide labels are everyone's.

use crate::store::inbox::Reach;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A label.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Label {
    pub id: Uuid,
    pub channel_id: Option<Uuid>,
    pub name: String,
    pub colour: String,
    pub created_at: DateTime<Utc>,
}

/// A folder.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Folder {
    pub id: Uuid,
    pub channel_id: Uuid,
    pub parent_id: Option<Uuid>,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

/// The labels `reach` sees: team-wide ones and those of reached channels, oldest first.
pub async fn labels(conn: &mut PgConnection, team_id: Uuid, reach: &Reach, id: Option<Uuid>) -> sqlx::Result<Vec<Label>> {
    let mut query = QueryBuilder::new("SELECT l.id, l.channel_id, l.name, l.colour, l.created_at FROM inbox_labels l WHERE l.team_id = ");
    query.push_bind(team_id);
    if let Some(id) = id {
        query.push(" AND l.id = ").push_bind(id);
    }
    query.push(" AND (l.channel_id IS NULL OR EXISTS (SELECT 1 FROM inbox_channels c WHERE c.id = l.channel_id");
    reach.push(&mut query, "c");
    query.push(")) ORDER BY l.id");
    query.build_query_as().fetch_all(conn).await
}

/// Adds a label.
pub async fn add_label(conn: &mut PgConnection, team_id: Uuid, channel_id: Option<Uuid>, name: &str, colour: &str) -> sqlx::Result<Label> {
    sqlx::query_as("INSERT INTO inbox_labels (id, team_id, channel_id, name, colour) VALUES ($1, $2, $3, $4, $5) RETURNING id, channel_id, name, colour, created_at")
        .bind(crate::ids::new_id())
        .bind(team_id)
        .bind(channel_id)
        .bind(name)
        .bind(colour)
        .fetch_one(conn)
        .await
}

/// Renames or recolours a label (`None` leaves a field alone).
pub async fn change_label(conn: &mut PgConnection, id: Uuid, name: Option<&str>, colour: Option<&str>) -> sqlx::Result<Label> {
    sqlx::query_as("UPDATE inbox_labels SET name = COALESCE($2, name), colour = COALESCE($3, colour) WHERE id = $1 RETURNING id, channel_id, name, colour, created_at")
        .bind(id)
        .bind(name)
        .bind(colour)
        .fetch_one(conn)
        .await
}

/// Deletes a label (its conversations lose it).
pub async fn delete_label(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM inbox_labels WHERE id = $1").bind(id).execute(conn).await?;
    Ok(())
}

/// The folders of channels `reach` reaches (one when `id` is given), oldest first.
pub async fn folders(conn: &mut PgConnection, team_id: Uuid, reach: &Reach, id: Option<Uuid>) -> sqlx::Result<Vec<Folder>> {
    let mut query = QueryBuilder::new("SELECT f.id, f.channel_id, f.parent_id, f.name, f.created_at FROM inbox_folders f JOIN inbox_channels c ON c.id = f.channel_id WHERE f.team_id = ");
    query.push_bind(team_id);
    if let Some(id) = id {
        query.push(" AND f.id = ").push_bind(id);
    }
    reach.push(&mut query, "c");
    query.push(" ORDER BY f.id");
    query.build_query_as().fetch_all(conn).await
}

/// Adds a folder.
pub async fn add_folder(conn: &mut PgConnection, team_id: Uuid, channel_id: Uuid, parent_id: Option<Uuid>, name: &str) -> sqlx::Result<Folder> {
    sqlx::query_as("INSERT INTO inbox_folders (id, team_id, channel_id, parent_id, name) VALUES ($1, $2, $3, $4, $5) RETURNING id, channel_id, parent_id, name, created_at")
        .bind(crate::ids::new_id())
        .bind(team_id)
        .bind(channel_id)
        .bind(parent_id)
        .bind(name)
        .fetch_one(conn)
        .await
}

/// Renames or moves a folder (`parent_id: Some(None)` makes it top-level).
pub async fn change_folder(conn: &mut PgConnection, id: Uuid, name: Option<&str>, parent_id: Option<Option<Uuid>>) -> sqlx::Result<Folder> {
    sqlx::query_as(
        "UPDATE inbox_folders SET name = COALESCE($2, name), parent_id = CASE WHEN $3 THEN $4 ELSE parent_id END
         WHERE id = $1 RETURNING id, channel_id, parent_id, name, created_at",
    )
    .bind(id)
    .bind(name)
    .bind(parent_id.is_some())
    .bind(parent_id.flatten())
    .fetch_one(conn)
    .await
}

/// Whether `ancestor` is `folder` or one of the folders above it.
pub async fn is_within(conn: &mut PgConnection, folder: Uuid, ancestor: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "WITH RECURSIVE up AS (SELECT id, parent_id, 1 AS depth FROM inbox_folders WHERE id = $1
             UNION ALL SELECT f.id, f.parent_id, up.depth + 1 FROM inbox_folders f JOIN up ON f.id = up.parent_id WHERE up.depth < 100)
         SELECT EXISTS (SELECT 1 FROM up WHERE id = $2)",
    )
    .bind(folder)
    .bind(ancestor)
    .fetch_one(conn)
    .await
}

/// Deletes a folder and the folders under it (their conversations leave them).
pub async fn delete_folder(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM inbox_folders WHERE id = $1").bind(id).execute(conn).await?;
    Ok(())
}
