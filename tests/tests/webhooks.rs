//! Webhook endpoints and deliveries against a real HTTP receiver: signed envelopes verified
//! from the raw bytes, retries on the schedule with every attempt recorded, one endpoint never
//! holding up another, and every refusal writing nothing.

use serde_json::{Value, json};
use std::time::Duration;
use tests::mail::{self, Mail};
use tests::receiver::{Answer, Receiver, verified_signatures};
use tests::smtp::SmtpSink;

const WAIT: Duration = Duration::from_secs(15);

/// A sending team whose webhooks may reach the local receiver, retrying after 1 s twice.
async fn setup() -> Mail {
    mail::setup_with(SmtpSink::start().await, |config| {
        config.webhook_allow_private = true;
        config.webhook_retry_schedule = vec![Duration::from_secs(1), Duration::from_secs(1)];
        config.webhook_timeout_seconds = 2;
    })
    .await
}

async fn create(mail: &Mail, endpoint: &str, events: &[&str]) -> Value {
    let created = mail.app.post("/webhooks", json!({ "endpoint": endpoint, "events": events })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body
}

#[tokio::test]
async fn an_endpoint_receives_signed_envelopes_of_the_events_it_subscribed_to() {
    let mail = setup().await;
    let receiver = Receiver::start().await;
    let created = create(&mail, &receiver.url("/hook"), &["email.sent", "email.delivered"]).await;
    assert_eq!(created["object"], "webhook");
    let secret = created["signing_secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"));

    let id = mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let deliveries = receiver.wait_for("/hook", 2, WAIT).await;
    let mut types: Vec<String> = deliveries.iter().map(|d| d.json()["type"].as_str().unwrap().to_string()).collect();
    types.sort();
    assert_eq!(types, ["email.delivered", "email.sent"], "only subscribed types arrive");
    for delivery in &deliveries {
        assert_eq!(verified_signatures(&secret, delivery), 1, "the signature verifies over the raw body");
        assert_eq!(delivery.header("user-agent"), "Service-Webhooks/1.0");
        assert_eq!(delivery.header("content-type"), "application/json");
        let envelope = delivery.json();
        assert_eq!(envelope["data"]["email_id"], id.as_str());
        assert_eq!(envelope["data"]["to"], json!(["delivered@simulator.herald.test"]));
        let event_id: uuid::Uuid = delivery.header("hook-id").parse().unwrap();
        let (event_type, created_at): (String, chrono::DateTime<chrono::Utc>) =
            sqlx::query_as("SELECT type, created_at FROM events WHERE id = $1").bind(event_id).fetch_one(&mail.app.pool).await.unwrap();
        assert_eq!(envelope["type"], event_type.as_str(), "hook-id is the event's id");
        let sent_at: chrono::DateTime<chrono::Utc> = envelope["created_at"].as_str().unwrap().parse().unwrap();
        assert_eq!(sent_at, created_at, "created_at is the event's own time");
    }
    let mut tampered = deliveries[0].clone();
    tampered.body.push(b' ');
    assert_eq!(verified_signatures(&secret, &tampered), 0, "a changed body does not verify");
}

#[tokio::test]
async fn a_failing_endpoint_is_retried_on_the_schedule_and_every_attempt_is_recorded() {
    let mail = setup().await;
    let receiver = Receiver::start().await;
    receiver.answer("/hook", Answer::Status(500));
    let webhook = create(&mail, &receiver.url("/hook"), &["email.sent"]).await["id"].as_str().unwrap().to_string();
    mail.send(Mail::message("delivered@simulator.herald.test")).await;

    let failed = receiver.wait_for("/hook", 2, WAIT).await;
    assert!(failed[1].at - failed[0].at >= Duration::from_millis(900), "the retry waits for the schedule");
    assert_eq!(failed[0].header("hook-id"), failed[1].header("hook-id"), "a retry keeps its hook-id");
    let event = mail.app.get(&format!("/webhooks/{webhook}/events/{}", failed[0].header("hook-id"))).await.body;
    assert_eq!(event["status"], "attempting", "tried, to be tried again: {event}");
    receiver.answer("/hook", Answer::Status(204));
    receiver.wait_for("/hook", 3, WAIT).await;

    let delivery_id: uuid::Uuid = tests::eventually(|| async {
        sqlx::query_scalar("SELECT id FROM webhook_deliveries WHERE status = 'succeeded'").fetch_optional(&mail.app.pool).await.unwrap()
    })
    .await;
    let attempts: Vec<(Option<i32>, Option<String>)> =
        sqlx::query_as("SELECT status_code, response_body FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id")
            .bind(delivery_id)
            .fetch_all(&mail.app.pool)
            .await
            .unwrap();
    let codes: Vec<Option<i32>> = attempts.iter().map(|(code, _)| *code).collect();
    assert_eq!(codes, [Some(500), Some(500), Some(204)]);
    assert_eq!(attempts[0].1.as_deref(), Some("answered 500"), "the response is kept");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.deliveries("/hook").len(), 3, "a succeeded delivery is not sent again");
}

#[tokio::test]
async fn a_delivery_fails_once_the_schedule_is_spent_and_a_refused_connection_counts_as_an_attempt() {
    let mail = setup().await;
    // A port nothing listens on: the connection is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let webhook = create(&mail, &format!("http://{closed}/gone"), &["email.sent"]).await["id"].as_str().unwrap().to_string();
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let status: String = tests::eventually(|| async {
        sqlx::query_scalar("SELECT status FROM webhook_deliveries WHERE status = 'failed'").fetch_optional(&mail.app.pool).await.unwrap()
    })
    .await;
    assert_eq!(status, "failed");
    let errors: Vec<Option<String>> =
        sqlx::query_scalar("SELECT error FROM webhook_attempts ORDER BY id").fetch_all(&mail.app.pool).await.unwrap();
    assert_eq!(errors.len(), 3, "the first attempt and two retries");
    assert!(errors.iter().all(|e| e.is_some()), "{errors:?}");

    let event = mail.app.get(&format!("/webhooks/{webhook}/events")).await.body["data"][0].clone();
    assert_eq!(event["status"], "failed");
    let attempts = mail.app.get(&format!("/webhooks/{webhook}/events/{}/attempts", event["id"].as_str().unwrap())).await.body;
    let first = &attempts["data"][0];
    assert_eq!((&first["status_code"], &first["http_status_code"]), (&json!(null), &json!(0)), "no answer reads as 0 where the Resend SDKs want a number");
    assert_eq!(first["response"], first["error"], "the response is why there was none");
}

#[tokio::test]
async fn a_hanging_endpoint_does_not_hold_up_another() {
    let mail = setup().await;
    let receiver = Receiver::start().await;
    receiver.answer("/slow", Answer::Hang);
    create(&mail, &receiver.url("/slow"), &["email.sent"]).await;
    create(&mail, &receiver.url("/fast"), &["email.sent"]).await;
    for _ in 0..5 {
        mail.send(Mail::message("delivered@simulator.herald.test")).await;
    }
    let started = std::time::Instant::now();
    receiver.wait_for("/fast", 5, WAIT).await;
    assert!(started.elapsed() < Duration::from_secs(2), "the fast endpoint waited {:?}", started.elapsed());
}

#[tokio::test]
async fn endpoints_can_be_listed_read_updated_and_deleted() {
    let mail = setup().await;
    let receiver = Receiver::start().await;
    let created = create(&mail, &receiver.url("/a"), &["email.sent", "email.sent", "domain.updated"]).await;
    let id = created["id"].as_str().unwrap();
    let read = mail.app.get(&format!("/webhooks/{id}")).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["events"], json!(["email.sent", "domain.updated"]), "duplicates are dropped");
    assert_eq!(read.body["status"], "enabled");
    assert!(read.body.get("signing_secret").is_none(), "the secret is shown only once");
    let listed = mail.app.get("/webhooks").await;
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 1);

    let updated = mail.app.patch(&format!("/webhooks/{id}"), json!({ "status": "disabled", "events": ["email.bounced"] })).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    let read = mail.app.get(&format!("/webhooks/{id}")).await.body;
    assert_eq!((&read["status"], &read["disabled_reason"], &read["events"]), (&json!("disabled"), &json!("manual"), &json!(["email.bounced"])));
    mail.send(Mail::message("bounced@simulator.herald.test")).await;
    mail.app.wait_for_rows("events WHERE type = 'email.bounced'", 1).await;
    assert_eq!(mail.app.count("webhook_deliveries").await, 0, "a disabled endpoint gets no deliveries");

    let deleted = mail.app.delete(&format!("/webhooks/{id}")).await;
    assert_eq!((deleted.status, &deleted.body["deleted"]), (200, &json!(true)));
    mail.app.get(&format!("/webhooks/{id}")).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn bad_endpoints_are_refused_and_write_nothing() {
    // The default configuration: private targets are refused.
    let app = tests::TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({ "endpoint": "https://hooks.example.com/x", "events": ["email.sent", "email.exploded"] }), "events[1]"),
        (json!({ "endpoint": "https://hooks.example.com/x", "events": [] }), "events"),
        (json!({ "endpoint": "ftp://hooks.example.com/x", "events": ["email.sent"] }), "endpoint"),
        (json!({ "endpoint": "not a url", "events": ["email.sent"] }), "endpoint"),
        (json!({ "endpoint": receiver.url("/hook"), "events": ["email.sent"] }), "endpoint"),
        (json!({ "endpoint": "http://10.1.2.3/hook", "events": ["email.sent"] }), "endpoint"),
        (json!({ "endpoint": "http://[::1]:8080/hook", "events": ["email.sent"] }), "endpoint"),
    ];
    for (body, path) in cases {
        let answer = app.post("/webhooks", body.clone()).await;
        answer.assert_error(422, "validation_error");
        assert_eq!(answer.body["errors"][0]["path"], path, "{body}: {}", answer.body);
    }
    app.post("/webhooks", json!({ "endpoint": "https://hooks.example.com/x" })).await.assert_error(422, "missing_required_field");
    assert_eq!(app.count("webhook_endpoints").await, 0);
}

#[tokio::test]
async fn the_plan_limits_endpoints_and_another_teams_endpoint_is_not_found() {
    let app = tests::TestApp::spawn_with(|config| config.webhook_allow_private = true).await;
    let receiver = Receiver::start().await;
    // The free plan allows one endpoint.
    let first = app.post("/webhooks", json!({ "endpoint": receiver.url("/1"), "events": ["email.sent"] })).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let second = app.post("/webhooks", json!({ "endpoint": receiver.url("/2"), "events": ["email.sent"] })).await;
    second.assert_error(422, "validation_error");
    assert_eq!(app.count("webhook_endpoints").await, 1);

    let id = first.body["id"].as_str().unwrap();
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    for (method, path) in [
        (reqwest::Method::GET, format!("/webhooks/{id}")),
        (reqwest::Method::PATCH, format!("/webhooks/{id}")),
        (reqwest::Method::DELETE, format!("/webhooks/{id}")),
        (reqwest::Method::GET, "/webhooks/not-an-id".to_string()),
    ] {
        let request = app.request_as(&other, method, &path).json(&json!({ "status": "disabled" }));
        tests::Answer::from(request.send().await.unwrap()).await.assert_error(404, "not_found");
    }
    let status: String = sqlx::query_scalar("SELECT status FROM webhook_endpoints").fetch_one(&app.pool).await.unwrap();
    assert_eq!(status, "enabled", "another team's PATCH changed nothing");
}

#[tokio::test]
async fn delivered_events_and_their_attempts_can_be_read_and_replayed_with_the_same_hook_id() {
    let mail = setup().await;
    let receiver = Receiver::start().await;
    let created = create(&mail, &receiver.url("/hook"), &["email.sent"]).await;
    let webhook = created["id"].as_str().unwrap().to_string();
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let first = receiver.wait_for("/hook", 1, WAIT).await.remove(0);
    let event_id = first.header("hook-id").to_string();

    let listed = tests::eventually(|| async {
        let listed = mail.app.get(&format!("/webhooks/{webhook}/events")).await;
        (listed.body["data"][0]["status"] == "success").then_some(listed.body)
    })
    .await;
    assert_eq!(listed["data"][0]["id"], event_id.as_str());
    assert_eq!(listed["data"][0]["type"], "email.sent");
    let one = mail.app.get(&format!("/webhooks/{webhook}/events/{event_id}")).await;
    assert_eq!((one.status, &one.body["attempts"]), (200, &json!(1)));
    let delivered: serde_json::Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(one.body["payload"], delivered, "the payload is the envelope as delivered");
    let attempts = mail.app.get(&format!("/webhooks/{webhook}/events/{event_id}/attempts")).await;
    let attempt = &attempts.body["data"][0];
    assert_eq!((&attempt["status_code"], &attempt["http_status_code"], &attempt["replay"]), (&json!(200), &json!(200), &json!(false)));
    assert_eq!((&attempt["sent_at"], attempt["response"].is_string()), (&attempt["created_at"], true), "the Resend SDKs' names");

    let replayed = mail.app.post(&format!("/webhooks/{webhook}/events/{event_id}/replay"), json!({})).await;
    assert_eq!(replayed.status, 200, "{}", replayed.body);
    let again = receiver.wait_for("/hook", 2, WAIT).await;
    assert_eq!(again[1].header("hook-id"), event_id, "a replay keeps the hook-id");
    assert_eq!(again[1].body, first.body, "and the envelope");
    let attempts = tests::eventually(|| async {
        let attempts = mail.app.get(&format!("/webhooks/{webhook}/events/{event_id}/attempts")).await;
        (attempts.body["data"].as_array().unwrap().len() == 2).then_some(attempts.body)
    })
    .await;
    assert_eq!(attempts["data"][1]["replay"], true);

    mail.app.patch(&format!("/webhooks/{webhook}"), json!({ "status": "disabled" })).await;
    let refused = mail.app.post(&format!("/webhooks/{webhook}/events/{event_id}/replay"), json!({})).await;
    refused.assert_error(422, "validation_error");
    let unknown = uuid::Uuid::now_v7();
    mail.app.post(&format!("/webhooks/{webhook}/events/{unknown}/replay"), json!({})).await.assert_error(404, "not_found");
    let (_, other) = api::cli::create_team(&mail.app.pool, "Other").await.unwrap();
    for path in [format!("/webhooks/{webhook}/events"), format!("/webhooks/{webhook}/events/{event_id}/attempts")] {
        let answer = tests::Answer::from(mail.app.request_as(&other, reqwest::Method::GET, &path).send().await.unwrap()).await;
        answer.assert_error(404, "not_found");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.deliveries("/hook").len(), 2, "the refused replay sent nothing");
}

#[tokio::test]
async fn after_a_rotation_both_secrets_sign_every_delivery() {
    let mail = setup().await;
    let receiver = Receiver::start().await;
    let created = create(&mail, &receiver.url("/hook"), &["email.sent"]).await;
    let old_secret = created["signing_secret"].as_str().unwrap().to_string();
    let webhook = created["id"].as_str().unwrap();
    let rotated = mail.app.post(&format!("/webhooks/{webhook}/signing-secret/rotate"), json!({})).await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    let new_secret = rotated.body["signing_secret"].as_str().unwrap().to_string();
    assert_ne!(new_secret, old_secret);

    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let delivery = receiver.wait_for("/hook", 1, WAIT).await.remove(0);
    assert_eq!(delivery.header("hook-signature").split(' ').count(), 2, "two v1 entries");
    assert_eq!(verified_signatures(&new_secret, &delivery), 1);
    assert_eq!(verified_signatures(&old_secret, &delivery), 1);

    let other = uuid::Uuid::now_v7();
    mail.app.post(&format!("/webhooks/{other}/signing-secret/rotate"), json!({})).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn an_endpoint_failing_every_delivery_past_the_window_is_disabled() {
    let mail = mail::setup_with(SmtpSink::start().await, |config| {
        config.webhook_allow_private = true;
        config.webhook_retry_schedule = vec![Duration::from_secs(1), Duration::from_secs(1)];
        config.webhook_disable_after = Duration::from_millis(500);
    })
    .await;
    let receiver = Receiver::start().await;
    receiver.answer("/hook", Answer::Status(503));
    let created = create(&mail, &receiver.url("/hook"), &["email.sent"]).await;
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    receiver.wait_for("/hook", 2, WAIT).await;
    let webhook = tests::eventually(|| async {
        let webhook = mail.app.get(&format!("/webhooks/{}", created["id"].as_str().unwrap())).await;
        (webhook.body["status"] == "disabled").then_some(webhook.body)
    })
    .await;
    assert_eq!(webhook["disabled_reason"], "failing");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.deliveries("/hook").len(), 2, "a disabled endpoint gets no more attempts");
}

#[tokio::test]
async fn domain_and_suppression_events_are_delivered_too() {
    let mail = setup().await;
    let receiver = Receiver::start().await;
    let created = create(&mail, &receiver.url("/hook"), &["domain.created", "suppression.added", "suppression.removed"]).await;
    let secret = created["signing_secret"].as_str().unwrap().to_string();
    let domain = mail.app.post("/domains", json!({ "name": "news.example.org" })).await;
    assert_eq!(domain.status, 201, "{}", domain.body);
    let added = mail.app.post("/suppressions", json!({ "email": "gone@example.org" })).await;
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(mail.app.delete("/suppressions/gone@example.org").await.status, 200);

    let deliveries = receiver.wait_for("/hook", 3, WAIT).await;
    let by_type = |t: &str| deliveries.iter().find(|d| d.json()["type"] == t).unwrap_or_else(|| panic!("no {t}")).json();
    assert_eq!(by_type("domain.created")["data"]["name"], "news.example.org");
    assert_eq!(by_type("suppression.added")["data"]["email"], "gone@example.org");
    assert_eq!(by_type("suppression.removed")["data"]["origin"], "manual");
    assert!(deliveries.iter().all(|d| verified_signatures(&secret, d) == 1));
}

#[tokio::test]
async fn attempts_of_a_delivery_deleted_mid_flight_are_skipped_without_losing_the_others() {
    let mail = setup().await;
    let receiver = Receiver::start().await;
    create(&mail, &receiver.url("/hook"), &["email.sent"]).await;
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    receiver.wait_for("/hook", 1, WAIT).await;
    // The worker's own attempt is recorded first, so that only ours is counted below.
    mail.app.wait_for_rows("webhook_deliveries WHERE status = 'succeeded'", 1).await;
    let (delivery_id, endpoint_id): (uuid::Uuid, uuid::Uuid) =
        sqlx::query_as("SELECT id, endpoint_id FROM webhook_deliveries").fetch_one(&mail.app.pool).await.unwrap();
    let attempt = |delivery_id| schema::store::webhooks::Attempt {
        delivery_id,
        replay: false,
        endpoint_id,
        status_code: Some(500),
        error: None,
        response_body: None,
        latency_ms: 3,
        succeeded: false,
        retry_after: Some(std::time::Duration::ZERO),
    };
    let before = mail.app.count("webhook_attempts").await;
    let mut conn = mail.app.pool.acquire().await.unwrap();
    let gone = uuid::Uuid::now_v7();
    schema::store::webhooks::record(&mut conn, &[attempt(gone), attempt(delivery_id)], 3600.0)
        .await
        .expect("a vanished delivery does not fail the batch");
    assert_eq!(mail.app.count("webhook_attempts").await, before + 1, "the live delivery's attempt is recorded");
}
