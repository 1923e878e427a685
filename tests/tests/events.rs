//! Custom events: definitions by id or name, their rules, and event sends that check their
//! payload and enrol the contact in each enabled automation the event triggers.

use serde_json::{Value, json};
use tests::TestApp;

async fn define(app: &TestApp, name: &str, schema: Value) -> String {
    let created = app.post("/events", json!({ "name": name, "schema": schema })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["object"], "event");
    created.body["id"].as_str().unwrap().to_string()
}

async fn contact(app: &TestApp, email: &str) -> String {
    let created = app.post("/contacts", json!({ "email": email })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["id"].as_str().unwrap().to_string()
}

/// An automation on `event` that only updates the contact (enabled or not).
async fn automation_on(app: &TestApp, event: &str, status: &str) -> String {
    let body = json!({
        "name": format!("On {event}"),
        "status": status,
        "steps": [
            { "key": "start", "type": "trigger", "config": { "event_name": event } },
            { "key": "tag", "type": "contact_update", "config": { "properties": { "seen": true } } },
        ],
        "connections": [{ "from": "start", "to": "tag" }],
    });
    let created = app.post("/automations", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn definitions_are_read_by_id_or_name_searched_replaced_and_deleted_freeing_the_name() {
    let app = TestApp::spawn_unthrottled().await;
    let id = define(&app, "order.placed", json!({ "total": "number", "placed_on": "date" })).await;
    define(&app, "user_signed-up", Value::Null).await;

    let by_id = app.get(&format!("/events/{id}")).await;
    assert_eq!(by_id.status, 200, "{}", by_id.body);
    assert_eq!(by_id.body["schema"], json!({ "total": "number", "placed_on": "date" }));
    let by_name = app.get("/events/order.placed").await;
    assert_eq!(by_name.body["id"], id.as_str());
    assert_eq!(app.get("/events/user_signed-up").await.body["schema"], Value::Null);

    let found = app.get("/events?search=ORDER").await;
    let names: Vec<&str> = found.body["data"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["order.placed"]);
    app.get("/events?search=%20").await.assert_error(422, "invalid_parameter");
    assert_eq!(app.get("/events").await.body["data"].as_array().unwrap().len(), 2);

    let replaced = app.patch("/events/order.placed", json!({ "schema": { "coupon": "string" } })).await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    assert_eq!(app.get(&format!("/events/{id}")).await.body["schema"], json!({ "coupon": "string" }), "update replaces the whole schema");

    let deleted = app.delete("/events/order.placed").await;
    assert_eq!((deleted.status, deleted.body["deleted"].clone()), (200, json!(true)));
    app.get(&format!("/events/{id}")).await.assert_error(404, "not_found");
    app.delete(&format!("/events/{id}")).await.assert_error(404, "not_found");
    let again = define(&app, "order.placed", Value::Null).await;
    assert_ne!(again, id, "a deleted definition frees its name");
}

#[tokio::test]
async fn bad_names_and_schemas_are_refused_and_write_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    define(&app, "held", Value::Null).await;
    let uuid_shaped = "abcdef01-2345-6789-abcd-ef0123456789";
    for name in ["svc:contact.created", "Capital", "1starts.with.digit", "has space", uuid_shaped, &"a".repeat(101), "held"] {
        let refused = app.post("/events", json!({ "name": name })).await;
        refused.assert_error(422, "validation_error");
        assert_eq!(refused.body["errors"][0]["path"], "name", "{name}: {}", refused.body);
    }
    let too_many: serde_json::Map<String, Value> = (0..51).map(|i| (format!("k{i}"), json!("string"))).collect();
    app.post("/events", json!({ "name": "wide", "schema": too_many })).await.assert_error(422, "validation_error");
    let bad_type = app.post("/events", json!({ "name": "typed", "schema": { "when": "datetime", "ok": "string" } })).await;
    bad_type.assert_error(422, "validation_error");
    assert_eq!(bad_type.body["errors"][0]["path"], "schema.when");
    app.post("/events", json!({})).await.assert_error(422, "missing_required_field");
    assert_eq!(app.count("event_definitions").await, 1, "refusals write nothing");
}

#[tokio::test]
async fn an_event_send_checks_its_contact_and_payload_and_a_refusal_writes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    define(&app, "trial.started", json!({ "plan": "string", "seats": "number", "annual": "boolean", "ends_on": "date" })).await;
    automation_on(&app, "trial.started", "enabled").await;
    let contact_id = contact(&app, "ada@example.com").await;
    let send = |body: Value| app.post("/events/send", body);

    send(json!({ "event": "trial.started" })).await.assert_error(422, "validation_error");
    send(json!({ "event": "trial.started", "contact_id": contact_id, "email": "ada@example.com" })).await.assert_error(422, "validation_error");
    send(json!({ "contact_id": contact_id })).await.assert_error(422, "missing_required_field");
    send(json!({ "event": "never.defined", "contact_id": contact_id })).await.assert_error(404, "not_found");
    send(json!({ "event": "trial.started", "email": "nobody@example.com" })).await.assert_error(404, "not_found");
    send(json!({ "event": "trial.started", "contact_id": "0190aaaa-0000-7000-8000-000000000000" })).await.assert_error(404, "not_found");

    let wrong = send(json!({ "event": "trial.started", "contact_id": contact_id,
        "payload": { "plan": 3, "seats": "two", "annual": "yes", "ends_on": "2026-02-30", "extra": [1] } })).await;
    wrong.assert_error(422, "validation_error");
    let mut paths: Vec<&str> = wrong.body["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    paths.sort();
    assert_eq!(paths, ["payload.annual", "payload.ends_on", "payload.plan", "payload.seats"], "every bad key, and undeclared keys pass");
    let zoned_without_zone = send(json!({ "event": "trial.started", "contact_id": contact_id, "payload": { "ends_on": "2026-02-28T10:00:00" } })).await;
    zoned_without_zone.assert_error(422, "validation_error");

    // 16 KB of JSON passes; one byte more does not.
    let filler = |n: usize| json!({ "note": "x".repeat(n) });
    let overhead = serde_json::to_vec(&filler(0)).unwrap().len();
    let over = send(json!({ "event": "trial.started", "contact_id": contact_id, "payload": filler(16 * 1024 - overhead + 1) })).await;
    over.assert_error(422, "validation_error");
    assert_eq!(over.body["errors"][0]["path"], "payload");
    assert_eq!((app.count("custom_events").await, app.count("automation_runs").await), (0, 0), "refused sends write nothing");

    let at_limit = send(json!({ "event": "trial.started", "contact_id": contact_id, "payload": filler(16 * 1024 - overhead) })).await;
    assert_eq!(at_limit.status, 202, "{}", at_limit.body);
    let fine = send(json!({ "event": "trial.started", "email": "ADA@example.com",
        "payload": { "plan": "pro", "seats": 3, "annual": null, "ends_on": "2026-02-28", "undeclared": { "any": "thing" } } })).await;
    assert_eq!(fine.status, 202, "{}", fine.body);
    let zoned = send(json!({ "event": "trial.started", "contact_id": contact_id, "payload": { "ends_on": "2026-02-28T23:30:00-05:00" } })).await;
    assert_eq!(zoned.status, 202, "{}", zoned.body);
    assert_eq!(fine.body["contact_id"], contact_id.as_str());

    // A deleted contact is unknown.
    app.delete(&format!("/contacts/{contact_id}")).await;
    send(json!({ "event": "trial.started", "contact_id": contact_id })).await.assert_error(404, "not_found");
    assert_eq!(app.count("custom_events").await, 3);
}

#[tokio::test]
async fn each_enabled_automation_the_event_triggers_gets_exactly_one_run_in_the_same_transaction() {
    let app = TestApp::spawn_unthrottled().await;
    define(&app, "cart.abandoned", Value::Null).await;
    define(&app, "other.thing", Value::Null).await;
    let first = automation_on(&app, "cart.abandoned", "enabled").await;
    let second = automation_on(&app, "cart.abandoned", "enabled").await;
    automation_on(&app, "cart.abandoned", "disabled").await;
    automation_on(&app, "other.thing", "enabled").await;
    let contact_id = contact(&app, "bob@example.com").await;

    // A sending-access key may fire events.
    let (_, sending_key) = app.create_key(json!({ "name": "events", "permission": "sending_access" })).await;
    let sent = app
        .request_as(&sending_key, reqwest::Method::POST, "/events/send")
        .json(&json!({ "event": "cart.abandoned", "contact_id": contact_id, "payload": { "items": 2 } }))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 202);
    let body: Value = sent.json().await.unwrap();
    assert_eq!(body["object"], "event");
    let mut enrolled: Vec<String> = body["runs"].as_array().unwrap().iter().map(|r| r["automation_id"].as_str().unwrap().to_string()).collect();
    enrolled.sort();
    let mut expected = vec![first, second];
    expected.sort();
    assert_eq!(enrolled, expected);
    let runs: Vec<(String, Value, Option<uuid::Uuid>)> =
        sqlx::query_as("SELECT trigger_event, event_data, event_id FROM automation_runs").fetch_all(&app.pool).await.unwrap();
    assert_eq!(runs.len(), 2);
    for (trigger, data, event_id) in runs {
        assert_eq!((trigger.as_str(), data), ("cart.abandoned", json!({ "items": 2 })));
        assert_eq!(event_id.map(|id| id.to_string()).as_deref(), body["id"].as_str());
    }
    // A sending-access key reads no definitions.
    let read = app.request_as(&sending_key, reqwest::Method::GET, "/events").send().await.unwrap();
    assert_eq!(read.status(), 401);
}

#[tokio::test]
async fn a_nul_or_a_ten_megabyte_string_in_any_event_or_automation_input_is_refused_and_changes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    define(&app, "held", Value::Null).await;
    let contact_id = contact(&app, "nul@example.com").await;
    let big = "x".repeat(10 * 1024 * 1024);
    let four_xx = |status: u16, body: &Value| assert!((400..500).contains(&status), "{status} {body}");
    for value in [json!("a\u{0}b"), json!(big)] {
        let bodies = [
            ("/events", json!({ "name": value })),
            ("/events", json!({ "name": "fine", "schema": { value.as_str().unwrap(): "string" } })),
            ("/events/send", json!({ "event": value, "contact_id": contact_id })),
            ("/events/send", json!({ "event": "held", "email": value })),
            ("/events/send", json!({ "event": "held", "contact_id": value })),
            ("/events/send", json!({ "event": "held", "contact_id": contact_id, "payload": { "note": value } })),
            ("/automations", json!({ "name": value, "steps": [], "connections": [] })),
            ("/automations", json!({ "name": "n", "steps": [{ "key": value, "type": "trigger", "config": { "event_name": "held" } }], "connections": [] })),
            ("/automations", json!({ "name": "n", "steps": [{ "key": "start", "type": "trigger", "config": { "event_name": value } }], "connections": [] })),
        ];
        for (path, body) in bodies {
            let answer = app.post(path, body).await;
            four_xx(answer.status, &answer.body);
        }
        let answer = app.patch("/events/held", json!({ "schema": { "k": value } })).await;
        four_xx(answer.status, &answer.body);
    }
    for path in ["/events?search=a%00b", "/events/a%00b", "/automations?status=a%00b", "/automations/a%00b/runs"] {
        let answer = app.get(path).await;
        four_xx(answer.status, &answer.body);
    }
    let long = app.get(&format!("/events?search={}", "x".repeat(60_000))).await;
    four_xx(long.status, &long.body);
    assert_eq!(app.get("/events/held").await.body["schema"], Value::Null, "nothing changed");
    assert_eq!((app.count("event_definitions").await, app.count("custom_events").await), (1, 0));
    assert_eq!((app.count("automations").await, app.count("automation_runs").await), (0, 0));
}
