//! Authentication and the per-team token bucket, in one statement: the request path pays one
//! round trip for "who is this, may they call now, and note that they did".

use crate::model::{InboxAccess, KeyStatus, Permission, RiskState};
use sqlx::PgConnection;
use uuid::Uuid;

/// The key behind a bearer token, and the bucket's verdict when the key may be used.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct KeyLookup {
    pub key_id: Uuid,
    pub team_id: Uuid,
    pub permission: Permission,
    pub domain_id: Option<Uuid>,
    pub inbox_access: InboxAccess,
    pub status: KeyStatus,
    pub risk_state: RiskState,
    /// Tokens left after this request; `None` when the key is not usable (no token taken).
    pub tokens: Option<f64>,
    /// Whether the bucket had a token for this request.
    pub allowed: Option<bool>,
}

/// Looks a token hash up; for a usable key, takes one token from its team's bucket and refreshes
/// `last_used_at` (at most once a minute) naming `log_id`. `None` for an unknown token.
pub async fn authenticate(
    conn: &mut PgConnection,
    token_hash: &[u8],
    log_id: Uuid,
    capacity: f64,
    refill_per_second: f64,
) -> sqlx::Result<Option<KeyLookup>> {
    sqlx::query_as(
        "WITH k AS (
            SELECT k.id, k.team_id, k.permission, k.domain_id, k.inbox_access, k.status,
                   t.risk_state, k.last_used_at,
                   (k.status = 'active' AND t.risk_state <> 'suspended') AS usable
            FROM api_keys k JOIN teams t ON t.id = k.team_id
            WHERE k.token_hash = $1
        ),
        b AS (
            INSERT INTO rate_limits AS r (team_id, tokens, allowed, updated_at)
            SELECT team_id, $3 - 1, true, clock_timestamp() FROM k WHERE usable
            ON CONFLICT (team_id) DO UPDATE SET
                tokens = LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - r.updated_at)::float8) * $4)
                         - CASE WHEN LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - r.updated_at)::float8) * $4) >= 1
                                THEN 1 ELSE 0 END,
                allowed = LEAST($3::float8, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - r.updated_at)::float8) * $4) >= 1,
                updated_at = clock_timestamp()
            RETURNING r.tokens, r.allowed
        ),
        touch AS (
            UPDATE api_keys SET last_used_at = now(), last_used_request_log_id = $2
            FROM k
            WHERE api_keys.id = k.id AND k.usable
              AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute')
            RETURNING api_keys.id
        )
        SELECT k.id AS key_id, k.team_id, k.permission, k.domain_id, k.inbox_access, k.status,
               k.risk_state, b.tokens, b.allowed
        FROM k LEFT JOIN b ON true",
    )
    .bind(token_hash)
    .bind(log_id)
    .bind(capacity)
    .bind(refill_per_second)
    .fetch_optional(conn)
    .await
}
