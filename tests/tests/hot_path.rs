//! The authenticated hot path: keys served from each process's memory, revocations that hold on
//! the very next request in every process, and one team bucket across processes without a
//! PostgreSQL write per request.

use reqwest::Method;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tests::{Answer, TestApp};

async fn status(app: &TestApp, key: &str) -> Answer {
    Answer::from(app.request_as(key, Method::GET, "/api-keys").send().await.unwrap()).await
}

#[tokio::test]
async fn a_key_is_read_from_postgresql_once_then_served_from_memory() {
    let app = TestApp::spawn_unthrottled().await;
    let (_, key) = app.create_key(json!({ "name": "hot" })).await;
    // The first use records `last_used_at`, which drops the key everywhere once.
    let before = app.state.keys.misses();
    assert_eq!(status(&app, &key).await.status, 200);
    api::http::key_cache::settle(&app.pool).await.unwrap();
    for _ in 0..20 {
        assert_eq!(status(&app, &key).await.status, 200);
    }
    assert_eq!(app.state.keys.misses() - before, 2, "twenty-one requests, two lookups");
}

#[tokio::test]
async fn a_revoked_key_is_refused_by_another_process_on_the_request_right_after_the_revoke() {
    let app = TestApp::spawn_unthrottled().await;
    let other = TestApp::start(&app.database_url, app.pool.clone(), |config| {
        config.rate_limit_capacity = 1000;
        config.rate_limit_refill = 1000.0;
    })
    .await;
    for round in 0..5 {
        let (id, key) = app.create_key(json!({ "name": format!("doomed {round}") })).await;
        // Both processes have the key in memory.
        assert_eq!(status(&app, &key).await.status, 200);
        assert_eq!(status(&other, &key).await.status, 200);
        // The first use's `last_used_at` drops the key everywhere once: wait for that, then read
        // it into the other process again.
        api::http::key_cache::settle(&app.pool).await.unwrap();
        assert_eq!(status(&other, &key).await.status, 200);
        let cached = other.state.keys.misses();
        assert_eq!(status(&other, &key).await.status, 200);
        assert_eq!(other.state.keys.misses(), cached, "the other process serves the key from memory");

        assert_eq!(app.delete(&format!("/api-keys/{id}")).await.status, 200);
        status(&other, &key).await.assert_error(403, "restricted_api_key");
        status(&app, &key).await.assert_error(403, "restricted_api_key");
    }
}

#[tokio::test]
async fn a_suspended_team_is_refused_by_every_process_once_the_change_settles() {
    let app = TestApp::spawn_unthrottled().await;
    let other = TestApp::start(&app.database_url, app.pool.clone(), |_| {}).await;
    assert_eq!(status(&other, &app.key).await.status, 200);
    let mut conn = app.pool.acquire().await.unwrap();
    schema::store::teams::set_risk_state(&mut conn, app.team_id, schema::model::RiskState::Suspended).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();
    status(&other, &app.key).await.assert_error(403, "suspended_api_key");
    schema::store::teams::set_risk_state(&mut conn, app.team_id, schema::model::RiskState::Normal).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();
    assert_eq!(status(&other, &app.key).await.status, 200);
}

#[tokio::test]
async fn a_key_update_has_dropped_the_key_in_every_process_when_it_answers() {
    let app = TestApp::spawn_unthrottled().await;
    let other = TestApp::start(&app.database_url, app.pool.clone(), |_| {}).await;
    let (id, key) = app.create_key(json!({ "name": "reader", "inbox_access": "none" })).await;
    assert_eq!(status(&other, &key).await.status, 200);
    let renamed = app.patch(&format!("/api-keys/{id}"), json!({ "name": "renamed" })).await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    // The rename dropped the key everywhere: the other process reads it again.
    let misses = other.state.keys.misses();
    assert_eq!(status(&other, &key).await.status, 200);
    assert_eq!(other.state.keys.misses(), misses + 1);
}

#[tokio::test]
async fn ten_seconds_of_unthrottled_requests_over_two_processes_get_at_most_111_through() {
    // The defaults: 10 tokens, 10 a second.
    let app = TestApp::spawn().await;
    let other = TestApp::start(&app.database_url, app.pool.clone(), |_| {}).await;
    let accepted = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut loops = Vec::new();
    for worker in 0..8 {
        let (base, client, key) = {
            let server = if worker % 2 == 0 { &app } else { &other };
            (server.base.clone(), server.client.clone(), app.key.clone())
        };
        let (accepted, refused) = (accepted.clone(), refused.clone());
        loops.push(tokio::spawn(async move {
            while started.elapsed() < Duration::from_secs(10) {
                let answer = client.get(format!("{base}/api-keys")).bearer_auth(&key).send().await.unwrap();
                match answer.status().as_u16() {
                    200 => accepted.fetch_add(1, Ordering::SeqCst),
                    429 => refused.fetch_add(1, Ordering::SeqCst),
                    other => panic!("unexpected status {other}"),
                };
            }
        }));
    }
    for task in loops {
        task.await.unwrap();
    }
    let (accepted, refused) = (accepted.load(Ordering::SeqCst), refused.load(Ordering::SeqCst));
    assert!(accepted <= 111, "a full bucket of 10, 10 a second, one token of slack: {accepted} accepted");
    assert!(accepted >= 95, "the limit is not starved by leases that lapse: {accepted} accepted");
    let takes = app.state.buckets.takes() + other.state.buckets.takes();
    assert!(
        takes * 5 < accepted + refused,
        "{takes} takes from PostgreSQL for {} requests: refusals are answered from memory",
        accepted + refused
    );
}

#[tokio::test]
async fn a_process_whose_listener_connection_is_cut_still_refuses_a_key_revoked_meanwhile() {
    let app = TestApp::spawn_unthrottled().await;
    let (id, key) = app.create_key(json!({ "name": "cut" })).await;
    assert_eq!(status(&app, &key).await.status, 200);
    assert_eq!(status(&app, &key).await.status, 200);
    // Cut the listener's connection (the only one that runs LISTEN and records heartbeats).
    let cut: Vec<i32> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid)::int FROM pg_stat_activity
         WHERE datname = current_database() AND (query LIKE 'LISTEN%' OR query LIKE 'UPDATE auth_listeners%' OR query LIKE 'WITH gone AS%')",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(cut, vec![1], "one listener connection");
    sqlx::query("UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE id = $1::uuid").bind(&id).execute(&app.pool).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();
    status(&app, &key).await.assert_error(403, "restricted_api_key");
}
