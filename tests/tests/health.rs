//! Liveness and readiness.

use tests::{Answer, TestApp};

#[tokio::test]
async fn health_answers_ok_with_version_and_env_without_a_key() {
    let app = TestApp::spawn().await;
    let answer = Answer::from(app.client.get(app.url("/health")).send().await.unwrap()).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, serde_json::json!({ "status": "ok", "version": "1.0.0", "env": "test", "request_logs_dropped": 0 }));
}

#[tokio::test]
async fn ready_is_503_degraded_naming_the_workers_when_none_run() {
    let app = TestApp::spawn().await;
    let answer = Answer::from(app.client.get(app.url("/ready")).send().await.unwrap()).await;
    assert_eq!(answer.status, 503);
    assert_eq!(answer.body["status"], "degraded");
    assert_eq!(answer.body["failed"], serde_json::json!(["workers"]));
    let checks = answer.body["checks"].as_array().unwrap();
    assert_eq!(checks[0]["name"], "database");
    assert_eq!(checks[0]["ok"], true);
    assert!(checks[0]["durationMs"].is_u64());
    assert!(checks[1]["error"].is_string());
}

#[tokio::test]
async fn ready_is_ok_once_a_worker_runs() {
    let mut app = TestApp::spawn().await;
    app.start_workers();
    let body = tests::eventually(|| async {
        let answer = Answer::from(app.client.get(app.url("/ready")).send().await.unwrap()).await;
        (answer.status == 200).then_some(answer.body)
    })
    .await;
    assert_eq!(body["status"], "ok");
    assert_eq!(body["failed"], serde_json::json!([]));
    app.shutdown().await;
}

#[tokio::test]
async fn ready_is_503_degraded_when_the_database_is_gone() {
    let app = TestApp::spawn().await;
    app.pool.close().await;
    let answer = Answer::from(app.client.get(app.url("/ready")).send().await.unwrap()).await;
    assert_eq!(answer.status, 503);
    assert!(answer.body["failed"].as_array().unwrap().contains(&serde_json::json!("database")));
}

#[tokio::test]
async fn ready_is_503_degraded_naming_a_queue_whose_due_jobs_have_no_live_worker() {
    let mut app = TestApp::spawn().await;
    app.start_workers();
    tests::eventually(|| async {
        let answer = Answer::from(app.client.get(app.url("/ready")).send().await.unwrap()).await;
        (answer.status == 200).then_some(())
    })
    .await;
    // A queue whose every worker is gone, with a job due for a minute.
    sqlx::query("INSERT INTO apalis.jobs (job, id, job_type, run_at) VALUES ('\\x00', 'stranded-1', 'stranded_queue', now() - interval '1 minute')")
        .execute(&app.pool)
        .await
        .unwrap();
    let answer = Answer::from(app.client.get(app.url("/ready")).send().await.unwrap()).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(answer.body["failed"], serde_json::json!(["queues"]));
    let queues = answer.body["checks"].as_array().unwrap().iter().find(|c| c["name"] == "queues").unwrap().clone();
    assert!(queues["error"].as_str().unwrap().contains("stranded_queue (1 due"), "{queues}");
    sqlx::query("DELETE FROM apalis.jobs WHERE id = 'stranded-1'").execute(&app.pool).await.unwrap();
    app.shutdown().await;
}

#[tokio::test]
async fn ready_is_503_degraded_naming_a_live_process_loop_that_has_not_gone_round_within_its_bound() {
    let mut app = TestApp::spawn().await;
    app.start_workers();
    // The workers' loops report themselves within a few seconds, and readiness is ok.
    let reported: Vec<String> = tests::eventually(|| async {
        let names: Vec<String> = sqlx::query_scalar("SELECT loop_name FROM loop_heartbeats ORDER BY 1").fetch_all(&app.pool).await.unwrap();
        names.contains(&"webhooks".to_string()).then_some(names)
    })
    .await;
    assert!(reported.contains(&"automations".to_string()), "{reported:?}");
    let ready = Answer::from(app.client.get(app.url("/ready")).send().await.unwrap()).await;
    assert_eq!(ready.status, 200, "{}", ready.body);

    // A dead process's stale rows say nothing; a live process's stuck loop fails readiness.
    sqlx::query(
        "INSERT INTO loop_heartbeats (process, loop_name, beat_at, bound_seconds, seen_at) VALUES
         ('gone-1', 'webhooks', now() - interval '10 minutes', 60, now() - interval '10 minutes'),
         ('live-2', 'webhooks', now() - interval '5 minutes', 60, now())",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let answer = Answer::from(app.client.get(app.url("/ready")).send().await.unwrap()).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(answer.body["failed"], serde_json::json!(["loops"]));
    let loops = answer.body["checks"].as_array().unwrap().iter().find(|c| c["name"] == "loops").unwrap().clone();
    let error = loops["error"].as_str().unwrap();
    assert!(error.contains("webhooks in live-2 (no round for 300 s") && !error.contains("gone-1"), "{loops}");
    app.shutdown().await;
}
