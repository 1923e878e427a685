//! Contacts (#6, first part): upsert by address, typed properties, consent records, erasure,
//! the plan's contact limit, events, and every refusal writing nothing.

use serde_json::{Value, json};
use tests::TestApp;

async fn create(app: &TestApp, body: Value) -> String {
    let created = app.post("/contacts", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["object"], "contact");
    created.body["id"].as_str().unwrap().to_string()
}

async fn event_types(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar("SELECT type FROM events WHERE type LIKE 'contact.%' ORDER BY id").fetch_all(&app.pool).await.unwrap()
}

async fn consent_choices(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar("SELECT choice FROM consent_records ORDER BY id").fetch_all(&app.pool).await.unwrap()
}

#[tokio::test]
async fn a_repeat_create_updates_the_same_contact_and_never_resubscribes_it() {
    let app = TestApp::spawn().await;
    let id = create(&app, json!({ "email": "Jo@Example.com", "first_name": "Jo", "unsubscribed": true })).await;
    let again = create(&app, json!({ "email": "jo@example.COM", "last_name": "Doe", "unsubscribed": false })).await;
    assert_eq!(again, id, "the existing id is answered");
    let contact = app.get("/contacts/JO@example.com").await;
    assert_eq!(contact.status, 200, "{}", contact.body);
    assert_eq!(
        (&contact.body["email"], &contact.body["first_name"], &contact.body["last_name"], &contact.body["unsubscribed"]),
        (&json!("jo@example.com"), &json!("Jo"), &json!("Doe"), &json!(true))
    );
    assert_eq!(app.get(&format!("/contacts/{id}")).await.body["id"], id.as_str());
    assert_eq!(event_types(&app).await, ["contact.created", "contact.updated"]);
    assert_eq!(consent_choices(&app).await, ["unsubscribed"]);
}

#[tokio::test]
async fn properties_are_typed_by_their_first_value_merged_and_removed_with_null() {
    let app = TestApp::spawn().await;
    let id = create(&app, json!({ "email": "a@example.com", "properties": { "plan": "pro", "seats": 3, "vip": false } })).await;
    let kinds: Vec<(String, String)> =
        sqlx::query_as("SELECT key, type FROM contact_properties ORDER BY key").fetch_all(&app.pool).await.unwrap();
    assert_eq!(kinds, [("plan".into(), "string".into()), ("seats".into(), "number".into()), ("vip".into(), "boolean".into())]);

    let patched = app.patch(&format!("/contacts/{id}"), json!({ "properties": { "seats": 5, "vip": null } })).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let contact = app.get(&format!("/contacts/{id}")).await.body;
    assert_eq!(contact["properties"], json!({ "plan": "pro", "seats": 5 }));

    let wrong = app.patch(&format!("/contacts/{id}"), json!({ "properties": { "seats": "many", "plan": 1 } })).await;
    wrong.assert_error(422, "invalid_parameter");
    let paths: Vec<&str> = wrong.body["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["properties.plan", "properties.seats"], "each wrong key is named");
    let other = app.post("/contacts", json!({ "email": "b@example.com", "properties": { "seats": true } })).await;
    other.assert_error(422, "invalid_parameter");
    assert_eq!(app.count("contacts").await, 1, "the refused create wrote nothing");
    assert_eq!(app.get(&format!("/contacts/{id}")).await.body["properties"], json!({ "plan": "pro", "seats": 5 }));

    let listed = app.get("/contacts").await.body;
    assert!(listed["data"][0].get("properties").is_none_or(Value::is_null), "list items omit properties");
    assert!(listed.get("has_more").is_none());
}

#[tokio::test]
async fn the_hundred_and_first_property_is_refused_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let hundred: serde_json::Map<String, Value> = (0..100).map(|n| (format!("p{n}"), json!(n))).collect();
    let id = create(&app, json!({ "email": "a@example.com", "properties": hundred })).await;
    let more = app.patch(&format!("/contacts/{id}"), json!({ "properties": { "p100": 1 } })).await;
    more.assert_error(422, "validation_error");
    assert_eq!(more.body["errors"][0]["path"], "properties.p100");
    assert_eq!(app.count("contact_properties").await, 100);
    let created = app.post("/contacts", json!({ "email": "b@example.com", "properties": { "new_key": "x" } })).await;
    created.assert_error(422, "validation_error");
    assert_eq!(app.count("contacts").await, 1);
}

#[tokio::test]
async fn unsubscribing_and_resubscribing_write_consent_records_kept_after_erasure() {
    let app = TestApp::spawn().await;
    let id = create(&app, json!({ "email": "a@example.com" })).await;
    assert_eq!(app.patch(&format!("/contacts/{id}"), json!({ "unsubscribed": true })).await.status, 200);
    assert_eq!(app.patch(&format!("/contacts/{id}"), json!({ "unsubscribed": false })).await.status, 200);
    assert_eq!(app.patch(&format!("/contacts/{id}"), json!({ "first_name": "A" })).await.status, 200);
    assert_eq!(consent_choices(&app).await, ["unsubscribed", "subscribed"], "only changes are recorded");

    let deleted = app.delete(&format!("/contacts/{id}")).await;
    assert_eq!((deleted.status, &deleted.body["deleted"]), (200, &json!(true)));
    app.get(&format!("/contacts/{id}")).await.assert_error(404, "not_found");
    let kept: Vec<(Option<uuid::Uuid>, Vec<u8>)> =
        sqlx::query_as("SELECT contact_id, email_hash FROM consent_records").fetch_all(&app.pool).await.unwrap();
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(|(contact, hash)| contact.is_none() && *hash == schema::secret::hash("a@example.com")));
    let as_was: Value = sqlx::query_scalar("SELECT data FROM events WHERE type = 'contact.deleted'").fetch_one(&app.pool).await.unwrap();
    assert_eq!((&as_was["email"], &as_was["first_name"]), (&json!("a@example.com"), &json!("A")), "the contact as it was");
    let personal: i64 = sqlx::query_scalar("SELECT count(*) FROM contacts WHERE email = 'a@example.com'").fetch_one(&app.pool).await.unwrap();
    assert_eq!(personal, 0);
}

#[tokio::test]
async fn contact_events_name_the_segments_holding_the_contact_as_the_resend_sdks_read_them() {
    let app = TestApp::spawn().await;
    let explicit = app.post("/segments", json!({ "name": "Hand-picked" })).await.body["id"].as_str().unwrap().to_string();
    let by_filter = app.post("/segments", json!({ "name": "Example people", "filter": { "all": [{ "field": "email", "op": "contains", "value": "@example.com" }] } })).await;
    assert_eq!(by_filter.status, 201, "{}", by_filter.body);
    let by_filter = by_filter.body["id"].as_str().unwrap().to_string();
    let held = create(&app, json!({ "email": "held@example.com", "segments": [{ "id": explicit }] })).await;
    create(&app, json!({ "email": "alone@elsewhere.test" })).await;
    let data = |email: &'static str, kind: &'static str| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, Value>("SELECT data FROM events WHERE type = $1 AND data->>'email' = $2").bind(kind).bind(email).fetch_one(&pool).await.unwrap()
        }
    };
    let created = data("held@example.com", "contact.created").await;
    let mut ids: Vec<String> = serde_json::from_value(created["segment_ids"].clone()).unwrap();
    ids.sort();
    let mut expected = vec![explicit.clone(), by_filter.clone()];
    expected.sort();
    assert_eq!(ids, expected, "by membership and by filter: {created}");
    assert!(created["audience_id"] == json!(explicit) || created["audience_id"] == json!(by_filter), "the first of them: {created}");
    let alone = data("alone@elsewhere.test", "contact.created").await;
    assert_eq!((&alone["segment_ids"], &alone["audience_id"]), (&json!([]), &json!("")), "a string, which the Rust SDK needs");

    assert_eq!(app.delete(&format!("/contacts/{held}")).await.status, 200);
    let deleted = data("held@example.com", "contact.deleted").await;
    assert_eq!(deleted["segment_ids"].as_array().unwrap().len(), 2, "the segments that held it just before: {deleted}");
}

#[tokio::test]
async fn the_plan_contact_limit_and_bad_input_are_refused_and_write_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    sqlx::query("UPDATE plans SET contact_limit = 1 WHERE code = 'free'").execute(&app.pool).await.unwrap();
    let id = create(&app, json!({ "email": "a@example.com" })).await;
    let over = app.post("/contacts", json!({ "email": "b@example.com" })).await;
    over.assert_error(422, "validation_error");
    assert_eq!(over.body["message"], "Contact limit reached.");
    create(&app, json!({ "email": "A@example.com", "first_name": "Still" })).await;

    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({ "email": "not an address" }), 400, "validation_error"),
        (json!({ "first_name": "No address" }), 422, "missing_required_field"),
        (json!({ "email": "c@example.com", "first_name": "x".repeat(201) }), 400, "validation_error"),
        (json!({ "email": "c@example.com", "properties": { "nested": { "a": 1 } } }), 422, "invalid_parameter"),
        (json!({ "email": "c@example.com", "properties": { "9lives": 1 } }), 422, "invalid_parameter"),
        (json!({ "email": "a@example.com", "topics": [{ "id": "t", "subscription": "opt_in" }] }), 422, "invalid_parameter"),
    ];
    for (body, status, name) in cases {
        app.post("/contacts", body.clone()).await.assert_error(status, name);
    }
    sqlx::query("UPDATE plans SET contact_limit = NULL WHERE code = 'free'").execute(&app.pool).await.unwrap();
    create(&app, json!({ "email": "b@example.com" })).await;
    let taken = app.patch(&format!("/contacts/{id}"), json!({ "email": "B@example.com" })).await;
    taken.assert_error(422, "validation_error");
    assert_eq!(app.get(&format!("/contacts/{id}")).await.body["email"], "a@example.com");
    assert_eq!(app.count("contacts").await, 2);
    assert_eq!(app.count("contact_properties").await, 0);

    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    for (method, path) in [
        (reqwest::Method::GET, format!("/contacts/{id}")),
        (reqwest::Method::GET, "/contacts/a@example.com".to_string()),
        (reqwest::Method::PATCH, format!("/contacts/{id}")),
        (reqwest::Method::DELETE, format!("/contacts/{id}")),
    ] {
        let request = app.request_as(&other, method, &path).json(&json!({ "first_name": "Mallory" }));
        tests::Answer::from(request.send().await.unwrap()).await.assert_error(404, "not_found");
    }
    assert_eq!(app.get(&format!("/contacts/{id}")).await.body["first_name"], "Still", "another team changed nothing");
}

#[tokio::test]
async fn a_sending_key_reads_contacts_but_cannot_write_them() {
    let app = TestApp::spawn().await;
    let id = create(&app, json!({ "email": "a@example.com" })).await;
    let (_, sending) = app.create_key(json!({ "name": "send", "permission": "sending_access" })).await;
    let read = tests::Answer::from(app.request_as(&sending, reqwest::Method::GET, &format!("/contacts/{id}")).send().await.unwrap()).await;
    assert_eq!(read.status, 200, "{}", read.body);
    let write = app.request_as(&sending, reqwest::Method::POST, "/contacts").json(&json!({ "email": "b@example.com" }));
    tests::Answer::from(write.send().await.unwrap()).await.assert_error(401, "restricted_api_key");
}

#[tokio::test]
async fn contact_properties_are_declared_read_given_fallbacks_and_deleted_from_every_contact() {
    let app = TestApp::spawn_unthrottled().await;
    let created = app.post("/contact-properties", json!({ "key": "plan", "type": "string", "fallback_value": "free" })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let read = app.get(&format!("/contact-properties/{id}")).await.body;
    assert_eq!((&read["key"], &read["type"], &read["fallback_value"]), (&json!("plan"), &json!("string"), &json!("free")));

    let contact = create(&app, json!({ "email": "a@example.com", "properties": { "plan": "pro", "seats": 2 } })).await;
    let wrong = app.post("/contacts", json!({ "email": "b@example.com", "properties": { "plan": 3 } })).await;
    wrong.assert_error(422, "invalid_parameter");
    let listed = app.get("/contact-properties").await.body;
    let keys: Vec<&str> = listed["data"].as_array().unwrap().iter().map(|p| p["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["plan", "seats"], "seats was declared by its first use");

    let refusals: Vec<(Value, u16, &str)> = vec![
        (json!({ "key": "plan", "type": "string" }), 422, "validation_error"),
        (json!({ "key": "1st", "type": "string" }), 400, "validation_error"),
        (json!({ "key": "ok", "type": "date" }), 400, "validation_error"),
        (json!({ "key": "ok", "type": "number", "fallback_value": "zero" }), 400, "validation_error"),
        (json!({ "type": "number" }), 422, "missing_required_field"),
    ];
    for (body, status, name) in refusals {
        app.post("/contact-properties", body.clone()).await.assert_error(status, name);
    }
    app.patch(&format!("/contact-properties/{id}"), json!({ "type": "number" })).await.assert_error(422, "invalid_parameter");
    app.patch(&format!("/contact-properties/{id}"), json!({ "fallback_value": 1 })).await.assert_error(400, "validation_error");
    assert_eq!(app.count("contact_properties").await, 2);

    assert_eq!(app.patch(&format!("/contact-properties/{id}"), json!({ "fallback_value": null })).await.status, 200);
    assert_eq!(app.get(&format!("/contact-properties/{id}")).await.body["fallback_value"], Value::Null);
    let deleted = app.delete(&format!("/contact-properties/{id}")).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(app.get(&format!("/contacts/{contact}")).await.body["properties"], json!({ "seats": 2 }), "the value went with it");
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let seats = listed["data"][1]["id"].as_str().unwrap();
    let theirs = app.request_as(&other, reqwest::Method::DELETE, &format!("/contact-properties/{seats}"));
    tests::Answer::from(theirs.send().await.unwrap()).await.assert_error(404, "not_found");
    assert_eq!(app.count("contact_properties").await, 1);
}
