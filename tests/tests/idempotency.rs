//! The idempotency piece the send routes use, against a real database.

use api::idempotency::{Begin, IdempotencyKey, begin, fingerprint};
use serde_json::json;
use tests::TestApp;

fn key(raw: &str) -> IdempotencyKey {
    IdempotencyKey::parse(Some(raw)).unwrap().unwrap()
}

#[tokio::test]
async fn a_replay_within_24_hours_returns_the_original_status_and_body() {
    let app = TestApp::spawn().await;
    let print = fingerprint("POST", "/emails", b"{\"to\":\"a@b.c\"}");
    let Begin::Proceed(Some(claim)) = begin(&app.pool, app.team_id, Some(&key("k1")), &print).await.unwrap() else {
        panic!("the first use proceeds")
    };
    let mut tx = app.pool.begin().await.unwrap();
    claim.complete(&mut tx, poem::http::StatusCode::OK, &json!({ "id": "e1" })).await.unwrap();
    tx.commit().await.unwrap();

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
    let Begin::Proceed(Some(claim)) = begin(&app.pool, app.team_id, Some(&key("k")), &print).await.unwrap() else { panic!() };
    claim.release(&app.pool).await;
    assert!(matches!(begin(&app.pool, app.team_id, Some(&key("k")), &print).await.unwrap(), Begin::Proceed(Some(_))));
}

#[tokio::test]
async fn an_answer_rolled_back_with_its_transaction_is_not_replayed() {
    let app = TestApp::spawn().await;
    let print = fingerprint("POST", "/emails", b"{}");
    let Begin::Proceed(Some(claim)) = begin(&app.pool, app.team_id, Some(&key("k")), &print).await.unwrap() else { panic!() };
    let mut tx = app.pool.begin().await.unwrap();
    claim.complete(&mut tx, poem::http::StatusCode::OK, &json!({ "id": "never" })).await.unwrap();
    tx.rollback().await.unwrap();
    let error = begin(&app.pool, app.team_id, Some(&key("k")), &print).await.unwrap_err();
    assert_eq!(error.name, "concurrent_idempotent_requests", "still claimed, never answered");
}

#[tokio::test]
async fn a_key_is_fresh_again_after_24_hours_and_an_abandoned_claim_after_two_minutes() {
    let app = TestApp::spawn().await;
    let print = fingerprint("POST", "/emails", b"{}");
    let Begin::Proceed(Some(claim)) = begin(&app.pool, app.team_id, Some(&key("old")), &print).await.unwrap() else { panic!() };
    let mut tx = app.pool.begin().await.unwrap();
    claim.complete(&mut tx, poem::http::StatusCode::OK, &json!({})).await.unwrap();
    tx.commit().await.unwrap();
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
