//! Operator views of the job queue (apalis-postgres keeps jobs in `apalis.jobs` and live workers
//! in `apalis.workers`), and the durable backoff of a failing job.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// How many jobs of a queue are in one status.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct QueueCount {
    pub queue: String,
    pub status: String,
    pub count: i64,
}

/// A job that will not run again: attempts spent, or aborted.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct FailedJob {
    pub id: String,
    pub queue: String,
    pub attempts: i32,
    pub max_attempts: i32,
    pub last_error: Option<String>,
    pub done_at: Option<DateTime<Utc>>,
}

pub async fn counts(conn: &mut PgConnection) -> sqlx::Result<Vec<QueueCount>> {
    sqlx::query_as(
        "SELECT job_type AS queue, status, count(*) AS count FROM apalis.jobs GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .fetch_all(conn)
    .await
}

pub async fn failed(conn: &mut PgConnection, limit: i64) -> sqlx::Result<Vec<FailedJob>> {
    sqlx::query_as(
        "SELECT id, job_type AS queue, attempts, max_attempts, last_result->>'Err' AS last_error, done_at
         FROM apalis.jobs
         WHERE status = 'Killed' OR (status = 'Failed' AND attempts >= max_attempts)
         ORDER BY done_at DESC NULLS LAST LIMIT $1",
    )
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Two corrections to what apalis writes, as triggers (idempotent; processes starting at once
/// take turns):
///
/// - A newly registered worker's `last_seen` is PostgreSQL's `now()`, not the worker's own
///   clock: a process whose clock runs an hour behind would otherwise look dead to the others
///   until its first heartbeat, and its jobs be taken from it mid-run.
/// - A job acknowledged as still `Running` is `Killed`: that is how apalis reports a job whose
///   handler panicked (the panic unwinds past the code that sets the final state, the worker
///   catches it and acknowledges the job with the panic as its error). Left `Running`, the job
///   would stay claimed by a live worker for good, and never show among the failed ones.
pub async fn guard_queue_tables(pool: &sqlx::PgPool) -> sqlx::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('herald_guard_queue_tables'))").execute(&mut *tx).await?;
    for statement in QUEUE_GUARDS {
        sqlx::query(statement).execute(&mut *tx).await?;
    }
    tx.commit().await
}

/// The statements of [`guard_queue_tables`] (a database built before they changed needs them
/// again: the tests' template database is named after them too).
pub const QUEUE_GUARDS: [&str; 4] = [
    "CREATE OR REPLACE FUNCTION apalis.herald_worker_seen_now() RETURNS trigger LANGUAGE plpgsql AS
     $$ BEGIN NEW.last_seen := now(); RETURN NEW; END $$",
    "CREATE OR REPLACE TRIGGER herald_worker_seen_now BEFORE INSERT ON apalis.workers
     FOR EACH ROW EXECUTE FUNCTION apalis.herald_worker_seen_now()",
    "CREATE OR REPLACE FUNCTION apalis.herald_job_panicked() RETURNS trigger LANGUAGE plpgsql AS
     $$ BEGIN NEW.status := 'Killed'; RETURN NEW; END $$",
    // Only an acknowledgement sets `done_at`; a claim (status `Running`) leaves it alone.
    "CREATE OR REPLACE TRIGGER herald_job_panicked BEFORE UPDATE ON apalis.jobs
     FOR EACH ROW WHEN (NEW.status = 'Running' AND NEW.done_at IS DISTINCT FROM OLD.done_at AND NEW.done_at IS NOT NULL)
     EXECUTE FUNCTION apalis.herald_job_panicked()",
];

/// Moves a job's next run to `wait` from now on PostgreSQL's clock; the worker then reports
/// the failure, and the queue picks the job up again no earlier than that.
pub async fn postpone(conn: &mut PgConnection, job_id: &str, wait: std::time::Duration) -> sqlx::Result<()> {
    sqlx::query("UPDATE apalis.jobs SET run_at = now() + make_interval(secs => $2) WHERE id = $1")
        .bind(job_id)
        .bind(wait.as_secs_f64())
        .execute(conn)
        .await?;
    Ok(())
}

/// How many worker processes reported within `seconds`.
pub async fn live_workers(conn: &mut PgConnection, seconds: f64) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM apalis.workers WHERE last_seen > now() - make_interval(secs => $1)")
        .bind(seconds)
        .fetch_one(conn)
        .await
}

/// One queue's backlog beside the workers serving it.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct QueueHealth {
    pub queue: String,
    /// Jobs whose time has come and that no worker holds.
    pub due: i64,
    /// Jobs a worker holds now.
    pub running: i64,
    /// Seconds since the oldest due job's time came.
    pub oldest_due_seconds: Option<f64>,
    /// Workers of the queue (in any process) that reported within the window.
    pub live_workers: i64,
}

/// Every queue with unfinished jobs or live workers: due and running jobs, the oldest due
/// job's age, and the workers that reported within `seconds`.
pub async fn queue_health(conn: &mut PgConnection, seconds: f64) -> sqlx::Result<Vec<QueueHealth>> {
    sqlx::query_as(
        "WITH jobs AS (
             SELECT job_type AS queue,
                    count(*) FILTER (WHERE due) AS due,
                    count(*) FILTER (WHERE status = 'Running') AS running,
                    extract(epoch FROM now() - min(run_at) FILTER (WHERE due))::float8 AS oldest_due_seconds
             FROM (SELECT job_type, status, run_at,
                          (status = 'Pending' OR (status = 'Failed' AND attempts < max_attempts)) AND run_at <= now() AS due
                   FROM apalis.jobs WHERE status <> 'Done') unfinished
             GROUP BY job_type
         ), live AS (
             SELECT worker_type AS queue, count(*) AS live_workers
             FROM apalis.workers WHERE last_seen > now() - make_interval(secs => $1)
             GROUP BY worker_type
         )
         SELECT coalesce(j.queue, l.queue) AS queue, coalesce(j.due, 0) AS due, coalesce(j.running, 0) AS running,
                j.oldest_due_seconds, coalesce(l.live_workers, 0) AS live_workers
         FROM jobs j FULL JOIN live l ON l.queue = j.queue
         ORDER BY 1",
    )
    .bind(seconds)
    .fetch_all(conn)
    .await
}

/// One loop's last round, as its process reports it.
#[derive(Debug, Clone)]
pub struct LoopBeat {
    pub loop_name: String,
    /// Seconds since the loop last went round.
    pub since_seconds: f64,
    pub bound_seconds: f64,
}

/// Records this process's loops (every row in one statement), and forgets processes not seen
/// for an hour.
pub async fn report_loops(conn: &mut PgConnection, process: &str, beats: &[LoopBeat]) -> sqlx::Result<()> {
    let names: Vec<&str> = beats.iter().map(|b| b.loop_name.as_str()).collect();
    let since: Vec<f64> = beats.iter().map(|b| b.since_seconds).collect();
    let bounds: Vec<f64> = beats.iter().map(|b| b.bound_seconds).collect();
    sqlx::query(
        "INSERT INTO loop_heartbeats (process, loop_name, beat_at, bound_seconds, seen_at)
         SELECT $1, name, now() - make_interval(secs => since), bound, now()
         FROM unnest($2::text[], $3::float8[], $4::float8[]) AS b(name, since, bound)
         ON CONFLICT (process, loop_name) DO UPDATE
         SET beat_at = excluded.beat_at, bound_seconds = excluded.bound_seconds, seen_at = excluded.seen_at",
    )
    .bind(process)
    .bind(&names)
    .bind(&since)
    .bind(&bounds)
    .execute(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM loop_heartbeats WHERE seen_at < now() - interval '1 hour'").execute(conn).await?;
    Ok(())
}

/// Forgets a process's loops (it is shutting down).
pub async fn forget_loops(conn: &mut PgConnection, process: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM loop_heartbeats WHERE process = $1").bind(process).execute(conn).await?;
    Ok(())
}

/// A loop of a live process that has not gone round within its bound.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct StuckLoop {
    pub process: String,
    pub loop_name: String,
    /// Seconds since it last went round.
    pub since_seconds: f64,
    pub bound_seconds: f64,
}

/// Loops of processes that reported within `seconds` whose last round is older than their bound.
pub async fn stuck_loops(conn: &mut PgConnection, seconds: f64) -> sqlx::Result<Vec<StuckLoop>> {
    sqlx::query_as(
        "SELECT process, loop_name, extract(epoch FROM now() - beat_at)::float8 AS since_seconds, bound_seconds
         FROM loop_heartbeats
         WHERE seen_at > now() - make_interval(secs => $1) AND beat_at < now() - make_interval(secs => bound_seconds)
         ORDER BY process, loop_name",
    )
    .bind(seconds)
    .fetch_all(conn)
    .await
}

/// Puts an ended job worker's jobs back in its queue at once: those it had fetched as they were,
/// those it was running (they ended with it) with the attempt counted, as apalis's own orphan
/// sweep does after a silent worker's 30 s. A job of the queue whose payload does not parse
/// (apalis ends a worker whose fetch meets one) is killed with the reason instead, so that it
/// cannot end the next one. Its last report is dated far back so that the sweep
/// would take anything left. Answers how many jobs came back and how many were killed.
pub async fn retire_worker(conn: &mut PgConnection, queue: &str, worker: &str) -> sqlx::Result<(u64, u64)> {
    let mut tx = sqlx::Connection::begin(conn).await?;
    sqlx::query("UPDATE apalis.workers SET last_seen = 'epoch' WHERE id = $1").bind(worker).execute(&mut *tx).await?;
    // Its jobs, and the next due ones of its queue in the order a fetch takes them: a payload
    // that does not parse fails the whole fetch, which rolls back, so the job that ended the
    // worker is usually still waiting there.
    let held: Vec<(String, String, Vec<u8>)> = sqlx::query_as(
        "(SELECT id, job_type, job FROM apalis.jobs WHERE lock_by = $1 AND status IN ('Queued', 'Running'))
         UNION
         (SELECT id, job_type, job FROM apalis.jobs
          WHERE job_type = $2 AND (status = 'Pending' OR (status = 'Failed' AND attempts < max_attempts)) AND run_at < now()
          ORDER BY priority DESC, run_at ASC LIMIT 100)",
    )
    .bind(worker)
    .bind(queue)
    .fetch_all(&mut *tx)
    .await?;
    let (mut killed, mut reasons) = (Vec::new(), Vec::new());
    for (id, queue, payload) in &held {
        if let Some(reason) = crate::jobs::payload_error(queue, payload) {
            killed.push(id.clone());
            reasons.push(serde_json::json!({ "Err": format!("The payload does not parse: {reason}") }));
        }
    }
    sqlx::query(
        "UPDATE apalis.jobs j SET status = 'Killed', lock_by = NULL, done_at = now(), attempts = j.max_attempts, last_result = k.reason
         FROM unnest($1::text[], $2::jsonb[]) AS k(id, reason) WHERE j.id = k.id",
    )
    .bind(&killed)
    .bind(&reasons)
    .execute(&mut *tx)
    .await?;
    let back = sqlx::query(
        "UPDATE apalis.jobs
         SET status = 'Pending', lock_by = NULL, lock_at = NULL, done_at = NULL,
             attempts = attempts + CASE WHEN status = 'Running' THEN 1 ELSE 0 END,
             last_result = '{\"Err\": \"Re-enqueued: its worker ended on a storage error.\"}'::jsonb
         WHERE lock_by = $1 AND status IN ('Queued', 'Running')",
    )
    .bind(worker)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok((back, killed.len() as u64))
}
