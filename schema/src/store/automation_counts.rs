//! How far an automation's runs got: per step, the latest runs that reached it, by where the
//! step stands for each of them.

use sqlx::PgConnection;
use uuid::Uuid;

/// The runs a count looks at, newest first (the page that shows it stays fast at any volume).
pub const LATEST_RUNS: i64 = 10_000;

/// One step's counts.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StepCount {
    pub key: String,
    /// Runs that reached the step.
    pub entered: i64,
    pub completed: i64,
    pub waiting: i64,
    pub failed: i64,
}

/// Per step key, the counts over the automation's latest [`LATEST_RUNS`] runs (read by
/// `automation_runs (automation_id, id)` and the steps' primary key).
pub async fn latest(conn: &mut PgConnection, team_id: Uuid, automation_id: Uuid) -> sqlx::Result<Vec<StepCount>> {
    sqlx::query_as(
        "SELECT s.key, count(*) AS entered, count(*) FILTER (WHERE s.status = 'completed') AS completed,
                count(*) FILTER (WHERE s.status = 'waiting') AS waiting, count(*) FILTER (WHERE s.status = 'failed') AS failed
         FROM (SELECT id FROM automation_runs WHERE automation_id = $2 AND team_id = $1 ORDER BY id DESC LIMIT $3) r
         JOIN automation_run_steps s ON s.run_id = r.id
         GROUP BY s.key ORDER BY s.key",
    )
    .bind(team_id)
    .bind(automation_id)
    .bind(LATEST_RUNS)
    .fetch_all(conn)
    .await
}
