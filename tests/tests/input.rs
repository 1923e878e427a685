//! Characters no field takes: NUL (PostgreSQL cannot store it) anywhere, other control
//! characters, and line breaks in one-line fields are refused at the edge, naming the field,
//! and write nothing.

use serde_json::{Value, json};
use tests::TestApp;

/// Every write the issue found answering 500 on a NUL, with the field to name.
fn bodies_with_nul() -> Vec<(&'static str, &'static str, Value, &'static str)> {
    let email = json!({ "from": "a@acme.test", "to": "b@inbox.test", "subject": "a\u{0}b", "text": "hi" });
    vec![
        ("/contacts", "contacts", json!({ "email": "a@b.test", "first_name": "a\u{0}b" }), "first_name"),
        ("/topics", "topics", json!({ "name": "News\u{0}", "default_subscription": "opt_in" }), "name"),
        ("/segments", "segments", json!({ "name": "a\u{0}" }), "name"),
        ("/contact-properties", "contact_properties", json!({ "key": "plan", "type": "string", "fallback_value": "a\u{0}" }), "fallback_value"),
        ("/api-keys", "api_keys", json!({ "name": "a\u{0}b" }), "name"),
        ("/emails", "emails", email.clone(), "subject"),
        ("/emails", "emails", json!({ "from": "a@acme.test", "to": "b@inbox.test", "subject": "s", "html": "<p>\u{0}</p>" }), "html"),
        ("/emails/batch", "emails", json!([email.clone(), { "from": "a@acme.test", "to": "b@inbox.test", "subject": "s", "text": "\u{0}" }]), "[0].subject"),
        ("/webhooks", "webhook_endpoints", json!({ "endpoint": "https://hooks.example.com/a\u{0}b", "events": ["email.sent"] }), "endpoint"),
    ]
}

#[tokio::test]
async fn a_nul_in_any_body_string_is_a_400_validation_error_naming_the_field_and_writes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    let keys_before = app.count("api_keys").await;
    let jobs_before = app.count("apalis.jobs").await;
    for (path, table, body, field) in bodies_with_nul() {
        let answer = app.post(path, body).await;
        answer.assert_error(400, "validation_error");
        assert_eq!(answer.body["errors"][0]["path"], field, "{path}: {}", answer.body);
        let expected = if table == "api_keys" { keys_before } else { 0 };
        assert_eq!(app.count(table).await, expected, "{path} wrote nothing");
    }
    assert_eq!(app.count("apalis.jobs").await, jobs_before, "no job was enqueued");
}

#[tokio::test]
async fn a_nul_in_an_update_is_refused_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let created = app.post("/contacts", json!({ "email": "jo@b.test", "first_name": "Jo" })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let answer = app.patch("/contacts/jo@b.test", json!({ "first_name": "a\u{0}b" })).await;
    answer.assert_error(400, "validation_error");
    assert_eq!(answer.body["errors"][0]["path"], "first_name");
    assert_eq!(app.get("/contacts/jo@b.test").await.body["first_name"], "Jo");
}

#[tokio::test]
async fn line_breaks_are_refused_in_one_line_fields_but_kept_in_text_bodies() {
    let app = TestApp::spawn().await;
    let answer = app.post("/segments", json!({ "name": "a\r\nb" })).await;
    answer.assert_error(400, "validation_error");
    assert_eq!(answer.body["errors"][0]["path"], "name");
    let answer = app.post("/topics", json!({ "name": "News", "default_subscription": "opt_in", "description": "bell\u{7}" })).await;
    answer.assert_error(400, "validation_error");
    assert_eq!(answer.body["errors"][0]["path"], "description");
    let created = app.post("/topics", json!({ "name": "News", "default_subscription": "opt_in", "description": "Two\nlines" })).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

#[tokio::test]
async fn a_control_character_in_a_query_or_path_parameter_is_a_422_invalid_parameter_naming_it() {
    let app = TestApp::spawn().await;
    for (path, name) in [
        ("/emails?search=a%00b", "search"),
        ("/logs?search=a%00b", "search"),
        ("/contacts?limit=2&after=%01", "after"),
        ("/contacts/a%00b@c.test", "contact"),
        ("/suppressions/x%0Ay@c.test", "suppression"),
    ] {
        let answer = app.get(path).await;
        answer.assert_error(422, "invalid_parameter");
        assert_eq!(answer.body["errors"][0]["path"], name, "{path}");
    }
    let search = app.get("/emails?search=a+b").await;
    assert_eq!(search.status, 200, "a plain search still works: {}", search.body);
}

#[tokio::test]
async fn refused_requests_with_nul_are_still_logged_with_the_nul_replaced() {
    let app = TestApp::spawn().await;
    let answer = app.post("/contacts", json!({ "email": "a@b.test", "first_name": "a\u{0}b" })).await;
    let request_id = answer.header("x-request-id").unwrap().to_string();
    app.wait_for_rows("request_logs", 1).await;
    let log = app.get(&format!("/logs/{request_id}")).await;
    assert_eq!(log.status, 200, "the refused call can be looked up by its request id: {}", log.body);
    assert_eq!(log.body["request_body"]["first_name"], "a\u{fffd}b");
}

#[tokio::test]
async fn a_ten_megabyte_string_in_any_field_is_refused_and_writes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    let segment = app.post("/segments", json!({ "name": "S" })).await.body["id"].as_str().unwrap().to_string();
    let big = "x".repeat(10 * 1024 * 1024);
    let email = |field: &str| {
        let mut body = json!({ "from": "a@acme.test", "to": "b@inbox.test", "subject": "s", "text": "t" });
        body[field] = json!(big);
        body
    };
    let cases = [
        ("/contacts", json!({ "email": "a@b.test", "first_name": big })),
        ("/contacts", json!({ "email": "a@b.test", "properties": { "note": big } })),
        ("/topics", json!({ "name": "T", "default_subscription": "opt_in", "description": big })),
        ("/segments", json!({ "name": big })),
        ("/segments", json!({ "name": "F", "filter": { "all": [{ "field": "email", "op": "contains", "value": big }] } })),
        ("/contact-properties", json!({ "key": "plan", "type": "string", "fallback_value": big })),
        ("/api-keys", json!({ "name": big })),
        ("/webhooks", json!({ "endpoint": format!("https://example.com/{big}"), "events": ["email.sent"] })),
        ("/suppressions", json!({ "email": big })),
        ("/domains", json!({ "name": big })),
        ("/emails", email("subject")),
        ("/emails", email("html")),
        (&format!("/audiences/{segment}/contacts"), json!({ "email": "a@b.test", "last_name": big })),
    ];
    let keys = app.count("api_keys").await;
    // Bodies past their route's limit are refused (413) before the key is looked up, and so are
    // not logged; the rest reach their checks and are.
    let mut logged = 1;
    for (path, body) in cases {
        let answer = app.post(path, body).await;
        assert!((400..500).contains(&answer.status), "{path}: {} {}", answer.status, answer.body);
        logged += i64::from(answer.status != 413);
    }
    for table in ["contacts", "topics", "contact_properties", "webhook_endpoints", "suppressions", "domains", "emails"] {
        assert_eq!(app.count(table).await, 0, "{table}");
    }
    assert_eq!((app.count("segments").await, app.count("api_keys").await), (1, keys));
    assert!(logged > 1, "the sends take ten megabytes and reach their checks");
    app.wait_for_rows("request_logs", logged).await;
    let largest: i32 = sqlx::query_scalar("SELECT max(pg_column_size(request_body)) FROM request_logs").fetch_one(&app.pool).await.unwrap();
    assert!(largest < 64 * 1024, "a huge body is logged as its size and digest, not kept ({largest} bytes)");
}
