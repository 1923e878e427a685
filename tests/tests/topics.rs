//! Topics and contacts' topic choices: unique live names, the fixed default, retirement,
//! effective subscriptions, consent records, and refusals that write nothing.

use serde_json::{Value, json};
use tests::TestApp;

async fn topic(app: &TestApp, body: Value) -> String {
    let created = app.post("/topics", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn topics_have_unique_live_names_a_fixed_default_and_retire_freeing_the_name() {
    let app = TestApp::spawn_unthrottled().await;
    let news = topic(&app, json!({ "name": "News", "default_subscription": "opt_in", "description": "Monthly" })).await;
    let read = app.get(&format!("/topics/{news}")).await.body;
    assert_eq!((&read["visibility"], &read["default_subscription"]), (&json!("private"), &json!("opt_in")));
    app.post("/topics", json!({ "name": "news", "default_subscription": "opt_out" })).await.assert_error(422, "invalid_parameter");
    app.patch(&format!("/topics/{news}"), json!({ "default_subscription": "opt_out" })).await.assert_error(422, "invalid_parameter");
    let offers = topic(&app, json!({ "name": "Offers", "default_subscription": "opt_out", "visibility": "public" })).await;
    app.patch(&format!("/topics/{offers}"), json!({ "name": "NEWS" })).await.assert_error(422, "invalid_parameter");
    for body in [
        json!({ "name": "", "default_subscription": "opt_in" }),
        json!({ "name": "x".repeat(51), "default_subscription": "opt_in" }),
        json!({ "name": "Ok", "default_subscription": "maybe" }),
        json!({ "name": "Ok", "default_subscription": "opt_in", "visibility": "secret" }),
        json!({ "name": "Ok", "default_subscription": "opt_in", "description": "d".repeat(201) }),
    ] {
        app.post("/topics", body.clone()).await.assert_error(400, "validation_error");
    }
    app.post("/topics", json!({ "name": "Ok" })).await.assert_error(422, "missing_required_field");
    assert_eq!(app.count("topics").await, 2);

    assert_eq!(app.patch(&format!("/topics/{news}"), json!({ "description": null, "visibility": "public" })).await.status, 200);
    let read = app.get(&format!("/topics/{news}")).await.body;
    assert_eq!((&read["description"], &read["visibility"]), (&Value::Null, &json!("public")));
    assert_eq!(app.get("/topics").await.body["data"].as_array().unwrap().len(), 2);

    let retired = app.delete(&format!("/topics/{news}")).await;
    assert_eq!((retired.status, &retired.body["deleted"]), (200, &json!(true)));
    app.get(&format!("/topics/{news}")).await.assert_error(404, "not_found");
    app.delete(&format!("/topics/{news}")).await.assert_error(404, "not_found");
    topic(&app, json!({ "name": "News", "default_subscription": "opt_out" })).await;

    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let theirs = app.request_as(&other, reqwest::Method::GET, &format!("/topics/{offers}")).send().await.unwrap();
    tests::Answer::from(theirs).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_repeat_post_contacts_never_turns_a_topic_opt_out_back_into_an_opt_in_but_the_contacts_topics_route_does() {
    let app = TestApp::spawn_unthrottled().await;
    let news = topic(&app, json!({ "name": "News", "default_subscription": "opt_out" })).await;
    let offers = topic(&app, json!({ "name": "Offers", "default_subscription": "opt_out" })).await;
    let sign_up = json!({ "email": "a@example.com", "topics": [{ "id": news, "subscription": "opt_in" }, { "id": offers, "subscription": "opt_in" }] });
    let created = app.post("/contacts", sign_up.clone()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let out = app.patch(&format!("/contacts/{id}/topics"), json!([{ "id": news, "subscription": "opt_out" }])).await;
    assert_eq!(out.status, 200, "{}", out.body);
    let subscriptions = || async {
        let topics = app.get(&format!("/contacts/{id}/topics")).await.body;
        topics["data"].as_array().unwrap().iter().map(|t| (t["name"].as_str().unwrap().to_string(), t["subscription"].as_str().unwrap().to_string())).collect::<Vec<_>>()
    };
    let replayed = app.post("/contacts", sign_up).await;
    assert_eq!(replayed.status, 201, "{}", replayed.body);
    assert_eq!(subscriptions().await, [("News".into(), "opt_out".into()), ("Offers".into(), "opt_in".into())], "the replayed sign-up kept the opt-out");
    assert_eq!(app.count("consent_records WHERE choice = 'opt_in'").await, 2, "the kept opt-out records no new opt-in");
    let back = app.patch(&format!("/contacts/{id}/topics"), json!([{ "id": news, "subscription": "opt_in" }])).await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert_eq!(subscriptions().await, [("News".into(), "opt_in".into()), ("Offers".into(), "opt_in".into())], "the contact's own choice turns it back on");
}

#[tokio::test]
async fn a_contacts_effective_subscription_is_its_choice_else_the_default_and_unsubscribed_overrides_all() {
    let app = TestApp::spawn_unthrottled().await;
    let news = topic(&app, json!({ "name": "News", "default_subscription": "opt_in" })).await;
    let offers = topic(&app, json!({ "name": "Offers", "default_subscription": "opt_out" })).await;
    let created = app.post("/contacts", json!({ "email": "a@example.com", "topics": [{ "id": offers, "subscription": "opt_in" }] })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let effective = |body: &Value| -> Vec<(String, String)> {
        body["data"].as_array().unwrap().iter().map(|t| (t["name"].as_str().unwrap().into(), t["subscription"].as_str().unwrap().into())).collect()
    };
    let topics = app.get(&format!("/contacts/{id}/topics")).await.body;
    assert_eq!(effective(&topics), [("News".into(), "opt_in".into()), ("Offers".into(), "opt_in".into())]);
    let news_created = app.get(&format!("/topics/{news}")).await.body["created_at"].clone();
    assert_eq!(topics["data"][0]["created_at"], news_created, "each item carries its topic's created_at, as the Resend SDKs read it");

    let patched = app.patch(&format!("/contacts/{id}/topics"), json!([{ "id": news, "subscription": "opt_out" }, { "id": offers, "subscription": "opt_in" }])).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let topics = app.get("/contacts/a@example.com/topics").await.body;
    assert_eq!(effective(&topics), [("News".into(), "opt_out".into()), ("Offers".into(), "opt_in".into())]);
    let consents: Vec<(String, Option<uuid::Uuid>)> =
        sqlx::query_as("SELECT choice, topic_id FROM consent_records ORDER BY id").fetch_all(&app.pool).await.unwrap();
    let choices: Vec<&str> = consents.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(choices, ["opt_in", "opt_out"], "one record per change; repeating a choice records nothing");
    let updates: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE type = 'contact.updated'").fetch_one(&app.pool).await.unwrap();
    assert_eq!(updates, 0, "topic choices are not contact.updated");

    app.patch(&format!("/contacts/{id}"), json!({ "unsubscribed": true })).await;
    let topics = app.get(&format!("/contacts/{id}/topics")).await.body;
    assert_eq!(effective(&topics), [("News".into(), "opt_out".into()), ("Offers".into(), "opt_out".into())]);

    for body in [
        json!([{ "id": news, "subscription": "maybe" }]),
        json!([{ "id": "not-an-id", "subscription": "opt_in" }]),
        json!([{ "id": uuid::Uuid::now_v7(), "subscription": "opt_in" }]),
    ] {
        app.patch(&format!("/contacts/{id}/topics"), body.clone()).await.assert_error(422, "invalid_parameter");
    }
    let refused = app.post("/contacts", json!({ "email": "b@example.com", "topics": [{ "id": uuid::Uuid::now_v7(), "subscription": "opt_in" }] })).await;
    refused.assert_error(422, "invalid_parameter");
    assert_eq!(app.count("contacts").await, 1);
    assert_eq!(app.count("consent_records WHERE topic_id IS NOT NULL").await, 2);
    app.get("/contacts/nobody@example.com/topics").await.assert_error(404, "not_found");
}

#[tokio::test]
async fn billable_contacts_are_subscribed_to_a_topic_and_neither_unsubscribed_nor_suppressed() {
    let app = TestApp::spawn_unthrottled().await;
    let usage = || async {
        let binary = tests::herald_binary();
        let output = std::process::Command::new(binary)
            .args(["team", "usage", "--team", &app.team_id.to_string()])
            .env("DATABASE_URL", &app.database_url)
            .env("HERALD_LOG", "error")
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
        (printed["contacts"].as_i64().unwrap(), printed["billable_contacts"].as_i64().unwrap(), printed["peak_billable_contacts"].as_i64().unwrap())
    };
    for email in ["a@example.com", "b@example.com", "c@example.com", "d@example.com"] {
        app.post("/contacts", json!({ "email": email })).await;
    }
    assert_eq!(usage().await, (4, 0, 0), "no topic, nobody billable");
    let offers = topic(&app, json!({ "name": "Offers", "default_subscription": "opt_out" })).await;
    assert_eq!(usage().await.1, 0, "an opt-out default bills nobody");
    app.patch("/contacts/a@example.com/topics", json!([{ "id": offers, "subscription": "opt_in" }])).await;
    topic(&app, json!({ "name": "News", "default_subscription": "opt_in" })).await;
    assert_eq!(usage().await.1, 4, "an opt-in default bills everyone");
    app.patch("/contacts/b@example.com", json!({ "unsubscribed": true })).await;
    app.post("/suppressions", json!({ "email": "c@example.com" })).await;
    assert_eq!(usage().await.1, 2);
    jobs::housekeeping::purge(&app.pool).await.unwrap();
    app.delete("/contacts/d@example.com").await;
    assert_eq!(usage().await, (3, 1, 4), "the month's peak is the most the count reached");
}

/// The billable contacts the rule gives when every contact is worked out afresh.
async fn billable_by_the_rule(app: &TestApp, team_id: uuid::Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM contacts WHERE team_id = $1 AND contact_is_billable(team_id, id, email, unsubscribed)")
        .bind(team_id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// The billable count the database keeps for a team (`None`: no row).
async fn billable_counted(app: &TestApp, team_id: uuid::Uuid) -> Option<i64> {
    sqlx::query_scalar("SELECT billable FROM billable_contact_counts WHERE team_id = $1").bind(team_id).fetch_optional(&app.pool).await.unwrap()
}

/// Asserts the kept count, the rule worked out afresh and the expected number agree.
async fn billable_is(app: &TestApp, expected: i64, after: &str) {
    let kept = billable_counted(app, app.team_id).await.unwrap_or(0);
    assert_eq!((kept, billable_by_the_rule(app, app.team_id).await), (expected, expected), "after {after}");
}

#[tokio::test]
async fn the_billable_count_follows_every_write_that_moves_it_and_matches_the_rule_worked_out_afresh() {
    let mut app = TestApp::spawn_unthrottled().await;
    let news = topic(&app, json!({ "name": "News", "default_subscription": "opt_in" })).await;
    let offers = topic(&app, json!({ "name": "Offers", "default_subscription": "opt_out" })).await;
    for email in ["a@example.com", "b@example.com", "c@example.com"] {
        app.post("/contacts", json!({ "email": email })).await;
    }
    billable_is(&app, 3, "three contacts under an opt-in default").await;
    app.patch("/contacts/a@example.com/topics", json!([{ "id": news, "subscription": "opt_out" }])).await;
    billable_is(&app, 2, "a opting out of the only opt-in topic").await;
    app.patch("/contacts/a@example.com/topics", json!([{ "id": offers, "subscription": "opt_in" }])).await;
    billable_is(&app, 3, "a opting in to another topic").await;
    app.post("/suppressions", json!({ "email": "b@example.com" })).await;
    billable_is(&app, 2, "b suppressed").await;
    let csv = "email,unsubscribed\nd@example.com,\ne@example.com,true\nb@example.com,\n";
    let (content_type, body) = tests::multipart(&[("file", Some("c.csv"), csv.as_bytes()), ("on_conflict", None, b"skip")]);
    let import = app.request(reqwest::Method::POST, "/contacts/imports").header("content-type", content_type).body(body).send().await.unwrap();
    assert_eq!(import.status(), 201);
    app.start_workers();
    tests::eventually(|| async { (app.count("contacts").await == 5).then_some(()) }).await;
    billable_is(&app, 3, "an import adding d, and e unsubscribed").await;
    app.delete("/suppressions/b@example.com").await;
    billable_is(&app, 4, "b's suppression removed").await;
    app.patch("/contacts/c@example.com", json!({ "unsubscribed": true })).await;
    billable_is(&app, 3, "c unsubscribing").await;
    app.delete(&format!("/topics/{news}")).await;
    billable_is(&app, 1, "the opt-in default topic retired: only a's own choice bills").await;
    topic(&app, json!({ "name": "Digest", "default_subscription": "opt_in" })).await;
    billable_is(&app, 3, "a new opt-in default billing everyone subscribed").await;
    app.delete("/contacts/a@example.com").await;
    billable_is(&app, 2, "a deleted").await;
    sqlx::query("UPDATE contacts SET billable = NOT billable WHERE team_id = $1 AND email = 'd@example.com'").bind(app.team_id).execute(&app.pool).await.unwrap();
    let report = jobs::housekeeping::purge(&app.pool).await.unwrap();
    assert_eq!(report.billable_repairs, 1, "a flag a race left stale is found");
    billable_is(&app, 2, "the hourly repair").await;
    sqlx::query("DELETE FROM teams WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    assert_eq!(billable_counted(&app, app.team_id).await, None, "a team deleted takes its count with it");
}
