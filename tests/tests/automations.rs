//! Automations: whole-graph validation, immutable versions, runs executed step by step as
//! durable rows (a delay is a due time in the database), the built-in triggers, and a worker
//! killed amid a thousand runs.

use futures::StreamExt;
use serde_json::{Value, json};
use std::time::Duration;
use tests::mail::{self, Mail, RECIPIENT_DOMAIN, SENDING_DOMAIN};
use tests::receiver::Receiver;
use tests::{TestApp, eventually};

fn trigger(event: &str) -> Value {
    json!({ "key": "start", "type": "trigger", "config": { "event_name": event } })
}

fn step(key: &str, kind: &str, config: Value) -> Value {
    json!({ "key": key, "type": kind, "config": config })
}

fn edge(from: &str, to: &str) -> Value {
    json!({ "from": from, "to": to })
}

fn branch(from: &str, to: &str, kind: &str) -> Value {
    json!({ "from": from, "to": to, "type": kind })
}

async fn create(app: &TestApp, status: &str, steps: Vec<Value>, connections: Vec<Value>) -> String {
    let created = app.post("/automations", json!({ "name": "Flow", "status": status, "steps": steps, "connections": connections })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["object"], "automation");
    created.body["id"].as_str().unwrap().to_string()
}

async fn define(app: &TestApp, name: &str) {
    assert_eq!(app.post("/events", json!({ "name": name })).await.status, 201);
}

async fn contact(app: &TestApp, body: Value) -> String {
    let created = app.post("/contacts", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["id"].as_str().unwrap().to_string()
}

async fn fire(app: &TestApp, event: &str, contact_id: &str, payload: Value) -> Vec<String> {
    let sent = app.post("/events/send", json!({ "event": event, "contact_id": contact_id, "payload": payload })).await;
    assert_eq!(sent.status, 202, "{}", sent.body);
    sent.body["runs"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

async fn run_of(app: &TestApp, automation_id: &str, run_id: &str) -> Value {
    let run = app.get(&format!("/automations/{automation_id}/runs/{run_id}")).await;
    assert_eq!(run.status, 200, "{}", run.body);
    run.body
}

/// Waits until the run reaches `status`, and answers it.
async fn wait_for_run(app: &TestApp, automation_id: &str, run_id: &str, status: &str) -> Value {
    let started = std::time::Instant::now();
    loop {
        let run = run_of(app, automation_id, run_id).await;
        if run["status"] == status {
            return run;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "run never reached {status}: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn published_template(app: &TestApp, html: &str) -> String {
    let created = app
        .post("/templates", json!({ "name": "Welcome", "from": format!("Acme <hello@{SENDING_DOMAIN}>"), "subject": "Hi {{{FIRST_NAME|there}}}", "html": html }))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    assert_eq!(app.post(&format!("/templates/{id}/publish"), json!({})).await.status, 200);
    id
}

#[tokio::test]
async fn every_problem_of_a_graph_is_refused_at_once_with_one_error_per_step_key_and_nothing_is_written() {
    let app = TestApp::spawn_unthrottled().await;
    define(&app, "signed.up").await;
    let draft = app.post("/templates", json!({ "name": "Draft only", "subject": "s", "html": "<p>x</p>" })).await.body["id"].as_str().unwrap().to_string();
    let refused = |steps: Vec<Value>, connections: Vec<Value>| {
        let app = &app;
        async move {
            let answer = app.post("/automations", json!({ "name": "Bad", "steps": steps, "connections": connections })).await;
            answer.assert_error(422, "validation_error");
            answer.body["errors"].as_array().unwrap().iter().map(|e| (e["path"].as_str().unwrap().to_string(), e["message"].as_str().unwrap().to_string())).collect::<Vec<_>>()
        }
    };
    let wait = || step("wait", "delay", json!({ "duration": "1 day" }));

    let two = refused(vec![trigger("signed.up"), json!({ "key": "again", "type": "trigger", "config": { "event_name": "signed.up" } })], vec![]).await;
    assert_eq!(two.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), ["start", "again"]);
    let unreachable = refused(vec![trigger("signed.up"), wait(), step("lost", "delay", json!({ "duration": "1 day" }))], vec![edge("start", "wait")]).await;
    assert_eq!(unreachable.len(), 1);
    assert_eq!(unreachable[0].0, "lost");
    assert!(unreachable[0].1.contains("not reachable"));
    let cycle = refused(
        vec![trigger("signed.up"), wait(), step("again", "delay", json!({ "duration": "1 day" }))],
        vec![edge("start", "wait"), edge("wait", "again"), edge("again", "wait")],
    )
    .await;
    assert!(cycle.iter().all(|(_, m)| m.contains("cycle")) && cycle.len() == 2, "{cycle:?}");
    let mut many = vec![trigger("signed.up")];
    let mut chain = Vec::new();
    for i in 0..150 {
        many.push(step(&format!("s{i}"), "delay", json!({ "duration": "1 day" })));
        chain.push(edge(&if i == 0 { "start".to_string() } else { format!("s{}", i - 1) }, &format!("s{i}")));
    }
    let answer = app.post("/automations", json!({ "name": "Long", "steps": many, "connections": chain })).await;
    assert_eq!(answer.status, 422, "151 steps: {}", answer.body);

    let condition = step("check", "condition", json!({ "type": "rule", "field": "email", "operator": "contains", "value": "@" }));
    let mixed = refused(
        vec![
            trigger("signed.up"),
            condition,
            step("far", "delay", json!({ "duration": "31 days" })),
            step("mail", "send_email", json!({ "template": { "id": draft } })),
            step("join", "add_to_segment", json!({ "segment_id": "0190aaaa-0000-7000-8000-000000000000" })),
            step("listen", "wait_for_event", json!({})),
            step("erase", "contact_delete", json!({})),
        ],
        vec![edge("start", "check"), edge("check", "far"), branch("check", "mail", "condition_met"), edge("mail", "join"), branch("join", "listen", "timeout")],
    )
    .await;
    let find = |key: &str| mixed.iter().find(|(p, _)| p == key).map(|(_, m)| m.clone()).unwrap_or_else(|| panic!("no error for {key}: {mixed:?}"));
    assert!(find("check").contains("never `default`"));
    assert!(find("far").contains("30 days"));
    assert!(find("mail").contains("only a draft"), "{}", find("mail"));
    assert!(find("join").contains("timeout"));
    assert!(find("listen").contains("not available"));
    assert!(find("erase").contains("not available"));
    let keys: Vec<&str> = mixed.iter().map(|(p, _)| p.as_str()).collect();
    let mut unique = keys.clone();
    unique.dedup();
    assert_eq!(keys.len(), unique.len(), "one entry per step key: {keys:?}");

    let unknown_event = refused(vec![trigger("never.defined")], vec![]).await;
    assert_eq!(unknown_event[0].0, "start");
    let unknown_property = refused(
        vec![trigger("signed.up"), step("check", "condition", json!({ "type": "rule", "field": "plan", "operator": "eq", "value": "pro" }))],
        vec![edge("start", "check")],
    )
    .await;
    assert!(unknown_property[0].1.contains("not a declared contact property"), "{unknown_property:?}");
    app.post("/automations", json!({ "name": "No steps", "connections": [] })).await.assert_error(422, "missing_required_field");
    assert_eq!((app.count("automations").await, app.count("automation_versions").await), (0, 0));
}

#[tokio::test]
async fn automations_are_read_listed_versioned_stopped_and_deleted() {
    let app = TestApp::spawn_unthrottled().await;
    define(&app, "signed.up").await;
    let steps = vec![trigger("signed.up"), step("wait", "delay", json!({ "duration": "2 days" }))];
    let id = create(&app, "enabled", steps.clone(), vec![edge("start", "wait")]).await;
    let disabled = create(&app, "disabled", steps.clone(), vec![edge("start", "wait")]).await;

    let read = app.get(&format!("/automations/{id}")).await.body;
    assert_eq!((read["status"].as_str(), read["version"].as_i64(), read["trigger"].as_str()), (Some("enabled"), Some(1), Some("signed.up")));
    assert_eq!(read["steps"][1]["config"], json!({ "duration": "2 days" }));
    assert_eq!(read["connections"], json!([{ "from": "start", "to": "wait", "type": "default" }]));
    let listed = app.get("/automations?status=disabled").await.body;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed["data"][0]["id"], disabled.as_str());
    assert!(listed["data"][0].get("steps").is_none(), "lists leave graphs out");
    app.get("/automations?status=paused").await.assert_error(422, "invalid_parameter");

    let renamed = app.patch(&format!("/automations/{id}"), json!({ "name": "Renamed", "status": "disabled" })).await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert_eq!(app.get(&format!("/automations/{id}")).await.body["version"], 1, "no graph, no new version");
    let next = vec![trigger("signed.up"), step("wait", "delay", json!({ "duration": "3 days" }))];
    assert_eq!(app.patch(&format!("/automations/{id}"), json!({ "steps": next, "connections": [edge("start", "wait")] })).await.status, 200);
    let read = app.get(&format!("/automations/{id}")).await.body;
    assert_eq!((read["version"].as_i64(), read["name"].as_str(), read["status"].as_str()), (Some(2), Some("Renamed"), Some("disabled")));
    let bad = app.patch(&format!("/automations/{id}"), json!({ "steps": [trigger("signed.up")], "connections": [edge("start", "nowhere")] })).await;
    bad.assert_error(422, "validation_error");
    assert_eq!(app.count("automation_versions").await, 3, "a refused graph writes no version");
    app.patch(&format!("/automations/{id}"), json!({ "steps": [trigger("signed.up")] })).await.assert_error(422, "missing_required_field");

    let runs = app.get(&format!("/automations/{id}/runs?status=running,bogus")).await;
    runs.assert_error(422, "invalid_parameter");
    assert!(runs.body["message"].as_str().unwrap().contains("bogus"));
    assert_eq!(app.get(&format!("/automations/{id}/runs?status=running,failed")).await.status, 200);

    let copied = app.post(&format!("/automations/{id}/duplicate"), json!({})).await;
    assert_eq!((copied.status, &copied.body["object"]), (201, &json!("automation")), "{}", copied.body);
    let copy = app.get(&format!("/automations/{}", copied.body["id"].as_str().unwrap())).await.body;
    assert_eq!((copy["name"].as_str(), copy["status"].as_str(), copy["version"].as_i64()), (Some("Renamed (copy)"), Some("disabled"), Some(1)));
    assert_eq!((&copy["steps"], &copy["connections"]), (&read["steps"], &read["connections"]), "the current version's graph");
    app.post(&format!("/automations/{}/duplicate", uuid::Uuid::now_v7()), json!({})).await.assert_error(404, "not_found");

    let stopped = app.post(&format!("/automations/{id}/stop"), json!({})).await;
    assert_eq!((stopped.status, &stopped.body), (200, &json!({ "object": "automation", "id": id, "status": "disabled" })));
    let deleted = app.delete(&format!("/automations/{id}")).await;
    assert_eq!(deleted.body["deleted"], true);
    app.get(&format!("/automations/{id}")).await.assert_error(404, "not_found");
    app.get(&format!("/automations/{id}/runs")).await.assert_error(404, "not_found");
    app.patch(&format!("/automations/{id}"), json!({ "name": "x" })).await.assert_error(404, "not_found");
    app.get("/automations/not-an-id").await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_run_branches_updates_the_contact_sends_with_event_data_and_reports_every_step() {
    let mail = mail::setup_with(tests::smtp::SmtpSink::start().await, |c| c.webhook_allow_private = true).await;
    let app = &mail.app;
    let receiver = Receiver::start().await;
    let hook = app.post("/webhooks", json!({ "endpoint": receiver.url("/hook"),
        "events": ["automation.run.started", "automation.run.completed", "automation.run.failed"] })).await;
    assert_eq!(hook.status, 201, "{}", hook.body);
    app.post("/contact-properties", json!({ "key": "plan", "type": "string" })).await;
    define(app, "order.placed").await;
    let template = published_template(app, "<p>Thanks {{{FIRST_NAME}}} for order {{{event.order}}} ({{{event.total}}})</p>").await;
    let steps = vec![
        trigger("order.placed"),
        step("is_pro", "condition", json!({ "type": "rule", "field": "plan", "operator": "eq", "value": "pro" })),
        step("mark", "contact_update", json!({ "last_name": "Customer", "properties": { "vip": true } })),
        step("thank", "send_email", json!({ "template": { "id": template } })),
        step("skip", "delay", json!({ "duration": "1 day" })),
    ];
    let connections = vec![edge("start", "is_pro"), branch("is_pro", "skip", "condition_not_met"), branch("is_pro", "mark", "condition_met"), edge("mark", "thank")];
    let id = create(app, "enabled", steps, connections).await;
    let pro = contact(app, json!({ "email": format!("pro@{RECIPIENT_DOMAIN}"), "first_name": "Ada", "properties": { "plan": "pro" } })).await;
    let free = contact(app, json!({ "email": format!("free@{RECIPIENT_DOMAIN}"), "properties": { "plan": "free" } })).await;

    let run = fire(app, "order.placed", &pro, json!({ "order": "A-17", "total": 42 })).await.remove(0);
    let done = wait_for_run(app, &id, &run, "completed").await;
    let order: Vec<(&str, &str)> = done["steps"].as_array().unwrap().iter().map(|s| (s["key"].as_str().unwrap(), s["status"].as_str().unwrap())).collect();
    assert_eq!(order, [("start", "completed"), ("is_pro", "completed"), ("mark", "completed"), ("thank", "completed"), ("skip", "skipped")]);
    assert_eq!(done["steps"][1]["outcome"], json!({ "branch": "condition_met" }));
    let step = &done["steps"][1];
    assert_eq!((&step["output"], &step["error"], &step["created_at"]), (&step["outcome"], &json!(null), &step["started_at"]), "the Resend SDKs' names");
    assert_eq!((&done["steps"][4]["created_at"], &done["started_at"]), (&json!(null), &done["created_at"]), "a skipped step was never reached");
    assert_eq!((done["version"].as_i64(), done["contact_id"].as_str(), done["trigger"]["event_name"].as_str()), (Some(1), Some(pro.as_str()), Some("order.placed")));
    assert_eq!(done["trigger"]["payload"], json!({ "order": "A-17", "total": 42 }), "the trigger is an object, as the Resend SDKs read it");
    let email_id = done["steps"][3]["outcome"]["email_id"].as_str().unwrap().to_string();

    let updated = app.get(&format!("/contacts/{pro}")).await.body;
    assert_eq!((updated["last_name"].as_str(), updated["properties"]["vip"].as_bool()), (Some("Customer"), Some(true)));
    let received = mail.sink.wait_for(1, Duration::from_secs(20)).await.remove(0);
    assert!(received.html().unwrap().contains("Thanks Ada for order A-17 (42)"), "{:?}", received.html());
    assert!(received.header("List-Unsubscribe").unwrap().contains("/unsubscribe/"));
    mail.wait_for_event(&email_id, "delivered").await;

    let not_pro = fire(app, "order.placed", &free, json!({})).await.remove(0);
    let parked = wait_for_run(app, &id, &not_pro, "running").await;
    eventually(|| async {
        let run = run_of(app, &id, &not_pro).await;
        (run["steps"].as_array().unwrap().iter().any(|s| s["key"] == "skip" && s["status"] == "waiting")).then_some(())
    })
    .await;
    assert_eq!(parked["steps"][2]["status"], "pending");
    let types = |deliveries: Vec<tests::receiver::Delivery>| deliveries.iter().map(|d| d.json()["type"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    let seen = types(receiver.wait_for("/hook", 3, Duration::from_secs(20)).await);
    assert_eq!(seen.iter().filter(|t| *t == "automation.run.started").count(), 2, "{seen:?}");
    assert_eq!(seen.iter().filter(|t| *t == "automation.run.completed").count(), 1, "{seen:?}");
    let completed = receiver.deliveries("/hook").into_iter().find(|d| d.json()["type"] == "automation.run.completed").unwrap().json();
    assert_eq!((completed["data"]["id"].as_str(), completed["data"]["automation_id"].as_str()), (Some(run.as_str()), Some(id.as_str())));
    let listed = app.get(&format!("/automations/{id}/runs?status=completed")).await.body;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_delay_parks_the_run_until_its_due_time_and_in_flight_runs_keep_their_version() {
    let mut app = TestApp::spawn_unthrottled().await;
    app.start_workers();
    define(&app, "signed.up").await;
    let id = create(
        &app,
        "enabled",
        vec![trigger("signed.up"), step("wait", "delay", json!({ "duration": "2 days" })), step("name", "contact_update", json!({ "first_name": "Version one" }))],
        vec![edge("start", "wait"), edge("wait", "name")],
    )
    .await;
    let person = contact(&app, json!({ "email": "wait@example.com" })).await;
    let run = fire(&app, "signed.up", &person, json!({})).await.remove(0);
    eventually(|| async {
        let run = run_of(&app, &id, &run).await;
        (run["steps"][1]["status"] == "waiting").then_some(())
    })
    .await;
    let due: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT due_at FROM automation_runs WHERE id = $1::uuid").bind(&run).fetch_one(&app.pool).await.unwrap();
    assert!(due > chrono::Utc::now() + chrono::TimeDelta::hours(47), "the run is parked two days out: {due}");

    // A new version does not change the parked run.
    let v2 = vec![trigger("signed.up"), step("wait", "delay", json!({ "duration": "2 days" })), step("name", "contact_update", json!({ "first_name": "Version two" }))];
    assert_eq!(app.patch(&format!("/automations/{id}"), json!({ "steps": v2, "connections": [edge("start", "wait"), edge("wait", "name")] })).await.status, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(run_of(&app, &id, &run).await["status"], "running", "a parked run stays running");

    sqlx::query("UPDATE automation_runs SET due_at = now() WHERE id = $1::uuid").bind(&run).execute(&app.pool).await.unwrap();
    let done = wait_for_run(&app, &id, &run, "completed").await;
    assert_eq!(done["version"], 1);
    assert_eq!(app.get(&format!("/contacts/{person}")).await.body["first_name"], "Version one");
    app.shutdown().await;
}

#[tokio::test]
async fn stop_and_delete_cancel_running_runs_and_a_step_that_cannot_succeed_fails_its_run() {
    let mail = mail::setup().await;
    let app = &mail.app;
    define(app, "signed.up").await;
    let parked_steps = vec![trigger("signed.up"), step("wait", "delay", json!({ "duration": "1 day" }))];
    let stopped = create(app, "enabled", parked_steps.clone(), vec![edge("start", "wait")]).await;
    let deleted = create(app, "enabled", parked_steps, vec![edge("start", "wait")]).await;
    let person = contact(app, json!({ "email": format!("someone@{RECIPIENT_DOMAIN}") })).await;
    let runs = fire(app, "signed.up", &person, json!({})).await;
    assert_eq!(runs.len(), 2);
    eventually(|| async { (app.count("automation_run_steps WHERE status = 'waiting'").await == 2).then_some(()) }).await;
    assert_eq!(app.post(&format!("/automations/{stopped}/stop"), json!({})).await.status, 200);
    assert_eq!(app.get(&format!("/automations/{stopped}")).await.body["status"], "disabled");
    assert_eq!(app.get(&format!("/automations/{stopped}/runs?status=cancelled")).await.body["data"].as_array().unwrap().len(), 1);
    app.delete(&format!("/automations/{deleted}")).await;
    let statuses: Vec<String> = sqlx::query_scalar("SELECT status FROM automation_runs ORDER BY id").fetch_all(&app.pool).await.unwrap();
    assert_eq!(statuses, ["cancelled", "cancelled"]);
    assert!(fire(app, "signed.up", &person, json!({})).await.is_empty(), "disabled and deleted automations enrol nobody");

    // A template deleted after the graph was written fails the run with the reason.
    let receiver = Receiver::start().await;
    let template = published_template(app, "<p>Hello</p>").await;
    let failing = create(
        app,
        "enabled",
        vec![trigger("signed.up"), step("mail", "send_email", json!({ "template": { "id": template } }))],
        vec![edge("start", "mail")],
    )
    .await;
    assert_eq!(app.delete(&format!("/templates/{template}")).await.status, 200);
    let run = fire(app, "signed.up", &person, json!({})).await.remove(0);
    let failed = wait_for_run(app, &failing, &run, "failed").await;
    assert!(failed["error"].as_str().unwrap().contains("template"), "{failed}");
    assert_eq!(failed["steps"][1]["status"], "failed");
    assert_eq!(app.count("emails").await, 0);
    drop(receiver);
}

#[tokio::test]
async fn a_step_that_fails_amid_a_batch_fails_only_its_own_run_and_the_rest_of_the_batch_goes_on() {
    let mail = mail::setup_without_workers(tests::smtp::SmtpSink::start().await, |_| {}).await;
    let app = &mail.app;
    define(app, "signed.up").await;
    let good = published_template(app, "<p>Welcome</p>").await;
    let doomed = published_template(app, "<p>Gone</p>").await;
    let sends = |template: &str| vec![trigger("signed.up"), step("mail", "send_email", json!({ "template": { "id": template } }))];
    let working = create(app, "enabled", sends(&good), vec![edge("start", "mail")]).await;
    let failing = create(app, "enabled", sends(&doomed), vec![edge("start", "mail")]).await;
    assert_eq!(app.delete(&format!("/templates/{doomed}")).await.status, 200);
    for n in 0..5 {
        let person = contact(app, json!({ "email": format!("p{n}@simulator.herald.test") })).await;
        assert_eq!(fire(app, "signed.up", &person, json!({})).await.len(), 2);
    }
    // Ten runs due before any executor starts: one task claims them as one batch.
    let mut worker = mail.start_worker(&[("HERALD_AUTOMATION_CONCURRENCY", "1")]);
    let started = std::time::Instant::now();
    while app.count("automation_runs WHERE status = 'running'").await > 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "runs never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.kill().unwrap();
    worker.wait().unwrap();
    let completed = app.count(&format!("automation_runs WHERE automation_id = '{working}' AND status = 'completed'")).await;
    assert_eq!(completed, 5, "the working automation's runs all completed");
    let failed = app.count(&format!("automation_runs WHERE automation_id = '{failing}' AND status = 'failed'")).await;
    assert_eq!(failed, 5, "each run of the deleted template failed on its own");
    let errors: Vec<String> = sqlx::query_scalar("SELECT DISTINCT error FROM automation_runs WHERE status = 'failed'").fetch_all(&app.pool).await.unwrap();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("template"), "{errors:?}");
    assert_eq!(app.count("emails").await, 5, "one email per completed run, none for the failed ones");
    assert_eq!(app.count("automation_run_steps WHERE status = 'completed'").await, 15, "five triggers and five sends, five triggers of failed runs");
    assert_eq!(app.count("automation_run_steps WHERE status = 'failed'").await, 5);
    assert_eq!(app.count("events WHERE type = 'automation.run.started'").await, 10);
    assert_eq!(app.count("events WHERE type = 'automation.run.completed'").await, 5);
    assert_eq!(app.count("events WHERE type = 'automation.run.failed'").await, 5);
}

#[tokio::test]
async fn built_in_triggers_enrol_the_contact_the_change_is_about() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let topic = app.post("/topics", json!({ "name": "Product news", "default_subscription": "opt_out" })).await.body["id"].as_str().unwrap().to_string();
    let segment = app.post("/segments", json!({ "name": "Pros", "filter": { "all": [{ "field": "email", "op": "contains", "value": "pro" }] } })).await.body["id"].as_str().unwrap().to_string();
    let mark = |name: &str| step("mark", "contact_update", json!({ "properties": { name: true } }));
    let on = |event: &str, extra: Value, name: &str| {
        let mut start = trigger(event);
        start["config"].as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        (vec![start, mark(name)], vec![edge("start", "mark")])
    };
    for (event, extra, name) in [
        ("svc:contact.created", json!({}), "created"),
        ("svc:topic.subscribed", json!({ "topic_id": topic }), "subscribed"),
        ("svc:segment.entered", json!({ "segment_id": segment }), "entered"),
        ("svc:email.delivered", json!({}), "delivered"),
    ] {
        let (steps, connections) = on(event, extra, name);
        create(app, "enabled", steps, connections).await;
    }
    app.post("/automations", json!({ "name": "Bad", "steps": [trigger("svc:segment.entered")], "connections": [] })).await.assert_error(422, "validation_error");
    app.post("/automations", json!({ "name": "Bad", "steps": [trigger("svc:nothing")], "connections": [] })).await.assert_error(422, "validation_error");

    let person = contact(app, json!({ "email": format!("someone@{RECIPIENT_DOMAIN}") })).await;
    let flags = |id: String| async move {
        let contact = app.get(&format!("/contacts/{id}")).await.body;
        contact["properties"].clone()
    };
    eventually(|| async { (flags(person.clone()).await["created"] == true).then_some(()) }).await;

    let changed = app.patch(&format!("/contacts/{person}/topics"), json!([{ "id": topic, "subscription": "opt_in" }])).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    eventually(|| async { (flags(person.clone()).await["subscribed"] == true).then_some(()) }).await;

    assert_eq!(app.patch(&format!("/contacts/{person}"), json!({ "email": format!("pro@{RECIPIENT_DOMAIN}") })).await.status, 200);
    eventually(|| async { (flags(person.clone()).await["entered"] == true).then_some(()) }).await;
    // Already a member: changing it again enters nothing.
    app.patch(&format!("/contacts/{person}"), json!({ "first_name": "Still" })).await;

    let email = mail.send(Mail::message(&format!("pro@{RECIPIENT_DOMAIN}"))).await;
    mail.wait_for_event(&email, "delivered").await;
    eventually(|| async { (flags(person.clone()).await["delivered"] == true).then_some(()) }).await;
    let triggers: Vec<String> = sqlx::query_scalar("SELECT trigger_event FROM automation_runs ORDER BY id").fetch_all(&app.pool).await.unwrap();
    assert_eq!(triggers, ["svc:contact.created", "svc:topic.subscribed", "svc:segment.entered", "svc:email.delivered"]);

    // An explicit add enters a segment too.
    let other = contact(app, json!({ "email": format!("other@{RECIPIENT_DOMAIN}") })).await;
    let explicit = app.post("/segments", json!({ "name": "Hand picked" })).await.body["id"].as_str().unwrap().to_string();
    let (steps, connections) = on("svc:segment.entered", json!({ "segment_id": explicit }), "picked");
    create(app, "enabled", steps, connections).await;
    assert_eq!(app.post(&format!("/contacts/{other}/segments/{explicit}"), json!({})).await.status, 200);
    eventually(|| async { (flags(other.clone()).await["picked"] == true).then_some(()) }).await;
}

#[tokio::test]
async fn a_worker_killed_amid_a_thousand_runs_leaves_every_run_completed_with_each_step_done_once() {
    let mail = mail::setup_without_workers(tests::smtp::SmtpSink::start().await, |_| {}).await;
    let app = &mail.app;
    define(app, "batch.go").await;
    app.post("/contact-properties", json!({ "key": "plan", "type": "string" })).await;
    let template = published_template(app, "<p>Hello {{{FIRST_NAME|there}}}</p>").await;
    let id = create(
        app,
        "enabled",
        vec![
            trigger("batch.go"),
            step("check", "condition", json!({ "type": "rule", "field": "plan", "operator": "eq", "value": "pro" })),
            step("mark", "contact_update", json!({ "properties": { "done": true } })),
            step("mail", "send_email", json!({ "template": { "id": template } })),
        ],
        vec![edge("start", "check"), branch("check", "mark", "condition_met"), edge("mark", "mail")],
    )
    .await;
    sqlx::query(
        "INSERT INTO contacts (id, team_id, email, properties)
         SELECT herald_uuid_v7(), $1, 'delivered+' || i || '@simulator.herald.test', '{\"plan\": \"pro\"}' FROM generate_series(1, 1000) AS i",
    )
    .bind(app.team_id)
    .execute(&app.pool)
    .await
    .unwrap();
    let ids: Vec<String> = sqlx::query_scalar("SELECT id::text FROM contacts").fetch_all(&app.pool).await.unwrap();
    // Thirty-two at a time: a thousand at once can outwait the pool on a loaded machine.
    let sends = futures::stream::iter(ids.iter().map(|contact| app.post("/events/send", json!({ "event": "batch.go", "contact_id": contact }))));
    for sent in sends.buffer_unordered(32).collect::<Vec<_>>().await {
        assert_eq!(sent.status, 202, "{}", sent.body);
    }
    assert_eq!(app.count("automation_runs").await, 1000);

    let mut worker = mail.start_worker(&[("HERALD_AUTOMATION_CONCURRENCY", "8")]);
    let started = std::time::Instant::now();
    loop {
        let done = app.count("automation_runs WHERE status = 'completed'").await;
        if done >= 200 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the worker completed only {done} runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.kill().unwrap();
    worker.wait().unwrap();
    let at_kill = app.count("automation_runs WHERE status = 'completed'").await;
    assert!(at_kill < 1000, "the worker was killed mid-way ({at_kill} done)");

    let mut worker = mail.start_worker(&[("HERALD_AUTOMATION_CONCURRENCY", "8")]);
    let started = std::time::Instant::now();
    loop {
        if app.count("automation_runs WHERE status = 'completed'").await == 1000 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "runs never all completed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    worker.kill().unwrap();
    worker.wait().unwrap();
    assert_eq!(app.count("automation_runs WHERE status <> 'completed'").await, 0);
    assert_eq!(app.count("emails").await, 1000, "one email per run, none sent twice");
    let per_run: i64 = sqlx::query_scalar("SELECT count(DISTINCT tags->>'automation_run_id') FROM emails").fetch_one(&app.pool).await.unwrap();
    assert_eq!(per_run, 1000);
    assert_eq!(app.count("events WHERE type = 'contact.updated'").await, 1000, "each contact updated once");
    assert_eq!(app.count("events WHERE type = 'automation.run.started'").await, 1000);
    assert_eq!(app.count("events WHERE type = 'automation.run.completed'").await, 1000);
    assert_eq!(app.count("automation_run_steps").await, 4000);
    assert_eq!(app.count("contacts WHERE properties->>'done' = 'true'").await, 1000);
    let _ = id;
}

#[tokio::test]
async fn sending_steps_stop_at_the_daily_quota_and_a_stopped_worker_gives_back_what_it_did_not_send() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let used_today = || async { sqlx::query_scalar::<_, i32>("SELECT emails FROM send_usage WHERE period_kind = 'day'").fetch_one(&app.pool).await.unwrap() };
    sqlx::query("UPDATE plans SET daily_cap = 3 WHERE code = 'pro'").execute(&app.pool).await.unwrap();
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    define(app, "signed.up").await;
    let template = published_template(app, "<p>Hello</p>").await;
    let id = create(app, "enabled", vec![trigger("signed.up"), step("mail", "send_email", json!({ "template": { "id": template } }))], vec![edge("start", "mail")]).await;
    let mut runs = Vec::new();
    for n in 0..3 {
        let person = contact(app, json!({ "email": format!("p{n}@simulator.herald.test") })).await;
        runs.push(fire(app, "signed.up", &person, json!({})).await.remove(0));
    }
    let mut ended = Vec::new();
    for run in &runs {
        let run = eventually(|| async { Some(run_of(app, &id, run).await).filter(|r| r["status"] != "running") }).await;
        ended.push(run);
    }
    let failed: Vec<&Value> = ended.iter().filter(|r| r["status"] == "failed").collect();
    assert_eq!((ended.len() - failed.len(), failed.len()), (2, 1), "two fit under the cap of 3 beside the first send: {ended:?}");
    assert!(failed[0]["error"].as_str().unwrap().contains("quota"), "{}", failed[0]);
    assert_eq!(failed[0]["steps"][0]["status"], "completed", "a run that fails at its first step was started");
    assert_eq!(failed[0]["steps"][1]["status"], "failed");
    assert_eq!(app.count("emails").await, 3);
    assert_eq!(used_today().await, 3, "the lease took only what the cap left");
    app.post("/emails", Mail::message("delivered@simulator.herald.test")).await.assert_error(429, "daily_quota_exceeded");

    // Without a cap a lease takes a block; what the executor did not send goes back when it stops.
    sqlx::query("UPDATE plans SET daily_cap = NULL WHERE code = 'pro'").execute(&app.pool).await.unwrap();
    let person = contact(app, json!({ "email": "later@simulator.herald.test" })).await;
    let run = fire(app, "signed.up", &person, json!({})).await.remove(0);
    wait_for_run(app, &id, &run, "completed").await;
    assert!(used_today().await > 4, "a block of the quota is leased at once");
    let database_url = app.database_url.clone();
    mail.app.shutdown().await;
    let pool = schema::connect(&database_url, 1).await.unwrap();
    let left: i32 = sqlx::query_scalar("SELECT emails FROM send_usage WHERE period_kind = 'day'").fetch_one(&pool).await.unwrap();
    assert_eq!(left, 4, "the counter holds exactly the emails sent once the lease is given back");
}
