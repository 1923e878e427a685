//! Schedule ticks: every worker may try to start a period's run; only the first insert wins.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// Claims `(schedule, period)`; `true` for the one caller that should enqueue the period's job.
pub async fn claim_tick(conn: &mut PgConnection, schedule: &str, period: DateTime<Utc>) -> sqlx::Result<bool> {
    let done = sqlx::query("INSERT INTO schedule_ticks (schedule, period) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(schedule)
        .bind(period)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
