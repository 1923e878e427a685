//! Changes a team asks of its billing: a plan change now or at the period's end, pay-as-you-go
//! and a spend cap, and limit requests an operator reviews into the team's own limits.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A plan's limits and price, for a change.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PlanTerms {
    pub code: String,
    pub monthly_price_cents: i32,
    pub lookup_key: Option<String>,
}

/// The plan with `code`.
pub async fn plan(conn: &mut PgConnection, code: &str) -> sqlx::Result<Option<PlanTerms>> {
    sqlx::query_as("SELECT code, monthly_price_cents, stripe_lookup_key AS lookup_key FROM plans WHERE code = $1").bind(code).fetch_optional(conn).await
}

/// Each limit of plan `code` the team's usage is over now: `(limit, used, allowed)`, counting
/// the limits an operator granted the team as its own.
pub async fn over_limits(conn: &mut PgConnection, team_id: Uuid, code: &str) -> sqlx::Result<Vec<(String, i64, i64)>> {
    sqlx::query_as(
        "SELECT name, used, allowed::int8 FROM (
             SELECT 'domains' AS name, (SELECT count(*) FROM domains WHERE team_id = $1 AND status <> 'disabled' AND NOT development) AS used, GREATEST(p.domain_limit, o.domains) AS allowed
             FROM plans p LEFT JOIN team_limit_overrides o ON o.team_id = $1 WHERE p.code = $2
             UNION ALL
             SELECT 'webhook_endpoints', (SELECT count(*) FROM webhook_endpoints WHERE team_id = $1), GREATEST(p.webhook_endpoint_limit, o.webhook_endpoints)
             FROM plans p LEFT JOIN team_limit_overrides o ON o.team_id = $1 WHERE p.code = $2
             UNION ALL
             SELECT 'contacts', (SELECT count(*) FROM contacts WHERE team_id = $1),
                    CASE WHEN p.contact_limit IS NULL THEN NULL ELSE GREATEST(p.contact_limit, o.contacts) END
             FROM plans p LEFT JOIN team_limit_overrides o ON o.team_id = $1 WHERE p.code = $2
         ) x WHERE allowed IS NOT NULL AND used > allowed ORDER BY name",
    )
    .bind(team_id)
    .bind(code)
    .fetch_all(conn)
    .await
}

/// Records (or with `None` clears) the plan change waiting for the period's end.
pub async fn set_pending(conn: &mut PgConnection, team_id: Uuid, pending: Option<(&str, DateTime<Utc>)>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO team_billing AS tb (team_id, pending_plan_code, pending_effective_at) VALUES ($1, $2, $3)
         ON CONFLICT (team_id) DO UPDATE SET pending_plan_code = excluded.pending_plan_code, pending_effective_at = excluded.pending_effective_at, updated_at = now()",
    )
    .bind(team_id)
    .bind(pending.map(|p| p.0))
    .bind(pending.map(|p| p.1))
    .execute(conn)
    .await?;
    Ok(())
}

/// The pending change of a team once it is due, locked: `(plan_code, subscription_id)`.
pub async fn due_change(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Option<(String, Option<String>)>> {
    sqlx::query_as(
        "SELECT pending_plan_code, stripe_subscription_id FROM team_billing
         WHERE team_id = $1 AND pending_plan_code IS NOT NULL AND pending_effective_at <= now() FOR UPDATE",
    )
    .bind(team_id)
    .fetch_optional(conn)
    .await
}

/// Sets pay-as-you-go and the spend cap (`None` leaves a field alone; `Some(None)` clears the cap).
pub async fn set_overage(conn: &mut PgConnection, team_id: Uuid, pay_as_you_go: Option<bool>, spend_cap_cents: Option<Option<i32>>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO team_billing AS tb (team_id, pay_as_you_go, spend_cap_cents) VALUES ($1, COALESCE($2, false), $4)
         ON CONFLICT (team_id) DO UPDATE SET pay_as_you_go = COALESCE($2, tb.pay_as_you_go),
             spend_cap_cents = CASE WHEN $3 THEN $4 ELSE tb.spend_cap_cents END, updated_at = now()",
    )
    .bind(team_id)
    .bind(pay_as_you_go)
    .bind(spend_cap_cents.is_some())
    .bind(spend_cap_cents.flatten())
    .execute(conn)
    .await?;
    Ok(())
}

/// A limit request.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LimitRequest {
    pub id: Uuid,
    pub team_id: Uuid,
    pub limit_name: String,
    pub current_value: Option<i32>,
    pub requested: i32,
    pub reason: String,
    pub status: String,
    pub review_note: Option<String>,
    pub created_at: DateTime<Utc>,
    pub reviewed_at: Option<DateTime<Utc>>,
}

const REQUEST_COLUMNS: &str = "id, team_id, limit_name, current_value, requested, reason, status, review_note, created_at, reviewed_at";

/// The limit `name` that applies to the team now (`None`: no limit).
pub async fn current_limit(conn: &mut PgConnection, team_id: Uuid, name: &str) -> sqlx::Result<Option<i32>> {
    sqlx::query_scalar(
        "SELECT CASE $2 WHEN 'daily_emails' THEN daily_cap WHEN 'monthly_emails' THEN monthly_limit WHEN 'contacts' THEN contact_limit
                        WHEN 'domains' THEN domain_limit ELSE webhook_endpoint_limit END
         FROM team_limits WHERE team_id = $1",
    )
    .bind(team_id)
    .bind(name)
    .fetch_one(conn)
    .await
}

/// Files a request; `None` when one for the same limit is pending already.
pub async fn file_request(conn: &mut PgConnection, team_id: Uuid, name: &str, current: Option<i32>, requested: i32, reason: &str) -> sqlx::Result<Option<LimitRequest>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO limit_requests (id, team_id, limit_name, current_value, requested, reason) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (team_id, limit_name) WHERE status = 'pending' DO NOTHING RETURNING {REQUEST_COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(name)
    .bind(current)
    .bind(requested)
    .bind(reason)
    .fetch_optional(conn)
    .await
}

/// The team's requests, newest first (at most 100).
pub async fn requests(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Vec<LimitRequest>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {REQUEST_COLUMNS} FROM limit_requests WHERE team_id = $1 ORDER BY id DESC LIMIT 100")))
        .bind(team_id)
        .fetch_all(conn)
        .await
}

/// Decides a pending request (an operator): approval raises the team's own limit to the
/// number requested. `None` when no such request is pending.
pub async fn review(conn: &mut PgConnection, id: Uuid, approve: bool, note: Option<&str>) -> sqlx::Result<Option<LimitRequest>> {
    let decided: Option<LimitRequest> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE limit_requests SET status = $2, review_note = $3, reviewed_at = now() WHERE id = $1 AND status = 'pending' RETURNING {REQUEST_COLUMNS}"
    )))
    .bind(id)
    .bind(if approve { "approved" } else { "declined" })
    .bind(note)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(request) = decided.as_ref().filter(|r| r.status == "approved") {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO team_limit_overrides (team_id, {column}) VALUES ($1, $2)
             ON CONFLICT (team_id) DO UPDATE SET {column} = excluded.{column}, updated_at = now()",
            column = override_column(&request.limit_name)
        )))
        .bind(request.team_id)
        .bind(request.requested)
        .execute(conn)
        .await?;
    }
    Ok(decided)
}

/// The override column of a limit name (names are checked by the table's constraint).
fn override_column(name: &str) -> &'static str {
    match name {
        "daily_emails" => "daily_emails",
        "monthly_emails" => "monthly_emails",
        "contacts" => "contacts",
        "domains" => "domains",
        _ => "webhook_endpoints",
    }
}
