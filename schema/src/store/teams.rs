//! Teams and their plans.

use crate::model::RiskState;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A team with its plan's limits.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Team {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub risk_state: RiskState,
    pub plan_code: String,
    pub plan_name: String,
    pub included_emails: i32,
    pub daily_cap: Option<i32>,
    pub domain_limit: i32,
    pub webhook_endpoint_limit: i32,
    pub retention_days: i32,
    pub sending_tier: i16,
    /// What the sending tier may send a day, and the next tier (`None`: no cap of its own).
    pub tier_daily_cap: Option<i32>,
    pub next_tier_daily_cap: Option<i32>,
    pub sandbox_regions: Vec<String>,
    pub sender_name: Option<String>,
    pub postal_address: Option<serde_json::Value>,
    pub ai_assist_enabled: bool,
    pub brand_kit: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

/// Inserts a team on the free plan.
pub async fn insert(conn: &mut PgConnection, id: Uuid, name: &str, slug: &str) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO teams (id, name, slug) VALUES ($1, $2, $3)")
        .bind(id)
        .bind(name)
        .bind(slug)
        .execute(conn)
        .await?;
    Ok(())
}

/// How many teams exist (the first-run check of `scripts/run`).
pub async fn count(conn: &mut PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM teams").fetch_one(conn).await
}

/// One team with its plan.
pub async fn get(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Option<Team>> {
    sqlx::query_as(
        "SELECT t.id, t.name, t.slug, t.risk_state, t.plan_code, p.name AS plan_name,
                p.included_emails, p.daily_cap, p.domain_limit, p.webhook_endpoint_limit,
                p.retention_days, t.sending_tier, st.daily_cap AS tier_daily_cap, nt.daily_cap AS next_tier_daily_cap,
                t.sandbox_regions, t.sender_name, t.postal_address, t.ai_assist_enabled, t.brand_kit, t.created_at
         FROM teams t JOIN plans p ON p.code = t.plan_code JOIN sending_tiers st ON st.tier = t.sending_tier
         LEFT JOIN sending_tiers nt ON nt.tier = t.sending_tier + 1
         WHERE t.id = $1",
    )
    .bind(team_id)
    .fetch_optional(conn)
    .await
}

/// Whether a plan with this code exists.
pub async fn plan_exists(conn: &mut PgConnection, code: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM plans WHERE code = $1)").bind(code).fetch_one(conn).await
}

/// Sets a team's plan and the regions it keeps in the sending sandbox (operators); `None`
/// leaves a field alone. Answers whether the team exists.
pub async fn set_plan_and_sandbox(
    conn: &mut PgConnection,
    team_id: Uuid,
    plan_code: Option<&str>,
    sandbox_regions: Option<&[String]>,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE teams SET plan_code = COALESCE($2, plan_code), sandbox_regions = COALESCE($3, sandbox_regions) WHERE id = $1",
    )
    .bind(team_id)
    .bind(plan_code)
    .bind(sandbox_regions)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Sets a team's risk state (operators; a suspended team's keys stop working at once).
pub async fn set_risk_state(conn: &mut PgConnection, team_id: Uuid, state: RiskState) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE teams SET risk_state = $2 WHERE id = $1")
        .bind(team_id)
        .bind(state)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Locks the team row until the transaction ends (serialises plan-limited creates) and
/// returns its domain limit (the plan's, or an operator's grant).
pub async fn lock_domain_limit(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<i32> {
    sqlx::query_scalar(
        "SELECT l.domain_limit FROM teams t JOIN team_limits l ON l.team_id = t.id WHERE t.id = $1 FOR UPDATE OF t",
    )
    .bind(team_id)
    .fetch_one(conn)
    .await
}

/// Locks the team row until the transaction ends (serialises endpoint creates) and returns its
/// webhook endpoint limit (the plan's, or an operator's grant).
pub async fn lock_webhook_limit(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<i32> {
    sqlx::query_scalar(
        "SELECT l.webhook_endpoint_limit FROM teams t JOIN team_limits l ON l.team_id = t.id WHERE t.id = $1 FOR UPDATE OF t",
    )
    .bind(team_id)
    .fetch_one(conn)
    .await
}

/// A change to a team's profile: `None` leaves a field alone; `Some(None)` clears a nullable one.
pub struct ProfileChange<'a> {
    pub name: Option<&'a str>,
    pub sender_name: Option<Option<&'a str>>,
    pub postal_address: Option<Option<serde_json::Value>>,
    pub ai_assist_enabled: Option<bool>,
    pub brand_kit: Option<serde_json::Value>,
}

/// Applies a profile change; answers whether the team exists.
pub async fn update_profile(conn: &mut PgConnection, team_id: Uuid, change: &ProfileChange<'_>) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE teams SET
             name = COALESCE($2, name),
             sender_name = CASE WHEN $3 THEN $4 ELSE sender_name END,
             postal_address = CASE WHEN $5 THEN $6 ELSE postal_address END,
             ai_assist_enabled = COALESCE($7, ai_assist_enabled),
             brand_kit = COALESCE($8, brand_kit)
         WHERE id = $1",
    )
    .bind(team_id)
    .bind(change.name)
    .bind(change.sender_name.is_some())
    .bind(change.sender_name.flatten())
    .bind(change.postal_address.is_some())
    .bind(change.postal_address.clone().flatten())
    .bind(change.ai_assist_enabled)
    .bind(change.brand_kit.clone())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
