//! CSV imports: the upload answers at once, a background job writes contacts in batches with
//! counts and failed rows, no per-contact events; bad uploads are refused and write nothing.

use serde_json::{Value, json};
use tests::{Answer, TestApp, eventually, multipart};

async fn upload(app: &TestApp, csv: &str, fields: &[(&str, String)]) -> Answer {
    let mut parts: Vec<(&str, Option<&str>, &[u8])> = vec![("file", Some("contacts.csv"), csv.as_bytes())];
    parts.extend(fields.iter().map(|(name, value)| (*name, None, value.as_bytes())));
    let (content_type, body) = multipart(&parts);
    let response = app.request(reqwest::Method::POST, "/contacts/imports").header("content-type", content_type).body(body).send().await.unwrap();
    Answer::from(response).await
}

async fn finished(app: &TestApp, id: &str) -> Value {
    eventually(|| async {
        let read = app.get(&format!("/contacts/imports/{id}")).await.body;
        matches!(read["status"].as_str(), Some("completed" | "failed")).then_some(read)
    })
    .await
}

#[tokio::test]
async fn an_import_creates_updates_and_fails_rows_in_the_background_without_per_contact_events() {
    let mut app = TestApp::spawn_unthrottled().await;
    let news = app.post("/topics", json!({ "name": "News", "default_subscription": "opt_out" })).await.body["id"].as_str().unwrap().to_string();
    let list = app.post("/segments", json!({ "name": "Imported" })).await.body["id"].as_str().unwrap().to_string();
    app.post("/contacts", json!({ "email": "old@example.com", "first_name": "Old", "properties": { "plan": "free" } })).await;
    let events_before = app.count("events").await;

    let csv = "Email,First,Plan,Age,Unsub\n\
               new@example.com,New,pro,31,\n\
               OLD@example.com,,pro,,yes\n\
               not-an-address,Bad,pro,1,\n\
               age@example.com,Age,pro,thirty,\n\
               new@example.com,Newer,,32,\n\
               plain@example.com,\"Smith, J\",free,5,no\n";
    let column_map = json!({
        "email": "Email", "first_name": "First", "unsubscribed": "Unsub",
        "properties": { "plan": "Plan", "age": { "column": "Age", "type": "number" } }
    });
    let created = upload(&app, csv, &[
        ("column_map", column_map.to_string()),
        ("on_conflict", "upsert".into()),
        ("segments", json!([{ "id": list }]).to_string()),
        ("topics", json!([{ "id": news, "subscription": "opt_in" }]).to_string()),
    ]).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["object"], "contact_import");
    let id = created.body["id"].as_str().unwrap().to_string();
    let queued = app.get(&format!("/contacts/imports/{id}")).await.body;
    assert_eq!((&queued["status"], &queued["completed_at"]), (&json!("queued"), &Value::Null), "the answer comes before processing");

    app.start_workers();
    let done = finished(&app, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["completed_at"].is_string());
    assert_eq!(done["counts"], json!({ "total": 6, "created": 2, "updated": 2, "skipped": 0, "failed": 2 }));
    let failed: Vec<(i64, &str)> = done["failed_rows"].as_array().unwrap().iter().map(|f| (f["row"].as_i64().unwrap(), f["reason"].as_str().unwrap())).collect();
    assert_eq!(failed, [(4, "invalid_email"), (5, "type_mismatch")], "rows numbered as a spreadsheet shows them");

    let new = app.get("/contacts/new@example.com").await.body;
    assert_eq!((&new["first_name"], &new["properties"]), (&json!("Newer"), &json!({ "plan": "pro", "age": 32 })), "a later row for an address wins");
    let old = app.get("/contacts/old@example.com").await.body;
    assert_eq!((&old["first_name"], &old["unsubscribed"], &old["properties"]["plan"]), (&json!("Old"), &json!(true), &json!("pro")));
    let quoted = app.get("/contacts/plain@example.com").await;
    assert_eq!(quoted.body["first_name"], "Smith, J", "{}", quoted.body);
    assert_eq!(app.count("contacts").await, 3);

    assert_eq!(app.count("events").await, events_before, "no per-contact events");
    let members = app.get(&format!("/contacts?segment_id={list}")).await.body;
    assert_eq!(members["data"].as_array().unwrap().len(), 3);
    assert_eq!(app.count("contact_topics WHERE subscription = 'opt_in'").await, 3);
    let consents: Vec<(String, String)> =
        sqlx::query_as("SELECT choice, source FROM consent_records ORDER BY choice").fetch_all(&app.pool).await.unwrap();
    let expected: Vec<(String, String)> =
        [("opt_in", "import"), ("opt_in", "import"), ("opt_in", "import"), ("unsubscribed", "import")].map(|(c, s)| (c.into(), s.into())).to_vec();
    assert_eq!(consents, expected);
    let declared = app.get("/contact-properties").await.body;
    let types: Vec<(&str, &str)> = declared["data"].as_array().unwrap().iter().map(|p| (p["key"].as_str().unwrap(), p["type"].as_str().unwrap())).collect();
    assert!(types.contains(&("age", "number")), "{types:?}");
}

#[tokio::test]
async fn skip_leaves_existing_contacts_alone_and_rows_past_the_plan_limit_fail() {
    let mut app = TestApp::spawn_unthrottled().await;
    app.post("/contacts", json!({ "email": "kept@example.com", "first_name": "Kept" })).await;
    let mut csv = String::from("email,first_name\nkept@example.com,Changed\n");
    for i in 0..1001 {
        csv.push_str(&format!("person{i}@example.com,P{i}\n"));
    }
    let created = upload(&app, &csv, &[]).await;
    assert_eq!(created.status, 201, "{}", created.body);
    app.start_workers();
    let done = finished(&app, created.body["id"].as_str().unwrap()).await;
    // The free plan holds 1,000 contacts: 1 existed, so 999 are created and 2 fail.
    assert_eq!(done["counts"], json!({ "total": 1002, "created": 999, "updated": 0, "skipped": 1, "failed": 2 }));
    let failed: Vec<(i64, &str)> = done["failed_rows"].as_array().unwrap().iter().map(|f| (f["row"].as_i64().unwrap(), f["reason"].as_str().unwrap())).collect();
    assert_eq!(failed, [(1002, "contact_limit"), (1003, "contact_limit")]);
    assert_eq!(app.get("/contacts/kept@example.com").await.body["first_name"], "Kept");
    assert_eq!(app.count("contacts").await, 1000);

    let completed = app.get("/contacts/imports?status=completed").await.body;
    assert_eq!(completed["data"].as_array().unwrap().len(), 1);
    assert!(completed["data"][0].get("failed_rows").is_none(), "lists carry counts only");
    assert!(app.get("/contacts/imports?status=queued").await.body["data"].as_array().unwrap().is_empty());
    app.get("/contacts/imports?status=done").await.assert_error(422, "invalid_parameter");
}

#[tokio::test]
async fn a_resumed_import_starts_after_the_rows_already_committed() {
    let app = TestApp::spawn_unthrottled().await;
    let created = upload(&app, "email\na@example.com\nb@example.com\nc@example.com\n", &[]).await;
    let id: uuid::Uuid = created.body["id"].as_str().unwrap().parse().unwrap();
    // As if a worker died after committing the first row's batch.
    sqlx::query("UPDATE contact_imports SET status = 'in_progress', rows_done = 1, created = 1 WHERE id = $1").bind(id).execute(&app.pool).await.unwrap();
    jobs::import_contacts::run(&app.pool, id).await.unwrap();
    let done = app.get(&format!("/contacts/imports/{id}")).await.body;
    assert_eq!(done["counts"], json!({ "total": 3, "created": 3, "updated": 0, "skipped": 0, "failed": 0 }));
    let emails: Vec<String> = sqlx::query_scalar("SELECT email FROM contacts ORDER BY email").fetch_all(&app.pool).await.unwrap();
    assert_eq!(emails, ["b@example.com", "c@example.com"], "the committed row is not redone");
    jobs::import_contacts::run(&app.pool, id).await.unwrap();
    assert_eq!(app.count("contacts").await, 2, "a finished import is not run again");
}

#[tokio::test]
async fn bad_uploads_are_refused_and_write_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    app.post("/contact-properties", json!({ "key": "age", "type": "number" })).await;
    let good = "Email,Name\na@example.com,A\n";
    // (file, other parts, status, error name, first error path)
    type Case<'a> = (&'a str, Vec<(&'a str, String)>, u16, &'a str, &'a str);
    let cases: Vec<Case> = vec![
        ("\u{0}\u{1}PNG", vec![], 422, "validation_error", "file"),
        ("", vec![], 422, "validation_error", "file"),
        (good, vec![("column_map", json!({ "email": "E-mail" }).to_string())], 422, "validation_error", "column_map.email"),
        (good, vec![("column_map", json!({ "email": "Email", "first_name": "First" }).to_string())], 422, "validation_error", "column_map.first_name"),
        (good, vec![("column_map", json!({ "first_name": "Name" }).to_string())], 422, "missing_required_field", "column_map.email"),
        (good, vec![("column_map", "{not json".into())], 422, "invalid_parameter", "column_map"),
        (good, vec![("column_map", json!({ "email": "Email", "properties": { "age": "Name" } }).to_string())], 422, "invalid_parameter", "column_map.properties.age"),
        (good, vec![("column_map", json!({ "email": "Email", "properties": { "x": { "column": "Name", "type": "date" } } }).to_string())], 422, "invalid_parameter", "column_map.properties.x"),
        (good, vec![("column_map", json!({ "email": "Email" }).to_string()), ("on_conflict", "replace".into())], 422, "invalid_parameter", "on_conflict"),
        (good, vec![("column_map", json!({ "email": "Email" }).to_string()), ("segments", json!([{ "id": uuid::Uuid::now_v7() }]).to_string())], 422, "invalid_parameter", "segments[0].id"),
        (good, vec![("column_map", json!({ "email": "Email" }).to_string()), ("topics", json!([{ "id": uuid::Uuid::now_v7(), "subscription": "opt_in" }]).to_string())], 422, "invalid_parameter", "topics[0].id"),
        ("name\nA\n", vec![], 422, "validation_error", "column_map.email"),
    ];
    for (csv, fields, status, name, path) in cases {
        let refused = upload(&app, csv, &fields).await;
        refused.assert_error(status, name);
        assert_eq!(refused.body["errors"][0]["path"], path, "{}", refused.body);
    }
    let (content_type, body) = multipart(&[("on_conflict", None, b"skip")]);
    let response = app.request(reqwest::Method::POST, "/contacts/imports").header("content-type", content_type).body(body).send().await.unwrap();
    Answer::from(response).await.assert_error(422, "missing_required_field");
    assert_eq!(app.count("contact_imports").await, 0);
    assert_eq!(app.count("contact_properties").await, 1, "no property was declared");
    assert_eq!(app.count("apalis.jobs WHERE job_type = 'import_contacts'").await, 0);

    let created = upload(&app, good, &[("column_map", json!({ "email": "Email" }).to_string())]).await;
    let id = created.body["id"].as_str().unwrap();
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let theirs = app.request_as(&other, reqwest::Method::GET, &format!("/contacts/imports/{id}")).send().await.unwrap();
    Answer::from(theirs).await.assert_error(404, "not_found");
    app.get(&format!("/contacts/imports/{}", uuid::Uuid::now_v7())).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn housekeeping_deletes_import_files_after_seven_days_and_consent_records_after_three_years() {
    let app = TestApp::spawn_unthrottled().await;
    let created = upload(&app, "email\na@example.com\n", &[]).await;
    let id: uuid::Uuid = created.body["id"].as_str().unwrap().parse().unwrap();
    jobs::import_contacts::run(&app.pool, id).await.unwrap();
    app.patch("/contacts/a@example.com", json!({ "unsubscribed": true })).await;
    app.patch("/contacts/a@example.com", json!({ "unsubscribed": false })).await;
    jobs::housekeeping::purge(&app.pool).await.unwrap();
    assert_eq!((app.count("contact_import_files").await, app.count("consent_records").await), (1, 2), "recent ones stay");

    sqlx::query("UPDATE contact_imports SET completed_at = now() - interval '8 days'").execute(&app.pool).await.unwrap();
    sqlx::query("UPDATE consent_records SET created_at = now() - interval '3 years 1 day' WHERE choice = 'unsubscribed'").execute(&app.pool).await.unwrap();
    let report = jobs::housekeeping::purge(&app.pool).await.unwrap();
    assert_eq!((report.import_files, report.consent_records), (1, 1));
    assert_eq!(app.count("contact_import_files").await, 0);
    let kept: Vec<String> = sqlx::query_scalar("SELECT choice FROM consent_records").fetch_all(&app.pool).await.unwrap();
    assert_eq!(kept, ["subscribed"]);
    let read = app.get(&format!("/contacts/imports/{id}")).await.body;
    assert_eq!(read["counts"]["created"], 1, "counts stay after the file is gone");
}
