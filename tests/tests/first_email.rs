//! The first hour: a development server sends a first email without DNS, from the development
//! sender into the local outbox, signed as it would have gone out; any other server refuses it.

use serde_json::{Value, json};
use tests::TestApp;

const DEV_FROM: &str = "Herald <hello@dev.herald.localhost>";

fn first_email(to: &str) -> Value {
    json!({ "from": DEV_FROM, "to": to, "subject": "Hello from Herald", "html": "<p>It <b>works</b>.</p>", "text": "It works." })
}

#[tokio::test]
async fn a_development_server_delivers_a_first_email_from_the_development_sender_into_the_outbox_signed() {
    let mut app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    app.start_workers();
    // Any recipient: the team is in the sending sandbox, but this mail never leaves the machine.
    let sent = app.post("/emails", first_email("you@example.com")).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let id = sent.body["id"].as_str().unwrap().to_string();
    tests::mail::wait_for_event(&app, &id, "delivered").await;

    let (message, public_key): (Vec<u8>, String) = sqlx::query_as(
        "SELECT o.message, d.dkim_public_key FROM dev_outbox o JOIN emails e ON e.id = o.email_id JOIN domains d ON d.id = e.domain_id
         WHERE o.email_id = $1::uuid",
    )
    .bind(&id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let verified = tests::dkim::verify(&message, &public_key).expect("the outbox copy verifies");
    assert_eq!(verified.domain, "dev.herald.localhost");

    let page = app.client.get(app.url("/outbox")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.text().await.unwrap();
    assert!(html.contains("Hello from Herald") && html.contains("you@example.com") && html.contains(&id), "{html}");
    assert!(html.contains("DKIM</b> signed"), "{html}");
}

#[tokio::test]
async fn the_development_sender_is_verified_without_dns_and_a_verify_call_leaves_it_so() {
    let app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    let listed = app.get("/domains").await;
    let dev = listed.body["data"].as_array().unwrap().iter().find(|d| d["name"] == "dev.herald.localhost").expect("listed").clone();
    assert_eq!(dev["status"], "verified");
    // The test DNS server knows nothing of it; verify does not ask.
    let verified = app.post(&format!("/domains/{}/verify", dev["id"].as_str().unwrap()), json!({})).await;
    assert_eq!(verified.status, 200, "{}", verified.body);
    assert_eq!(verified.body["status"], "verified");
}

#[tokio::test]
async fn outside_development_the_development_sender_is_refused_saying_why_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    // Even a team that kept the row from development days cannot use it.
    api::outbox::ensure_dev_senders(&app.pool).await.unwrap();
    let refused = app.post("/emails", first_email("you@example.com")).await;
    refused.assert_error(403, "validation_error");
    let message = refused.body["message"].as_str().unwrap();
    assert!(message.contains("HERALD_ENV=development") && message.contains("POST /domains"), "{message}");
    assert_eq!(app.count("emails").await, 0);
    assert_eq!(app.count("apalis.jobs").await, 0);

    let batch = app.post("/emails/batch", json!([first_email("you@example.com")])).await;
    batch.assert_error(403, "validation_error");
    assert_eq!(app.count("emails").await, 0);
}

#[tokio::test]
async fn outside_development_the_outbox_is_not_served() {
    let app = TestApp::spawn().await;
    let page = app.client.get(app.url("/outbox")).send().await.unwrap();
    assert_eq!(page.status(), 404);
}

#[tokio::test]
async fn no_team_can_add_a_domain_under_localhost() {
    let app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    let before = app.count("domains").await;
    for name in ["dev.herald.localhost", "mail.example.localhost"] {
        let refused = app.post("/domains", json!({ "name": name })).await;
        refused.assert_error(400, "validation_error");
        assert!(refused.body["message"].as_str().unwrap().contains(".localhost"), "{}", refused.body);
    }
    assert_eq!(app.count("domains").await, before);
}
