//! CSV imports of contacts: the import row and its file, and the batch writes of the job that
//! processes it (a batch and its progress commit together, so a resumed job redoes nothing).

use crate::page::{Page, PageRequest};
use crate::status::ImportStatus;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use std::collections::{BTreeMap, HashMap};
use uuid::Uuid;

/// Failed rows kept per import.
pub const MAX_FAILURES: usize = 1000;

/// Which CSV column feeds each contact field.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ColumnMap {
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub unsubscribed: Option<String>,
    /// Property key to its column and type (`string`, `number`, `boolean`).
    pub properties: BTreeMap<String, PropertyColumn>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PropertyColumn {
    pub column: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// An import as stored (without its file).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Import {
    pub id: Uuid,
    pub team_id: Uuid,
    pub status: ImportStatus,
    pub on_conflict: String,
    pub column_map: sqlx::types::Json<ColumnMap>,
    pub segment_ids: Vec<Uuid>,
    pub topics: Value,
    pub file_size: i64,
    pub rows_done: i64,
    pub total: i64,
    pub created: i64,
    pub updated: i64,
    pub skipped: i64,
    pub failed: i64,
    pub failures: Value,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "id, team_id, status, on_conflict, column_map, segment_ids, topics, file_size, rows_done, total, created, \
                       updated, skipped, failed, failures, error, created_at, completed_at";

/// A new import.
pub struct NewImport<'a> {
    pub on_conflict: &'a str,
    pub column_map: &'a ColumnMap,
    pub segment_ids: &'a [Uuid],
    pub topics: Value,
    pub file: &'a [u8],
}

/// Stores an import (queued) and its file.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, new: &NewImport<'_>) -> sqlx::Result<Uuid> {
    let id = crate::ids::new_id();
    sqlx::query(
        "WITH import AS (
             INSERT INTO contact_imports (id, team_id, on_conflict, column_map, segment_ids, topics, file_size)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id
         )
         INSERT INTO contact_import_files (import_id, data) SELECT id, $8 FROM import",
    )
    .bind(id)
    .bind(team_id)
    .bind(new.on_conflict)
    .bind(sqlx::types::Json(new.column_map))
    .bind(new.segment_ids)
    .bind(&new.topics)
    .bind(new.file.len() as i64)
    .bind(new.file)
    .execute(conn)
    .await?;
    Ok(id)
}

/// One import of the team.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Import>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM contact_imports WHERE team_id = $1 AND id = $2")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// An import by id alone, for its job.
pub async fn for_job(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Import>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM contact_imports WHERE id = $1")))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The team's imports, newest first, optionally in one status.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, status: Option<ImportStatus>, page: &PageRequest) -> sqlx::Result<Page<Import>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM contact_imports WHERE team_id = "));
    query.push_bind(team_id);
    if let Some(status) = status {
        query.push(" AND status = ").push_bind(status);
    }
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// The uploaded file, while it is kept.
pub async fn file(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Vec<u8>>> {
    sqlx::query_scalar("SELECT data FROM contact_import_files WHERE import_id = $1").bind(id).fetch_optional(conn).await
}

/// Marks an import started with its row count.
pub async fn start(conn: &mut PgConnection, id: Uuid, total: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE contact_imports SET status = 'in_progress', total = $2 WHERE id = $1 AND status IN ('queued', 'in_progress')")
        .bind(id)
        .bind(total)
        .execute(conn)
        .await?;
    Ok(())
}

/// Ends an import: `completed`, or `failed` with the reason.
pub async fn finish(conn: &mut PgConnection, id: Uuid, error: Option<&str>) -> sqlx::Result<()> {
    sqlx::query("UPDATE contact_imports SET status = CASE WHEN $2::text IS NULL THEN 'completed' ELSE 'failed' END, error = $2, completed_at = now() WHERE id = $1")
        .bind(id)
        .bind(error)
        .execute(conn)
        .await?;
    Ok(())
}

/// What one batch did.
#[derive(Debug, Default, Clone)]
pub struct Progress {
    pub rows: i64,
    pub created: i64,
    pub updated: i64,
    pub skipped: i64,
    pub failed: i64,
    /// Failed rows to keep (the import keeps the first 1,000 overall).
    pub failures: Vec<Value>,
}

/// Adds a batch's counts and failed rows to the import.
pub async fn record_progress(conn: &mut PgConnection, id: Uuid, progress: &Progress) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE contact_imports SET rows_done = rows_done + $2, created = created + $3, updated = updated + $4,
             skipped = skipped + $5, failed = failed + $6,
             failures = append_capped(failures, $7, $8)
         WHERE id = $1",
    )
    .bind(id)
    .bind(progress.rows)
    .bind(progress.created)
    .bind(progress.updated)
    .bind(progress.skipped)
    .bind(progress.failed)
    .bind(Value::Array(progress.failures.clone()))
    .bind(MAX_FAILURES as i64)
    .execute(conn)
    .await?;
    Ok(())
}

/// An existing contact as a batch sees it.
#[derive(Debug, Clone, Copy)]
pub struct Existing {
    pub id: Uuid,
    pub unsubscribed: bool,
}

/// The team's contacts with these addresses.
pub async fn existing(conn: &mut PgConnection, team_id: Uuid, emails: &[String]) -> sqlx::Result<HashMap<String, Existing>> {
    let rows: Vec<(String, Uuid, bool)> = sqlx::query_as("SELECT email, id, unsubscribed FROM contacts WHERE team_id = $1 AND email = ANY($2)")
        .bind(team_id)
        .bind(emails)
        .fetch_all(conn)
        .await?;
    Ok(rows.into_iter().map(|(email, id, unsubscribed)| (email, Existing { id, unsubscribed })).collect())
}

/// A contact row of a batch: created with `id`, or merged into the contact `id`.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: Uuid,
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub unsubscribed: bool,
    /// Only the properties the row sets.
    pub properties: serde_json::Map<String, Value>,
}

/// Columns of rows as arrays, for `unnest`.
#[derive(Default)]
struct Arrays {
    ids: Vec<Uuid>,
    emails: Vec<String>,
    first: Vec<Option<String>>,
    last: Vec<Option<String>>,
    unsubscribed: Vec<bool>,
    properties: Vec<Value>,
}

fn arrays<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Arrays {
    let mut a = Arrays::default();
    for r in rows {
        a.ids.push(r.id);
        a.emails.push(r.email.clone());
        a.first.push(r.first_name.clone());
        a.last.push(r.last_name.clone());
        a.unsubscribed.push(r.unsubscribed);
        a.properties.push(Value::Object(r.properties.clone()));
    }
    a
}

/// Inserts new contacts in one statement; answers the ids written (an address created
/// meanwhile by another writer is left alone). `opted_in` says, row by row, whether the contact
/// arrives opted in to a live topic (a migration's choices; empty for an import), so that its
/// billable flag is right from the start instead of being worked out again row by row.
pub async fn insert_contacts<'a>(conn: &mut PgConnection, team_id: Uuid, rows: impl IntoIterator<Item = &'a Row>, opted_in: &[bool]) -> sqlx::Result<Vec<Uuid>> {
    let a = arrays(rows);
    if a.ids.is_empty() {
        return Ok(Vec::new());
    }
    sqlx::query_scalar(
        "INSERT INTO contacts (id, team_id, email, first_name, last_name, unsubscribed, properties, billable)
         SELECT r.id, $1, r.email, r.first_name, r.last_name, r.unsubscribed, r.properties,
                NOT r.unsubscribed AND s.email IS NULL AND (COALESCE(r.opted_in, false) OR (SELECT team_opts_in_by_default($1)))
         FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::bool[], $7::jsonb[], $8::bool[])
              AS r(id, email, first_name, last_name, unsubscribed, properties, opted_in)
         LEFT JOIN suppressions s ON s.team_id = $1 AND s.email = r.email
         ON CONFLICT (team_id, email) DO NOTHING RETURNING id",
    )
    .bind(team_id)
    .bind(&a.ids)
    .bind(&a.emails)
    .bind(&a.first)
    .bind(&a.last)
    .bind(&a.unsubscribed)
    .bind(&a.properties)
    .bind(opted_in)
    .fetch_all(conn)
    .await
}

/// Merges rows into existing contacts in one statement: names sent replace, properties merge
/// by key, and `unsubscribed` is never set back to false.
pub async fn update_contacts(conn: &mut PgConnection, rows: &[Row]) -> sqlx::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let a = arrays(rows);
    sqlx::query(
        "UPDATE contacts c SET first_name = COALESCE(r.first_name, c.first_name), last_name = COALESCE(r.last_name, c.last_name),
             unsubscribed = c.unsubscribed OR r.unsubscribed, properties = c.properties || r.properties, updated_at = now()
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bool[], $5::jsonb[]) AS r(id, first_name, last_name, unsubscribed, properties)
         WHERE c.id = r.id",
    )
    .bind(&a.ids)
    .bind(&a.first)
    .bind(&a.last)
    .bind(&a.unsubscribed)
    .bind(&a.properties)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that these contacts unsubscribed through an import (one consent record each).
pub async fn record_unsubscribes(conn: &mut PgConnection, team_id: Uuid, contacts: &[(Uuid, String)]) -> sqlx::Result<()> {
    if contacts.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = contacts.iter().map(|_| crate::ids::new_id()).collect();
    let contact_ids: Vec<Uuid> = contacts.iter().map(|(id, _)| *id).collect();
    let hashes: Vec<Vec<u8>> = contacts.iter().map(|(_, email)| crate::secret::hash(email)).collect();
    sqlx::query(
        "INSERT INTO consent_records (id, team_id, contact_id, email_hash, choice, source)
         SELECT id, $1, contact_id, email_hash, 'unsubscribed', 'import' FROM unnest($2::uuid[], $3::uuid[], $4::bytea[]) AS r(id, contact_id, email_hash)",
    )
    .bind(team_id)
    .bind(&ids)
    .bind(&contact_ids)
    .bind(&hashes)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records topic choices for many contacts, with a consent record (source `import`) for each
/// choice that changed, in one statement. The choices held before are found by joining the
/// batch (an `= ANY($ids)` filter there was checked against every id of the batch for each
/// row: quadratic in the batch's size).
pub async fn choose_topics(conn: &mut PgConnection, team_id: Uuid, contacts: &[(Uuid, String)], choices: &[(Uuid, String)]) -> sqlx::Result<()> {
    if contacts.is_empty() || choices.is_empty() {
        return Ok(());
    }
    let contact_ids: Vec<Uuid> = contacts.iter().map(|(id, _)| *id).collect();
    let hashes: Vec<Vec<u8>> = contacts.iter().map(|(_, email)| crate::secret::hash(email)).collect();
    let topic_ids: Vec<Uuid> = choices.iter().map(|(id, _)| *id).collect();
    let subscriptions: Vec<&str> = choices.iter().map(|(_, s)| s.as_str()).collect();
    sqlx::query(
        "WITH c AS (SELECT * FROM unnest($2::uuid[], $3::bytea[]) AS c(contact_id, email_hash)),
         t AS (SELECT * FROM unnest($4::uuid[], $5::text[]) AS t(topic_id, subscription)),
         before AS (SELECT ct.contact_id, ct.topic_id, ct.subscription
                    FROM c JOIN contact_topics ct ON ct.contact_id = c.contact_id JOIN t ON t.topic_id = ct.topic_id),
         written AS (
             INSERT INTO contact_topics (contact_id, topic_id, subscription)
             SELECT c.contact_id, t.topic_id, t.subscription FROM c CROSS JOIN t
             ON CONFLICT (contact_id, topic_id) DO UPDATE SET subscription = excluded.subscription, updated_at = now()
             RETURNING contact_id, topic_id, subscription
         )
         INSERT INTO consent_records (id, team_id, contact_id, email_hash, topic_id, choice, source)
         SELECT herald_uuid_v7(), $1, w.contact_id, c.email_hash, w.topic_id, w.subscription, 'import'
         FROM written w JOIN c ON c.contact_id = w.contact_id
         LEFT JOIN before b ON b.contact_id = w.contact_id AND b.topic_id = w.topic_id
         WHERE b.subscription IS DISTINCT FROM w.subscription",
    )
    .bind(team_id)
    .bind(&contact_ids)
    .bind(&hashes)
    .bind(&topic_ids)
    .bind(&subscriptions)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes the files of imports finished more than `days` ago; how many.
pub async fn purge_files(conn: &mut PgConnection, days: i32) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM contact_import_files f USING contact_imports i
         WHERE i.id = f.import_id AND i.completed_at < now() - make_interval(days => $1)",
    )
    .bind(days)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
