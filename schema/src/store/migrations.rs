//! Migrations from other platforms: the migration row, its file, the chunks of items its read
//! wrote, and the writes that apply them (each batch with the count of chunks applied, so a
//! resumed job redoes nothing).

use crate::migrate::{Found, Item, Review};
use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{PgConnection, QueryBuilder};
use std::collections::BTreeMap;
use uuid::Uuid;

/// Failed items kept per migration.
pub const MAX_FAILURES: usize = 1000;

/// A migration as stored (without its credentials, file or chunks).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Migration {
    pub id: Uuid,
    pub team_id: Uuid,
    pub source: String,
    pub mode: String,
    pub status: String,
    pub cursor: Value,
    pub found: Json<Found>,
    pub chunks_read: i32,
    pub chunks_applied: i32,
    pub review: Option<Json<Review>>,
    pub total: i64,
    pub created: i64,
    pub updated: i64,
    pub suppressed: i64,
    pub failed: i64,
    pub failures: Value,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "id, team_id, source, mode, status, cursor, found, chunks_read, chunks_applied, review, total, created, updated, \
                       suppressed, failed, failures, error, created_at, started_at, completed_at";

/// Stores a migration (`connecting`) with its sealed credentials or its file.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, source: &str, credentials: Option<&[u8]>, file: Option<&[u8]>) -> sqlx::Result<Uuid> {
    let id = crate::ids::new_id();
    let mode = if file.is_some() { "file" } else { "api" };
    sqlx::query(
        "WITH m AS (INSERT INTO migrations (id, team_id, source, mode, credentials) VALUES ($1, $2, $3, $4, $5) RETURNING id)
         INSERT INTO migration_files (migration_id, team_id, data) SELECT id, $2, $6 FROM m WHERE $6::bytea IS NOT NULL",
    )
    .bind(id)
    .bind(team_id)
    .bind(source)
    .bind(mode)
    .bind(credentials)
    .bind(file)
    .execute(conn)
    .await?;
    Ok(id)
}

/// One migration of the team.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Migration>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM migrations WHERE team_id = $1 AND id = $2")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The team's migrations, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<Migration>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM migrations WHERE team_id = "));
    query.push_bind(team_id);
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// A migration by id for its job, locked until the transaction ends (a cancel waits for the
/// batch in hand).
pub async fn lock(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Migration>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM migrations WHERE id = $1 FOR UPDATE")))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The sealed credentials, while kept.
pub async fn credentials(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Vec<u8>>> {
    sqlx::query_scalar("SELECT credentials FROM migrations WHERE id = $1").bind(id).fetch_one(conn).await
}

/// The uploaded file, while kept.
pub async fn file(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Vec<u8>>> {
    sqlx::query_scalar("SELECT data FROM migration_files WHERE migration_id = $1").bind(id).fetch_optional(conn).await
}

/// A page read: its items, the failures among its records, where the read stands after it,
/// and what has been found so far.
pub struct PageRead<'a> {
    pub items: &'a [Item],
    pub failures: &'a [Value],
    pub cursor: &'a Value,
    pub found: &'a Found,
}

/// Stores a page read as the next chunk, with the cursor past it, in one statement.
pub async fn add_chunk(conn: &mut PgConnection, m: &Migration, page: &PageRead<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "WITH c AS (INSERT INTO migration_chunks (migration_id, team_id, seq, items) SELECT $1, $2, $3, $4 WHERE jsonb_array_length($4) > 0)
         UPDATE migrations SET cursor = $5, found = $6, chunks_read = chunks_read + (jsonb_array_length($4) > 0)::int,
             failed = failed + jsonb_array_length($7),
             failures = append_capped(failures, $7, $8)
         WHERE id = $1",
    )
    .bind(m.id)
    .bind(m.team_id)
    .bind(m.chunks_read)
    .bind(Json(page.items))
    .bind(page.cursor)
    .bind(Json(page.found))
    .bind(Value::Array(page.failures.to_vec()))
    .bind(MAX_FAILURES as i64)
    .execute(conn)
    .await?;
    Ok(())
}

/// What the chunks hold, against the team's contacts and suppressions.
#[derive(Debug, Default, sqlx::FromRow)]
pub struct Tally {
    pub contacts: i64,
    pub new_contacts: i64,
    pub unsubscribed: i64,
    /// New contacts that will count as billable (subscribed, not suppressed).
    pub new_billable: i64,
    pub billable_now: i64,
    pub contacts_now: i64,
}

/// Counts the distinct addresses read, those new to the team, and the billable ones.
pub async fn tally(conn: &mut PgConnection, m: &Migration) -> sqlx::Result<(Tally, BTreeMap<String, i64>)> {
    let tally: Tally = sqlx::query_as(
        "WITH items AS (
             SELECT i->>'email' AS email, bool_or(COALESCE((i->>'unsubscribed')::bool, false)) AS unsubscribed,
                    bool_or(i ? 'suppression') AS suppressed
             FROM migration_chunks ch, jsonb_array_elements(ch.items) AS i WHERE ch.migration_id = $1 GROUP BY 1
         )
         SELECT count(*) AS contacts, count(*) FILTER (WHERE c.id IS NULL) AS new_contacts,
                count(*) FILTER (WHERE items.unsubscribed) AS unsubscribed,
                count(*) FILTER (WHERE c.id IS NULL AND NOT items.unsubscribed AND NOT items.suppressed AND s.id IS NULL) AS new_billable,
                (SELECT count(*) FROM contacts WHERE team_id = $2 AND billable) AS billable_now,
                (SELECT count(*) FROM contacts WHERE team_id = $2) AS contacts_now
         FROM items LEFT JOIN contacts c ON c.team_id = $2 AND c.email = items.email
         LEFT JOIN suppressions s ON s.team_id = $2 AND s.email = items.email",
    )
    .bind(m.id)
    .bind(m.team_id)
    .fetch_one(&mut *conn)
    .await?;
    let origins: Vec<(String, i64)> = sqlx::query_as(
        "SELECT i->>'suppression', count(DISTINCT i->>'email') FROM migration_chunks ch, jsonb_array_elements(ch.items) AS i
         WHERE ch.migration_id = $1 AND i ? 'suppression' GROUP BY 1",
    )
    .bind(m.id)
    .fetch_all(conn)
    .await?;
    Ok((tally, origins.into_iter().collect()))
}

/// Ends the read: the review is stored, the credentials and the file are erased.
pub async fn to_review(conn: &mut PgConnection, id: Uuid, review: &Review, total: i64) -> sqlx::Result<()> {
    sqlx::query(
        "WITH f AS (DELETE FROM migration_files WHERE migration_id = $1)
         UPDATE migrations SET status = 'review', review = $2, total = $3, credentials = NULL WHERE id = $1 AND status = 'connecting'",
    )
    .bind(id)
    .bind(Json(review))
    .bind(total)
    .execute(conn)
    .await?;
    Ok(())
}

/// Moves a migration from `from` to `to`; answers it as it now stands, or `None` when it was
/// not in `from` (or is not the team's).
pub async fn transition(conn: &mut PgConnection, team_id: Uuid, id: Uuid, from: &[&str], to: &str) -> sqlx::Result<Option<Migration>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE migrations SET status = $4, started_at = CASE WHEN $4 = 'running' THEN now() ELSE started_at END,
             completed_at = CASE WHEN $4 IN ('completed', 'failed', 'canceled') THEN now() ELSE completed_at END,
             credentials = CASE WHEN $4 = 'running' THEN credentials END
         WHERE team_id = $1 AND id = $2 AND status = ANY($3) RETURNING {COLUMNS}"
    )))
    .bind(team_id)
    .bind(id)
    .bind(from)
    .bind(to)
    .fetch_optional(&mut *conn)
    .await
}

/// Ends a migration (`completed`, `failed` with the reason): what it kept of the source goes.
pub async fn finish(conn: &mut PgConnection, id: Uuid, error: Option<&str>) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE migrations SET status = CASE WHEN $2::text IS NULL THEN 'completed' ELSE 'failed' END, error = $2,
             completed_at = now(), credentials = NULL
         WHERE id = $1 AND status IN ('connecting', 'review', 'running')",
    )
    .bind(id)
    .bind(error)
    .execute(&mut *conn)
    .await?;
    erase(conn, id).await
}

/// Drops the chunks and the file of a migration that has ended.
pub async fn erase(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("WITH f AS (DELETE FROM migration_files WHERE migration_id = $1) DELETE FROM migration_chunks WHERE migration_id = $1")
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Cancels migrations left in review for more than `days` days (what they read goes); how many.
pub async fn expire_reviews(conn: &mut PgConnection, days: i32) -> sqlx::Result<u64> {
    let ids: Vec<Uuid> = sqlx::query_scalar(
        "UPDATE migrations SET status = 'canceled', completed_at = now(), credentials = NULL,
             error = 'left in review for ' || $1 || ' days'
         WHERE status = 'review' AND created_at < now() - make_interval(days => $1) RETURNING id",
    )
    .bind(days)
    .fetch_all(&mut *conn)
    .await?;
    for id in &ids {
        erase(conn, *id).await?;
    }
    Ok(ids.len() as u64)
}

/// Chunks from `seq` on, at most `limit`, in order.
pub async fn chunks(conn: &mut PgConnection, id: Uuid, seq: i32, limit: i64) -> sqlx::Result<Vec<Vec<Item>>> {
    let rows: Vec<Json<Vec<Item>>> = sqlx::query_scalar("SELECT items FROM migration_chunks WHERE migration_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3")
        .bind(id)
        .bind(seq)
        .bind(limit)
        .fetch_all(conn)
        .await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

/// What one applied batch did.
#[derive(Debug, Default, Clone)]
pub struct Applied {
    pub chunks: i32,
    pub created: i64,
    pub updated: i64,
    pub suppressed: i64,
    pub failed: i64,
    pub failures: Vec<Value>,
}

/// Adds a batch's counts to the migration and moves it past the batch's chunks.
pub async fn record_applied(conn: &mut PgConnection, id: Uuid, a: &Applied) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE migrations SET chunks_applied = chunks_applied + $2, created = created + $3, updated = updated + $4,
             suppressed = suppressed + $5, failed = failed + $6,
             failures = append_capped(failures, $7, $8)
         WHERE id = $1",
    )
    .bind(id)
    .bind(a.chunks)
    .bind(a.created)
    .bind(a.updated)
    .bind(a.suppressed)
    .bind(a.failed)
    .bind(Value::Array(a.failures.clone()))
    .bind(MAX_FAILURES as i64)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks the one-time preparation (properties, topics, segments, templates) done.
pub async fn mark_prepared(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE migrations SET cursor = cursor || '{\"prepared\": true}' WHERE id = $1").bind(id).execute(conn).await?;
    Ok(())
}

/// Live topics or segments of the team by lower-case name.
pub async fn names(conn: &mut PgConnection, team_id: Uuid, table: Named) -> sqlx::Result<BTreeMap<String, Uuid>> {
    let table = match table {
        Named::Topics => "topics",
        Named::Segments => "segments",
    };
    let rows: Vec<(String, Uuid)> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT lower(name), id FROM {table} WHERE team_id = $1 AND deleted_at IS NULL")))
            .bind(team_id)
            .fetch_all(conn)
            .await?;
    Ok(rows.into_iter().collect())
}

/// Which named things [`names`] reads.
#[derive(Debug, Clone, Copy)]
pub enum Named {
    Topics,
    Segments,
}

/// Merges rows into existing contacts: what Herald holds wins (empty names are filled,
/// properties not set are added), and `unsubscribed` is never set back to false.
pub async fn merge_contacts(conn: &mut PgConnection, rows: &[crate::store::imports::Row]) -> sqlx::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let first: Vec<Option<&str>> = rows.iter().map(|r| r.first_name.as_deref()).collect();
    let last: Vec<Option<&str>> = rows.iter().map(|r| r.last_name.as_deref()).collect();
    let unsubscribed: Vec<bool> = rows.iter().map(|r| r.unsubscribed).collect();
    let properties: Vec<Value> = rows.iter().map(|r| Value::Object(r.properties.clone())).collect();
    sqlx::query(
        "UPDATE contacts c SET first_name = COALESCE(c.first_name, r.first_name), last_name = COALESCE(c.last_name, r.last_name),
             unsubscribed = c.unsubscribed OR r.unsubscribed,
             properties = r.properties || c.properties, updated_at = now()
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bool[], $5::jsonb[]) AS r(id, first_name, last_name, unsubscribed, properties)
         WHERE c.id = r.id",
    )
    .bind(&ids)
    .bind(&first)
    .bind(&last)
    .bind(&unsubscribed)
    .bind(&properties)
    .execute(conn)
    .await?;
    Ok(())
}

/// A consent record to write.
pub struct Consent {
    pub contact_id: Uuid,
    pub email: String,
    pub topic_id: Option<Uuid>,
    pub choice: &'static str,
    pub ip: Option<String>,
    pub at: Option<DateTime<Utc>>,
}

/// Writes consent records with source `source` (`migration:<platform>`), each at the time the
/// platform recorded (now when it did not), in one statement; topic choices are recorded too:
/// a choice the contact had already made stays, except that an opt-out always wins.
pub async fn consents(conn: &mut PgConnection, team_id: Uuid, source: &str, records: &[Consent]) -> sqlx::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = records.iter().map(|_| crate::ids::new_id()).collect();
    let contact_ids: Vec<Uuid> = records.iter().map(|r| r.contact_id).collect();
    let hashes: Vec<Vec<u8>> = records.iter().map(|r| crate::secret::hash(&r.email)).collect();
    let topics: Vec<Option<Uuid>> = records.iter().map(|r| r.topic_id).collect();
    let choices: Vec<&str> = records.iter().map(|r| r.choice).collect();
    let ips: Vec<Option<&str>> = records.iter().map(|r| r.ip.as_deref()).collect();
    let at: Vec<Option<DateTime<Utc>>> = records.iter().map(|r| r.at).collect();
    sqlx::query(
        "WITH r AS (SELECT * FROM unnest($2::uuid[], $3::bytea[], $4::uuid[], $5::text[], $6::text[], $7::timestamptz[], $9::uuid[])
                    AS r(contact_id, email_hash, topic_id, choice, ip, at, id)),
         chosen AS (
             INSERT INTO contact_topics (contact_id, topic_id, subscription)
             SELECT contact_id, topic_id, choice FROM r WHERE topic_id IS NOT NULL
             ON CONFLICT (contact_id, topic_id) DO UPDATE SET subscription = 'opt_out', updated_at = now()
                 WHERE excluded.subscription = 'opt_out' AND contact_topics.subscription <> 'opt_out'
         )
         INSERT INTO consent_records (id, team_id, contact_id, email_hash, topic_id, choice, source, ip_address, created_at)
         SELECT id, $1, contact_id, email_hash, topic_id, choice, $8, ip, COALESCE(at, now()) FROM r",
    )
    .bind(team_id)
    .bind(&contact_ids)
    .bind(&hashes)
    .bind(&topics)
    .bind(&choices)
    .bind(&ips)
    .bind(&at)
    .bind(source)
    .bind(&ids)
    .execute(conn)
    .await?;
    Ok(())
}

/// Adds contacts to segments, pair by pair.
pub async fn join_segments(conn: &mut PgConnection, pairs: &[(Uuid, Uuid)]) -> sqlx::Result<()> {
    if pairs.is_empty() {
        return Ok(());
    }
    let segments: Vec<Uuid> = pairs.iter().map(|(s, _)| *s).collect();
    let contacts: Vec<Uuid> = pairs.iter().map(|(_, c)| *c).collect();
    sqlx::query("INSERT INTO segment_members (segment_id, contact_id) SELECT * FROM unnest($1::uuid[], $2::uuid[]) ON CONFLICT DO NOTHING")
        .bind(&segments)
        .bind(&contacts)
        .execute(conn)
        .await?;
    Ok(())
}

/// Whether an enabled webhook endpoint of the team listens for `contact.created`.
pub async fn hears_contact_created(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE team_id = $1 AND status = 'enabled' AND 'contact.created' = ANY (events))")
        .bind(team_id)
        .fetch_one(conn)
        .await
}

/// The contacts' rows, for their `contact.created` events.
pub async fn contacts_by_id(conn: &mut PgConnection, ids: &[Uuid]) -> sqlx::Result<Vec<crate::store::contacts::Contact>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {} FROM contacts WHERE id = ANY($1) ORDER BY id", crate::store::contacts::COLUMNS)))
        .bind(ids)
        .fetch_all(conn)
        .await
}
