//! Emails accepted per team per UTC day, counted in the accepting transaction; a month is the
//! sum of its days.

use chrono::{DateTime, Datelike, Utc};
use sqlx::{Postgres, QueryBuilder};
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

    /// Past either limit that applies now. Sends never take a team past a limit (an
    /// acceptance over one is rolled back), so this holds only after a limit was lowered: a
    /// plan moved down, an operator's grant, pay-as-you-go turned off.
    pub fn over(&self) -> bool {
        self.over_daily() || self.over_monthly()
    }
}

/// A team's counts for the day and month (UTC) of `now` with the limits that apply now,
/// without counting anything; `None` for an unknown team.
pub async fn current(conn: &mut sqlx::PgConnection, team_id: Uuid, now: DateTime<Utc>) -> sqlx::Result<Option<Usage>> {
    let day = now.date_naive();
    let month = day.with_day(1).unwrap_or(day);
    let row: Option<UsageRow> = sqlx::query_as(
        "SELECT COALESCE((SELECT emails FROM send_usage WHERE team_id = $1 AND period_kind = 'day' AND period_start = $2), 0),
                COALESCE((SELECT sum(emails) FROM send_usage
                          WHERE team_id = $1 AND period_kind = 'day' AND period_start >= $3 AND period_start <= $2), 0)::int8,
                l.daily_cap, l.monthly_limit
         FROM team_limits l WHERE l.team_id = $1",
    )
    .bind(team_id)
    .bind(day)
    .bind(month)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(Usage::from))
}

/// A count to add to a team's counter for the day (UTC) of `now`.
#[derive(Debug, Clone, Copy)]
pub struct Count {
    pub team_id: Uuid,
    pub emails: i32,
    pub now: DateTime<Utc>,
}

/// Pushes the CTEs that add `count` to the team's counter for the day and yield one row
/// `usage(today, this_month, daily_cap, monthly_limit)`: the day's count and, when the plan has
/// a monthly limit, the month's (today plus the month's earlier days; 0 otherwise). One row is
/// written per acceptance; it stays locked until the transaction ends, so a team's concurrent
/// sends queue on it and both limits hold exactly. A statement that writes emails counts them
/// in the same round trip.
pub fn push_count(query: &mut QueryBuilder<Postgres>, count: Count) {
    let day = count.now.date_naive();
    let month = day.with_day(1).unwrap_or(day);
    query.push("usage_day AS (INSERT INTO send_usage (team_id, period_kind, period_start, emails) VALUES (");
    query.push_bind(count.team_id).push(", 'day', ").push_bind(day).push(", ").push_bind(count.emails);
    query.push(
        ") ON CONFLICT (team_id, period_kind, period_start) DO UPDATE SET emails = send_usage.emails + excluded.emails
         RETURNING emails),
         usage AS (SELECT d.emails AS today,
             CASE WHEN l.monthly_limit IS NULL THEN 0::int8 ELSE d.emails + COALESCE((
                 SELECT sum(emails) FROM send_usage WHERE team_id = ",
    );
    query.push_bind(count.team_id).push(" AND period_kind = 'day' AND period_start >= ").push_bind(month);
    query.push(" AND period_start < ").push_bind(day);
    query.push("), 0)::int8 END AS this_month, l.daily_cap, l.monthly_limit FROM usage_day d, team_limits l WHERE l.team_id = ");
    query.push_bind(count.team_id).push(")");
}

/// Adds `count` to the team's counter on its own (see [`push_count`]), for a transaction that
/// wrote its emails already and holds the team's counter row only from here to its end.
pub async fn add(conn: &mut sqlx::PgConnection, count: Count) -> sqlx::Result<Usage> {
    let mut query = QueryBuilder::new("WITH ");
    push_count(&mut query, count);
    query.push(" SELECT ").push(USAGE_OUTPUT);
    let row: UsageRow = query.build_query_as().fetch_one(conn).await?;
    Ok(row.into())
}

/// The columns of `usage` as a statement's output (see [`push_count`]).
pub const USAGE_OUTPUT: &str = "(SELECT today FROM usage), (SELECT this_month FROM usage), (SELECT daily_cap FROM usage), (SELECT monthly_limit FROM usage)";

/// A row of [`USAGE_OUTPUT`].
pub type UsageRow = (i32, i64, Option<i32>, Option<i32>);

impl From<UsageRow> for Usage {
    fn from((today, this_month, daily_cap, monthly_limit): UsageRow) -> Usage {
        Usage { today: today as i64, this_month, daily_cap, monthly_limit }
    }
}

/// Takes up to `count.emails` from the team's allowance for the day of `count.now` in one go (a
/// lease that a sender hands out one email at a time): adds them, gives back at once whatever
/// went over the daily cap or the monthly limit, and answers how many were granted (0 when the
/// quota is used up). Call it in a short transaction of its own: the counter row is locked only
/// for that, and a whole lease costs one lock instead of one per email.
pub async fn lease(conn: &mut sqlx::PgConnection, count: Count) -> sqlx::Result<i32> {
    let used = add(conn, count).await?;
    let over_daily = used.daily_cap.map_or(0, |cap| used.today - cap as i64);
    let over_monthly = used.monthly_limit.map_or(0, |limit| used.this_month - limit as i64);
    let over = over_daily.max(over_monthly).clamp(0, count.emails as i64) as i32;
    if over > 0 {
        add(conn, Count { emails: -over, ..count }).await?;
    }
    Ok(count.emails - over)
}
