//! `svc:segment.entered` beyond one contact's API change: CSV imports (in batches, set-based),
//! topic choices through the contact's topics route, the preference page and one-click
//! unsubscribes each start runs for the contacts that enter a watched segment, and only those;
//! a time-based segment (`created_at` against an age) starts them as contacts age into it.

use serde_json::{Value, json};
use std::collections::BTreeSet;
use tests::{Answer, TestApp, eventually, multipart};

async fn created(app: &TestApp, path: &str, body: Value) -> String {
    let answer = app.post(path, body).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body["id"].as_str().unwrap().to_string()
}

/// An enabled automation that starts when a contact enters `segment`.
async fn watch(app: &TestApp, segment: &str) {
    let steps = json!([
        { "key": "start", "type": "trigger", "config": { "event_name": "svc:segment.entered", "segment_id": segment } },
        { "key": "wait", "type": "delay", "config": { "duration": "1 day" } },
    ]);
    created(app, "/automations", json!({ "name": "Entered", "status": "enabled", "steps": steps, "connections": [{ "from": "start", "to": "wait" }] })).await;
}

/// The `(contact address, segment)` entries that started runs.
async fn entries(app: &TestApp) -> BTreeSet<(String, String)> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.email, r.event_data->>'segment_id' FROM automation_runs r JOIN contacts c ON c.id = r.contact_id
         WHERE r.trigger_event = 'svc:segment.entered'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    rows.into_iter().collect()
}

fn entry(email: &str, segment: &str) -> (String, String) {
    (email.to_string(), segment.to_string())
}

async fn upload(app: &TestApp, csv: &str, fields: &[(&str, String)]) -> String {
    let mut parts: Vec<(&str, Option<&str>, &[u8])> = vec![("file", Some("contacts.csv"), csv.as_bytes())];
    parts.extend(fields.iter().map(|(name, value)| (*name, None, value.as_bytes())));
    let (content_type, body) = multipart(&parts);
    let response = app.request(reqwest::Method::POST, "/contacts/imports").header("content-type", content_type).body(body).send().await.unwrap();
    let answer = Answer::from(response).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let id = answer.body["id"].as_str().unwrap().to_string();
    eventually(|| async {
        let read = app.get(&format!("/contacts/imports/{id}")).await.body;
        (read["status"] == "completed").then_some(())
    })
    .await;
    id
}

#[tokio::test]
async fn a_csv_import_starts_runs_for_the_contacts_it_brings_into_a_watched_segment_and_no_others() {
    let mut app = TestApp::spawn_unthrottled().await;
    app.start_workers();
    app.post("/contact-properties", json!({ "key": "plan", "type": "string" })).await;
    let pros = created(&app, "/segments", json!({ "name": "Pros", "filter": { "all": [{ "field": "properties.plan", "op": "eq", "value": "pro" }] } })).await;
    let picked = created(&app, "/segments", json!({ "name": "Picked" })).await;
    let unwatched = created(&app, "/segments", json!({ "name": "Unwatched", "filter": { "all": [{ "field": "properties.plan", "op": "eq", "value": "pro" }] } })).await;
    created(&app, "/contacts", json!({ "email": "already@example.com", "properties": { "plan": "pro" } })).await;
    created(&app, "/contacts", json!({ "email": "upgrade@example.com", "properties": { "plan": "free" } })).await;
    watch(&app, &pros).await;
    watch(&app, &picked).await;
    assert!(entries(&app).await.is_empty());

    let csv = "email,plan\nnew-pro@example.com,pro\nnew-free@example.com,free\nalready@example.com,pro\nupgrade@example.com,pro\n";
    let column_map = json!({ "email": "email", "properties": { "plan": "plan" } }).to_string();
    upload(&app, csv, &[("column_map", column_map), ("on_conflict", "upsert".into()), ("segments", json!([{ "id": picked }]).to_string())]).await;

    let expected: BTreeSet<(String, String)> = [
        entry("new-pro@example.com", &pros),
        entry("upgrade@example.com", &pros),
        entry("new-pro@example.com", &picked),
        entry("new-free@example.com", &picked),
        entry("already@example.com", &picked),
        entry("upgrade@example.com", &picked),
    ]
    .into_iter()
    .collect();
    assert_eq!(entries(&app).await, expected, "already@ was a pro before; nobody enters the unwatched {unwatched}");

    // The same file again moves nobody: every contact is where it was.
    let column_map = json!({ "email": "email", "properties": { "plan": "plan" } }).to_string();
    upload(&app, csv, &[("column_map", column_map), ("on_conflict", "upsert".into()), ("segments", json!([{ "id": picked }]).to_string())]).await;
    assert_eq!(entries(&app).await, expected);
}

#[tokio::test]
async fn topic_choices_the_preference_page_and_one_click_start_runs_for_segments_the_contact_enters() {
    let app = TestApp::spawn_unthrottled().await;
    let news = created(&app, "/topics", json!({ "name": "News", "default_subscription": "opt_out", "visibility": "public" })).await;
    let readers = created(&app, "/segments", json!({ "name": "Readers", "filter": { "all": [{ "topic": news, "subscription": "opt_in" }] } })).await;
    let leavers = created(&app, "/segments", json!({ "name": "Leavers", "filter": { "all": [{ "field": "unsubscribed", "op": "eq", "value": true }] } })).await;
    watch(&app, &readers).await;
    watch(&app, &leavers).await;
    let first = created(&app, "/contacts", json!({ "email": "first@example.com" })).await;
    created(&app, "/contacts", json!({ "email": "second@example.com" })).await;
    assert!(entries(&app).await.is_empty());

    // The contact's topics route.
    let changed = app.patch(&format!("/contacts/{first}/topics"), json!([{ "id": news, "subscription": "opt_in" }])).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_eq!(entries(&app).await, [entry("first@example.com", &readers)].into_iter().collect());
    // Choosing the same again enters nothing.
    app.patch(&format!("/contacts/{first}/topics"), json!([{ "id": news, "subscription": "opt_in" }])).await;
    assert_eq!(entries(&app).await.len(), 1);

    // The preference page, as a browser posts it.
    let contact = app.get("/contacts/second@example.com").await.body;
    let url = contact["preferences_url"].as_str().unwrap();
    let path = &url[url.find("/preferences/").unwrap()..];
    let saved = reqwest::Client::new()
        .post(app.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("topic={news}"))
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), 200);
    let mut expected: BTreeSet<(String, String)> = [entry("first@example.com", &readers), entry("second@example.com", &readers)].into_iter().collect();
    assert_eq!(entries(&app).await, expected);

    // A one-click unsubscribe enters the segment of unsubscribed contacts.
    let url = contact["unsubscribe_url"].as_str().unwrap();
    let path = &url[url.find("/unsubscribe/").unwrap()..];
    let clicked = reqwest::Client::new()
        .post(app.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(clicked.status(), 200);
    expected.insert(entry("second@example.com", &leavers));
    assert_eq!(entries(&app).await, expected);
}

#[tokio::test]
async fn a_time_based_segment_starts_runs_as_contacts_age_into_it_once_each_and_not_for_earlier_members() {
    let app = TestApp::spawn_unthrottled().await; // no workers: the test drives the schedule's clock itself
    let segment = created(&app, "/segments", json!({ "name": "Two seconds old", "filter": { "all": [{ "field": "created_at", "op": "lt", "value": "2 seconds ago" }] } })).await;
    let long_ago = created(&app, "/contacts", json!({ "email": "old@example.com" })).await;
    sqlx::query("UPDATE contacts SET created_at = now() - interval '1 day' WHERE id = $1::uuid").bind(&long_ago).execute(&app.pool).await.unwrap();
    watch(&app, &segment).await;
    created(&app, "/contacts", json!({ "email": "new@example.com" })).await;
    assert_eq!(entries(&app).await, BTreeSet::new(), "a new contact is not two seconds old yet");

    let later = chrono::Utc::now() + chrono::TimeDelta::seconds(5);
    assert_eq!(jobs::schedule::enrol_time_entries(&app.pool, later).await.unwrap(), 1);
    assert_eq!(entries(&app).await, BTreeSet::from([entry("new@example.com", &segment)]), "a member before the automation watched is not an entry");
    let again = later + chrono::TimeDelta::seconds(1);
    assert_eq!(jobs::schedule::enrol_time_entries(&app.pool, again).await.unwrap(), 0, "an entry starts one run");
    assert_eq!(entries(&app).await.len(), 1);
}

#[tokio::test]
async fn a_segment_filter_refuses_an_age_it_cannot_read_and_writes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    for value in [json!("3 fortnights ago"), json!("0 days ago"), json!("3651 days ago"), json!("in 3 days"), json!(3)] {
        let answer = app.post("/segments", json!({ "name": "Aged", "filter": { "all": [{ "field": "created_at", "op": "lt", "value": value }] } })).await;
        answer.assert_error(422, "validation_error");
        assert_eq!(answer.body["errors"][0]["path"], "filter.all[0].value", "{value}: {}", answer.body);
    }
    assert_eq!(app.count("segments").await, 0);
    let time_based: bool = {
        let id = created(&app, "/segments", json!({ "name": "Aged", "filter": { "any": [{ "field": "created_at", "op": "gte", "value": "3 days ago" }] } })).await;
        sqlx::query_scalar("SELECT time_based FROM segments WHERE id = $1::uuid").bind(id).fetch_one(&app.pool).await.unwrap()
    };
    assert!(time_based);
}
