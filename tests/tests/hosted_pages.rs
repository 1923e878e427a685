//! The hosted preference page and RFC 8058 one-click unsubscribe: signed links, plain HTML
//! forms driven in a real headless Chromium with JavaScript off, consent records with the
//! person's IP and agent, and no `contact.updated` events.

use serde_json::{Value, json};
use tests::TestApp;
use tests::browser::Browser;
use uuid::Uuid;

async fn created(app: &TestApp, path: &str, body: Value) -> String {
    let answer = app.post(path, body).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body["id"].as_str().unwrap().to_string()
}

/// The app's own address for a link Herald handed out.
fn local(app: &TestApp, url: &str, page: &str) -> String {
    app.url(&url[url.find(&format!("/{page}/")).expect("a hosted link")..])
}

async fn contact_updates(app: &TestApp) -> i64 {
    app.count("events WHERE type = 'contact.updated'").await
}

#[tokio::test]
async fn the_preference_page_saves_topic_choices_and_unsubscribes_in_a_browser_without_javascript() {
    let app = TestApp::spawn_unthrottled().await;
    let news = created(&app, "/topics", json!({ "name": "News", "default_subscription": "opt_in", "visibility": "public", "description": "Monthly digest" })).await;
    let offers = created(&app, "/topics", json!({ "name": "Offers", "default_subscription": "opt_out", "visibility": "public" })).await;
    let beta = created(&app, "/topics", json!({ "name": "Beta", "default_subscription": "opt_out" })).await;
    created(&app, "/topics", json!({ "name": "Secret", "default_subscription": "opt_out" })).await;
    created(&app, "/contacts", json!({ "email": "pat@example.com", "topics": [{ "id": beta, "subscription": "opt_in" }] })).await;
    let contact = app.get("/contacts/pat@example.com").await.body;
    let preferences = local(&app, contact["preferences_url"].as_str().unwrap(), "preferences");
    let unsubscribe = local(&app, contact["unsubscribe_url"].as_str().unwrap(), "unsubscribe");
    let consents_before = app.count("consent_records").await;

    let mut browser = Browser::launch().await.unwrap().expect("chromium is installed (scripts/test installs it)");
    browser.disable_javascript().await.unwrap();
    browser.goto(&preferences).await.unwrap();
    let text = browser.text().await.unwrap();
    for shown in ["pat@example.com", "News", "Monthly digest", "Offers", "Beta"] {
        assert!(text.contains(shown), "{shown} is on the page: {text}");
    }
    assert!(!text.contains("Secret"), "a private topic the contact is not in stays hidden");
    let checked = |id: &str| format!("document.querySelector('input[value=\"{id}\"]').checked");
    assert_eq!(browser.eval(&checked(&news)).await.unwrap(), json!(true));
    assert_eq!(browser.eval(&checked(&offers)).await.unwrap(), json!(false));

    browser.click(&format!("input[value=\"{news}\"]"), false).await.unwrap();
    browser.click(&format!("input[value=\"{offers}\"]"), false).await.unwrap();
    browser.click("button[type=submit]", true).await.unwrap();
    assert!(browser.text().await.unwrap().contains("Your preferences are saved."));
    assert_eq!(browser.eval(&checked(&news)).await.unwrap(), json!(false), "the saved page shows the new choices");
    assert_eq!(browser.eval(&checked(&offers)).await.unwrap(), json!(true));

    let topics = app.get("/contacts/pat@example.com/topics").await.body;
    let effective: Vec<(&str, &str)> =
        topics["data"].as_array().unwrap().iter().map(|t| (t["name"].as_str().unwrap(), t["subscription"].as_str().unwrap())).collect();
    assert_eq!(effective, [("News", "opt_out"), ("Offers", "opt_in"), ("Beta", "opt_in"), ("Secret", "opt_out")]);
    let records: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT choice, source, ip_address, user_agent FROM consent_records ORDER BY id OFFSET $1",
    )
    .bind(consents_before)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let choices: Vec<(&str, &str)> = records.iter().map(|(c, s, _, _)| (c.as_str(), s.as_str())).collect();
    assert_eq!(choices, [("opt_out", "preference_page"), ("opt_in", "preference_page")], "one record per change only");
    assert_eq!(records[0].2.as_deref(), Some("127.0.0.1"));
    assert!(records[0].3.as_deref().unwrap_or_default().contains("Chrome"), "{:?}", records[0].3);

    browser.goto(&unsubscribe).await.unwrap();
    assert!(browser.text().await.unwrap().contains("Stop sending all emails to pat@example.com?"));
    assert_eq!(app.get("/contacts/pat@example.com").await.body["unsubscribed"], false, "opening the link changes nothing");
    browser.click("button[type=submit]", true).await.unwrap();
    assert!(browser.text().await.unwrap().contains("You are unsubscribed"));
    assert_eq!(app.get("/contacts/pat@example.com").await.body["unsubscribed"], true);
    assert_eq!(app.count("consent_records WHERE choice = 'unsubscribed' AND source = 'one_click'").await, 1);
    assert_eq!(contact_updates(&app).await, 0, "hosted-page changes are not contact.updated events");
}

#[tokio::test]
async fn one_click_unsubscribe_takes_the_rfc_8058_post_and_refuses_bad_links() {
    let app = TestApp::spawn_unthrottled().await;
    let news = created(&app, "/topics", json!({ "name": "News", "default_subscription": "opt_in" })).await;
    let id: Uuid = created(&app, "/contacts", json!({ "email": "sam@example.com" })).await.parse().unwrap();
    let contact = app.get(&format!("/contacts/{id}")).await.body;
    let unsubscribe = local(&app, contact["unsubscribe_url"].as_str().unwrap(), "unsubscribe");
    let client = reqwest::Client::new();
    let post = |body: &'static str, content_type: &'static str| {
        client.post(&unsubscribe).header("content-type", content_type).header("user-agent", "MailClient/2.0").body(body).send()
    };

    let nothing = post("", "application/x-www-form-urlencoded").await.unwrap();
    assert_eq!(nothing.status(), 200);
    assert!(nothing.text().await.unwrap().contains("Nothing changed"));
    assert_eq!(app.count("consent_records").await, 0);

    // A topic's link leaves that topic only.
    let key: Vec<u8> = sqlx::query_scalar("SELECT secret FROM service_keys WHERE name = 'links'").fetch_one(&app.pool).await.unwrap();
    let topic_token = schema::links::token(&key, schema::links::Link { contact_id: id, topic_id: Some(news.parse().unwrap()) });
    let left = client.post(app.url(&format!("/unsubscribe/{topic_token}"))).body("List-Unsubscribe=One-Click").send().await.unwrap();
    assert_eq!(left.status(), 200, "{}", left.text().await.unwrap());
    let topics = app.get(&format!("/contacts/{id}/topics")).await.body;
    assert_eq!((&topics["data"][0]["subscription"], &app.get(&format!("/contacts/{id}")).await.body["unsubscribed"]), (&json!("opt_out"), &json!(false)));

    let multipart = "--b7\r\nContent-Disposition: form-data; name=\"List-Unsubscribe\"\r\n\r\nOne-Click\r\n--b7--\r\n";
    let done = post(multipart, "multipart/form-data; boundary=b7").await.unwrap();
    assert_eq!(done.status(), 200);
    assert!(done.text().await.unwrap().contains("You are unsubscribed"));
    assert_eq!(app.get(&format!("/contacts/{id}")).await.body["unsubscribed"], true);
    post("List-Unsubscribe=One-Click", "application/x-www-form-urlencoded").await.unwrap();
    let records: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT choice, source, user_agent FROM consent_records ORDER BY id").fetch_all(&app.pool).await.unwrap();
    let expected: Vec<(String, String, Option<String>)> = vec![
        ("opt_out".into(), "one_click".into(), None),
        ("unsubscribed".into(), "one_click".into(), Some("MailClient/2.0".into())),
    ];
    assert_eq!(records, expected, "a repeat click records nothing");
    assert_eq!(contact_updates(&app).await, 0);

    let mut tampered = unsubscribe.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    for url in [tampered, app.url("/unsubscribe/not-a-token"), app.url(&format!("/preferences/{}", "x".repeat(64)))] {
        let refused = client.post(&url).body("List-Unsubscribe=One-Click").send().await.unwrap();
        assert_eq!(refused.status(), 404, "{url}");
        assert_eq!(client.get(&url).send().await.unwrap().status(), 404);
    }
    app.delete(&format!("/contacts/{id}")).await;
    assert_eq!(client.get(&unsubscribe).send().await.unwrap().status(), 404, "an erased contact's links are dead");
}
