//! A contact's consent history read back (`GET /contacts/{contact}/consents`) and on the
//! dashboard's contact page: every change of `unsubscribed` and every topic choice, newest first,
//! with where it was made; another team's contact is not found and a sending key is refused.

use serde_json::json;
use tests::TestApp;
use tests::inbox::person;

#[tokio::test]
async fn a_contacts_consent_history_lists_each_change_newest_first_by_id_or_address() {
    // More than the default ten requests a second, all from the team's key.
    let app = TestApp::spawn_unthrottled().await;
    let topic = app.post("/topics", json!({ "name": "Product news", "default_subscription": "opt_out" })).await;
    assert_eq!(topic.status, 201, "{}", topic.body);
    let topic_id = topic.body["id"].as_str().unwrap().to_string();
    let made = app.post("/contacts", json!({ "email": "ana@example.com" })).await;
    let id = made.body["id"].as_str().unwrap().to_string();
    assert_eq!(app.patch(&format!("/contacts/{id}/topics"), json!([{ "id": topic_id, "subscription": "opt_in" }])).await.status, 200);
    assert_eq!(app.patch(&format!("/contacts/{id}"), json!({ "unsubscribed": true })).await.status, 200);

    let history = app.get(&format!("/contacts/{id}/consents")).await;
    assert_eq!(history.status, 200, "{}", history.body);
    assert_eq!(history.body["object"], "list");
    let data = history.body["data"].as_array().unwrap();
    assert_eq!(data.len(), 2, "{}", history.body);
    assert_eq!((&data[0]["object"], &data[0]["choice"], &data[0]["topic_id"], &data[0]["source"]), (&json!("consent_record"), &json!("unsubscribed"), &json!(null), &json!("api")));
    assert_eq!((&data[1]["choice"], &data[1]["topic_id"], &data[1]["contact_id"]), (&json!("opt_in"), &json!(topic_id), &json!(id)));
    assert!(data[0]["ip_address"].is_null() && data[0]["user_agent"].is_null(), "no client is known for an API call");

    let by_address = app.get("/contacts/ANA@example.com/consents?limit=1").await;
    assert_eq!(by_address.status, 200, "{}", by_address.body);
    assert_eq!((by_address.body["has_more"].clone(), by_address.body["data"][0]["id"].clone()), (json!(true), data[0]["id"].clone()));
    let rest = app.get(&format!("/contacts/{id}/consents?after={}", data[0]["id"].as_str().unwrap())).await;
    assert_eq!(rest.body["data"][0]["id"], data[1]["id"]);

    app.get("/contacts/nobody@example.com/consents").await.assert_error(404, "not_found");
    app.get(&format!("/contacts/{id}/consents?limit=0")).await.assert_error(422, "invalid_parameter");
    let (other, other_key) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let _ = other;
    let theirs = tests::Answer::from(app.request_as(&other_key, reqwest::Method::GET, &format!("/contacts/{id}/consents")).send().await.unwrap()).await;
    theirs.assert_error(404, "not_found");
    let (_, sending) = app.create_key(json!({ "name": "send", "permission": "sending_access" })).await;
    let refused = tests::Answer::from(app.request_as(&sending, reqwest::Method::GET, &format!("/contacts/{id}/consents")).send().await.unwrap()).await;
    refused.assert_error(401, "restricted_api_key");
}

#[tokio::test]
async fn the_contact_page_shows_its_consent_history_with_the_topic_named() {
    let app = TestApp::spawn().await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let topic = app.post("/topics", json!({ "name": "Release <notes>", "default_subscription": "opt_out" })).await;
    let topic_id = topic.body["id"].as_str().unwrap().to_string();
    let made = app.post("/contacts", json!({ "email": "ana@example.com" })).await;
    let id = made.body["id"].as_str().unwrap().to_string();
    let client = reqwest::Client::builder().user_agent("Mozilla/5.0 (dashboard test)").build().unwrap();
    let page = |client: reqwest::Client| {
        let request = client.get(app.url(&format!("/app/contacts/{id}"))).header("cookie", format!("herald_session={}", admin.cookie));
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    assert!(page(client.clone()).await.contains("No consent change recorded yet."));
    assert_eq!(app.patch(&format!("/contacts/{id}/topics"), json!([{ "id": topic_id, "subscription": "opt_in" }])).await.status, 200);
    let html = page(client).await;
    assert!(html.contains("Consent history") && html.contains("opt in") && html.contains("Release &lt;notes&gt;"), "{html}");
}
