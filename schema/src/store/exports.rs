//! Exports of a team's contacts or suppressions as CSV: the export row, its pages of rows
//! (keyset by id), and the chunks each page appends.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

/// An export as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Export {
    pub id: Uuid,
    pub team_id: Uuid,
    pub kind: String,
    pub status: String,
    pub columns: Option<Vec<String>>,
    pub cursor: Option<Uuid>,
    pub rows: i64,
    pub bytes: i64,
    pub chunks: i32,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "id, team_id, kind, status, columns, cursor, rows, bytes, chunks, error, created_at, completed_at";

/// How long an export is kept.
pub const KEPT_DAYS: i32 = 7;

/// Creates a queued export.
pub async fn insert(conn: &mut PgConnection, id: Uuid, team_id: Uuid, kind: &str) -> sqlx::Result<Export> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("INSERT INTO exports (id, team_id, kind) VALUES ($1, $2, $3) RETURNING {COLUMNS}")))
        .bind(id)
        .bind(team_id)
        .bind(kind)
        .fetch_one(conn)
        .await
}

/// One export of the team.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Export>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM exports WHERE team_id = $1 AND id = $2"))).bind(team_id).bind(id).fetch_optional(conn).await
}

/// One export, locked for the job that writes it.
pub async fn lock(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Export>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM exports WHERE id = $1 FOR UPDATE"))).bind(id).fetch_optional(conn).await
}

/// The header of a contacts export: the fields, each declared property (by key), each live
/// topic (`topic:<name>`) and the latest consent's source and time.
pub async fn contact_columns(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<(Vec<String>, Vec<(Uuid, String)>)> {
    let properties: Vec<String> = sqlx::query_scalar("SELECT key FROM contact_properties WHERE team_id = $1 ORDER BY key").bind(team_id).fetch_all(&mut *conn).await?;
    let topics: Vec<(Uuid, String)> = sqlx::query_as("SELECT id, name FROM topics WHERE team_id = $1 AND deleted_at IS NULL ORDER BY name, id").bind(team_id).fetch_all(conn).await?;
    let mut columns: Vec<String> = ["email", "first_name", "last_name", "unsubscribed", "created_at"].map(String::from).to_vec();
    columns.extend(properties);
    columns.extend(topics.iter().map(|(_, name)| format!("topic:{name}")));
    columns.extend(["consent_source", "consent_at"].map(String::from));
    Ok((columns, topics))
}

/// A contact as a contacts export writes it.
#[derive(Debug, sqlx::FromRow)]
pub struct ContactRow {
    pub id: Uuid,
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub unsubscribed: bool,
    pub created_at: DateTime<Utc>,
    pub properties: Value,
    /// `{ topic_id: "opt_in" | "opt_out" }` for the topics the contact chose.
    pub topics: Value,
    pub consent_source: Option<String>,
    pub consent_at: Option<DateTime<Utc>>,
}

/// The next page of the team's contacts after `cursor`, by id.
pub async fn contact_page(conn: &mut PgConnection, team_id: Uuid, cursor: Option<Uuid>, limit: i64) -> sqlx::Result<Vec<ContactRow>> {
    sqlx::query_as(
        "SELECT c.id, c.email, c.first_name, c.last_name, c.unsubscribed, c.created_at, c.properties,
                COALESCE((SELECT jsonb_object_agg(ct.topic_id::text, ct.subscription) FROM contact_topics ct WHERE ct.contact_id = c.id), '{}') AS topics,
                cr.source AS consent_source, cr.created_at AS consent_at
         FROM contacts c
         LEFT JOIN LATERAL (SELECT source, created_at FROM consent_records WHERE contact_id = c.id ORDER BY id DESC LIMIT 1) cr ON true
         WHERE c.team_id = $1 AND ($2::uuid IS NULL OR c.id > $2) ORDER BY c.id LIMIT $3",
    )
    .bind(team_id)
    .bind(cursor)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// A suppression as a suppressions export writes it.
#[derive(Debug, sqlx::FromRow)]
pub struct SuppressionRow {
    pub id: Uuid,
    pub email: String,
    pub origin: String,
    pub created_at: DateTime<Utc>,
}

/// The next page of the team's suppressions after `cursor`, by id.
pub async fn suppression_page(conn: &mut PgConnection, team_id: Uuid, cursor: Option<Uuid>, limit: i64) -> sqlx::Result<Vec<SuppressionRow>> {
    sqlx::query_as("SELECT id, email, origin, created_at FROM suppressions WHERE team_id = $1 AND ($2::uuid IS NULL OR id > $2) ORDER BY id LIMIT $3")
        .bind(team_id)
        .bind(cursor)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// Appends a page's CSV as the next chunk and moves the cursor past it (with the header the
/// first page fixes), in the caller's transaction.
pub async fn append(conn: &mut PgConnection, export: &Export, columns: &[String], data: &[u8], rows: i64, cursor: Uuid) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO export_chunks (export_id, seq, data) VALUES ($1, $2, $3)").bind(export.id).bind(export.chunks).bind(data).execute(&mut *conn).await?;
    sqlx::query(
        "UPDATE exports SET status = 'running', columns = COALESCE(columns, $2), cursor = $3, rows = rows + $4, bytes = bytes + $5, chunks = chunks + 1
         WHERE id = $1",
    )
    .bind(export.id)
    .bind(columns)
    .bind(cursor)
    .bind(rows)
    .bind(data.len() as i64)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks an export completed (writing the header alone when it had no row) or failed.
pub async fn finish(conn: &mut PgConnection, export: &Export, columns: &[String], header_only: Option<&[u8]>, error: Option<&str>) -> sqlx::Result<()> {
    if let Some(data) = header_only {
        sqlx::query("INSERT INTO export_chunks (export_id, seq, data) VALUES ($1, $2, $3)").bind(export.id).bind(export.chunks).bind(data).execute(&mut *conn).await?;
    }
    sqlx::query(
        "UPDATE exports SET status = CASE WHEN $3::text IS NULL THEN 'completed' ELSE 'failed' END, columns = COALESCE(columns, $2),
             bytes = bytes + $4, chunks = chunks + $5, error = $3, completed_at = now() WHERE id = $1",
    )
    .bind(export.id)
    .bind(columns)
    .bind(error)
    .bind(header_only.map_or(0, |d| d.len() as i64))
    .bind(i32::from(header_only.is_some()))
    .execute(conn)
    .await?;
    Ok(())
}

/// A completed export's CSV, its chunks in order (`None`: no completed export with this id).
pub async fn file(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<(String, Vec<u8>)>> {
    let kind: Option<String> = sqlx::query_scalar("SELECT kind FROM exports WHERE id = $1 AND status = 'completed'").bind(id).fetch_optional(&mut *conn).await?;
    let Some(kind) = kind else { return Ok(None) };
    let chunks: Vec<Vec<u8>> = sqlx::query_scalar("SELECT data FROM export_chunks WHERE export_id = $1 ORDER BY seq").bind(id).fetch_all(conn).await?;
    Ok(Some((kind, chunks.concat())))
}

/// Deletes exports older than [`KEPT_DAYS`] (housekeeping).
pub async fn purge(conn: &mut PgConnection) -> sqlx::Result<u64> {
    Ok(sqlx::query("DELETE FROM exports WHERE created_at < now() - make_interval(days => $1)").bind(KEPT_DAYS).execute(conn).await?.rows_affected())
}

/// The team's exports, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &crate::page::PageRequest) -> sqlx::Result<crate::page::Page<Export>> {
    let mut query = sqlx::QueryBuilder::new(format!("SELECT {COLUMNS} FROM exports WHERE team_id = "));
    query.push_bind(team_id);
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}
