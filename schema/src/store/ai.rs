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

/// What a diagnosis of an email reads: the email, its recipients with their last SMTP replies,
/// its first 50 events, the suppressions of its recipients, and its domain's records as last
/// checked; with the newest event's id. `None`: no such email of the team.
pub async fn diagnosis_material(conn: &mut PgConnection, team_id: Uuid, email_id: Uuid) -> sqlx::Result<Option<(serde_json::Value, Option<Uuid>)>> {
    sqlx::query_as(
        "SELECT json_build_object(
             'email', json_build_object('from', e.from_email, 'subject', e.subject, 'last_event', e.last_event, 'created_at', e.created_at,
                 'scheduled_at', e.scheduled_at, 'dispatched_at', e.dispatched_at, 'failed_reason', e.failed_reason),
             'recipients', (SELECT json_agg(json_build_object('address', r.email, 'kind', r.kind, 'status', r.status, 'attempts', r.attempts,
                 'last_smtp_reply', r.last_response) ORDER BY r.position) FROM email_recipients r WHERE r.email_id = e.id),
             'events', (SELECT json_agg(json_build_object('type', ev.type, 'at', ev.created_at, 'data', ev.data) ORDER BY ev.id)
                 FROM (SELECT * FROM events WHERE email_id = e.id ORDER BY id LIMIT 50) ev),
             'suppressions', (SELECT json_agg(json_build_object('address', s.email, 'origin', s.origin, 'since', s.created_at)) FROM suppressions s
                 WHERE s.team_id = e.team_id AND s.email IN (SELECT r.email FROM email_recipients r WHERE r.email_id = e.id)),
             'domain', (SELECT json_build_object('name', d.name, 'status', d.status, 'records', (SELECT json_agg(json_build_object('record', dr.kind,
                 'status', dr.status, 'found', dr.found, 'checked_at', dr.checked_at)) FROM domain_records dr WHERE dr.domain_id = d.id))
                 FROM domains d WHERE d.id = e.domain_id)
         )::jsonb, (SELECT id FROM events WHERE email_id = e.id ORDER BY id DESC LIMIT 1)
         FROM emails e WHERE e.team_id = $1 AND e.id = $2",
    )
    .bind(team_id)
    .bind(email_id)
    .fetch_optional(conn)
    .await
}

/// A kept diagnosis.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Diagnosis {
    pub last_event_id: Option<Uuid>,
    pub summary: String,
    pub causes: serde_json::Value,
    pub next_steps: serde_json::Value,
}

/// The email's kept diagnosis, if any.
pub async fn diagnosis(conn: &mut PgConnection, team_id: Uuid, email_id: Uuid) -> sqlx::Result<Option<Diagnosis>> {
    sqlx::query_as("SELECT last_event_id, summary, causes, next_steps FROM ai_diagnoses WHERE team_id = $1 AND email_id = $2")
        .bind(team_id)
        .bind(email_id)
        .fetch_optional(conn)
        .await
}

/// Keeps the email's diagnosis (replacing an older one).
pub async fn keep_diagnosis(conn: &mut PgConnection, team_id: Uuid, email_id: Uuid, d: &Diagnosis) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO ai_diagnoses (email_id, team_id, last_event_id, summary, causes, next_steps) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (email_id) DO UPDATE SET last_event_id = excluded.last_event_id, summary = excluded.summary, causes = excluded.causes,
             next_steps = excluded.next_steps, created_at = now()",
    )
    .bind(email_id)
    .bind(team_id)
    .bind(d.last_event_id)
    .bind(&d.summary)
    .bind(&d.causes)
    .bind(&d.next_steps)
    .execute(conn)
    .await?;
    Ok(())
}
