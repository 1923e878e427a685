//! Authentication and the per-team token bucket. Serving processes cache what `find_key`
//! answers and lease tokens with `take_tokens`; the `herald_auth` channel and the barriers here
//! tell every process when a cached key must go (see the `auth_cache` migration).

use crate::model::{InboxAccess, KeyStatus, Permission, RiskState};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

/// The channel key and team changes are announced on: `key <id>`, `team <id>`, `barrier <n>`.
pub const CHANNEL: &str = "herald_auth";

/// A live listener is one whose heartbeat is younger than this (seconds).
pub const LISTENER_LIVENESS_SECONDS: i32 = 10;

/// The key behind a bearer token, with its team's standing.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct KeyLookup {
    pub key_id: Uuid,
    pub team_id: Uuid,
    pub permission: Permission,
    pub domain_id: Option<Uuid>,
    pub inbox_access: InboxAccess,
    pub status: KeyStatus,
    pub risk_state: RiskState,
    pub last_used_at: Option<DateTime<Utc>>,
}

/// Looks a token hash up (no write). `None` for an unknown token.
pub async fn find_key(conn: &mut PgConnection, token_hash: &[u8]) -> sqlx::Result<Option<KeyLookup>> {
    sqlx::query_as(
        "SELECT k.id AS key_id, k.team_id, k.permission, k.domain_id, k.inbox_access, k.status,
                t.risk_state, k.last_used_at
         FROM api_keys k JOIN teams t ON t.id = k.team_id
         WHERE k.token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(conn)
    .await
}

/// Refreshes a key's `last_used_at`, naming `log_id`, unless another process did within the
/// last minute.
pub async fn touch(conn: &mut PgConnection, key_id: Uuid, log_id: Uuid) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE api_keys SET last_used_at = now(), last_used_request_log_id = $2
         WHERE id = $1 AND status = 'active' AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
    )
    .bind(key_id)
    .bind(log_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A grant from a team's bucket.
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub struct Grant {
    /// Tokens handed to the caller (0 to `want`).
    pub granted: i32,
    /// Tokens left in the bucket after the grant.
    pub tokens: f64,
}

/// Refills the team's bucket for the time since its last take and takes up to `want` whole
/// tokens from it, in one statement.
pub async fn take_tokens(conn: &mut PgConnection, team_id: Uuid, want: i32, capacity: f64, refill_per_second: f64) -> sqlx::Result<Grant> {
    sqlx::query_as(
        "WITH now AS (SELECT clock_timestamp() AS at)
         INSERT INTO rate_limits AS r (team_id, tokens, granted, updated_at)
         SELECT $1, $3::float8 - LEAST($2, floor($3::float8)::int), LEAST($2, floor($3::float8)::int), now.at FROM now
         ON CONFLICT (team_id) DO UPDATE SET
             granted = LEAST($2, floor(LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - r.updated_at)::float8) * $4))::int),
             tokens = LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - r.updated_at)::float8) * $4)
                      - LEAST($2, floor(LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - r.updated_at)::float8) * $4))::int),
             updated_at = clock_timestamp()
         RETURNING r.granted, r.tokens",
    )
    .bind(team_id)
    .bind(want)
    .bind(capacity)
    .bind(refill_per_second)
    .fetch_one(conn)
    .await
}

/// Registers (or refreshes) a listening process, clears listeners gone for an hour, and
/// answers the latest barrier sent, which the listener has then implicitly read: it starts
/// with an empty cache.
pub async fn register_listener<'c>(conn: impl PgExecutor<'c>, id: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "WITH gone AS (DELETE FROM auth_listeners WHERE heartbeat_at < now() - interval '1 hour' AND id <> $1)
         INSERT INTO auth_listeners (id, seen_barrier, heartbeat_at)
         SELECT $1, CASE WHEN is_called THEN last_value ELSE 0 END, clock_timestamp() FROM auth_barriers
         ON CONFLICT (id) DO UPDATE SET seen_barrier = EXCLUDED.seen_barrier, heartbeat_at = EXCLUDED.heartbeat_at
         RETURNING seen_barrier",
    )
    .bind(id)
    .fetch_one(conn)
    .await
}

/// A listener's heartbeat, with the highest barrier it has read.
pub async fn heartbeat<'c>(conn: impl PgExecutor<'c>, id: Uuid, seen_barrier: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE auth_listeners SET seen_barrier = GREATEST(seen_barrier, $2), heartbeat_at = clock_timestamp() WHERE id = $1")
        .bind(id)
        .bind(seen_barrier)
        .execute(conn)
        .await?;
    Ok(())
}

/// A process's ping to its own listener (its answer proves the listener works).
pub async fn ping(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_notify($1, 'ping ' || $2::text)").bind(CHANNEL).bind(id).execute(conn).await?;
    Ok(())
}

/// A listener leaving (graceful shutdown).
pub async fn unregister_listener(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM auth_listeners WHERE id = $1").bind(id).execute(conn).await?;
    Ok(())
}

/// Sends a barrier on the channel (call it after the change committed) and answers its number.
pub async fn send_barrier(conn: &mut PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar("WITH b AS (SELECT nextval('auth_barriers') AS n) SELECT n FROM b, LATERAL pg_notify($1, 'barrier ' || n)")
        .bind(CHANNEL)
        .fetch_one(conn)
        .await
}

/// How many live listeners have not yet read `barrier`.
pub async fn listeners_behind(conn: &mut PgConnection, barrier: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM auth_listeners
         WHERE seen_barrier < $1 AND heartbeat_at > clock_timestamp() - make_interval(secs => $2)",
    )
    .bind(barrier)
    .bind(LISTENER_LIVENESS_SECONDS as f64)
    .fetch_one(conn)
    .await
}
