//! Receiving: the inbound SMTP server over TCP, received emails over HTTP, and bounces and
//! complaints about sent mail arriving as mail.

use serde_json::json;
use std::time::Duration;
use tests::mail::{self, Mail, RECIPIENT_DOMAIN, SENDING_DOMAIN};
use tests::smtp::submit;
use tests::{TestApp, eventually};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Turns receiving on for the team's verified `acme.test`.
async fn receive_at_acme(mail: &Mail) {
    let id = mail.domain["id"].as_str().unwrap();
    let answer = mail.app.patch(&format!("/domains/{id}"), json!({ "capabilities": { "receiving": "enabled" } })).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

/// A raw SMTP client: each command's full reply (multi-line replies joined).
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    async fn connect(port: u16) -> (Client, String) {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut client = Client { reader: BufReader::new(stream) };
        let greeting = client.reply().await;
        (client, greeting)
    }

    async fn reply(&mut self) -> String {
        let mut all = String::new();
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).await.unwrap() == 0 {
                return all;
            }
            all.push_str(&line);
            if line.as_bytes().get(3) != Some(&b'-') {
                return all;
            }
        }
    }

    async fn send(&mut self, bytes: &[u8]) -> String {
        self.reader.get_mut().write_all(bytes).await.unwrap();
        self.reply().await
    }

    /// EHLO, MAIL FROM and the recipients; answers the RCPT replies.
    async fn envelope(&mut self, from: &str, to: &[&str]) -> Vec<String> {
        assert!(self.send(b"EHLO client.test\r\n").await.starts_with("250"));
        assert!(self.send(format!("MAIL FROM:<{from}>\r\n").as_bytes()).await.starts_with("250"));
        let mut replies = Vec::new();
        for to in to {
            replies.push(self.send(format!("RCPT TO:<{to}>\r\n").as_bytes()).await);
        }
        replies
    }

    /// DATA with `message` (CRLF lines, dot-stuffed here); answers the final reply.
    async fn data(&mut self, message: &str) -> String {
        let started = self.send(b"DATA\r\n").await;
        assert!(started.starts_with("354"), "{started}");
        let stuffed = message.replace("\r\n.", "\r\n..");
        self.send(format!("{stuffed}\r\n.\r\n").as_bytes()).await
    }
}

const MESSAGE: &str = "From: Ann Sender <ann@sender.test>\r\nTo: Support <support@acme.test>\r\nCc: cc@other.test\r\nSubject: Help with order 42\r\n\
Message-ID: <m42@sender.test>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n\
--b1\r\nContent-Type: multipart/alternative; boundary=\"b2\"\r\n\r\n\
--b2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello, my order is late.\r\n\
--b2\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p onclick=\"steal()\">Hello, my order is late.</p>\r\n--b2--\r\n\
--b1\r\nContent-Type: text/html; name=\"page.html\"\r\nContent-Disposition: attachment; filename=\"../page.html\"\r\n\r\n<script>alert(1)</script>\r\n\
--b1\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"invoice.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b1--\r\n";

#[tokio::test]
async fn a_message_to_a_receiving_domain_is_stored_with_its_attachments_and_raw_source() {
    let mail = mail::setup().await;
    let app = &mail.app;
    receive_at_acme(&mail).await;
    let port = app.start_inbound(|_| {}).await;
    let accepted = submit(port, "ann@sender.test", "support@acme.test", MESSAGE.as_bytes()).await.expect("accepted");
    assert!(accepted.is_positive());

    let list = app.get("/emails/receiving").await;
    assert_eq!(list.status, 200, "{}", list.body);
    let item = &list.body["data"][0];
    assert_eq!(item["subject"], "Help with order 42");
    assert_eq!(item["from"], "Ann Sender <ann@sender.test>");
    assert_eq!(item["to"], json!(["support@acme.test"]));
    assert_eq!(item["cc"], json!(["cc@other.test"]));
    assert!(item.get("html").is_none() && item.get("received_for").is_none(), "rows omit bodies, headers and received_for");
    let id = item["id"].as_str().unwrap().to_string();

    let one = app.get(&format!("/emails/receiving/{id}")).await.body;
    assert_eq!(one["received_for"], json!(["support@acme.test"]));
    assert_eq!(one["html"], "<p onclick=\"steal()\">Hello, my order is late.</p>", "stored as decoded, never sanitised");
    assert_eq!(one["text"], "Hello, my order is late.");
    assert_eq!(one["message_id"], "m42@sender.test");
    assert_eq!(one["headers"]["subject"], "Help with order 42", "the first value, as the Resend SDKs read headers");
    assert_eq!(one["header_values"]["subject"], json!(["Help with order 42"]));
    let raw_link = one["raw"]["download_url"].as_str().unwrap();
    let raw_path = raw_link.split_once("://").unwrap().1.split_once('/').unwrap().1;
    let raw = reqwest::get(app.url(&format!("/{raw_path}"))).await.unwrap(); // the link is on HERALD_PUBLIC_URL
    assert_eq!((raw.status().as_u16(), raw.headers()["content-type"].to_str().unwrap().to_string()), (200, "message/rfc822".to_string()));
    assert!(String::from_utf8_lossy(&raw.bytes().await.unwrap()).contains("m42@sender.test"), "the raw link downloads the message as received");
    assert_eq!(one["dropped_reason"], json!(null));
    let names: Vec<&str> = one["attachments"].as_array().unwrap().iter().map(|a| a["filename"].as_str().unwrap()).collect();
    assert_eq!(names, ["page.html", "invoice.pdf"], "a name never leaves its folder");

    // Attachments download through signed links with no credential, as downloads.
    let parts = app.get(&format!("/emails/receiving/{id}/attachments")).await.body;
    let html_part = &parts["data"][0];
    assert!(html_part["expires_at"].is_string());
    let part_path = format!("/emails/receiving/{id}/attachments/{}", html_part["id"].as_str().unwrap());
    let one_part = app.get(&part_path).await;
    assert_eq!((one_part.status, &one_part.body["filename"], one_part.body["download_url"].is_string()), (200, &html_part["filename"], true), "{}", one_part.body);
    assert_eq!(app.get(&format!("/emails/receiving/{id}/attachments/{}", uuid::Uuid::now_v7())).await.status, 404, "an unknown attachment");
    // The link is on HERALD_PUBLIC_URL; the test server listens elsewhere.
    let local = |link: &str| app.url(&format!("/{}", link.split_once("://").unwrap().1.split_once('/').unwrap().1));
    let url = &local(html_part["download_url"].as_str().unwrap());
    let downloaded = reqwest::get(url).await.unwrap();
    assert_eq!(downloaded.status(), 200);
    assert_eq!(downloaded.headers()["content-type"], "application/octet-stream", "text/html is never served as itself");
    assert_eq!(downloaded.headers()["x-content-type-options"], "nosniff");
    assert!(downloaded.headers()["content-disposition"].to_str().unwrap().starts_with("attachment;"));
    assert_eq!(downloaded.text().await.unwrap().trim(), "<script>alert(1)</script>");
    let pdf = reqwest::get(local(parts["data"][1]["download_url"].as_str().unwrap())).await.unwrap();
    assert_eq!(pdf.headers()["content-type"], "application/pdf");
    assert_eq!(pdf.bytes().await.unwrap().as_ref(), b"%PDF-1.4\n");
    // A tampered link answers 404.
    let tampered = format!("{}A", url.trim_end_matches(|c: char| c != '/'));
    assert_eq!(reqwest::get(&tampered).await.unwrap().status(), 404);

    // The raw source, as received.
    let raw = app.request(reqwest::Method::GET, &format!("/emails/receiving/{id}/raw")).send().await.unwrap();
    assert_eq!(raw.headers()["content-type"], "message/rfc822");
    // lettre ends DATA with an empty line before the dot: the source is that, byte for byte.
    assert_eq!(raw.text().await.unwrap(), format!("{MESSAGE}\r\n"));

    // email.received, with the listed fields.
    let event: serde_json::Value = sqlx::query_scalar("SELECT data FROM events WHERE type = 'email.received'").fetch_one(&app.pool).await.unwrap();
    assert_eq!((event["email_id"].as_str(), &event["received_for"], event["attachments"].as_array().map(Vec::len)), (Some(id.as_str()), &json!(["support@acme.test"]), Some(2)));

    // Its id is no sent email's, and a sent email's id is no received one's.
    app.get(&format!("/emails/{id}")).await.assert_error(404, "not_found");
    let sent = mail.send(Mail::message(&format!("someone@{RECIPIENT_DOMAIN}"))).await;
    app.get(&format!("/emails/receiving/{sent}")).await.assert_error(404, "not_found");

    // Another team sees none of it.
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let theirs = app.request_as(&other, reqwest::Method::GET, &format!("/emails/receiving/{id}")).send().await.unwrap();
    assert_eq!(theirs.status(), 404);

    // Delete removes the message, its attachments and raw source together.
    assert_eq!(app.delete(&format!("/emails/receiving/{id}")).await.status, 200);
    app.get(&format!("/emails/receiving/{id}")).await.assert_error(404, "not_found");
    assert_eq!(reqwest::get(url).await.unwrap().status(), 404);
    assert_eq!((app.count("received_attachments").await, app.count("received_sources").await), (0, 0));
}

#[tokio::test]
async fn refused_mail_is_answered_in_the_conversation_and_stores_nothing() {
    let mail = mail::setup().await;
    let app = &mail.app;
    receive_at_acme(&mail).await;
    let port = app.start_inbound(|s| s.max_message_bytes = 10_000).await;
    let (mut client, greeting) = Client::connect(port).await;
    assert!(greeting.starts_with("220"), "{greeting}");
    let ehlo = client.send(b"EHLO client.test\r\n").await;
    for capability in ["SIZE 10000", "PIPELINING", "8BITMIME"] {
        assert!(ehlo.contains(capability), "{ehlo}");
    }
    assert!(client.send(b"MAIL FROM:<a@sender.test>\r\n").await.starts_with("250"));
    // Unknown domains and addresses are refused at RCPT.
    assert!(client.send(b"RCPT TO:<x@nowhere.test>\r\n").await.starts_with("550"));
    assert!(client.send(format!("RCPT TO:<x@{RECIPIENT_DOMAIN}>\r\n").as_bytes()).await.starts_with("550"));
    assert!(client.send(b"RCPT TO:<b-0000-1-ff@send.acme.test>\r\n").await.starts_with("550"), "a return path without a valid tag");
    assert!(client.send(b"DATA\r\n").await.starts_with("503"), "no recipient yet");
    assert!(client.send(b"RCPT TO:<support@acme.test>\r\n").await.starts_with("250"));
    // Over the size cap.
    let big = format!("Subject: big\r\n\r\n{}", "x".repeat(80).repeat(200).chars().collect::<Vec<_>>().chunks(78).map(|c| c.iter().collect::<String>()).collect::<Vec<_>>().join("\r\n"));
    assert!(client.data(&big).await.starts_with("552"));
    // A bare LF.
    let (mut client, _) = Client::connect(port).await;
    client.envelope("a@sender.test", &["support@acme.test"]).await;
    assert!(client.data("Subject: bare\r\n\r\nline one\nline two").await.starts_with("554"));
    // DATA that never ends (the client leaves): nothing is stored.
    let (mut client, _) = Client::connect(port).await;
    client.envelope("a@sender.test", &["support@acme.test"]).await;
    assert!(client.send(b"DATA\r\n").await.starts_with("354"));
    client.reader.get_mut().write_all(b"Subject: cut\r\n\r\nhalf a mess").await.unwrap();
    drop(client);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.count("received_emails").await, 0, "nothing refused or unfinished was stored");

    // Garbage is kept as parse_failed, its raw source still downloadable.
    let (mut client, _) = Client::connect(port).await;
    client.envelope("a@sender.test", &["support@acme.test"]).await;
    assert!(client.data("\u{1}\u{2} this is no message").await.starts_with("250"));
    let item = app.get("/emails/receiving").await.body["data"][0].clone();
    assert_eq!((item["dropped_reason"].as_str(), item["attachments"].as_array().map(Vec::len)), (Some("parse_failed"), Some(0)));
    let one = app.get(&format!("/emails/receiving/{}", item["id"].as_str().unwrap())).await.body;
    assert_eq!((one["html"].clone(), one["text"].clone()), (json!(null), json!(null)));
    let raw = app.request(reqwest::Method::GET, &format!("/emails/receiving/{}/raw", item["id"].as_str().unwrap())).send().await.unwrap();
    assert_eq!(raw.status(), 200);
}

#[tokio::test]
async fn a_dsn_to_the_return_path_bounces_the_recipient_and_suppresses_it() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let port = app.start_inbound(|_| {}).await;
    let id = mail.send(Mail::message(&format!("gone@{RECIPIENT_DOMAIN}"))).await;
    let delivered = mail.sink.wait_for(1, Duration::from_secs(20)).await;
    mail.wait_for_event(&id, "delivered").await;
    let return_path = delivered[0].mail_from.clone();
    assert!(return_path.ends_with("@send.acme.test"), "{return_path}");

    let dsn = format!(
        "From: Mail Delivery System <MAILER-DAEMON@mx.inbox.test>\r\nTo: {return_path}\r\nSubject: Undelivered Mail Returned to Sender\r\n\
Auto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"r1\"\r\n\r\n\
--r1\r\nContent-Type: text/plain\r\n\r\nThe mail system could not deliver your message.\r\n\
--r1\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.inbox.test\r\n\r\nFinal-Recipient: rfc822; gone@{RECIPIENT_DOMAIN}\r\n\
Action: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 <gone@{RECIPIENT_DOMAIN}>: Recipient address rejected\r\n\r\n\
--r1\r\nContent-Type: text/rfc822-headers\r\n\r\nMessage-ID: <{id}@{SENDING_DOMAIN}>\r\nSubject: Your receipt\r\n\r\n--r1--\r\n"
    );
    submit(port, "postmaster@mx.inbox.test", &return_path, dsn.as_bytes()).await.expect("accepted");
    let email = mail.wait_for_event(&id, "bounced").await;
    assert_eq!(email["last_event"], "bounced");
    let bounce = mail.event(&id, "email.bounced").await;
    assert_eq!(bounce["bounce"]["type"], "Permanent");
    assert_eq!(bounce["bounce"]["subType"], "NoEmail");
    assert_eq!(bounce["bounce"]["diagnosticCode"][0], format!("550 5.1.1 <gone@{RECIPIENT_DOMAIN}>: Recipient address rejected"));
    let suppression = app.get(&format!("/suppressions/gone@{RECIPIENT_DOMAIN}")).await.body;
    assert_eq!((suppression["origin"].as_str(), suppression["source_id"].as_str()), (Some("bounce"), Some(id.as_str())));
    assert_eq!(app.count("received_emails").await, 0, "a bounce is no received email");

    // The same report again changes nothing; one for a recipient position the tag does not
    // sign is refused at RCPT.
    submit(port, "postmaster@mx.inbox.test", &return_path, dsn.as_bytes()).await.expect("accepted");
    assert_eq!(app.count("events WHERE type = 'email.bounced'").await, 1);
    let forged = return_path.replacen("-0-", "-1-", 1);
    assert!(submit(port, "postmaster@mx.inbox.test", &forged, dsn.as_bytes()).await.is_err());
}

#[tokio::test]
async fn a_forged_dsn_to_a_plain_receiving_address_is_mail_not_a_bounce() {
    let mail = mail::setup().await;
    let app = &mail.app;
    receive_at_acme(&mail).await;
    let port = app.start_inbound(|_| {}).await;
    let id = mail.send(Mail::message(&format!("kept@{RECIPIENT_DOMAIN}"))).await;
    mail.wait_for_event(&id, "delivered").await;
    let dsn = format!(
        "From: MAILER-DAEMON@evil.test\r\nTo: support@acme.test\r\nSubject: bounce\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/report; report-type=delivery-status; boundary=\"r\"\r\n\r\n--r\r\nContent-Type: message/delivery-status\r\n\r\n\
Reporting-MTA: dns; evil.test\r\n\r\nFinal-Recipient: rfc822; kept@{RECIPIENT_DOMAIN}\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\n\
--r\r\nContent-Type: text/rfc822-headers\r\n\r\nMessage-ID: <{id}@{SENDING_DOMAIN}>\r\n\r\n--r--\r\n"
    );
    submit(port, "", "support@acme.test", dsn.as_bytes()).await.expect("accepted");
    assert_eq!(app.count("received_emails").await, 1);
    assert_eq!(app.count("suppressions").await, 0);
    assert_eq!(mail.wait_for_event(&id, "delivered").await["last_event"], "delivered");
}

#[tokio::test]
async fn an_arf_complaint_to_the_return_path_records_email_complained_and_a_suppression() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let port = app.start_inbound(|_| {}).await;
    let id = mail.send(Mail::message(&format!("annoyed@{RECIPIENT_DOMAIN}"))).await;
    let delivered = mail.sink.wait_for(1, Duration::from_secs(20)).await;
    mail.wait_for_event(&id, "delivered").await;
    let arf = format!(
        "From: feedback@isp.test\r\nTo: {rp}\r\nSubject: FW: complaint\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/report; report-type=feedback-report; boundary=\"f\"\r\n\r\n--f\r\nContent-Type: text/plain\r\n\r\nThis is an email abuse report.\r\n\
--f\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\nUser-Agent: ISP-FBL/1.0\r\nVersion: 1\r\nOriginal-Rcpt-To: annoyed@{RECIPIENT_DOMAIN}\r\n\r\n\
--f\r\nContent-Type: message/rfc822\r\n\r\nMessage-ID: <{id}@{SENDING_DOMAIN}>\r\nFrom: billing@{SENDING_DOMAIN}\r\nSubject: Your receipt\r\n\r\nThanks.\r\n--f--\r\n",
        rp = delivered[0].mail_from
    );
    submit(port, "", &delivered[0].mail_from, arf.as_bytes()).await.expect("accepted");
    mail.wait_for_event(&id, "complained").await;
    mail.event(&id, "email.complained").await;
    let suppression = app.get(&format!("/suppressions/annoyed@{RECIPIENT_DOMAIN}")).await.body;
    assert_eq!(suppression["origin"], "complaint");
    eventually(|| async { (app.count("events WHERE type = 'suppression.added'").await == 1).then_some(()) }).await;
}

/// A DSN to `return_path` saying `action` (with `status`) for `recipient`.
fn dsn(return_path: &str, recipient: &str, action: &str, status: &str) -> String {
    format!(
        "From: MAILER-DAEMON@mx.inbox.test\r\nTo: {return_path}\r\nSubject: Delivery report\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/report; report-type=delivery-status; boundary=\"r\"\r\n\r\n--r\r\nContent-Type: text/plain\r\n\r\nReport.\r\n\
--r\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.inbox.test\r\n\r\nFinal-Recipient: rfc822; {recipient}\r\n\
Action: {action}\r\nStatus: {status}\r\n\r\n--r--\r\n"
    )
}

#[tokio::test]
async fn a_later_delivery_report_settles_an_ambiguous_submission_as_delivered() {
    let mail = mail::setup_with(tests::smtp::SmtpSink::start().await, |config| config.ambiguous_window_seconds = 600).await;
    let app = &mail.app;
    let port = app.start_inbound(|_| {}).await;
    let recipient = format!("maybe@{RECIPIENT_DOMAIN}");
    mail.sink.set_behavior(&recipient, tests::smtp::Behavior::DropAfterData);
    let id = mail.send(Mail::message(&recipient)).await;
    let status = || async {
        sqlx::query_scalar::<_, String>("SELECT status FROM email_recipients WHERE email_id = $1::uuid").bind(&id).fetch_one(&app.pool).await.unwrap()
    };
    eventually(|| async { (status().await == "ambiguous").then_some(()) }).await;

    let key = schema::store::keys::get(&mut app.pool.acquire().await.unwrap(), "links").await.unwrap().unwrap();
    let return_path = schema::tracking::return_path(&key, id.parse().unwrap(), 0, &format!("send.{SENDING_DOMAIN}"));
    submit(port, "", &return_path, dsn(&return_path, &recipient, "delivered", "2.0.0").as_bytes()).await.expect("accepted");
    assert_eq!(status().await, "delivered");
    assert_eq!(mail.timeline(&id).await, ["email.sent", "email.delivered"]);
    // The ambiguity check that comes later finds nothing left to fail.
    jobs::deliver::resolve_ambiguous(&app.pool, id.parse().unwrap()).await.unwrap();
    assert_eq!(mail.wait_for_event(&id, "delivered").await["last_event"], "delivered");
}

#[tokio::test]
async fn receiving_is_refused_where_the_mx_delivers_elsewhere_until_confirmed() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let id = mail.domain["id"].as_str().unwrap();
    app.dns.zone.set_mx(SENDING_DOMAIN, 10, "aspmx.mailhost.test");
    let on = json!({ "capabilities": { "receiving": "enabled" } });
    app.patch(&format!("/domains/{id}"), on.clone()).await.assert_error(409, "receiving_mx_in_use");
    assert_eq!(app.get(&format!("/domains/{id}")).await.body["capabilities"]["receiving"], "disabled", "nothing changed");
    let confirmed = app.patch(&format!("/domains/{id}"), json!({ "capabilities": { "receiving": "enabled" }, "confirm_replace_mx": true })).await;
    assert_eq!(confirmed.status, 200, "{}", confirmed.body);
    assert_eq!(app.get(&format!("/domains/{id}")).await.body["capabilities"]["receiving"], "enabled");
    // An MX already at the region's inbound host is no conflict.
    let created = app.post("/domains", json!({ "name": "mine.test", "capabilities": { "receiving": "enabled" } })).await;
    assert_eq!(created.status, 201);
    let inbound_host = app.config.hosts.inbound_host(schema::domain::Region::UsEast1);
    app.dns.zone.set_mx("other.test", 10, &inbound_host);
    let other = app.post("/domains", json!({ "name": "other.test", "capabilities": { "receiving": "enabled" } })).await;
    assert_eq!(other.status, 201, "{}", other.body);
    app.dns.zone.set_mx("taken.test", 10, "mx.elsewhere.test");
    app.post("/domains", json!({ "name": "taken.test", "capabilities": { "receiving": "enabled" } })).await.assert_error(409, "receiving_mx_in_use");
    assert_eq!(app.count("domains WHERE name = 'taken.test'").await, 0);
}

#[tokio::test]
async fn a_team_past_its_allowances_or_blocked_gets_a_dropped_record_with_the_reason() {
    let mail = mail::setup().await;
    let app = &mail.app;
    receive_at_acme(&mail).await;
    let port = app.start_inbound(|_| {}).await;
    let send = |subject: &'static str| async move {
        let raw = format!("From: a@sender.test\r\nTo: support@acme.test\r\nSubject: {subject}\r\n\r\nHello.\r\n");
        submit(port, "a@sender.test", "support@acme.test", raw.as_bytes()).await.expect("accepted");
    };
    let newest = || async { app.get("/emails/receiving?limit=1").await.body["data"][0].clone() };
    sqlx::query("UPDATE plans SET inbound_daily_cap = 1, inbound_storage_bytes = NULL WHERE code = 'pro'").execute(&app.pool).await.unwrap();
    send("first").await;
    assert_eq!(newest().await["dropped_reason"], json!(null));
    send("second").await;
    let dropped = newest().await;
    assert_eq!((dropped["subject"].as_str(), dropped["dropped_reason"].as_str()), (Some("second"), Some("daily_cap")));
    let one = app.get(&format!("/emails/receiving/{}", dropped["id"].as_str().unwrap())).await.body;
    assert_eq!((one["html"].clone(), one["text"].clone(), one["header_values"].clone(), one["raw"].clone()), (json!(null), json!(null), json!(null), json!(null)));
    assert_eq!(one["headers"], json!({}));
    let raw = app.request(reqwest::Method::GET, &format!("/emails/receiving/{}/raw", dropped["id"].as_str().unwrap())).send().await.unwrap();
    assert_eq!(raw.status(), 404, "a dropped message keeps no source");

    sqlx::query("UPDATE plans SET inbound_daily_cap = NULL, inbound_storage_bytes = 10 WHERE code = 'pro'").execute(&app.pool).await.unwrap();
    send("third").await;
    assert_eq!(newest().await["dropped_reason"], "storage_quota");
    sqlx::query("UPDATE plans SET inbound_storage_bytes = NULL WHERE code = 'pro'").execute(&app.pool).await.unwrap();
    sqlx::query("UPDATE teams SET risk_state = 'suspended' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    send("fourth").await;
    // (A suspended team's key is refused, so the record is read from the table.)
    let reason: Option<String> = sqlx::query_scalar("SELECT dropped_reason FROM received_emails WHERE subject = 'fourth'").fetch_one(&app.pool).await.unwrap();
    assert_eq!(reason.as_deref(), Some("team_blocked"));
    let events: i64 = app.count("events WHERE type = 'email.received'").await;
    assert_eq!(events, 4, "every accepted message emits email.received, dropped or not");

    // Dropped records age out on the plan's retention window (pro: 90 days); stored ones stay.
    sqlx::query("UPDATE received_emails SET created_at = now() - interval '91 days'").execute(&app.pool).await.unwrap();
    let report = jobs::housekeeping::purge(&app.pool).await.unwrap();
    assert_eq!(report.dropped_received_emails, 3);
    assert_eq!(app.count("received_emails").await, 1);
}

/// A clamd speaking `zINSTREAM`: reports the EICAR test string as found, anything else clean.
async fn clamd() -> String {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut command = [0u8; 10];
                stream.read_exact(&mut command).await.unwrap();
                assert_eq!(&command, b"zINSTREAM\0");
                let mut body = Vec::new();
                loop {
                    let length = stream.read_u32().await.unwrap() as usize;
                    if length == 0 {
                        break;
                    }
                    let mut chunk = vec![0u8; length];
                    stream.read_exact(&mut chunk).await.unwrap();
                    body.extend(chunk);
                }
                let found = String::from_utf8_lossy(&body).contains("EICAR-STANDARD-ANTIVIRUS-TEST-FILE");
                let reply: &[u8] = if found { b"stream: Win.Test.EICAR_HDB-1 FOUND\0" } else { b"stream: OK\0" };
                stream.write_all(reply).await.unwrap();
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_message_clamd_flags_is_recorded_as_virus_without_its_content() {
    let mail = mail::setup().await;
    let app = &mail.app;
    receive_at_acme(&mail).await;
    let scanner = clamd().await;
    let port = app.start_inbound(|s| s.clamd = Some(scanner)).await;
    let clean = "From: a@sender.test\r\nTo: support@acme.test\r\nSubject: clean\r\n\r\nHello.\r\n";
    submit(port, "a@sender.test", "support@acme.test", clean.as_bytes()).await.expect("accepted");
    let infected = "From: a@sender.test\r\nTo: support@acme.test\r\nSubject: infected\r\n\r\nX5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*\r\n";
    submit(port, "a@sender.test", "support@acme.test", infected.as_bytes()).await.expect("accepted");
    let rows = app.get("/emails/receiving").await.body["data"].clone();
    let reasons: Vec<(&str, Option<&str>)> = rows.as_array().unwrap().iter().map(|r| (r["subject"].as_str().unwrap(), r["dropped_reason"].as_str())).collect();
    assert_eq!(reasons, [("infected", Some("virus")), ("clean", None)]);
    assert_eq!(app.count("received_sources").await, 1, "the infected source is not kept");
}

/// A `herald inbound` process on `port` for this test's database.
fn start_inbound_process(app: &TestApp, port: u16) -> std::process::Child {
    std::process::Command::new(tests::herald_binary())
        .arg("inbound")
        .env("DATABASE_URL", &app.database_url)
        .env("HERALD_SMTP_ADDR", format!("127.0.0.1:{port}"))
        .env("HERALD_DB_MAX_CONNECTIONS", "4")
        .env("HERALD_ENV", "test")
        .env("HERALD_LOG", "error")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start herald inbound")
}

/// Connects once the server on `port` accepts.
async fn connect_when_up(port: u16) -> Client {
    for _ in 0..100 {
        if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Client::connect(port).await.0;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("herald inbound never listened on {port}");
}

#[tokio::test]
async fn a_server_killed_during_data_keeps_every_message_it_answered_250() {
    let mail = mail::setup().await;
    let app = &mail.app;
    receive_at_acme(&mail).await;
    let port = tests::bench::free_port().unwrap();
    let mut server = start_inbound_process(app, port);
    let mut client = connect_when_up(port).await;
    client.envelope("a@sender.test", &["support@acme.test"]).await;
    let answered = client.data("From: a@sender.test\r\nTo: support@acme.test\r\nSubject: kept\r\n\r\nThis one was answered.").await;
    assert!(answered.starts_with("250"), "{answered}");
    // The next message is cut off by the server's death in the middle of its DATA.
    client.envelope("a@sender.test", &["support@acme.test"]).await;
    assert!(client.send(b"DATA\r\n").await.starts_with("354"));
    client.reader.get_mut().write_all(b"From: a@sender.test\r\nSubject: cut\r\n\r\nhalf of it").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.kill().unwrap();
    server.wait().unwrap();
    let subjects: Vec<String> = sqlx::query_scalar("SELECT subject FROM received_emails").fetch_all(&app.pool).await.unwrap();
    assert_eq!(subjects, ["kept"], "what was answered 250 is kept; what was not is not");

    // A server started again takes mail as before.
    let mut server = start_inbound_process(app, port);
    let mut client = connect_when_up(port).await;
    client.envelope("a@sender.test", &["support@acme.test"]).await;
    assert!(client.data("From: a@sender.test\r\nSubject: again\r\n\r\nSent again.").await.starts_with("250"));
    server.kill().unwrap();
    server.wait().unwrap();
    assert_eq!(app.count("received_emails").await, 2);
}

/// A bounce Postfix generated (captured once; see tests/fixtures/README.md) for the email
/// `id`, addressed to `return_path`, with CRLF line ends as on the wire.
fn postfix_bounce(fixture: &str, return_path: &str, id: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(fixture);
    std::fs::read_to_string(path)
        .unwrap()
        .replace("b-00000000000070008000000000000000-0-0000000000000000@send.acme.test", return_path)
        .replace("00000000-0000-7000-8000-000000000000@acme.test", &format!("{id}@{SENDING_DOMAIN}"))
        .replace('\n', "\r\n")
}

#[tokio::test]
async fn bounces_postfix_generated_are_read_permanent_and_transient() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let port = app.start_inbound(|_| {}).await;
    let hard = mail.send(Mail::message(&format!("gone@{RECIPIENT_DOMAIN}"))).await;
    let soft = mail.send(Mail::message(&format!("later@{RECIPIENT_DOMAIN}"))).await;
    let delivered = mail.sink.wait_for(2, Duration::from_secs(20)).await;
    let return_path = |to: &str| delivered.iter().find(|m| m.rcpt_to[0].starts_with(to)).unwrap().mail_from.clone();
    mail.wait_for_event(&hard, "delivered").await;
    mail.wait_for_event(&soft, "delivered").await;

    let rp = return_path("gone@");
    submit(port, "", &rp, postfix_bounce("postfix-dsn-5.1.1.eml", &rp, &hard).as_bytes()).await.expect("accepted");
    mail.wait_for_event(&hard, "bounced").await;
    let bounce = mail.event(&hard, "email.bounced").await["bounce"].clone();
    assert_eq!((bounce["type"].as_str(), bounce["subType"].as_str()), (Some("Permanent"), Some("NoEmail")));
    assert_eq!(bounce["diagnosticCode"][0], "550 5.1.1 <gone@inbox.test>: Recipient address rejected: User unknown in virtual mailbox table");
    assert_eq!(app.get(&format!("/suppressions/gone@{RECIPIENT_DOMAIN}")).await.body["origin"], "bounce");

    // Postfix's "connection refused, queue lifetime over" report: a transient failure, kept
    // from the suppression list. (The fixture names gone@; the return path names the recipient.)
    let rp = return_path("later@");
    let transient = postfix_bounce("postfix-dsn-4.4.1.eml", &rp, &soft).replace("gone@inbox.test", &format!("later@{RECIPIENT_DOMAIN}"));
    submit(port, "", &rp, transient.as_bytes()).await.expect("accepted");
    mail.wait_for_event(&soft, "bounced").await;
    assert_eq!(mail.event(&soft, "email.bounced").await["bounce"]["type"], "Transient");
    assert_eq!(app.count(&format!("suppressions WHERE email = 'later@{RECIPIENT_DOMAIN}'")).await, 0);
}

#[tokio::test]
async fn starttls_is_offered_with_a_certificate_and_mail_arrives_over_it() {
    use lettre::transport::smtp::client::{Tls, TlsParameters};
    use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor, address::Envelope};
    let mail = mail::setup().await;
    let app = &mail.app;
    receive_at_acme(&mail).await;
    // PEM files, as an operator gives them in HERALD_SMTP_TLS_CERT and HERALD_SMTP_TLS_KEY.
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let pem = |label: &str, der: &[u8]| {
        use base64::Engine;
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = body.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect();
        format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
    };
    let (cert, key) = (pem("CERTIFICATE", certified.cert.der()), pem("PRIVATE KEY", &certified.signing_key.serialize_der()));
    let acceptor = jobs::inbound::tls_acceptor(cert.as_bytes(), key.as_bytes()).unwrap();
    let port = app.start_inbound(|s| s.tls = Some(acceptor)).await;
    let (mut client, _) = Client::connect(port).await;
    assert!(client.send(b"EHLO client.test\r\n").await.contains("STARTTLS"));

    let tls = TlsParameters::builder("localhost".into()).dangerous_accept_invalid_certs(true).build_rustls().unwrap();
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1").port(port).tls(Tls::Required(tls)).build();
    let envelope = Envelope::new(Some("a@sender.test".parse().unwrap()), vec!["support@acme.test".parse().unwrap()]).unwrap();
    let raw = "From: a@sender.test\r\nTo: support@acme.test\r\nSubject: over TLS\r\n\r\nSecret.\r\n";
    transport.send_raw(&envelope, raw.as_bytes()).await.expect("delivered over STARTTLS");
    assert_eq!(app.get("/emails/receiving").await.body["data"][0]["subject"], "over TLS");
}

#[tokio::test]
async fn connections_past_the_per_address_limit_are_told_to_come_back() {
    let mail = mail::setup().await;
    let port = mail.app.start_inbound(|s| s.max_connections_per_ip = 2).await;
    let (_first, greeting) = Client::connect(port).await;
    assert!(greeting.starts_with("220"));
    let (_second, greeting) = Client::connect(port).await;
    assert!(greeting.starts_with("220"));
    let (_third, greeting) = Client::connect(port).await;
    assert!(greeting.starts_with("421"), "{greeting}");
}

#[tokio::test]
async fn unsubscribe_mail_without_a_valid_token_changes_nothing() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let port = app.start_inbound(|_| {}).await;
    let contact = app.post("/contacts", json!({ "email": format!("reader@{RECIPIENT_DOMAIN}") })).await.body;
    let to = format!("unsubscribe@send.{SENDING_DOMAIN}");
    for subject in ["unsubscribe", "unsubscribe AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"] {
        let raw = format!("From: reader@{RECIPIENT_DOMAIN}\r\nTo: {to}\r\nSubject: {subject}\r\n\r\nPlease.\r\n");
        submit(port, &format!("reader@{RECIPIENT_DOMAIN}"), &to, raw.as_bytes()).await.expect("accepted");
    }
    let read = app.get(&format!("/contacts/{}", contact["id"].as_str().unwrap())).await.body;
    assert_eq!(read["unsubscribed"], false);
    assert_eq!(app.count("consent_records WHERE source = 'mailto'").await, 0);
    assert_eq!(app.count("received_emails WHERE dropped_reason = 'no_mailbox'").await, 2, "recorded, never stored");
}

#[tokio::test]
async fn lists_search_literally_and_refused_parts_and_expired_links_are_handled() {
    let mail = mail::setup().await;
    let app = &mail.app;
    receive_at_acme(&mail).await;
    let port = app.start_inbound(|s| s.max_attachment_bytes = 1_000).await;
    let big = "QUJD".repeat(500); // 1,500 bytes decoded
    let raw = format!(
        "From: Zed Writer <zed@sender.test>\r\nTo: sales@acme.test\r\nSubject: 100% off_today\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nHi.\r\n\
--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=big.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n{big}\r\n\
--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=small.txt\r\n\r\nsmall\r\n--b--\r\n"
    );
    submit(port, "zed@sender.test", "sales@acme.test", raw.as_bytes()).await.expect("accepted");
    submit(port, "amy@sender.test", "support@acme.test", MESSAGE.as_bytes()).await.expect("accepted");

    // Search: subject, sender name or address, any recipient; `%` and `_` literal.
    let found = |query: &str| {
        let query = query.to_string();
        async move {
            let list = app.get(&format!("/emails/receiving?search={query}")).await;
            assert_eq!(list.status, 200, "{}", list.body);
            list.body["data"].as_array().unwrap().iter().map(|r| r["subject"].as_str().unwrap().to_string()).collect::<Vec<_>>()
        }
    };
    assert_eq!(found("100%25").await, ["100% off_today"]);
    assert_eq!(found("f_t").await, ["100% off_today"], "`_` matches itself only");
    assert_eq!(found("%25o").await, Vec::<String>::new(), "`%` matches itself only");
    assert_eq!(found("Zed%20Writer").await, ["100% off_today"]);
    assert_eq!(found("SUPPORT@acme").await, ["Help with order 42"]);
    assert_eq!(found("cc@other.test").await, ["Help with order 42"]);
    app.get("/emails/receiving?search=").await.assert_error(422, "invalid_parameter");
    let today = chrono::Utc::now().date_naive();
    let dated = app.get(&format!("/emails/receiving?start_date={today}&end_date={today}")).await.body;
    assert_eq!(dated["data"].as_array().unwrap().len(), 2, "dates are inclusive");

    // A part over the limit is listed with its size and no link.
    let id = app.get("/emails/receiving?search=off_today").await.body["data"][0]["id"].as_str().unwrap().to_string();
    let parts = app.get(&format!("/emails/receiving/{id}/attachments")).await.body;
    let big = &parts["data"][0];
    assert_eq!((big["filename"].as_str(), big["size"].as_i64()), (Some("big.pdf"), Some(1_500)));
    assert!(big.get("download_url").is_none() && big.get("expires_at").is_none(), "{big}");
    assert!(parts["data"][1]["download_url"].is_string());

    // An expired link answers 404 like a tampered one.
    let key = schema::store::keys::get(&mut app.pool.acquire().await.unwrap(), "links").await.unwrap().unwrap();
    let small_id: uuid::Uuid = parts["data"][1]["id"].as_str().unwrap().parse().unwrap();
    let expired = schema::tracking::download_token(&key, small_id, chrono::Utc::now().timestamp() - 1);
    assert_eq!(reqwest::get(app.url(&format!("/received-attachments/{expired}"))).await.unwrap().status(), 404);
    // A received id on the share route of sent mail is 404.
    app.post(&format!("/emails/{id}/share"), json!({})).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn pipelined_commands_are_answered_in_order() {
    let mail = mail::setup().await;
    receive_at_acme(&mail).await;
    let port = mail.app.start_inbound(|_| {}).await;
    let (mut client, _) = Client::connect(port).await;
    assert!(client.send(b"EHLO client.test\r\n").await.starts_with("250"));
    client.reader.get_mut().write_all(b"MAIL FROM:<a@sender.test>\r\nRCPT TO:<nobody@elsewhere.test>\r\nRCPT TO:<support@acme.test>\r\nDATA\r\n").await.unwrap();
    let replies = [client.reply().await, client.reply().await, client.reply().await, client.reply().await];
    let codes: Vec<&str> = replies.iter().map(|r| &r[..3]).collect();
    assert_eq!(codes, ["250", "550", "250", "354"]);
    assert!(client.send(b"Subject: piped\r\n\r\nHello.\r\n.\r\nQUIT\r\n").await.starts_with("250"));
    assert!(client.reply().await.starts_with("221"));
}

#[tokio::test]
async fn a_delayed_dsn_is_email_delivery_delayed_and_a_report_for_another_teams_email_changes_nothing() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let port = app.start_inbound(|_| {}).await;
    let id = mail.send(Mail::message(&format!("slow@{RECIPIENT_DOMAIN}"))).await;
    let delivered = mail.sink.wait_for(1, Duration::from_secs(20)).await;
    mail.wait_for_event(&id, "delivered").await;
    let rp = delivered[0].mail_from.clone();
    submit(port, "", &rp, dsn(&rp, &format!("slow@{RECIPIENT_DOMAIN}"), "delayed", "4.2.2").as_bytes()).await.expect("accepted");
    mail.wait_for_event(&id, "delivery_delayed").await;
    let delay = mail.event(&id, "email.delivery_delayed").await["delay"].clone();
    assert_eq!((delay["type"].as_str(), delay["delayedRecipients"][0]["status"].as_str()), (Some("TransientFailure"), Some("4.2.2")));

    // Another team with its own verified domain: a report signed for its email, mailed to this
    // team's return-path host, is taken (250) and ignored.
    let (_, other_key) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    sqlx::query("UPDATE teams SET plan_code = 'pro', sandbox_regions = '{}' WHERE name = 'Other'").execute(&app.pool).await.unwrap();
    mail::verified_domain_as(app, &other_key, "other-sender.test", json!({})).await;
    let body = json!({ "from": "news@other-sender.test", "to": format!("theirs@{RECIPIENT_DOMAIN}"), "subject": "Theirs", "text": "Hi." });
    let theirs = app.request_as(&other_key, reqwest::Method::POST, "/emails").json(&body).send().await.unwrap().json::<serde_json::Value>().await.unwrap();
    let their_id = theirs["id"].as_str().unwrap().to_string();
    let their_last_event = || async {
        sqlx::query_scalar::<_, String>("SELECT last_event FROM emails WHERE id = $1::uuid").bind(&their_id).fetch_one(&app.pool).await.unwrap()
    };
    eventually(|| async { (their_last_event().await == "delivered").then_some(()) }).await;
    let key = schema::store::keys::get(&mut app.pool.acquire().await.unwrap(), "links").await.unwrap().unwrap();
    let crossed = schema::tracking::return_path(&key, their_id.parse().unwrap(), 0, &format!("send.{SENDING_DOMAIN}"));
    submit(port, "", &crossed, dsn(&crossed, &format!("theirs@{RECIPIENT_DOMAIN}"), "failed", "5.1.1").as_bytes()).await.expect("accepted");
    assert_eq!(their_last_event().await, "delivered");
    assert_eq!(app.count("suppressions").await, 0);
}

#[tokio::test]
async fn a_nul_or_a_ten_megabyte_string_in_any_receiving_input_is_refused_and_changes_nothing() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let id = mail.domain["id"].as_str().unwrap();
    let big = "x".repeat(10 * 1024 * 1024);
    // Query, path and body fields of the new routes.
    app.get("/emails/receiving?search=a%00b").await.assert_error(422, "invalid_parameter");
    for path in [format!("/emails/receiving?search={}", "x".repeat(60_000)), format!("/received-attachments/{}", "x".repeat(60_000))] {
        let status = app.request(reqwest::Method::GET, &path).send().await.unwrap().status().as_u16();
        assert!((400..500).contains(&status), "{status}");
    }
    // The edge refuses control characters in any path parameter.
    app.get("/emails/receiving/%00").await.assert_error(422, "invalid_parameter");
    let status = app.request(reqwest::Method::GET, "/received-attachments/a%00b").send().await.unwrap().status().as_u16();
    assert!((400..500).contains(&status), "{status}");
    for value in [json!("\u{0}"), json!(big)] {
        let answer = app.patch(&format!("/domains/{id}"), json!({ "capabilities": { "receiving": "enabled" }, "confirm_replace_mx": value })).await;
        assert!((400..500).contains(&answer.status), "{}", answer.body);
    }
    assert_eq!(app.get(&format!("/domains/{id}")).await.body["capabilities"]["receiving"], "disabled", "nothing changed");

    // Over SMTP: a NUL in an address and a line past 4,096 bytes are refused in the conversation.
    let port = app.start_inbound(|_| {}).await;
    let (mut client, _) = Client::connect(port).await;
    assert!(client.send(b"EHLO client.test\r\n").await.starts_with("250"));
    assert!(client.send(b"MAIL FROM:<a\0b@sender.test>\r\n").await.starts_with('5'));
    let long = format!("MAIL FROM:<{}@sender.test>\r\n", "a".repeat(10_000));
    assert!(client.send(long.as_bytes()).await.starts_with('5'));
    assert!(client.send(b"NOOP\r\n").await.starts_with("250"), "the session goes on");
    assert_eq!(app.count("received_emails").await, 0);
}

#[tokio::test]
async fn messages_arriving_together_are_counted_exactly_once_each_in_the_teams_counters() {
    let mail = mail::setup().await;
    let app = &mail.app;
    receive_at_acme(&mail).await;
    let port = app.start_inbound(|_| {}).await;
    sqlx::query("UPDATE plans SET inbound_daily_cap = 5, inbound_storage_bytes = NULL WHERE code = 'pro'").execute(&app.pool).await.unwrap();
    let sends = (0..24).map(|n| async move {
        let raw = format!("From: a@sender.test\r\nTo: support@acme.test\r\nSubject: together {n}\r\n\r\nHello {n}.\r\n");
        submit(port, "a@sender.test", "support@acme.test", raw.as_bytes()).await.expect("accepted");
    });
    futures::future::join_all(sends).await;
    let (stored, bytes, dropped): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE dropped_reason IS NULL), COALESCE(sum(size_bytes) FILTER (WHERE dropped_reason IS NULL), 0)::int8,
                count(*) FILTER (WHERE dropped_reason = 'daily_cap') FROM received_emails WHERE team_id = $1",
    )
    .bind(app.team_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(stored + dropped, 24, "each message is stored or dropped for the cap");
    assert!(stored >= 5, "the cap admits its five: {stored}");
    let (counted, counted_bytes): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT COALESCE(sum(messages), 0) FROM received_usage WHERE team_id = $1)::int8,
                (SELECT COALESCE(sum(bytes), 0) FROM received_storage WHERE team_id = $1)::int8",
    )
    .bind(app.team_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((counted, counted_bytes), (stored, bytes), "the counters hold exactly what was stored");
}
