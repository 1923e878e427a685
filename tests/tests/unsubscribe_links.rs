//! Unsubscribes that reach transactional mail (`unsubscribe_link` on a send: each recipient's
//! copy names its own address, and one click or the mailto suppresses it), and email content
//! withheld with `403 email_above_quota` while a team is past a lowered limit.

use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;
use tests::mail::{self, Mail, SENDING_DOMAIN};
use tests::smtp::Received;

const WAIT: Duration = Duration::from_secs(15);

/// The https and mailto parts of a message's `List-Unsubscribe`.
fn unsubscribe_parts(message: &Received) -> (String, String) {
    let header = message.header("List-Unsubscribe").expect("the copy carries List-Unsubscribe");
    let part = |scheme: &str| header.split(['<', '>']).find(|p| p.trim().starts_with(scheme)).unwrap().trim().to_string();
    (part("http"), part("mailto:"))
}

fn local_path(url: &str) -> String {
    format!("/{}", url.split_once("://").unwrap().1.split_once('/').unwrap().1)
}

async fn one_click(mail: &Mail, path: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(mail.app.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap()
}

async fn suppressions(mail: &Mail) -> Vec<Value> {
    mail.app.get("/suppressions").await.body["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn each_recipient_of_a_send_with_unsubscribe_link_gets_its_own_one_click_that_suppresses_only_its_address() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let mut body = Mail::message("a@inbox.test");
    body["to"] = json!(["a@inbox.test", "b@inbox.test"]);
    body["cc"] = json!("c@inbox.test");
    body["unsubscribe_link"] = json!(true);
    let id = mail.send(body).await;
    let received = mail.sink.wait_for(3, WAIT).await;
    let key = mail::dkim_public_key(&mail.domain);
    let copy = |to: &str| received.iter().find(|m| m.rcpt_to[0] == to).unwrap().clone();
    let mut tokens = Vec::new();
    for message in &received {
        tests::dkim::verify(&message.data, &key).expect("each copy is signed on its own");
        assert_eq!(message.header("List-Unsubscribe-Post").as_deref(), Some("List-Unsubscribe=One-Click"));
        let (https, mailto) = unsubscribe_parts(message);
        assert!(https.contains("/unsubscribe/"), "{https}");
        assert!(mailto.starts_with(&format!("mailto:unsubscribe@send.{SENDING_DOMAIN}?subject=unsubscribe%20")), "{mailto}");
        tokens.push(https);
    }
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 3, "every recipient's link is its own");
    mail.wait_for_event(&id, "delivered").await;

    // The page a browser opens asks first and changes nothing.
    let (a_url, _) = unsubscribe_parts(&copy("a@inbox.test"));
    let page = reqwest::get(app.url(&local_path(&a_url))).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("a@inbox.test"));
    assert!(suppressions(&mail).await.is_empty());

    // One click suppresses a@ alone, once, with the email as its source.
    for _ in 0..2 {
        assert_eq!(one_click(&mail, &local_path(&a_url)).await.status(), 200);
    }
    let listed = suppressions(&mail).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0]["email"].as_str(), listed[0]["origin"].as_str()), (Some("a@inbox.test"), Some("unsubscribe")));
    assert_eq!(listed[0]["source_id"], id.as_str());
    assert_eq!(app.count("events WHERE type = 'suppression.added'").await, 1);

    // A later send to a@ is skipped as suppressed; c@ still receives.
    let mut later = Mail::message("a@inbox.test");
    later["cc"] = json!("c@inbox.test");
    let later_id = mail.send(later).await;
    mail.wait_for_event(&later_id, "delivered").await;
    let read = app.get(&format!("/emails/{later_id}")).await.body;
    let statuses: Vec<(&str, &str)> =
        read["recipients"].as_array().unwrap().iter().map(|r| (r["email"].as_str().unwrap(), r["status"].as_str().unwrap())).collect();
    assert!(statuses.contains(&("a@inbox.test", "suppressed")), "{statuses:?}");
    assert!(mail.timeline(&later_id).await.contains(&"email.suppressed".to_string()));
    let arrived = mail.sink.wait_for(4, WAIT).await;
    let plain = arrived.iter().find(|m| m.rcpt_to[0] == "c@inbox.test" && m.header("List-Unsubscribe").is_none());
    assert!(plain.is_some(), "a send without unsubscribe_link carries no List-Unsubscribe of Herald's");

    // The mailto of b@'s copy, mailed as a mailbox provider would, suppresses b@.
    let (_, mailto) = unsubscribe_parts(&copy("b@inbox.test"));
    let (address, query) = mailto.trim_start_matches("mailto:").split_once('?').unwrap();
    let subject = query.trim_start_matches("subject=").replace("%20", " ");
    let port = app.start_inbound(|_| {}).await;
    let raw = format!("From: b@inbox.test\r\nTo: {address}\r\nSubject: {subject}\r\n\r\nunsubscribe\r\n");
    tests::smtp::submit(port, "b@inbox.test", address, raw.as_bytes()).await.expect("the inbound server takes the unsubscribe mail");
    let mut emails: Vec<String> = suppressions(&mail).await.iter().map(|s| s["email"].as_str().unwrap().to_string()).collect();
    emails.sort();
    assert_eq!(emails, ["a@inbox.test", "b@inbox.test"], "c@ was never asked about");
    assert_eq!(app.count("received_emails").await, 0, "an unsubscribe is no received email");
}

#[tokio::test]
async fn a_forged_or_foreign_unsubscribe_link_changes_nothing() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let mut body = Mail::message("a@inbox.test");
    body["unsubscribe_link"] = json!(true);
    mail.send(body).await;
    let received = mail.sink.wait_for(1, WAIT).await;
    let (url, mailto) = unsubscribe_parts(&received[0]);
    let path = local_path(&url);
    let token = path.rsplit('/').next().unwrap().to_string();
    let mut forged = token.clone().into_bytes();
    let last = forged.len() - 3;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let forged = format!("/unsubscribe/{}", String::from_utf8(forged).unwrap());
    assert_eq!(one_click(&mail, &forged).await.status(), 404);
    assert_eq!(reqwest::get(app.url(&forged)).await.unwrap().status(), 404);

    // Without the one-click body, nothing changes either.
    let plain = reqwest::Client::new().post(app.url(&path)).header("content-type", "application/x-www-form-urlencoded").body("x=1");
    assert_eq!(plain.send().await.unwrap().status(), 200);

    // A mailto whose token is broken changes nothing.
    let subject = mailto.split_once("subject=").unwrap().1.replace("%20", " ");
    let port = app.start_inbound(|_| {}).await;
    let to = format!("unsubscribe@send.{SENDING_DOMAIN}");
    let raw = format!("From: x@inbox.test\r\nTo: {to}\r\nSubject: {}\r\n\r\nunsubscribe\r\n", subject.replace(&token, "AAAA"));
    tests::smtp::submit(port, "x@inbox.test", &to, raw.as_bytes()).await.expect("accepted");
    assert!(suppressions(&mail).await.is_empty());
    assert_eq!(app.count("events WHERE type = 'suppression.added'").await, 0);
}

fn herald(database_url: &str, args: &[&str]) {
    let output = Command::new(tests::herald_binary()).args(args).env("DATABASE_URL", database_url).env("HERALD_LOG", "error").output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[tokio::test]
async fn an_email_s_content_is_withheld_with_email_above_quota_while_the_team_is_past_a_lowered_limit() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let team = app.team_id.to_string();
    herald(&app.database_url, &["team", "update", "--team", &team, "--plan", "pro"]);
    let item = |n: usize| {
        let mut body = Mail::message(&format!("delivered+{n}@simulator.herald.test"));
        body["attachments"] = json!([{ "filename": "a.txt", "content": "aGk=" }]);
        body
    };
    let batch: Vec<Value> = (0..100).map(item).collect();
    let sent = app.post("/emails/batch", json!(batch)).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let id = sent.body["data"][0]["id"].as_str().unwrap().to_string();
    mail.send(item(100)).await;
    let listed = app.get(&format!("/emails/{id}/attachments")).await.body["data"][0].clone();
    let attachment = listed["id"].as_str().unwrap().to_string();
    let download = app.url(&format!("/email-attachments/{}", listed["download_url"].as_str().unwrap().rsplit('/').next().unwrap()));
    assert_eq!(app.get(&format!("/emails/{id}")).await.status, 200, "within the pro plan's limits");

    // The operator moves the team to the free plan: 101 sent today is past its daily cap of 100.
    herald(&app.database_url, &["team", "update", "--team", &team, "--plan", "free"]);
    let shares_before = app.count("email_shares").await;
    for path in [format!("/emails/{id}"), format!("/emails/{id}/attachments/{attachment}")] {
        app.get(&path).await.assert_error(403, "email_above_quota");
    }
    app.post(&format!("/emails/{id}/share"), json!({})).await.assert_error(403, "email_above_quota");
    assert_eq!(app.count("email_shares").await, shares_before, "no view link was made");
    assert_eq!(reqwest::get(&download).await.unwrap().status(), 403, "a download link minted before waits too");
    // Lists and metrics still answer; another team's email is still 404 first.
    assert_eq!(app.get("/emails").await.status, 200);
    assert_eq!(app.get(&format!("/emails/{id}/attachments")).await.status, 200);
    app.get(&format!("/emails/{}", uuid::Uuid::now_v7())).await.assert_error(404, "not_found");

    herald(&app.database_url, &["team", "update", "--team", &team, "--plan", "pro"]);
    let read = app.get(&format!("/emails/{id}")).await;
    assert_eq!(read.status, 200);
    assert_eq!(read.body["text"], "Thanks for your order.");
}
