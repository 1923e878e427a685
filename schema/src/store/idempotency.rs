//! Idempotency records: the first request with a key claims it; the claim holds the request's
//! fingerprint and, once answered, the response to replay for 24 hours.

use sqlx::PgConnection;
use uuid::Uuid;

/// What a claim found.
#[derive(Debug, PartialEq)]
pub enum Claim {
    /// The key is ours: run the request, then `complete` or `release`.
    Fresh,
    /// Another request with this key is still running.
    InFlight,
    /// The key was used for a different request.
    Mismatch,
    /// The key was answered before: replay this.
    Answered { status: i16, body: serde_json::Value },
}

/// How long a stored response is replayed.
pub const REPLAY_HOURS: i32 = 24;
/// An unanswered claim older than this is taken to be from a request that died.
pub const ABANDONED_SECONDS: i32 = 120;

/// Claims `key` for a request with `fingerprint` (commits on its own connection at once, so a
/// concurrent request sees the claim).
pub async fn claim(conn: &mut PgConnection, team_id: Uuid, key: &str, fingerprint: &[u8]) -> sqlx::Result<Claim> {
    // Insert, or take over a record that expired or was abandoned; otherwise return the existing one.
    let row: (bool, Vec<u8>, Option<i16>, Option<serde_json::Value>) = sqlx::query_as(
        "WITH taken AS (
            INSERT INTO idempotency_records AS r (team_id, key, fingerprint)
            VALUES ($1, $2, $3)
            ON CONFLICT (team_id, key) DO UPDATE SET
                fingerprint = EXCLUDED.fingerprint, response_status = NULL, response_body = NULL,
                created_at = now()
            WHERE r.created_at < now() - make_interval(hours => $4)
               OR (r.response_status IS NULL AND r.created_at < now() - make_interval(secs => $5))
            RETURNING true AS fresh, r.fingerprint, r.response_status, r.response_body
        )
        SELECT fresh, fingerprint, response_status, response_body FROM taken
        UNION ALL
        SELECT false, fingerprint, response_status, response_body FROM idempotency_records
        WHERE team_id = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM taken)",
    )
    .bind(team_id)
    .bind(key)
    .bind(fingerprint)
    .bind(REPLAY_HOURS)
    .bind(ABANDONED_SECONDS as f64)
    .fetch_one(conn)
    .await?;
    let (fresh, stored_fingerprint, status, body) = row;
    Ok(if fresh {
        Claim::Fresh
    } else if stored_fingerprint != fingerprint {
        Claim::Mismatch
    } else {
        match (status, body) {
            (Some(status), Some(body)) => Claim::Answered { status, body },
            _ => Claim::InFlight,
        }
    })
}

/// Stores the response of a claimed key (inside the request's own transaction).
pub async fn complete(
    conn: &mut PgConnection,
    team_id: Uuid,
    key: &str,
    status: i16,
    body: &serde_json::Value,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE idempotency_records SET response_status = $3, response_body = $4
         WHERE team_id = $1 AND key = $2",
    )
    .bind(team_id)
    .bind(key)
    .bind(status)
    .bind(body)
    .execute(conn)
    .await?;
    Ok(())
}

/// Gives a claim back when the request failed without an answer worth replaying.
pub async fn release(conn: &mut PgConnection, team_id: Uuid, key: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM idempotency_records WHERE team_id = $1 AND key = $2 AND response_status IS NULL")
        .bind(team_id)
        .bind(key)
        .execute(conn)
        .await?;
    Ok(())
}

/// Deletes records past the replay window.
pub async fn purge_expired(conn: &mut PgConnection) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM idempotency_records WHERE created_at < now() - make_interval(hours => $1)")
        .bind(REPLAY_HOURS)
        .execute(conn)
        .await?;
    Ok(done.rows_affected())
}
