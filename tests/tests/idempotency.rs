//! The idempotency piece the send routes use, against a real database.

use api::http::idempotency::{Begin, Claimed, IdempotencyKey, begin, fingerprint};
use serde_json::json;
use tests::TestApp;

fn key(raw: &str) -> IdempotencyKey {
    IdempotencyKey::parse(Some(raw)).unwrap().unwrap()
}

/// Claims a key that must be fresh.
async fn claim(app: &TestApp, raw: &str, print: &[u8]) -> Claimed {
    match begin(&app.pool, app.team_id, Some(&key(raw)), print).await.unwrap() {
        Begin::Proceed(Some(claimed)) => claimed,
        other => panic!("expected a fresh claim of {raw}, got {other:?}"),
    }
}

/// Stores `body` as the answer in a transaction that commits (`true`) or rolls back.
async fn answer(app: &TestApp, claimed: Claimed, body: serde_json::Value, commit: bool) {
    let mut tx = app.pool.begin().await.unwrap();
    claimed.complete(&mut tx, poem::http::StatusCode::OK, &body).await.unwrap();
    if commit { tx.commit().await.unwrap() } else { tx.rollback().await.unwrap() }
}

#[tokio::test]
async fn a_replay_within_24_hours_returns_the_original_status_and_body() {
    let app = TestApp::spawn().await;
    let print = fingerprint("POST", "/emails", b"{\"to\":\"a@b.c\"}");
    let claimed = claim(&app, "k1", &print).await;
    answer(&app, claimed, json!({ "id": "e1" }), true).await;

    match begin(&app.pool, app.team_id, Some(&key("k1")), &print).await.unwrap() {
        Begin::Replay { status, body } => {
            assert_eq!(status, 200);
            assert_eq!(body, json!({ "id": "e1" }));
        }
        other => panic!("expected a replay, got {other:?}"),
    }
}

#[tokio::test]
async fn the_same_key_in_flight_is_409_concurrent_idempotent_requests() {
    let app = TestApp::spawn().await;
    let print = fingerprint("POST", "/emails", b"{}");
    let _held = begin(&app.pool, app.team_id, Some(&key("k")), &print).await.unwrap();
    let error = begin(&app.pool, app.team_id, Some(&key("k")), &print).await.unwrap_err();
    assert_eq!((error.status.as_u16(), error.name), (409, "concurrent_idempotent_requests"));
}

#[tokio::test]
async fn the_same_key_with_a_different_request_is_409_invalid_idempotent_request() {
    let app = TestApp::spawn().await;
    begin(&app.pool, app.team_id, Some(&key("k")), &fingerprint("POST", "/emails", b"{\"a\":1}")).await.unwrap();
    let error = begin(&app.pool, app.team_id, Some(&key("k")), &fingerprint("POST", "/emails", b"{\"a\":2}")).await.unwrap_err();
    assert_eq!((error.status.as_u16(), error.name), (409, "invalid_idempotent_request"));
}

#[tokio::test]
async fn a_released_claim_lets_the_retry_run() {
    let app = TestApp::spawn().await;
    let print = fingerprint("POST", "/emails", b"{}");
    claim(&app, "k", &print).await.release(&app.pool).await;
    assert!(matches!(begin(&app.pool, app.team_id, Some(&key("k")), &print).await.unwrap(), Begin::Proceed(Some(_))));
}

#[tokio::test]
async fn an_answer_rolled_back_with_its_transaction_is_not_replayed() {
    let app = TestApp::spawn().await;
    let print = fingerprint("POST", "/emails", b"{}");
    let claimed = claim(&app, "k", &print).await;
    answer(&app, claimed, json!({ "id": "never" }), false).await;
    let error = begin(&app.pool, app.team_id, Some(&key("k")), &print).await.unwrap_err();
    assert_eq!(error.name, "concurrent_idempotent_requests", "still claimed, never answered");
}

#[tokio::test]
async fn a_key_is_fresh_again_after_24_hours_and_an_abandoned_claim_after_two_minutes() {
    let app = TestApp::spawn().await;
    let print = fingerprint("POST", "/emails", b"{}");
    let claimed = claim(&app, "old", &print).await;
    answer(&app, claimed, json!({}), true).await;
    begin(&app.pool, app.team_id, Some(&key("dead")), &print).await.unwrap();
    sqlx::query("UPDATE idempotency_records SET created_at = now() - interval '25 hours' WHERE key = 'old'").execute(&app.pool).await.unwrap();
    sqlx::query("UPDATE idempotency_records SET created_at = now() - interval '3 minutes' WHERE key = 'dead'").execute(&app.pool).await.unwrap();
    assert!(matches!(begin(&app.pool, app.team_id, Some(&key("old")), &print).await.unwrap(), Begin::Proceed(Some(_))));
    assert!(matches!(begin(&app.pool, app.team_id, Some(&key("dead")), &print).await.unwrap(), Begin::Proceed(Some(_))));
}

#[tokio::test]
async fn keys_are_per_team() {
    let app = TestApp::spawn().await;
    let (other_team, _) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let print = fingerprint("POST", "/emails", b"{}");
    begin(&app.pool, app.team_id, Some(&key("shared")), &print).await.unwrap();
    assert!(matches!(begin(&app.pool, other_team, Some(&key("shared")), &print).await.unwrap(), Begin::Proceed(Some(_))));
}

#[tokio::test]
async fn concurrent_first_uses_of_one_key_let_exactly_one_proceed() {
    let app = TestApp::spawn().await;
    let print = fingerprint("POST", "/emails", b"{}");
    let k = key("race");
    let attempts = (0..8).map(|_| begin(&app.pool, app.team_id, Some(&k), &print));
    let results = futures::future::join_all(attempts).await;
    let proceeded = results.iter().filter(|r| matches!(r, Ok(Begin::Proceed(Some(_))))).count();
    let refused = results.iter().filter(|r| matches!(r, Err(e) if e.name == "concurrent_idempotent_requests")).count();
    assert_eq!((proceeded, refused), (1, 7));
}
