//! Emails accepted per team per day and per month, counted in the accepting transaction.

use chrono::{DateTime, Datelike, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A team's counts after an acceptance, with its plan's caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub today: i64,
    pub this_month: i64,
    pub daily_cap: Option<i32>,
    pub monthly_limit: Option<i32>,
}

impl Usage {
    pub fn over_daily(&self) -> bool {
        self.daily_cap.is_some_and(|cap| self.today > cap as i64)
    }

    pub fn over_monthly(&self) -> bool {
        self.monthly_limit.is_some_and(|limit| self.this_month > limit as i64)
    }
}

/// Adds `emails` to the team's day (UTC) and month counters and returns the new counts. The
/// counter rows stay locked until the transaction ends, so a team's concurrent sends queue here.
pub async fn add(conn: &mut PgConnection, team_id: Uuid, emails: i32, now: DateTime<Utc>) -> sqlx::Result<Usage> {
    let day = now.date_naive();
    let month = day.with_day(1).unwrap_or(day);
    let (today, this_month, daily_cap, monthly_limit): (i32, i32, Option<i32>, Option<i32>) = sqlx::query_as(
        "WITH d AS (
             INSERT INTO send_usage (team_id, period_kind, period_start, emails) VALUES ($1, 'day', $2, $4)
             ON CONFLICT (team_id, period_kind, period_start) DO UPDATE SET emails = send_usage.emails + excluded.emails
             RETURNING emails
         ), m AS (
             INSERT INTO send_usage (team_id, period_kind, period_start, emails) VALUES ($1, 'month', $3, $4)
             ON CONFLICT (team_id, period_kind, period_start) DO UPDATE SET emails = send_usage.emails + excluded.emails
             RETURNING emails
         )
         SELECT d.emails, m.emails, p.daily_cap, p.monthly_limit
         FROM d, m, teams t JOIN plans p ON p.code = t.plan_code WHERE t.id = $1",
    )
    .bind(team_id)
    .bind(day)
    .bind(month)
    .bind(emails)
    .fetch_one(conn)
    .await?;
    Ok(Usage { today: today as i64, this_month: this_month as i64, daily_cap, monthly_limit })
}
