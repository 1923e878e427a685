//! Request logs: written in batches off the request path, read back per team.

use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// One logged call.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RequestLog {
    pub id: Uuid,
    pub team_id: Uuid,
    pub created_at: DateTime<Utc>,
    pub endpoint: String,
    pub path: String,
    pub method: String,
    pub response_status: i16,
    pub user_agent: String,
    pub source: String,
    pub request_id: String,
    pub latency_ms: i32,
    pub api_key_id: Option<Uuid>,
    pub email_id: Option<Uuid>,
    pub request_body: Option<serde_json::Value>,
    pub response_body: Option<serde_json::Value>,
}

/// Filters of `GET /logs`.
#[derive(Debug, Default)]
pub struct ListFilter {
    pub status: Option<i16>,
    pub source: Option<String>,
    pub exclude_source: Option<String>,
    pub user_agent: Option<String>,
    pub search: Option<String>,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
}

/// Inserts many logs in one statement.
pub async fn insert_batch(conn: &mut PgConnection, logs: &[RequestLog]) -> sqlx::Result<()> {
    if logs.is_empty() {
        return Ok(());
    }
    // One statement text whatever the batch's size (arrays, not VALUES lists), so PostgreSQL
    // plans it once per connection.
    fn column<T>(logs: &[RequestLog], field: impl Fn(&RequestLog) -> T) -> Vec<T> {
        logs.iter().map(field).collect()
    }
    sqlx::query(
        "INSERT INTO request_logs (id, team_id, created_at, endpoint, path, method, response_status,
            user_agent, source, request_id, latency_ms, api_key_id, email_id, request_body, response_body)
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::int2[],
            $8::text[], $9::text[], $10::text[], $11::int4[], $12::uuid[], $13::uuid[], $14::jsonb[], $15::jsonb[])
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(column(logs, |l| l.id))
    .bind(column(logs, |l| l.team_id))
    .bind(column(logs, |l| l.created_at))
    .bind(column(logs, |l| l.endpoint.clone()))
    .bind(column(logs, |l| l.path.clone()))
    .bind(column(logs, |l| l.method.clone()))
    .bind(column(logs, |l| l.response_status))
    .bind(column(logs, |l| l.user_agent.clone()))
    .bind(column(logs, |l| l.source.clone()))
    .bind(column(logs, |l| l.request_id.clone()))
    .bind(column(logs, |l| l.latency_ms))
    .bind(column(logs, |l| l.api_key_id))
    .bind(column(logs, |l| l.email_id))
    .bind(column(logs, |l| l.request_body.clone()))
    .bind(column(logs, |l| l.response_body.clone()))
    .execute(conn)
    .await?;
    Ok(())
}

const LIST_COLUMNS: &str = "id, team_id, created_at, endpoint, path, method, response_status, user_agent,
    source, request_id, latency_ms, api_key_id, email_id, NULL::jsonb AS request_body, NULL::jsonb AS response_body";

pub async fn list(
    conn: &mut PgConnection,
    team_id: Uuid,
    filter: &ListFilter,
    page: &PageRequest,
) -> sqlx::Result<Page<RequestLog>> {
    let mut query = QueryBuilder::new(format!("SELECT {LIST_COLUMNS} FROM request_logs WHERE team_id = "));
    query.push_bind(team_id);
    if let Some(status) = filter.status {
        query.push(" AND response_status = ").push_bind(status);
    }
    if let Some(source) = &filter.source {
        query.push(" AND source = ").push_bind(source.clone());
    }
    if let Some(source) = &filter.exclude_source {
        query.push(" AND source <> ").push_bind(source.clone());
    }
    if let Some(user_agent) = &filter.user_agent {
        query.push(" AND user_agent = ").push_bind(user_agent.clone());
    }
    if let Some(search) = &filter.search {
        let pattern = super::like_pattern(search);
        query.push(" AND (endpoint ILIKE ").push_bind(pattern.clone());
        query.push(" OR path ILIKE ").push_bind(pattern).push(")");
    }
    if let Some(start) = filter.start {
        query.push(" AND created_at >= ").push_bind(start);
    }
    if let Some(end) = filter.end {
        query.push(" AND created_at <= ").push_bind(end);
    }
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// One log of the team, with its stored bodies.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<RequestLog>> {
    sqlx::query_as("SELECT * FROM request_logs WHERE team_id = $1 AND id = $2")
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Deletes up to `batch` logs older than their team's plan retention; returns how many went.
pub async fn purge_expired(conn: &mut PgConnection, batch: i64) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM request_logs WHERE id IN (
            SELECT l.id FROM request_logs l
            JOIN teams t ON t.id = l.team_id
            JOIN plans p ON p.code = t.plan_code
            WHERE l.created_at < now() - make_interval(days => p.retention_days)
            LIMIT $1)",
    )
    .bind(batch)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
