//! Claims on a domain another team holds.

use crate::status::ClaimStatus;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Claim {
    pub id: Uuid,
    pub team_id: Uuid,
    pub domain_id: Uuid,
    pub name: String,
    pub token: String,
    pub status: ClaimStatus,
    pub blocked_reason: Option<String>,
    pub checked_at: Option<DateTime<Utc>>,
    pub expires_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, team_id, domain_id, name, token, status, blocked_reason, checked_at, expires_at, completed_at, created_at";

pub async fn insert(conn: &mut PgConnection, claim: &Claim) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO domain_claims (id, team_id, domain_id, name, token, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(claim.id)
    .bind(claim.team_id)
    .bind(claim.domain_id)
    .bind(&claim.name)
    .bind(&claim.token)
    .bind(claim.expires_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The newest claim made through the team's copy of a domain.
pub async fn latest_for_domain(conn: &mut PgConnection, team_id: Uuid, domain_id: Uuid) -> sqlx::Result<Option<Claim>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domain_claims WHERE team_id = $1 AND domain_id = $2 ORDER BY id DESC LIMIT 1"
    )))
    .bind(team_id)
    .bind(domain_id)
    .fetch_optional(conn)
    .await
}

/// Every pending claim, locked (skipping ones another worker holds).
pub async fn lock_pending(conn: &mut PgConnection, only: Option<Uuid>) -> sqlx::Result<Vec<Claim>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domain_claims WHERE status = 'pending' AND ($1::uuid IS NULL OR id = $1)
         ORDER BY id FOR UPDATE SKIP LOCKED"
    )))
    .bind(only)
    .fetch_all(conn)
    .await
}

/// Records a check that did not transfer the domain.
pub async fn set_blocked(conn: &mut PgConnection, id: Uuid, reason: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE domain_claims SET blocked_reason = $2, checked_at = now() WHERE id = $1")
        .bind(id)
        .bind(reason)
        .execute(conn)
        .await?;
    Ok(())
}

/// Ends a claim that ran out: the claimant's copy becomes `claim_expired`.
pub async fn expire(conn: &mut PgConnection, claim: &Claim) -> sqlx::Result<()> {
    sqlx::query("UPDATE domain_claims SET status = 'expired', checked_at = now() WHERE id = $1")
        .bind(claim.id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE domains SET status = 'claim_expired', updated_at = now() WHERE id = $1 AND status = 'claiming'")
        .bind(claim.domain_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Moves the name: the holder's copy is switched off and the claimant's copy starts verifying
/// its own (fresh) DKIM key. `holder_id` is `None` when the holder deleted its copy meanwhile.
pub async fn transfer(conn: &mut PgConnection, claim: &Claim, holder_id: Option<Uuid>) -> sqlx::Result<()> {
    sqlx::query("UPDATE domains SET status = 'disabled', disabled_at = now(), updated_at = now() WHERE id = $1")
        .bind(holder_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE domains SET status = 'pending', updated_at = now() WHERE id = $1")
        .bind(claim.domain_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "UPDATE domain_claims SET status = 'completed', blocked_reason = NULL, checked_at = now(), completed_at = now()
         WHERE id = $1",
    )
    .bind(claim.id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A holder copy's state that can hold a transfer back.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Holder {
    pub id: Uuid,
    pub team_id: Uuid,
    pub verified_at: Option<DateTime<Utc>>,
    pub last_sent_at: Option<DateTime<Utc>>,
    /// Whether the holder has mail scheduled from the domain.
    pub has_scheduled_mail: bool,
}

/// The copy of `name` currently held by a team other than `claimant`.
pub async fn holder(conn: &mut PgConnection, claimant: Uuid, name: &str) -> sqlx::Result<Option<Holder>> {
    sqlx::query_as(
        "SELECT id, team_id, verified_at, last_sent_at,
                EXISTS (SELECT 1 FROM emails e WHERE e.domain_id = domains.id AND e.last_event = 'scheduled') AS has_scheduled_mail
         FROM domains
         WHERE name = $1 AND team_id <> $2 AND first_verified_at IS NOT NULL
           AND status NOT IN ('disabled', 'claiming', 'claim_expired')
         FOR UPDATE",
    )
    .bind(name)
    .bind(claimant)
    .fetch_optional(conn)
    .await
}
