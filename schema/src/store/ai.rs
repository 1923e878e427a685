//! AI assist's meters: the team's monthly credits (charged atomically before a call, given back
//! when the call yields nothing) and its requests per minute, both counted in PostgreSQL so
//! every process shares them.

use chrono::{DateTime, Datelike, DurationRound, NaiveDate, TimeDelta, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// Requests a team may make a minute.
pub const REQUESTS_PER_MINUTE: i32 = 10;

/// A team's credits this month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credits {
    /// The plan's monthly allowance (`None`: no limit).
    pub limit: Option<i32>,
    pub used: i32,
}

impl Credits {
    /// What is left (`None`: no limit).
    pub fn remaining(&self) -> Option<i32> {
        self.limit.map(|limit| (limit - self.used).max(0))
    }
}

fn month_of(now: DateTime<Utc>) -> NaiveDate {
    NaiveDate::from_ymd_opt(now.year(), now.month(), 1).unwrap_or(now.date_naive())
}

/// Whether the team has AI assist on (`None`: no such team).
pub async fn enabled(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Option<bool>> {
    sqlx::query_scalar("SELECT ai_assist_enabled FROM teams WHERE id = $1").bind(team_id).fetch_optional(conn).await
}

/// Counts a request in the team's current minute; `Err(seconds)` until the next minute when
/// the team has made its [`REQUESTS_PER_MINUTE`] already.
pub async fn take_request(conn: &mut PgConnection, team_id: Uuid, now: DateTime<Utc>) -> sqlx::Result<Result<(), u64>> {
    let minute = now.duration_trunc(TimeDelta::minutes(1)).unwrap_or(now);
    let counted: Option<i32> = sqlx::query_scalar(
        "INSERT INTO ai_request_windows AS w (team_id, minute, requests) VALUES ($1, $2, 1)
         ON CONFLICT (team_id, minute) DO UPDATE SET requests = w.requests + 1 WHERE w.requests < $3
         RETURNING requests",
    )
    .bind(team_id)
    .bind(minute)
    .bind(REQUESTS_PER_MINUTE)
    .fetch_optional(conn)
    .await?;
    let next = minute + TimeDelta::minutes(1);
    Ok(counted.map(|_| ()).ok_or_else(|| (next - now).num_seconds().max(1) as u64))
}

/// Charges `credits` to the team's month if its allowance covers them, in one statement (the
/// month's row locked while it is checked, so concurrent charges never overspend). Answers the
/// credits after the charge, or `Err` with them as they stand when the allowance falls short.
pub async fn charge(conn: &mut PgConnection, team_id: Uuid, credits: i32, now: DateTime<Utc>) -> sqlx::Result<Result<Credits, Credits>> {
    let month = month_of(now);
    let charged: Option<(Option<i32>, i32)> = sqlx::query_as(
        "WITH allowance AS (SELECT p.ai_credits_monthly AS lim FROM teams t JOIN plans p ON p.code = t.plan_code WHERE t.id = $1)
         INSERT INTO ai_credit_usage AS u (team_id, month, used)
         SELECT $1, $2, $3 FROM allowance WHERE allowance.lim IS NULL OR $3 <= allowance.lim
         ON CONFLICT (team_id, month) DO UPDATE SET used = u.used + excluded.used
             WHERE (SELECT lim FROM allowance) IS NULL OR u.used + excluded.used <= (SELECT lim FROM allowance)
         RETURNING (SELECT lim FROM allowance), used",
    )
    .bind(team_id)
    .bind(month)
    .bind(credits)
    .fetch_optional(&mut *conn)
    .await?;
    match charged {
        Some((limit, used)) => Ok(Ok(Credits { limit, used })),
        None => Ok(Err(current(conn, team_id, now).await?)),
    }
}

/// Gives back credits charged for a call that yielded nothing.
pub async fn refund(conn: &mut PgConnection, team_id: Uuid, credits: i32, now: DateTime<Utc>) -> sqlx::Result<Credits> {
    sqlx::query("UPDATE ai_credit_usage SET used = GREATEST(0, used - $3) WHERE team_id = $1 AND month = $2")
        .bind(team_id)
        .bind(month_of(now))
        .bind(credits)
        .execute(&mut *conn)
        .await?;
    current(conn, team_id, now).await
}

/// The team's credits this month.
pub async fn current(conn: &mut PgConnection, team_id: Uuid, now: DateTime<Utc>) -> sqlx::Result<Credits> {
    let (limit, used): (Option<i32>, i32) = sqlx::query_as(
        "SELECT p.ai_credits_monthly, COALESCE((SELECT used FROM ai_credit_usage WHERE team_id = t.id AND month = $2), 0)
         FROM teams t JOIN plans p ON p.code = t.plan_code WHERE t.id = $1",
    )
    .bind(team_id)
    .bind(month_of(now))
    .fetch_one(conn)
    .await?;
    Ok(Credits { limit, used })
}

/// Drops request windows older than `before` (housekeeping).
pub async fn forget_windows(conn: &mut PgConnection, before: DateTime<Utc>) -> sqlx::Result<u64> {
    Ok(sqlx::query("DELETE FROM ai_request_windows WHERE minute < $1").bind(before).execute(conn).await?.rows_affected())
}
