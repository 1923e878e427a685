//! The job queue: transactional enqueue, workers, durable retries, schedules, housekeeping.

use schema::jobs::{Housekeeping, Job, enqueue};
use tests::{TestApp, eventually};

async fn statuses(app: &TestApp) -> Vec<(String, i32)> {
    sqlx::query_as("SELECT status, attempts FROM apalis.jobs WHERE job_type = $1 ORDER BY id")
        .bind(Housekeeping::QUEUE)
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

fn job() -> Housekeeping {
    Housekeeping { period: chrono::Utc::now() }
}

#[tokio::test]
async fn a_job_enqueued_in_a_transaction_that_rolls_back_never_runs() {
    let mut app = TestApp::spawn().await;
    let mut tx = app.pool.begin().await.unwrap();
    enqueue(&mut tx, &job()).await.unwrap();
    tx.rollback().await.unwrap();
    app.start_workers();
    // Give the worker several poll intervals in which it could have found a job.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert!(statuses(&app).await.is_empty());
    app.shutdown().await;
}

#[tokio::test]
async fn a_job_enqueued_in_a_committed_transaction_runs_once() {
    let mut app = TestApp::spawn().await;
    app.start_workers();
    let mut tx = app.pool.begin().await.unwrap();
    enqueue(&mut tx, &job()).await.unwrap();
    tx.commit().await.unwrap();
    let done = eventually(|| async { statuses(&app).await.into_iter().find(|(s, _)| s == "Done") }).await;
    assert_eq!(done.1, 1, "it ran exactly once");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(statuses(&app).await, vec![("Done".to_string(), 1)]);
    app.shutdown().await;
}

#[tokio::test]
async fn housekeeping_removes_logs_past_the_plan_retention_and_keeps_the_rest() {
    let mut app = TestApp::spawn().await;
    app.get("/api-keys").await;
    app.get("/api-keys").await;
    app.wait_for_rows("request_logs", 2).await;
    // One log is 31 days old; the free plan keeps 30.
    sqlx::query("UPDATE request_logs SET created_at = now() - interval '31 days' WHERE id = (SELECT id FROM request_logs ORDER BY id LIMIT 1)")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO idempotency_records (team_id, key, fingerprint, created_at) VALUES ($1, 'old', '\\x00', now() - interval '25 hours')")
        .bind(app.team_id)
        .execute(&app.pool)
        .await
        .unwrap();
    app.start_workers();
    let mut tx = app.pool.begin().await.unwrap();
    enqueue(&mut tx, &job()).await.unwrap();
    tx.commit().await.unwrap();
    eventually(|| async { statuses(&app).await.into_iter().find(|(s, _)| s == "Done") }).await;
    assert_eq!(app.count("request_logs WHERE created_at < now() - interval '30 days'").await, 0);
    assert!(app.count("request_logs").await >= 1);
    assert_eq!(app.count("idempotency_records").await, 0);
    app.shutdown().await;
}

#[tokio::test]
async fn a_failing_job_is_retried_later_not_at_once_and_its_error_is_kept() {
    let mut app = TestApp::spawn().await;
    sqlx::query("ALTER TABLE request_logs RENAME TO request_logs_away").execute(&app.pool).await.unwrap();
    app.start_workers();
    let mut tx = app.pool.begin().await.unwrap();
    enqueue(&mut tx, &job()).await.unwrap();
    tx.commit().await.unwrap();
    let (attempts, wait, error): (i32, f64, Option<String>) = eventually(|| async {
        sqlx::query_as(
            "SELECT attempts, EXTRACT(EPOCH FROM run_at - now())::float8, last_result->>'Err' FROM apalis.jobs
             WHERE status = 'Failed'",
        )
        .fetch_optional(&app.pool)
        .await
        .unwrap()
    })
    .await;
    assert_eq!(attempts, 1);
    assert!(wait > 20.0, "the retry waits for the backoff, not the next poll (waits {wait}s)");
    assert!(error.unwrap().contains("request_logs"));
    tokio::time::sleep(std::time::Duration::from_millis(2000)).await;
    assert_eq!(statuses(&app).await, vec![("Failed".to_string(), 1)], "no immediate second run");
    app.shutdown().await;
}

#[tokio::test]
async fn a_schedule_period_is_enqueued_once_however_many_workers_tick() {
    let app = TestApp::spawn().await;
    let now = chrono::Utc::now();
    let ticks = (0..4).map(|_| jobs::schedule::tick(&app.pool, now));
    for result in futures::future::join_all(ticks).await {
        result.unwrap();
    }
    jobs::schedule::tick(&app.pool, now).await.unwrap();
    // One housekeeping run and one domain sweep per period.
    assert_eq!(statuses(&app).await.len(), 1);
    assert_eq!(app.count("apalis.jobs WHERE job_type = 'domain_sweep'").await, 1);
    jobs::schedule::tick(&app.pool, now + chrono::Duration::hours(1)).await.unwrap();
    assert_eq!(statuses(&app).await.len(), 2);
    assert_eq!(app.count("apalis.jobs WHERE job_type = 'domain_sweep'").await, 2);
}

#[tokio::test]
async fn the_operator_view_counts_jobs_per_queue_and_status_and_lists_failed_ones() {
    let app = TestApp::spawn().await;
    let mut tx = app.pool.begin().await.unwrap();
    enqueue(&mut tx, &job()).await.unwrap();
    enqueue(&mut tx, &job()).await.unwrap();
    tx.commit().await.unwrap();
    sqlx::query("UPDATE apalis.jobs SET status = 'Failed', attempts = max_attempts, last_result = '{\"Err\":\"boom\"}' WHERE id = (SELECT min(id) FROM apalis.jobs)")
        .execute(&app.pool)
        .await
        .unwrap();
    let mut conn = app.pool.acquire().await.unwrap();
    let counts = schema::store::jobs::counts(&mut conn).await.unwrap();
    let pairs: Vec<(String, String, i64)> = counts.into_iter().map(|c| (c.queue, c.status, c.count)).collect();
    assert_eq!(pairs, vec![("housekeeping".into(), "Failed".into(), 1), ("housekeeping".into(), "Pending".into(), 1)]);
    let failed = schema::store::jobs::failed(&mut conn, 10).await.unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].last_error.as_deref(), Some("boom"));
}

#[tokio::test]
async fn a_job_whose_payload_no_longer_parses_fails_with_the_reason_and_the_queue_goes_on() {
    let mut app = TestApp::spawn().await;
    // A payload an older or newer Herald wrote that this one cannot read.
    let poison = enqueue(&mut *app.pool.acquire().await.unwrap(), &job()).await.unwrap();
    sqlx::query("UPDATE apalis.jobs SET job = $1, id = 'poison-job' WHERE id = $2")
        .bind(br#"{"period": "not a time"}"#.to_vec())
        .bind(poison.to_string())
        .execute(&app.pool)
        .await
        .unwrap();
    enqueue(&mut *app.pool.acquire().await.unwrap(), &job()).await.unwrap();
    app.start_workers();

    let poisoned = eventually(|| async {
        let row: (String, i32, i32, Option<String>) =
            sqlx::query_as("SELECT status, attempts, max_attempts, last_result::text FROM apalis.jobs WHERE id = 'poison-job'").fetch_one(&app.pool).await.unwrap();
        (row.1 >= row.2 || row.0 == "Killed").then_some(row)
    })
    .await;
    assert!(poisoned.3.as_deref().is_some_and(|r| r.contains("Err")), "the reason is kept: {poisoned:?}");
    let done = eventually(|| async { statuses(&app).await.into_iter().find(|(s, _)| s == "Done") }).await;
    assert_eq!(done.1, 1, "the good job after it ran once");
    let failed = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM apalis.jobs WHERE id = 'poison-job' AND status IN ('Failed', 'Killed')").fetch_one(&app.pool).await.unwrap();
    assert_eq!(failed, 1, "the poison job is among the failed ones herald jobs lists");
    app.shutdown().await;
}

/// A handler with a bug: it panics on the job of the epoch's period, every time.
async fn panics_on_the_epoch(job: Housekeeping) -> Result<(), jobs::runtime::worker::BoxDynError> {
    if job.period.timestamp() == 0 {
        panic!("a poison job");
    }
    Ok(())
}

#[tokio::test]
async fn a_job_that_panics_every_time_is_killed_with_the_panic_and_the_queue_goes_on() {
    let app = TestApp::spawn().await;
    let poison = Housekeeping { period: chrono::DateTime::UNIX_EPOCH };
    let poison = enqueue(&mut *app.pool.acquire().await.unwrap(), &poison).await.unwrap().to_string();
    enqueue(&mut *app.pool.acquire().await.unwrap(), &job()).await.unwrap();
    // The handler runs on the queue exactly as the real workers are built (tokio's default hook
    // still prints the panic; the worker catches it).
    let monitor = jobs::queue_worker!(jobs::runtime::worker::Monitor::new(), app.pool, Housekeeping, 2, panics_on_the_epoch, []);
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(monitor.run_with_signal(async move {
        let _ = stopped.wait_for(|stop| *stop).await;
        Ok(())
    }));

    let killed = eventually(|| async {
        let row: (String, i32, Option<String>) =
            sqlx::query_as("SELECT status, attempts, last_result::text FROM apalis.jobs WHERE id = $1").bind(&poison).fetch_one(&app.pool).await.unwrap();
        (row.0 == "Killed").then_some(row)
    })
    .await;
    assert_eq!(killed.1, 1, "run once, not retried: {killed:?}");
    assert!(killed.2.as_deref().is_some_and(|r| r.contains("a poison job")), "the panic is the job's error: {killed:?}");
    // The queue goes on: the job beside it and one enqueued after the panic both run.
    enqueue(&mut *app.pool.acquire().await.unwrap(), &job()).await.unwrap();
    eventually(|| async { (statuses(&app).await.into_iter().filter(|(s, _)| s == "Done").count() == 2).then_some(()) }).await;
    let failed = schema::store::jobs::failed(&mut *app.pool.acquire().await.unwrap(), 10).await.unwrap();
    assert_eq!(failed.len(), 1, "herald jobs lists the poison job: {failed:?}");
    let _ = stop.send(true);
    running.await.unwrap().unwrap();
}
