//! Exports (#26, first part): a team's contacts or suppressions as CSV, written by a job in
//! pages and downloaded through a signed link; the contacts CSV goes back in through a contact
//! import.

use reqwest::Method;
use serde_json::{Value, json};
use tests::{Answer, TestApp, eventually, multipart};

async fn completed(app: &TestApp, id: &str) -> Value {
    eventually(|| async {
        let read = app.get(&format!("/exports/{id}")).await.body;
        (read["status"] == "completed").then_some(read)
    })
    .await
}

/// Fetches a link Herald handed out (naming its public URL) from the test's server.
async fn download(app: &TestApp, link: &str) -> (u16, String) {
    let path = link.split_once("://").unwrap().1.split_once('/').unwrap().1;
    let answer = reqwest::get(app.url(&format!("/{path}"))).await.unwrap();
    (answer.status().as_u16(), answer.text().await.unwrap())
}

#[tokio::test]
async fn a_contacts_export_holds_every_property_topic_choice_and_consent_and_imports_back() {
    let mut app = TestApp::spawn_unthrottled().await;
    app.start_workers();
    let news = app.post("/topics", json!({ "name": "News", "default_subscription": "opt_out" })).await.body["id"].as_str().unwrap().to_string();
    assert_eq!(app.post("/contact-properties", json!({ "key": "plan", "type": "string" })).await.status, 201);
    let ada = app.post("/contacts", json!({ "email": "ada@example.com", "first_name": "Ada", "last_name": "Lovelace", "properties": { "plan": "pro" } })).await;
    assert_eq!(ada.status, 201, "{}", ada.body);
    let chose = app.patch("/contacts/ada@example.com/topics", json!([{ "id": news, "subscription": "opt_in" }])).await;
    assert!(chose.status < 300, "{}", chose.body);
    app.post("/contacts", json!({ "email": "bob@example.com", "unsubscribed": true })).await;

    let created = app.post("/exports", json!({ "kind": "contacts" })).await;
    assert_eq!((created.status, created.body["object"].as_str(), created.body["status"].as_str()), (201, Some("export"), Some("queued")), "{}", created.body);
    assert_eq!(created.body["download_url"], json!(null));
    let done = completed(&app, created.body["id"].as_str().unwrap()).await;
    assert_eq!(done["rows"], 2);
    let (status, csv) = download(&app, done["download_url"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("email,first_name,last_name,unsubscribed,created_at,plan,topic:News,consent_source,consent_at"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2);
    assert!(rows[0].starts_with("ada@example.com,Ada,Lovelace,false,") && rows[0].contains(",pro,opt_in,"), "{}", rows[0]);
    assert!(rows[1].starts_with("bob@example.com,,,true,"), "{}", rows[1]);

    // The file goes back in through a contact import, into another team.
    let other = TestApp::spawn_unthrottled().await;
    let (content_type, body) = multipart(&[("file", Some("contacts.csv"), csv.as_bytes()), ("column_map", None, br#"{"email":"email","first_name":"first_name","last_name":"last_name","unsubscribed":"unsubscribed","properties":{"plan":"plan"}}"#)]);
    let import = Answer::from(other.request(Method::POST, "/contacts/imports").header("content-type", content_type).body(body).send().await.unwrap()).await;
    assert_eq!(import.status, 201, "{}", import.body);
    let mut other = other;
    other.start_workers();
    let imported = eventually(|| async {
        let c = other.get("/contacts/ada@example.com").await;
        (c.status == 200).then_some(c.body)
    })
    .await;
    assert_eq!((imported["last_name"].as_str(), imported["properties"]["plan"].as_str()), (Some("Lovelace"), Some("pro")));
    let bob = eventually(|| async {
        let c = other.get("/contacts/bob@example.com").await;
        (c.status == 200).then_some(c.body)
    })
    .await;
    assert_eq!(bob["unsubscribed"], true);
}

#[tokio::test]
async fn a_suppressions_export_and_a_large_contacts_export_write_every_row_once() {
    let mut app = TestApp::spawn_unthrottled().await;
    sqlx::query("INSERT INTO contacts (id, team_id, email) SELECT herald_uuid_v7(), $1, 'c' || n || '@bulk.test' FROM generate_series(1, 12001) n")
        .bind(app.team_id)
        .execute(&app.pool)
        .await
        .unwrap();
    app.post("/suppressions", json!({ "email": "gone@example.com" })).await;
    app.start_workers();
    let big = app.post("/exports", json!({ "kind": "contacts" })).await.body["id"].as_str().unwrap().to_string();
    let suppressions = app.post("/exports", json!({ "kind": "suppressions" })).await.body["id"].as_str().unwrap().to_string();

    let done = completed(&app, &big).await;
    assert_eq!(done["rows"], 12001);
    let (_, csv) = download(&app, done["download_url"].as_str().unwrap()).await;
    let emails: std::collections::HashSet<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!((csv.lines().count(), emails.len()), (12002, 12001), "three pages, every contact once, one header");
    let export_id = uuid::Uuid::parse_str(&big).unwrap();
    assert_eq!(jobs::exports::run(&app.pool, export_id).await.unwrap(), "already_done");

    let done = completed(&app, &suppressions).await;
    let (_, csv) = download(&app, done["download_url"].as_str().unwrap()).await;
    assert!(csv.starts_with("email,origin,created_at\ngone@example.com,manual,"), "{csv}");
}

#[tokio::test]
async fn bad_input_another_teams_export_and_a_tampered_link_are_refused() {
    let mut app = TestApp::spawn_unthrottled().await;
    app.start_workers();
    let answer = app.post("/exports", json!({ "kind": "templates" })).await;
    answer.assert_error(422, "validation_error");
    app.post("/exports", json!({})).await.assert_error(422, "missing_required_field");
    assert_eq!(app.count("exports").await, 0, "nothing written");
    let (_, sending) = app.create_key(json!({ "name": "sender", "permission": "sending_access" })).await;
    Answer::from(app.request_as(&sending, Method::POST, "/exports").json(&json!({ "kind": "contacts" })).send().await.unwrap()).await.assert_error(401, "restricted_api_key");

    let id = app.post("/exports", json!({ "kind": "suppressions" })).await.body["id"].as_str().unwrap().to_string();
    let done = completed(&app, &id).await;
    let url = done["download_url"].as_str().unwrap().to_string();
    let (_, other_key) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    Answer::from(app.request_as(&other_key, Method::GET, &format!("/exports/{id}")).send().await.unwrap()).await.assert_error(404, "not_found");
    // One character of the token's signature changed.
    let at = url.len() - 10;
    let swapped = if &url[at..at + 1] == "A" { "B" } else { "A" };
    let tampered = format!("{}{swapped}{}", &url[..at], &url[at + 1..]);
    assert_eq!(download(&app, &tampered).await.0, 404);
    assert_eq!(download(&app, &url).await.0, 200);
}
