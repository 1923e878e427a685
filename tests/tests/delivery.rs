//! Delivery over real SMTP to a sink the test starts (the MX of `inbox.test`, found through
//! the in-process DNS server): DKIM-signed MIME, connection reuse, retries, bounces,
//! suppressions, ambiguous submissions, required TLS, scheduling and the mailbox simulator.

use base64::Engine;
use serde_json::json;
use std::time::Duration;
use tests::mail::{self, Mail, SENDING_DOMAIN};
use tests::smtp::{Behavior, SmtpSink};

const WAIT: Duration = Duration::from_secs(15);

#[tokio::test]
async fn an_accepted_email_arrives_dkim_signed_with_its_headers_and_is_delivered() {
    let mail = mail::setup().await;
    let mut body = Mail::message("Jo <jo@inbox.test>");
    body["cc"] = json!(["cc@inbox.test"]);
    body["bcc"] = json!("hidden@inbox.test");
    body["reply_to"] = json!("help@acme.test");
    body["headers"] = json!({ "X-Entity-Ref-ID": "order-42" });
    body["tags"] = json!([{ "name": "category", "value": "receipt" }]);
    body["attachments"] = json!([{
        "filename": "receipt.txt",
        "content": base64::engine::general_purpose::STANDARD.encode("total: 42"),
    }]);
    let id = mail.send(body).await;

    let received = mail.sink.wait_for(3, WAIT).await;
    let key = mail::dkim_public_key(&mail.domain);
    for message in &received {
        let verified = tests::dkim::verify(&message.data, &key).expect("the DKIM signature verifies against the published key");
        assert_eq!((verified.domain.as_str(), verified.selector.as_str()), (SENDING_DOMAIN, "svc"));
        assert!(verified.signed_headers.contains(&"subject".to_string()));
        assert_eq!(message.rcpt_to.len(), 1, "one envelope per recipient");
        assert_eq!(message.mail_from.split('@').nth(1), Some("send.acme.test"), "the return path is on the return-path label");
        assert!(message.mail_from.contains(&id.replace('-', "")), "the return path carries the email's identity");
        assert_eq!(message.header("Message-ID").unwrap(), format!("<{id}@{SENDING_DOMAIN}>"));
        assert_eq!(message.header("X-Entity-Ref-ID").as_deref(), Some("order-42"));
        assert!(message.header("Bcc").is_none(), "bcc recipients are not shown");
        assert!(message.text().contains("receipt.txt"));
    }
    let mut envelopes: Vec<String> = received.iter().map(|m| m.rcpt_to[0].clone()).collect();
    envelopes.sort();
    assert_eq!(envelopes, ["cc@inbox.test", "hidden@inbox.test", "jo@inbox.test"]);

    let email = mail.wait_for_event(&id, "delivered").await;
    assert_eq!(email["tags"], json!({ "category": "receipt" }));
    assert_eq!(email["message_id"], format!("{id}@{SENDING_DOMAIN}"));
    assert!(email["recipients"].as_array().unwrap().iter().all(|r| r["status"] == "delivered"));
    let timeline = mail.timeline(&id).await;
    assert_eq!(timeline.iter().filter(|t| *t == "email.delivered").count(), 3);
    let sent = mail.event(&id, "email.sent").await;
    assert_eq!(sent["email_id"], id.as_str());
    assert_eq!(sent["to"].as_array().unwrap().len(), 1, "a per-recipient event names only its recipient");
    assert_eq!(sent["tags"], json!({ "category": "receipt" }));
    assert_eq!(sent["subject"], "Your receipt");
    let last_sent: Option<chrono::DateTime<chrono::Utc>> = sqlx::query_scalar("SELECT last_sent_at FROM domains WHERE name = $1")
        .bind(SENDING_DOMAIN)
        .fetch_one(&mail.app.pool)
        .await
        .unwrap();
    assert!(last_sent.is_some(), "the domain records that it sent");
}

#[tokio::test]
async fn consecutive_deliveries_to_one_host_reuse_the_connection() {
    let mail = mail::setup().await;
    for to in ["a@inbox.test", "b@inbox.test", "c@inbox.test"] {
        let id = mail.send(Mail::message(to)).await;
        mail.wait_for_event(&id, "delivered").await;
    }
    assert_eq!(mail.sink.messages().len(), 3);
    assert_eq!(mail.sink.connections(), 1);
}

#[tokio::test]
async fn a_temporary_failure_is_delayed_and_retried_until_it_is_delivered() {
    let mail = mail::setup().await;
    mail.sink.set_behavior("later@inbox.test", Behavior::TempFail);
    let id = mail.send(Mail::message("later@inbox.test")).await;
    mail.wait_for_event(&id, "delivery_delayed").await;
    let delayed = mail.event(&id, "email.delivery_delayed").await;
    assert_eq!(delayed["delay"]["type"], "TransientFailure");
    assert!(delayed["delay"]["delayedRecipients"][0]["diagnosticCode"].as_str().unwrap().contains("451"));
    mail.sink.set_behavior("later@inbox.test", Behavior::Accept);
    let email = mail.wait_for_event(&id, "delivered").await;
    assert_eq!(email["recipients"][0]["attempts"], 2);
    assert_eq!(mail.sink.messages().len(), 1);
}

#[tokio::test]
async fn a_temporary_failure_past_the_retry_schedule_bounces_without_suppressing() {
    let mail = mail::setup().await;
    mail.sink.set_behavior("full@inbox.test", Behavior::TempFail);
    let id = mail.send(Mail::message("full@inbox.test")).await;
    let email = mail.wait_for_event(&id, "bounced").await;
    assert_eq!(email["recipients"][0]["attempts"], 3, "the first try and one per step of the two-step schedule");
    let bounce = mail.event(&id, "email.bounced").await;
    assert_eq!(bounce["bounce"]["type"], "Transient");
    assert_eq!(mail.app.count("suppressions").await, 0);
}

#[tokio::test]
async fn a_permanent_failure_bounces_suppresses_the_address_and_later_sends_skip_it() {
    let mail = mail::setup().await;
    mail.sink.set_behavior("gone@inbox.test", Behavior::Reject);
    let id = mail.send(Mail::message("gone@inbox.test")).await;
    mail.wait_for_event(&id, "bounced").await;
    let bounce = mail.event(&id, "email.bounced").await;
    assert_eq!(bounce["bounce"]["type"], "Permanent");
    assert!(bounce["bounce"]["diagnosticCode"][0].as_str().unwrap().contains("550"));

    let suppression = mail.app.get("/suppressions/gone@inbox.test").await;
    assert_eq!(suppression.status, 200, "{}", suppression.body);
    assert_eq!(suppression.body["origin"], "bounce");
    assert_eq!(suppression.body["source_id"], id.as_str());
    assert_eq!(mail.app.count("events WHERE type = 'suppression.added'").await, 1);

    let again = mail.send(Mail::message("gone@inbox.test")).await;
    let email = mail.wait_for_event(&again, "suppressed").await;
    assert_eq!(email["recipients"][0]["status"], "suppressed");
    assert_eq!(mail.timeline(&again).await, ["email.suppressed"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mail.sink.data_attempts(), 0, "nothing reached DATA for the suppressed address");
}

#[tokio::test]
async fn a_connection_lost_after_the_message_is_never_resent_and_fails_as_ambiguous() {
    let mail = mail::setup().await;
    mail.sink.set_behavior("maybe@inbox.test", Behavior::DropAfterData);
    let id = mail.send(Mail::message("maybe@inbox.test")).await;
    let email = mail.wait_for_event(&id, "failed").await;
    assert_eq!(email["failed_reason"], "ambiguous_submission");
    assert_eq!(email["recipients"][0]["attempts"], 1);
    let failed = mail.event(&id, "email.failed").await;
    assert_eq!(failed["failed"]["reason"], "ambiguous_submission");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(mail.sink.data_attempts(), 1, "the message was submitted exactly once");
}

#[tokio::test]
async fn a_reply_that_never_comes_after_the_message_is_ambiguous_too() {
    let mail = mail::setup().await;
    mail.sink.set_behavior("slow@inbox.test", Behavior::Hang);
    let id = mail.send(Mail::message("slow@inbox.test")).await;
    let email = mail.wait_for_event(&id, "failed").await;
    assert_eq!(email["failed_reason"], "ambiguous_submission");
    assert_eq!(mail.sink.data_attempts(), 1);
}

#[tokio::test]
async fn a_domain_that_enforces_tls_sends_nothing_to_a_server_without_starttls() {
    let mail = mail::setup().await;
    let strict = mail::verified_domain(&mail.app, "strict.test", json!({ "tls": "enforced" })).await;
    assert_eq!(strict["tls"], "enforced");
    let mut body = Mail::message("jo@inbox.test");
    body["from"] = json!("ops@strict.test");
    let id = mail.send(body).await;
    let email = mail.wait_for_event(&id, "failed").await;
    assert_eq!(email["failed_reason"], "tls_required");
    assert_eq!(mail.timeline(&id).await, ["email.failed"]);
    assert_eq!(mail.sink.data_attempts(), 0);
}

#[tokio::test]
async fn a_domain_that_enforces_tls_delivers_over_starttls() {
    let mail = mail::setup_with(SmtpSink::start_with_starttls().await, |_| {}).await;
    mail::verified_domain(&mail.app, "strict.test", json!({ "tls": "enforced" })).await;
    let mut body = Mail::message("jo@inbox.test");
    body["from"] = json!("ops@strict.test");
    let id = mail.send(body).await;
    mail.wait_for_event(&id, "delivered").await;
    assert_eq!(mail.sink.tls_sessions(), 1);
}

#[tokio::test]
async fn with_a_relay_configured_mail_goes_to_the_relay_and_is_sent_not_delivered() {
    let relay = SmtpSink::start().await;
    let url = format!("smtp://127.0.0.1:{}", relay.port());
    let mail = mail::setup_with(SmtpSink::start().await, |config| {
        config.smtp_relay = Some(jobs::smtp::Relay::parse(&url).unwrap());
    })
    .await;
    let id = mail.send(Mail::message("someone@elsewhere.example")).await;
    mail.wait_for_event(&id, "sent").await;
    assert_eq!(relay.wait_for(1, WAIT).await[0].rcpt_to, ["someone@elsewhere.example"]);
    assert_eq!(mail.timeline(&id).await, ["email.sent"]);
}

#[tokio::test]
async fn simulator_mailboxes_produce_their_events_without_smtp_even_in_the_sandbox() {
    let mail = mail::setup().await;
    sqlx::query("UPDATE teams SET sandbox_regions = ARRAY['us-east-1']").execute(&mail.app.pool).await.unwrap();
    let delivered = mail.send(Mail::message("delivered+a@simulator.herald.test")).await;
    let bounced = mail.send(Mail::message("bounced@simulator.herald.test")).await;
    let complained = mail.send(Mail::message("complained@simulator.herald.test")).await;
    mail.wait_for_event(&delivered, "delivered").await;
    mail.wait_for_event(&bounced, "bounced").await;
    mail.wait_for_event(&complained, "complained").await;
    assert_eq!(mail.timeline(&complained).await, ["email.sent", "email.delivered", "email.complained"]);
    assert_eq!(mail.sink.connections(), 0);
    assert_eq!(mail.app.count("suppressions").await, 0, "simulated bounces do not suppress");
}

#[tokio::test]
async fn a_scheduled_email_waits_then_goes_out_when_due() {
    let mail = mail::setup().await;
    let mut body = Mail::message("later@inbox.test");
    body["scheduled_at"] = json!("in 5 minutes");
    let id = mail.send(body).await;
    let email = mail.app.get(&format!("/emails/{id}")).await;
    assert_eq!(email.body["last_event"], "scheduled");
    assert_eq!(mail.timeline(&id).await, ["email.scheduled"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(mail.sink.data_attempts(), 0, "nothing goes out before its time");
    // Bring the time forward: the email and its job fall due now.
    sqlx::query("UPDATE emails SET scheduled_at = now() WHERE id = $1::uuid").bind(&id).execute(&mail.app.pool).await.unwrap();
    sqlx::query("UPDATE apalis.jobs SET run_at = now() WHERE job_type = 'deliver'").execute(&mail.app.pool).await.unwrap();
    mail.wait_for_event(&id, "delivered").await;
}

#[tokio::test]
async fn mail_whose_domain_was_deleted_before_delivery_fails_with_that_reason() {
    let mut mail = mail::setup_without_workers(SmtpSink::start().await, |_| {}).await;
    let id = mail.send(Mail::message("jo@inbox.test")).await;
    let domain_id = mail.domain["id"].as_str().unwrap().to_string();
    assert_eq!(mail.app.delete(&format!("/domains/{domain_id}")).await.status, 200);
    mail.app.start_workers();
    let email = mail.wait_for_event(&id, "failed").await;
    assert_eq!(email["failed_reason"], "domain_deleted");
    assert_eq!(email["recipients"][0]["status"], "failed");
    assert_eq!(mail.event(&id, "email.failed").await["failed"]["reason"], "domain_deleted");
    assert_eq!(mail.sink.data_attempts(), 0, "nothing was submitted");
}

#[tokio::test]
async fn an_attachment_path_is_fetched_over_verified_https_and_delivered_with_the_email() {
    // Binary (so it travels base64) and short enough for one base64 line.
    let pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\ninvoice 42".to_vec();
    let files = tests::https::HttpsFiles::start([("/invoice.pdf".to_string(), pdf.clone())].into()).await;
    let ca_file = std::env::temp_dir().join(format!("herald-test-ca-{}.pem", uuid::Uuid::now_v7()));
    std::fs::write(&ca_file, &files.ca_pem).unwrap();
    let ca_path = ca_file.to_string_lossy().to_string();
    let mail = mail::setup_with(SmtpSink::start().await, |config| {
        config.attachment_allow_private = true;
        config.attachment_ca_file = Some(ca_path);
    })
    .await;

    let mut body = Mail::message("jo@inbox.test");
    body["attachments"] = json!([{ "filename": "missing.pdf", "path": files.url("/missing.pdf") }]);
    let refused = mail.app.post("/emails", body.clone()).await;
    refused.assert_error(422, "invalid_attachment");
    assert_eq!(refused.body["errors"][0]["path"], "attachments[0].path", "{}", refused.body);
    assert_eq!(mail.app.count("emails").await, 0);

    body["attachments"] = json!([{ "filename": "invoice.pdf", "path": files.url("/invoice.pdf") }]);
    let id = mail.send(body).await;
    assert_eq!(files.requests(), vec!["/missing.pdf", "/invoice.pdf"]);
    let listed = mail.app.get(&format!("/emails/{id}/attachments")).await;
    let attachment = &listed.body["data"][0];
    assert_eq!((&attachment["filename"], &attachment["content_type"]), (&json!("invoice.pdf"), &json!("application/pdf")));
    let one = mail.app.get(&format!("/emails/{id}/attachments/{}", attachment["id"].as_str().unwrap())).await;
    assert_eq!(one.body["content"], base64::engine::general_purpose::STANDARD.encode(&pdf));

    let received = mail.sink.wait_for(1, WAIT).await;
    let text = received[0].text();
    assert!(text.contains("filename=\"invoice.pdf\""), "{text}");
    assert!(text.contains(&base64::engine::general_purpose::STANDARD.encode(&pdf)), "{text}");
    mail.wait_for_event(&id, "delivered").await;
    std::fs::remove_file(ca_file).unwrap();
}

#[tokio::test]
async fn attachments_with_any_line_endings_arrive_intact_and_verify_with_dkimpy() {
    let mail = mail::setup().await;
    let long_line = "x".repeat(2_500);
    let binary: Vec<u8> = (0..=255u8).chain([b'\n', b'\r', 0, b'.', b'\n']).collect();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("lf.csv", b"id,name\n1,Ada\n2,Grace\n".to_vec()),
        ("cr.txt", b"one\rtwo\r".to_vec()),
        ("crlf.txt", b"one\r\ntwo\r\n".to_vec()),
        ("mixed.txt", b"a\nb\r\nc\rd\n\n.\n".to_vec()),
        ("long.txt", long_line.clone().into_bytes()),
        ("eight-bit.txt", "café, naïve, 日本語\nsecond line\n".as_bytes().to_vec()),
        ("blob.bin", binary),
    ];
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut body = Mail::message("jo@inbox.test");
    body["text"] = json!("Lines\nwith bare\rendings\r\nand a long one: ".to_string() + &long_line);
    body["attachments"] =
        json!(files.iter().map(|(name, bytes)| json!({ "filename": name, "content": b64(bytes) })).collect::<Vec<_>>());
    mail.send(body).await;

    let received = mail.sink.wait_for(1, WAIT).await;
    let message = &received[0];
    let key = mail::dkim_public_key(&mail.domain);
    tests::dkim::verify(&message.data, &key).expect("the signature verifies with our own verifier");
    tests::clients::dkimpy_verify(&message.data, &key).expect("the signature verifies with dkimpy");
    let joined = message.text().replace("\r\n", "");
    for (name, bytes) in &files {
        assert!(joined.contains(&b64(bytes)), "{name} arrives byte for byte, base64-encoded");
    }
}

#[tokio::test]
async fn an_email_that_fails_on_heralds_side_does_not_hold_back_the_others_of_its_batch() {
    let mut mail = mail::setup_without_workers(SmtpSink::start().await, |_| {}).await;
    let good = mail.send(Mail::message("jo@inbox.test")).await;
    let bad = mail.send(Mail::message("al@inbox.test")).await;
    // A stored address that no longer parses: that email's submission fails inside Herald.
    sqlx::query("UPDATE email_recipients SET address = 'not an address' WHERE email_id = $1::uuid")
        .bind(&bad)
        .execute(&mail.app.pool)
        .await
        .unwrap();
    // Both delivered as one batch: one `deliver_page` job instead of their own `deliver` jobs.
    sqlx::query("DELETE FROM apalis.jobs WHERE job_type = 'deliver'").execute(&mail.app.pool).await.unwrap();
    let mut tx = mail.app.pool.begin().await.unwrap();
    let page = schema::jobs::DeliverPage { email_ids: vec![good.parse().unwrap(), bad.parse().unwrap()] };
    schema::jobs::enqueue(&mut tx, &page).await.unwrap();
    tx.commit().await.unwrap();
    mail.app.start_workers();

    let email = mail.wait_for_event(&good, "delivered").await;
    assert_eq!(email["recipients"][0]["status"], "delivered");
    let arrived = mail.sink.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(arrived.len(), 1, "only the good email went out, once");
}
