//! Webhook endpoints, their deliveries and attempts. The delivery rows are the dispatch queue:
//! written with their event (see [`crate::store::events::emit`]), leased by a dispatcher when due,
//! and finished or rescheduled with each attempt.

use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// The event types an endpoint may subscribe to (document C).
pub const EVENT_TYPES: &[&str] = &[
    "email.sent",
    "email.scheduled",
    "email.delivered",
    "email.delivery_delayed",
    "email.bounced",
    "email.complained",
    "email.opened",
    "email.clicked",
    "email.failed",
    "email.suppressed",
    "email.canceled",
    "domain.created",
    "domain.updated",
    "domain.deleted",
    "suppression.added",
    "suppression.removed",
    "contact.created",
    "contact.updated",
    "contact.deleted",
    "email.received",
    "automation.run.started",
    "automation.run.completed",
    "automation.run.failed",
    "inbox.conversation.created",
    "inbox.message.received",
    "inbox.reply.sent",
    "inbox.note.created",
    "inbox.conversation.assigned",
    "inbox.conversation.status_changed",
];

/// An endpoint as stored (its keys stay in the dispatcher's reads).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Endpoint {
    pub id: Uuid,
    pub team_id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub status: String,
    pub disabled_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, team_id, url, events, status, disabled_reason, created_at, updated_at";

/// How many endpoints the team has.
pub async fn count(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM webhook_endpoints WHERE team_id = $1").bind(team_id).fetch_one(conn).await
}

/// Inserts an endpoint with its signing key.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, url: &str, events: &[String], key: &[u8]) -> sqlx::Result<Endpoint> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO webhook_endpoints (id, team_id, url, events, signing_key) VALUES ($1, $2, $3, $4, $5) RETURNING {COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(url)
    .bind(events)
    .bind(key)
    .fetch_one(conn)
    .await
}

/// One endpoint of the team.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Endpoint>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM webhook_endpoints WHERE team_id = $1 AND id = $2")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The team's endpoints, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<Endpoint>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM webhook_endpoints WHERE team_id = "));
    query.push_bind(team_id);
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// What an update changes (`None` leaves a field alone).
#[derive(Debug, Default)]
pub struct Change {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    /// `enabled` or `disabled`; enabling clears the failure record.
    pub status: Option<String>,
}

/// Applies a change; `None` when the endpoint is not the team's.
pub async fn update(conn: &mut PgConnection, team_id: Uuid, id: Uuid, change: &Change) -> sqlx::Result<Option<Endpoint>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE webhook_endpoints SET url = COALESCE($3, url), events = COALESCE($4, events), status = COALESCE($5, status),
             disabled_reason = CASE WHEN $5 IS NULL THEN disabled_reason WHEN $5 = 'disabled' THEN 'manual' ELSE NULL END,
             failing_since = CASE WHEN $5 = 'enabled' THEN NULL ELSE failing_since END,
             updated_at = now()
         WHERE team_id = $1 AND id = $2 RETURNING {COLUMNS}"
    )))
    .bind(team_id)
    .bind(id)
    .bind(&change.url)
    .bind(&change.events)
    .bind(&change.status)
    .fetch_optional(conn)
    .await
}

/// Deletes an endpoint (its deliveries and attempts go with it); whether it was the team's.
pub async fn delete(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM webhook_endpoints WHERE team_id = $1 AND id = $2").bind(team_id).bind(id).execute(conn).await?;
    Ok(done.rows_affected() == 1)
}

/// A delivery a dispatcher leased: where to send what, and the keys that sign it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Due {
    pub delivery_id: Uuid,
    pub endpoint_id: Uuid,
    pub attempts: i32,
    /// A replay: one attempt, no retries.
    pub replaying: bool,
    pub url: String,
    pub signing_key: Vec<u8>,
    /// The key before a rotation, while it still signs.
    pub previous_signing_key: Option<Vec<u8>>,
    pub event_id: Uuid,
    pub event_type: String,
    pub event_data: Value,
    pub event_created_at: DateTime<Utc>,
}

/// Leases up to `limit` due deliveries of enabled endpoints for `lease_seconds`, at most
/// `per_endpoint` of one endpoint at a time (so one slow endpoint cannot take every slot).
pub async fn lease_due(conn: &mut PgConnection, limit: i64, per_endpoint: i64, lease_seconds: f64) -> sqlx::Result<Vec<Due>> {
    sqlx::query_as(
        "WITH busy AS (
             SELECT endpoint_id FROM webhook_deliveries
             WHERE status = 'pending' AND locked_until IS NOT NULL AND locked_until > now()
             GROUP BY endpoint_id HAVING count(*) >= $2
         ), candidates AS (
             SELECT id FROM (
                 SELECT d.id, row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at) AS n
                 FROM (
                     SELECT id, endpoint_id, next_attempt_at FROM webhook_deliveries
                     WHERE status = 'pending' AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until <= now())
                       AND endpoint_id NOT IN (SELECT endpoint_id FROM busy)
                     ORDER BY next_attempt_at LIMIT $1 * 8
                 ) d JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.status = 'enabled'
             ) c WHERE n <= $2 LIMIT $1
         ), leased AS (
             UPDATE webhook_deliveries d SET locked_until = now() + make_interval(secs => $3)
             FROM (SELECT id FROM webhook_deliveries WHERE id IN (SELECT id FROM candidates) FOR UPDATE SKIP LOCKED) l
             WHERE d.id = l.id
             RETURNING d.id, d.endpoint_id, d.event_id, d.attempts, d.replaying
         )
         SELECT leased.id AS delivery_id, leased.endpoint_id, leased.attempts, leased.replaying, w.url, w.signing_key,
                CASE WHEN w.previous_key_expires_at > now() THEN w.previous_signing_key END AS previous_signing_key,
                e.id AS event_id, e.type AS event_type, e.data AS event_data, e.created_at AS event_created_at
         FROM leased JOIN webhook_endpoints w ON w.id = leased.endpoint_id JOIN events e ON e.id = leased.event_id",
    )
    .bind(limit)
    .bind(per_endpoint)
    .bind(lease_seconds)
    .fetch_all(conn)
    .await
}

/// The result of one attempt.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub delivery_id: Uuid,
    pub replay: bool,
    pub endpoint_id: Uuid,
    pub status_code: Option<i32>,
    pub error: Option<String>,
    pub response_body: Option<String>,
    pub latency_ms: i32,
    pub succeeded: bool,
    /// How long to wait (on PostgreSQL's clock) before trying again; `None` after a success
    /// or once the schedule is spent.
    pub retry_after: Option<std::time::Duration>,
}

/// Records attempts in one transaction's worth of statements: the attempt rows, each
/// delivery's new state, and each endpoint's failure record. Attempts of deliveries that no
/// longer exist (their endpoint was deleted mid-flight) are skipped, never failing the others. An endpoint whose every delivery
/// has failed since longer than `disable_after_seconds` is disabled with reason `failing`.
pub async fn record(conn: &mut PgConnection, attempts: &[Attempt], disable_after_seconds: f64) -> sqlx::Result<()> {
    if attempts.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = attempts.iter().map(|_| crate::ids::new_id()).collect();
    let deliveries: Vec<Uuid> = attempts.iter().map(|a| a.delivery_id).collect();
    let endpoints: Vec<Uuid> = attempts.iter().map(|a| a.endpoint_id).collect();
    let codes: Vec<Option<i32>> = attempts.iter().map(|a| a.status_code).collect();
    let errors: Vec<Option<String>> = attempts.iter().map(|a| a.error.clone()).collect();
    let bodies: Vec<Option<String>> = attempts.iter().map(|a| a.response_body.clone()).collect();
    let latencies: Vec<i32> = attempts.iter().map(|a| a.latency_ms).collect();
    let succeeded: Vec<bool> = attempts.iter().map(|a| a.succeeded).collect();
    let retry_after: Vec<Option<f64>> = attempts.iter().map(|a| a.retry_after.map(|wait| wait.as_secs_f64())).collect();
    let replays: Vec<bool> = attempts.iter().map(|a| a.replay).collect();
    sqlx::query(
        "WITH a AS (
             SELECT a.* FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int4[], $5::text[], $6::text[], $7::int4[], $8::bool[], $9::float8[], $11::bool[])
                 AS a(id, delivery_id, endpoint_id, status_code, error, response_body, latency_ms, succeeded, retry_after, replay)
             -- A delivery deleted meanwhile (its endpoint was deleted) has nothing left to record;
             -- the lock keeps the rest from vanishing before their attempts are inserted.
             JOIN webhook_deliveries live ON live.id = a.delivery_id
             FOR KEY SHARE OF live
         ), attempts AS (
             INSERT INTO webhook_attempts (id, delivery_id, status_code, error, response_body, latency_ms, replay)
             SELECT id, delivery_id, status_code, error, response_body, latency_ms, replay FROM a
         ), deliveries AS (
             UPDATE webhook_deliveries d SET
                 status = CASE WHEN a.succeeded THEN 'succeeded' WHEN a.retry_after IS NULL THEN 'failed' ELSE 'pending' END,
                 attempts = d.attempts + 1, last_attempt_at = now(), locked_until = NULL, replaying = false,
                 next_attempt_at = COALESCE(now() + make_interval(secs => a.retry_after), d.next_attempt_at)
             FROM a WHERE d.id = a.delivery_id
         ), outcome AS (
             SELECT endpoint_id, bool_or(succeeded) AS any_succeeded FROM a GROUP BY endpoint_id
         )
         UPDATE webhook_endpoints w SET
             failing_since = CASE WHEN o.any_succeeded THEN NULL ELSE COALESCE(w.failing_since, now()) END,
             status = CASE WHEN NOT o.any_succeeded AND w.failing_since < now() - make_interval(secs => $10) THEN 'disabled' ELSE w.status END,
             disabled_reason = CASE WHEN NOT o.any_succeeded AND w.failing_since < now() - make_interval(secs => $10) THEN 'failing' ELSE w.disabled_reason END
         FROM outcome o WHERE w.id = o.endpoint_id
           AND (o.any_succeeded AND w.failing_since IS NOT NULL OR NOT o.any_succeeded)",
    )
    .bind(&ids)
    .bind(&deliveries)
    .bind(&endpoints)
    .bind(&codes)
    .bind(&errors)
    .bind(&bodies)
    .bind(&latencies)
    .bind(&succeeded)
    .bind(&retry_after)
    .bind(disable_after_seconds)
    .bind(&replays)
    .execute(conn)
    .await?;
    Ok(())
}

/// One event as delivered to an endpoint.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveredEvent {
    pub delivery_id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    pub data: Value,
    pub event_created_at: DateTime<Utc>,
    pub status: String,
    pub attempts: i32,
    pub last_attempt_at: Option<DateTime<Utc>>,
    pub next_attempt_at: DateTime<Utc>,
}

const DELIVERED_COLUMNS: &str = "d.id AS delivery_id, e.id AS event_id, e.type AS event_type, e.data,
    e.created_at AS event_created_at, d.status, d.attempts, d.last_attempt_at, d.next_attempt_at";

/// The events delivered (or being delivered) to an endpoint, newest first.
pub async fn deliveries(conn: &mut PgConnection, endpoint_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<DeliveredEvent>> {
    let mut query = QueryBuilder::new(format!(
        "SELECT {DELIVERED_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.endpoint_id = "
    ));
    query.push_bind(endpoint_id);
    page.push_to(&mut query, "d.event_id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// One event as delivered to an endpoint.
pub async fn delivery(conn: &mut PgConnection, endpoint_id: Uuid, event_id: Uuid) -> sqlx::Result<Option<DeliveredEvent>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {DELIVERED_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
         WHERE d.endpoint_id = $1 AND d.event_id = $2"
    )))
    .bind(endpoint_id)
    .bind(event_id)
    .fetch_optional(conn)
    .await
}

/// An attempt as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredAttempt {
    pub id: Uuid,
    pub status_code: Option<i32>,
    pub error: Option<String>,
    pub response_body: Option<String>,
    pub latency_ms: i32,
    pub replay: bool,
    pub created_at: DateTime<Utc>,
}

/// A delivery's attempts, oldest first.
pub async fn attempts(conn: &mut PgConnection, delivery_id: Uuid) -> sqlx::Result<Vec<StoredAttempt>> {
    sqlx::query_as(
        "SELECT id, status_code, error, response_body, latency_ms, replay, created_at FROM webhook_attempts
         WHERE delivery_id = $1 ORDER BY id",
    )
    .bind(delivery_id)
    .fetch_all(conn)
    .await
}

/// Queues one more attempt of a delivery, now, without retries; the `hook-id` stays the
/// event's id.
pub async fn replay(conn: &mut PgConnection, delivery_id: Uuid) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE webhook_deliveries SET status = 'pending', replaying = true, next_attempt_at = now(), locked_until = NULL WHERE id = $1",
    )
    .bind(delivery_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Replaces an endpoint's signing key; the old one keeps signing until `overlap_seconds` from
/// now. `false` when the endpoint is not the team's.
pub async fn rotate_key(conn: &mut PgConnection, team_id: Uuid, id: Uuid, key: &[u8], overlap_seconds: f64) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE webhook_endpoints SET previous_signing_key = signing_key, signing_key = $3,
             previous_key_expires_at = now() + make_interval(secs => $4), updated_at = now()
         WHERE team_id = $1 AND id = $2",
    )
    .bind(team_id)
    .bind(id)
    .bind(key)
    .bind(overlap_seconds)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
