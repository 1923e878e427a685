//! Segments: filters validated per condition and evaluated on every read (never stored),
//! explicit membership, renaming without touching the filter, retirement freeing the name.

use serde_json::{Value, json};
use tests::TestApp;

async fn created(app: &TestApp, path: &str, body: Value) -> String {
    let answer = app.post(path, body).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body["id"].as_str().unwrap().to_string()
}

async fn member_emails(app: &TestApp, segment: &str) -> Vec<String> {
    let page = app.get(&format!("/contacts?segment_id={segment}&limit=100")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let mut emails: Vec<String> = page.body["data"].as_array().unwrap().iter().map(|c| c["email"].as_str().unwrap().to_string()).collect();
    emails.sort();
    emails
}

/// Five contacts with a string, a number and a boolean property, and one topic choice.
async fn audience(app: &TestApp) -> String {
    let news = created(app, "/topics", json!({ "name": "News", "default_subscription": "opt_out" })).await;
    for (email, first, plan, age, vip) in [
        ("ann@example.com", "Ann", "pro", 31, true),
        ("bob@example.com", "Bob", "free", 45, false),
        ("cy@example.org", "Cy", "pro", 19, false),
        ("dee@example.org", "Dee", "PRO", 60, true),
    ] {
        let properties = json!({ "plan": plan, "age": age, "vip": vip });
        created(app, "/contacts", json!({ "email": email, "first_name": first, "properties": properties })).await;
    }
    created(app, "/contacts", json!({ "email": "eve@example.net", "topics": [{ "id": news, "subscription": "opt_in" }] })).await;
    news
}

#[tokio::test]
async fn a_filter_is_evaluated_on_every_read_over_fields_properties_and_topics() {
    let app = TestApp::spawn_unthrottled().await;
    let news = audience(&app).await;
    let cases = [
        (json!({ "all": [{ "field": "properties.plan", "op": "eq", "value": "pro" }, { "field": "properties.age", "op": "gte", "value": 30 }] }),
            vec!["ann@example.com", "dee@example.org"]),
        (json!({ "any": [{ "field": "email", "op": "contains", "value": "EXAMPLE.ORG" }, { "field": "first_name", "op": "in", "value": ["bob"] }] }),
            vec!["bob@example.com", "cy@example.org", "dee@example.org"]),
        (json!({ "not": [{ "field": "first_name", "op": "exists" }] }), vec!["eve@example.net"]),
        (json!({ "all": [{ "field": "first_name", "op": "neq", "value": "Ann" }, { "field": "properties.vip", "op": "eq", "value": true }] }),
            vec!["dee@example.org"]),
        (json!({ "all": [{ "topic": news, "subscription": "opt_in" }] }), vec!["eve@example.net"]),
        (json!({ "all": [{ "field": "created_at", "op": "lt", "value": "2000-01-01" }] }), vec![]),
        (json!({ "all": [{ "any": [{ "not": [{ "field": "properties.age", "op": "lt", "value": 40 }] }] }, { "field": "unsubscribed", "op": "eq", "value": false }] }),
            vec!["bob@example.com", "dee@example.org"]),
    ];
    for (i, (filter, expected)) in cases.into_iter().enumerate() {
        let segment = created(&app, "/segments", json!({ "name": format!("Case {i}"), "filter": filter })).await;
        assert_eq!(member_emails(&app, &segment).await, expected, "case {i}: {filter}");
    }
    assert_eq!(app.count("segment_members").await, 0, "membership by filter is never stored");

    // Membership follows the contacts as they change.
    let pro = created(&app, "/segments", json!({ "name": "Pro", "filter": { "all": [{ "field": "properties.plan", "op": "eq", "value": "pro" }] } })).await;
    assert_eq!(member_emails(&app, &pro).await, ["ann@example.com", "cy@example.org", "dee@example.org"]);
    app.patch("/contacts/cy@example.org", json!({ "properties": { "plan": "free" } })).await;
    app.delete("/contacts/ann@example.com").await;
    assert_eq!(member_emails(&app, &pro).await, ["dee@example.org"], "changed and erased contacts leave at once");

    // An opted-in contact who unsubscribes leaves every topic condition.
    let readers = created(&app, "/segments", json!({ "name": "Readers", "filter": { "all": [{ "topic": news, "subscription": "opt_in" }] } })).await;
    app.patch("/contacts/eve@example.net", json!({ "unsubscribed": true })).await;
    assert!(member_emails(&app, &readers).await.is_empty());
    let segments = app.get("/contacts/eve@example.net/segments").await;
    let names: Vec<&str> = segments.body["data"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Case 2"], "the contact's segments are evaluated the same way");
}

#[tokio::test]
async fn contacts_join_explicitly_and_stay_members_whatever_the_filter() {
    let app = TestApp::spawn_unthrottled().await;
    audience(&app).await;
    let vips = created(&app, "/segments", json!({ "name": "VIPs", "filter": null })).await;
    let read = app.get(&format!("/segments/{vips}")).await.body;
    assert_eq!((&read["name"], &read["filter"]), (&json!("VIPs"), &Value::Null));
    assert!(member_emails(&app, &vips).await.is_empty());

    let added = app.post(&format!("/contacts/bob@example.com/segments/{vips}"), json!({})).await;
    assert_eq!((added.status, &added.body["id"]), (200, &json!(vips)));
    app.post(&format!("/contacts/bob@example.com/segments/{vips}"), json!({})).await;
    created(&app, "/contacts", json!({ "email": "fay@example.com", "segments": [{ "id": vips }] })).await;
    assert_eq!(member_emails(&app, &vips).await, ["bob@example.com", "fay@example.com"]);

    let young = created(&app, "/segments", json!({ "name": "Young", "filter": { "all": [{ "field": "properties.age", "op": "lt", "value": 20 }] } })).await;
    app.post(&format!("/contacts/bob@example.com/segments/{young}"), json!({})).await;
    assert_eq!(member_emails(&app, &young).await, ["bob@example.com", "cy@example.org"]);
    let bobs = app.get("/contacts/bob@example.com/segments").await.body;
    let names: Vec<&str> = bobs["data"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["VIPs", "Young"]);
    assert!(bobs["data"][0].get("filter").is_none(), "lists carry no filter");

    let removed = app.delete(&format!("/contacts/bob@example.com/segments/{young}")).await;
    assert_eq!((removed.status, &removed.body["deleted"]), (200, &json!(true)));
    assert_eq!(app.count("events WHERE type = 'contact.updated'").await, 0, "segment changes are not contact.updated");
    app.delete(&format!("/contacts/bob@example.com/segments/{young}")).await.assert_error(404, "not_found");
    app.delete(&format!("/contacts/cy@example.org/segments/{young}")).await.assert_error(404, "not_found");
    assert_eq!(member_emails(&app, &young).await, ["cy@example.org"], "a filter member stays one");

    app.delete("/contacts/fay@example.com").await;
    assert_eq!(member_emails(&app, &vips).await, ["bob@example.com"], "an erased contact is never a member");
    assert_eq!(app.count("segment_members").await, 1);

    let unknown = uuid::Uuid::now_v7();
    app.post(&format!("/contacts/bob@example.com/segments/{unknown}"), json!({})).await.assert_error(404, "not_found");
    app.post(&format!("/contacts/nobody@example.com/segments/{vips}"), json!({})).await.assert_error(404, "not_found");
    let refused = app.post("/contacts", json!({ "email": "gus@example.com", "segments": [{ "id": unknown }] })).await;
    refused.assert_error(422, "invalid_parameter");
    assert_eq!(refused.body["errors"][0]["path"], "segments[0].id");
    assert_eq!(app.count("contacts WHERE email = 'gus@example.com'").await, 0);
    app.get(&format!("/contacts?segment_id={unknown}")).await.assert_error(404, "not_found");
    app.get("/contacts?segment_id=nope").await.assert_error(422, "invalid_parameter");
}

#[tokio::test]
async fn segments_list_newest_first_rename_without_their_filter_and_retire_freeing_the_name() {
    let app = TestApp::spawn_unthrottled().await;
    let filter = json!({ "all": [{ "field": "email", "op": "contains", "value": "@" }] });
    let first = created(&app, "/segments", json!({ "name": "First", "filter": filter })).await;
    let second = created(&app, "/segments", json!({ "name": "Second" })).await;
    let list = app.get("/segments").await.body;
    let ids: Vec<&str> = list["data"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [second.as_str(), first.as_str()]);
    assert!(list["data"][0].get("filter").is_none());
    assert_eq!(app.get(&format!("/segments/{first}")).await.body["filter"], filter);

    app.post("/segments", json!({ "name": "first" })).await.assert_error(422, "invalid_parameter");
    app.patch(&format!("/segments/{second}"), json!({ "name": "FIRST" })).await.assert_error(422, "invalid_parameter");
    let refused = app.patch(&format!("/segments/{first}"), json!({ "name": "Renamed", "filter": { "all": [] } })).await;
    refused.assert_error(422, "invalid_parameter");
    assert_eq!(refused.body["errors"][0]["path"], "filter");
    assert_eq!(app.get(&format!("/segments/{first}")).await.body["name"], "First", "a refused update changes nothing");
    assert_eq!(app.patch(&format!("/segments/{first}"), json!({ "name": "Renamed" })).await.status, 200);
    let read = app.get(&format!("/segments/{first}")).await.body;
    assert_eq!((&read["name"], &read["filter"]), (&json!("Renamed"), &filter));

    for body in [json!({ "name": "" }), json!({ "name": "x".repeat(201) })] {
        app.post("/segments", body).await.assert_error(400, "validation_error");
    }
    app.post("/segments", json!({})).await.assert_error(422, "missing_required_field");

    let deleted = app.delete(&format!("/segments/{first}")).await;
    assert_eq!((deleted.status, &deleted.body["deleted"]), (200, &json!(true)));
    app.get(&format!("/segments/{first}")).await.assert_error(404, "not_found");
    app.delete(&format!("/segments/{first}")).await.assert_error(404, "not_found");
    created(&app, "/segments", json!({ "name": "renamed" })).await;
    assert_eq!(app.count("segments WHERE deleted_at IS NULL").await, 2);

    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let theirs = app.request_as(&other, reqwest::Method::GET, &format!("/segments/{second}")).send().await.unwrap();
    tests::Answer::from(theirs).await.assert_error(404, "not_found");
    let theirs = app.request_as(&other, reqwest::Method::GET, &format!("/contacts?segment_id={second}")).send().await.unwrap();
    tests::Answer::from(theirs).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_bad_filter_is_refused_with_one_error_per_condition_and_writes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    audience(&app).await;
    let leaf = json!({ "field": "email", "op": "eq", "value": "a@b.c" });
    let twenty_one: Vec<Value> = (0..21).map(|_| leaf.clone()).collect();
    let cases = [
        (json!({ "all": [
            { "field": "email", "op": "exists" },
            { "field": "first_name", "op": "gt", "value": "A" },
            { "field": "unsubscribed", "op": "contains", "value": true },
            { "field": "created_at", "op": "eq", "value": "2026-01-01" },
            { "field": "properties.age", "op": "contains", "value": "3" },
            { "field": "properties.plan", "op": "lt", "value": "pro" },
            { "field": "properties.nope", "op": "eq", "value": 1 },
            { "field": "properties.age", "op": "eq", "value": "thirty" },
            { "field": "created_at", "op": "gt", "value": "yesterday" },
            { "topic": uuid::Uuid::now_v7(), "subscription": "opt_in" },
            { "field": "shoe_size", "op": "eq", "value": 9 }
        ] }), vec![
            "filter.all[0].op", "filter.all[1].op", "filter.all[2].op", "filter.all[3].op", "filter.all[4].op", "filter.all[5].op",
            "filter.all[6].field", "filter.all[7].value", "filter.all[8].value", "filter.all[9].topic", "filter.all[10].field",
        ]),
        (json!({ "all": [{ "any": [{ "not": [{ "all": [leaf] }] }] }] }), vec!["filter.all[0].any[0].not[0]"]),
        (json!({ "any": twenty_one }), vec!["filter"]),
        (json!({ "field": "email", "op": "eq", "value": "a@b.c" }), vec!["filter"]),
        (json!({ "all": [] }), vec!["filter.all"]),
    ];
    for (filter, paths) in cases {
        let refused = app.post("/segments", json!({ "name": "Bad", "filter": filter })).await;
        refused.assert_error(422, "validation_error");
        let found: Vec<&str> = refused.body["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
        assert_eq!(found, paths, "{filter}");
    }
    assert_eq!(app.count("segments").await, 0);
}

fn emails_of(page: &tests::Answer) -> Vec<String> {
    assert_eq!(page.status, 200, "{}", page.body);
    let mut emails: Vec<String> = page.body["data"].as_array().unwrap().iter().map(|c| c["email"].as_str().unwrap().to_string()).collect();
    emails.sort();
    emails
}

#[tokio::test]
async fn a_segments_contacts_are_listed_under_its_path_as_the_resend_sdks_call_it() {
    let app = TestApp::spawn_unthrottled().await;
    let pros = created(&app, "/segments", json!({ "name": "Pros", "filter": { "all": [{ "field": "email", "op": "contains", "value": "@pro.test" }] } })).await;
    created(&app, "/contacts", json!({ "email": "a@pro.test" })).await;
    created(&app, "/contacts", json!({ "email": "b@free.test" })).await;
    assert_eq!(emails_of(&app.get(&format!("/segments/{pros}/contacts")).await), ["a@pro.test"]);
    assert_eq!(emails_of(&app.get(&format!("/segments/{pros}/contacts")).await), member_emails(&app, &pros).await);
    app.get("/segments/00000000-0000-7000-8000-000000000000/contacts").await.assert_error(404, "not_found");
    app.get("/segments/nope/contacts").await.assert_error(404, "not_found");
    let (_, other_key) = api::cli::create_team(&app.pool, "Other team").await.unwrap();
    let theirs = app.request_as(&other_key, reqwest::Method::GET, &format!("/segments/{pros}/contacts")).send().await.unwrap();
    tests::Answer::from(theirs).await.assert_error(404, "not_found");
    let theirs = app.request_as(&other_key, reqwest::Method::GET, &format!("/audiences/{pros}/contacts")).send().await.unwrap();
    tests::Answer::from(theirs).await.assert_error(404, "not_found");
    let body = json!({ "email": "x@other.test" });
    let theirs = app.request_as(&other_key, reqwest::Method::POST, &format!("/audiences/{pros}/contacts")).json(&body).send().await.unwrap();
    tests::Answer::from(theirs).await.assert_error(404, "not_found");
    assert_eq!(app.count("contacts").await, 2, "another team's audience takes no contact");
}

#[tokio::test]
async fn the_legacy_audience_paths_are_aliases_of_segments_and_their_contacts() {
    let app = TestApp::spawn_unthrottled().await;
    let audience = created(&app, "/audiences", json!({ "name": "Newsletter" })).await;
    assert_eq!(app.get(&format!("/segments/{audience}")).await.body["name"], "Newsletter");
    assert_eq!(app.get(&format!("/audiences/{audience}")).await.body["name"], "Newsletter");
    assert_eq!(app.get("/audiences").await.body["data"][0]["id"], audience.as_str());

    let contact = created(&app, &format!("/audiences/{audience}/contacts"), json!({ "email": "jo@b.test", "first_name": "Jo" })).await;
    assert_eq!(emails_of(&app.get(&format!("/audiences/{audience}/contacts")).await), ["jo@b.test"]);
    assert_eq!(app.get(&format!("/audiences/{audience}/contacts/jo@b.test")).await.body["id"], contact.as_str());
    let updated = app.patch(&format!("/audiences/{audience}/contacts/{contact}"), json!({ "last_name": "Doe" })).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(app.get(&format!("/contacts/{contact}")).await.body["last_name"], "Doe");

    let missing = "00000000-0000-7000-8000-000000000000";
    app.post(&format!("/audiences/{missing}/contacts"), json!({ "email": "x@b.test" })).await.assert_error(404, "not_found");
    assert_eq!(app.count("contacts").await, 1, "an unknown audience creates no contact");
    app.get(&format!("/audiences/{missing}/contacts/{contact}")).await.assert_error(404, "not_found");

    let deleted = app.delete(&format!("/audiences/{audience}/contacts/{contact}")).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    app.get(&format!("/contacts/{contact}")).await.assert_error(404, "not_found");
    assert_eq!(app.delete(&format!("/audiences/{audience}")).await.status, 200);
    app.get(&format!("/segments/{audience}")).await.assert_error(404, "not_found");
}
