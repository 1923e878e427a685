//! Verified identities (#27): a team in the sending sandbox mails an address a link, the
//! address's owner confirms it on Herald's page, and the sandbox then delivers to it.

use reqwest::Method;
use serde_json::{Value, json};
use tests::mail::{self, Mail, SENDING_DOMAIN};
use tests::smtp::SmtpSink;
use tests::{TestApp, eventually};

const SUBJECT: &str = "Confirm this address for a team's test mail on Herald";

async fn setup() -> Mail {
    let mail = mail::setup_with(SmtpSink::start().await, |c| c.system_from = Some(format!("Herald <accounts@{SENDING_DOMAIN}>"))).await;
    sqlx::query("UPDATE teams SET sandbox_regions = ARRAY['us-east-1']").execute(&mail.app.pool).await.unwrap();
    mail
}

/// The confirmation link in the `n`th message the sink got for `to`, as this app's URL.
async fn mailed_link(mail: &Mail, to: &str, n: usize) -> String {
    let message = eventually(|| async {
        mail.sink.messages().into_iter().filter(|m| m.rcpt_to.iter().any(|r| r == to) && m.header("subject").as_deref() == Some(SUBJECT)).nth(n)
    })
    .await;
    let html = message.html().expect("an HTML part");
    let start = html.find("href=\"").expect("the message carries a link") + 6;
    let link = &html[start..start + html[start..].find('"').unwrap()];
    mail.app.url(link.strip_prefix("http://127.0.0.1:8080").unwrap_or_else(|| panic!("{link}")))
}

/// A page: its status and text.
async fn page(app: &TestApp, method: Method, url: &str) -> (u16, String) {
    let response = app.client.request(method, url).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

fn message(to: &str) -> Value {
    Mail::message(to)
}

#[tokio::test]
async fn a_confirmed_identity_receives_sandbox_mail_and_its_link_works_once() {
    let mail = setup().await;
    let app = &mail.app;
    let refused = app.post("/emails", message("ada@inbox.test")).await;
    refused.assert_error(403, "validation_error");
    assert_eq!(refused.body["details"]["allowed"], json!(["verified_domain", "verified_identity", "simulator"]));

    let asked = app.post("/team/identities", json!({ "email": "Ada@Inbox.TEST" })).await;
    assert_eq!(asked.status, 201, "{}", asked.body);
    assert_eq!((asked.body["object"].as_str(), asked.body["email"].as_str(), asked.body["status"].as_str()), (Some("verified_identity"), Some("ada@inbox.test"), Some("pending")));
    app.post("/emails", message("ada@inbox.test")).await.assert_error(403, "validation_error");

    let link = mailed_link(&mail, "ada@inbox.test", 0).await;
    let (status, text) = page(app, Method::GET, &link).await;
    assert!(status == 200 && text.contains("Confirm this address"), "{status} {text}");
    assert_eq!(app.get("/team/identities").await.body["data"][0]["status"], "pending", "visiting the page confirms nothing");
    let (status, text) = page(app, Method::POST, &link).await;
    assert!(status == 200 && text.contains("Address confirmed"), "{status} {text}");
    let listed = app.get("/team/identities").await.body;
    assert_eq!((listed["data"][0]["status"].as_str(), listed["has_more"].as_bool()), (Some("verified"), Some(false)), "{listed}");
    assert!(listed["data"][0]["verified_at"].is_string());

    let sent = app.post("/emails", message("ada@inbox.test")).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert_eq!(page(app, Method::POST, &link).await.0, 404, "a link works once");
    assert_eq!(page(app, Method::GET, &link).await.0, 404);

    let id = asked.body["id"].as_str().unwrap();
    let deleted = app.delete(&format!("/team/identities/{id}")).await;
    assert_eq!((deleted.status, &deleted.body["deleted"]), (200, &json!(true)), "{}", deleted.body);
    app.post("/emails", message("ada@inbox.test")).await.assert_error(403, "validation_error");
    app.delete(&format!("/team/identities/{id}")).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_bad_address_an_expired_link_and_another_teams_identity_are_refused() {
    let mail = setup().await;
    let app = &mail.app;
    for email in ["not-an-address", "", "two@@inbox.test"] {
        app.post("/team/identities", json!({ "email": email })).await.assert_error(400, "validation_error");
    }
    assert_eq!(app.count("verified_identities").await, 0, "a refused request writes nothing");
    assert_eq!(app.count("emails").await, 0, "and mails nothing");

    app.post("/team/identities", json!({ "email": "late@inbox.test" })).await;
    let link = mailed_link(&mail, "late@inbox.test", 0).await;
    sqlx::query("UPDATE verified_identities SET expires_at = now() - interval '1 second'").execute(&app.pool).await.unwrap();
    assert_eq!(page(app, Method::POST, &link).await.0, 404, "an expired link confirms nothing");
    app.post("/emails", message("late@inbox.test")).await.assert_error(403, "validation_error");

    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let id = app.get("/team/identities").await.body["data"][0]["id"].as_str().unwrap().to_string();
    let theirs = tests::Answer::from(app.request_as(&other, Method::DELETE, &format!("/team/identities/{id}")).send().await.unwrap()).await;
    theirs.assert_error(404, "not_found");
    assert_eq!(app.count("verified_identities").await, 1);
}
