//! Emails accepted per team per UTC day, counted in the accepting transaction; a month is the
//! sum of its days.

use chrono::{DateTime, Datelike, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A team's counts after an acceptance, with its plan's caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub today: i64,
    /// 0 when the plan has no monthly limit (not counted then).
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

/// Adds `emails` to the team's counter for the day (UTC) and returns the day's count and, when
/// the plan has a monthly limit, the month's (today plus the month's earlier days). One row is
/// written per acceptance; it stays locked until the transaction ends, so a team's concurrent
/// sends queue here and both limits hold exactly.
pub async fn add(conn: &mut PgConnection, team_id: Uuid, emails: i32, now: DateTime<Utc>) -> sqlx::Result<Usage> {
    let day = now.date_naive();
    let month = day.with_day(1).unwrap_or(day);
    let (today, this_month, daily_cap, monthly_limit): (i32, i64, Option<i32>, Option<i32>) = sqlx::query_as(
        "WITH d AS (
             INSERT INTO send_usage (team_id, period_kind, period_start, emails) VALUES ($1, 'day', $2, $4)
             ON CONFLICT (team_id, period_kind, period_start) DO UPDATE SET emails = send_usage.emails + excluded.emails
             RETURNING emails
         )
         SELECT d.emails,
                CASE WHEN p.monthly_limit IS NULL THEN 0::int8 ELSE d.emails + COALESCE((
                    SELECT sum(emails) FROM send_usage
                    WHERE team_id = $1 AND period_kind = 'day' AND period_start >= $3 AND period_start < $2), 0)::int8 END,
                p.daily_cap, p.monthly_limit
         FROM d, teams t JOIN plans p ON p.code = t.plan_code WHERE t.id = $1",
    )
    .bind(team_id)
    .bind(day)
    .bind(month)
    .bind(emails)
    .fetch_one(conn)
    .await?;
    Ok(Usage { today: today as i64, this_month, daily_cap, monthly_limit })
}
