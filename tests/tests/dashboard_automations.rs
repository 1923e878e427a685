//! An automation's page in the dashboard (#28): its graph drawn from the trigger down with each
//! step's counts over the latest runs (the API's `step_counts`), a branch's two ways labelled,
//! and the steps table saying the same in text.

use serde_json::json;
use tests::dashboard::get;
use tests::eventually;
use tests::inbox::person;

#[tokio::test]
async fn an_automations_graph_is_drawn_with_each_steps_counts_over_its_runs() {
    let mut app = tests::TestApp::spawn_unthrottled().await;
    app.start_workers();
    let viewer = person(&app, app.team_id, "viewer", "Vi").await;
    assert_eq!(app.post("/contact-properties", json!({ "key": "plan", "type": "string" })).await.status, 201);
    assert_eq!(app.post("/events", json!({ "name": "order.placed" })).await.status, 201);
    let steps = json!([
        { "key": "start", "type": "trigger", "config": { "event_name": "order.placed" } },
        { "key": "is_pro", "type": "condition", "config": { "type": "rule", "field": "plan", "operator": "eq", "value": "pro" } },
        { "key": "mark", "type": "contact_update", "config": { "last_name": "Customer" } },
        { "key": "later", "type": "delay", "config": { "duration": "1 day" } }
    ]);
    let connections = json!([
        { "from": "start", "to": "is_pro" },
        { "from": "is_pro", "to": "mark", "type": "condition_met" },
        { "from": "is_pro", "to": "later", "type": "condition_not_met" }
    ]);
    let created = app.post("/automations", json!({ "name": "Orders", "status": "enabled", "steps": steps, "connections": connections })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    for (email, plan) in [("pro@example.com", "pro"), ("free@example.com", "free"), ("free2@example.com", "free")] {
        let contact = app.post("/contacts", json!({ "email": email, "properties": { "plan": plan } })).await.body["id"].as_str().unwrap().to_string();
        let sent = app.post("/events/send", json!({ "event": "order.placed", "contact_id": contact })).await;
        assert_eq!(sent.status, 202, "{}", sent.body);
    }

    let counts = eventually(|| async {
        let automation = app.get(&format!("/automations/{id}")).await.body;
        let counts = automation["step_counts"].clone();
        // Every run past the branch, each step it reached settled.
        let rows = counts.as_array().cloned().unwrap_or_default();
        let entered = |key: &str| rows.iter().find(|c| c["key"] == key).map_or(0, |c| c["entered"].as_i64().unwrap());
        let settled = rows.iter().all(|c| c["completed"].as_i64().unwrap() + c["waiting"].as_i64().unwrap() == c["entered"].as_i64().unwrap());
        (settled && entered("mark") + entered("later") == 3).then_some(counts)
    })
    .await;
    let by_key = |key: &str| counts.as_array().unwrap().iter().find(|c| c["key"] == key).unwrap().clone();
    assert_eq!((by_key("start")["entered"].as_i64(), by_key("is_pro")["completed"].as_i64()), (Some(3), Some(3)), "{counts}");
    assert_eq!((by_key("mark")["entered"].as_i64(), by_key("later")["waiting"].as_i64()), (Some(1), Some(2)), "{counts}");
    assert!(app.get("/automations").await.body["data"][0].get("step_counts").is_none(), "a list carries no counts");

    let (status, page) = get(&app, &viewer, &format!("/app/automations/{id}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("<svg role=\"img\""), "the graph is drawn: {page}");
    assert!(page.contains("3 reached · 3 done") && page.contains("2 reached · 0 done · 2 waiting") && page.contains("condition not met"), "{page}");
    let (_, list) = get(&app, &viewer, "/app/automations").await;
    assert!(list.contains("<code>order.placed</code>"), "the list shows the trigger: {list}");
}
