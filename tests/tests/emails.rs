//! The send routes' rules: every refusal answers its status and `name` and writes nothing (no
//! email, no job); idempotency; batches; reading, rescheduling and canceling; sandbox, key pins
//! and quotas.

use base64::Engine;
use serde_json::{Value, json};
use tests::mail::{self, Mail};

/// Nothing was written: no email, no recipient, no event, no delivery job.
async fn assert_nothing_written(mail: &Mail) {
    assert_eq!(mail.app.count("emails").await, 0);
    assert_eq!(mail.app.count("email_recipients").await, 0);
    assert_eq!(mail.app.count("events WHERE type LIKE 'email.%'").await, 0);
    assert_eq!(mail.app.count("apalis.jobs WHERE job_type = 'deliver'").await, 0);
}

fn with(field: &str, value: Value) -> Value {
    let mut body = Mail::message("jo@inbox.test");
    if value.is_null() {
        body.as_object_mut().unwrap().remove(field);
    } else {
        body[field] = value;
    }
    body
}

#[tokio::test]
async fn every_malformed_send_is_refused_with_its_name_and_writes_nothing() {
    let mail = mail::setup().await;
    let both_bodies_missing = {
        let mut body = with("html", Value::Null);
        body.as_object_mut().unwrap().remove("text");
        body
    };
    let attachment = |a: Value| with("attachments", json!([a]));
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (with("from", Value::Null), 422, "missing_required_field", "from"),
        (with("to", Value::Null), 422, "missing_required_field", "to"),
        (with("subject", Value::Null), 422, "missing_required_field", "subject"),
        (both_bodies_missing, 422, "missing_required_field", "html"),
        (with("to", json!("not-an-address")), 400, "validation_error", "to[0]"),
        (with("cc", json!(["ok@inbox.test", "bad@"])), 400, "validation_error", "cc[1]"),
        (with("to", json!((0..51).map(|i| format!("r{i}@inbox.test")).collect::<Vec<_>>())), 400, "validation_error", "to"),
        (with("subject", json!("two\nlines")), 400, "validation_error", "subject"),
        (with("subject", json!("s".repeat(999))), 400, "validation_error", "subject"),
        (with("text", json!("x".repeat(2 * 1024 * 1024 + 1))), 400, "validation_error", "html"),
        (with("scheduled_at", json!("next blue moon")), 400, "validation_error", "scheduled_at"),
        (with("scheduled_at", json!("in 31 days")), 400, "validation_error", "scheduled_at"),
        (with("headers", json!({ "Subject": "x" })), 400, "validation_error", "headers.Subject"),
        (with("headers", json!({ "List-Unsubscribe": "<x>" })), 400, "validation_error", "headers.List-Unsubscribe"),
        (with("headers", json!({ "X-Note": "a\u{7}b" })), 400, "validation_error", "headers.X-Note"),
        (with("tags", json!([{ "name": "bad name", "value": "x" }])), 400, "validation_error", "tags[0]"),
        (with("tags", json!([{ "name": "a", "value": "1" }, { "name": "a", "value": "2" }])), 400, "validation_error", "tags[1].name"),
        (with("tags", json!((0..51).map(|i| json!({ "name": format!("t{i}"), "value": "v" })).collect::<Vec<_>>())), 400, "validation_error", "tags"),
        (attachment(json!({ "filename": "a.txt" })), 422, "invalid_attachment", "attachments[0]"),
        (attachment(json!({ "filename": "a.txt", "content": "eA==", "path": "https://example.com/a" })), 422, "invalid_attachment", "attachments[0]"),
        (attachment(json!({ "filename": "a.txt", "content": "***" })), 422, "invalid_attachment", "attachments[0].content"),
        (attachment(json!({ "filename": "a.txt", "path": "http://example.com/a.txt" })), 422, "invalid_attachment", "attachments[0].path"),
        (attachment(json!({ "filename": "a.txt", "content": "eA==", "content_id": "has space" })), 422, "invalid_attachment", "attachments[0].content_id"),
        (attachment(json!({ "content": "eA==" })), 422, "invalid_attachment", "attachments[0].filename"),
        (with("attachments", json!((0..101).map(|_| json!({ "filename": "a", "content": "eA==" })).collect::<Vec<_>>())), 422, "invalid_attachment", "attachments"),
    ];
    for (body, status, name, path) in cases {
        let answer = mail.app.post("/emails", body).await;
        answer.assert_error(status, name);
        assert!(
            answer.body["errors"].as_array().unwrap().iter().any(|e| e["path"] == path),
            "expected an error at {path}: {}",
            answer.body
        );
    }
    assert_nothing_written(&mail).await;
}

#[tokio::test]
async fn the_reserved_send_field_topic_id_answers_501_not_implemented_and_writes_nothing() {
    let mail = mail::setup().await;
    mail.app.post("/emails", with("topic_id", json!("t1"))).await.assert_error(501, "not_implemented");
    let batch = json!([Mail::message("a@inbox.test"), with("topic_id", json!("t1"))]);
    mail.app.post("/emails/batch", batch).await.assert_error(501, "not_implemented");
    assert_nothing_written(&mail).await;
}

/// Runs `herald sending <verb>` against the app's database; answers what it printed.
fn herald_sending(mail: &Mail, verb: &str) -> Value {
    let output = std::process::Command::new(tests::herald_binary())
        .args(["sending", verb])
        .env("DATABASE_URL", &mail.app.database_url)
        .env("HERALD_LOG", "error")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test]
async fn while_the_operator_pauses_sending_a_send_answers_503_with_retry_after_and_after_resume_it_is_accepted() {
    let mail = mail::setup().await;
    let sent = mail.app.post("/emails", Mail::message("before@inbox.test")).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert_eq!(herald_sending(&mail, "pause"), json!({ "sending": "paused" }));
    // A process trusts the switch it read for a second.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let emails = mail.app.count("emails").await;
    let paused = mail.app.post("/emails", Mail::message("paused@inbox.test")).await;
    paused.assert_error(503, "service_unavailable");
    assert_eq!(paused.header("retry-after"), Some("60"), "{}", paused.body);
    mail.app.post("/emails/batch", json!([Mail::message("paused@inbox.test")])).await.assert_error(503, "service_unavailable");
    assert_eq!(mail.app.count("emails").await, emails, "a paused send writes nothing");
    assert_eq!(herald_sending(&mail, "resume"), json!({ "sending": "enabled" }));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let sent = mail.app.post("/emails", Mail::message("after@inbox.test")).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
}

#[tokio::test]
async fn an_attachment_path_on_a_private_or_loopback_address_is_never_fetched() {
    let mail = mail::setup().await;
    for url in ["https://127.0.0.1/a.pdf", "https://10.0.0.1/a.pdf", "https://169.254.169.254/latest", "https://[::1]/a"] {
        let answer = mail.app.post("/emails", with("attachments", json!([{ "filename": "a.pdf", "path": url }]))).await;
        answer.assert_error(422, "invalid_attachment");
        assert!(answer.body["message"].as_str().unwrap().contains("blocked"), "{}", answer.body);
    }
    assert_nothing_written(&mail).await;
}

#[tokio::test]
async fn a_from_domain_not_verified_on_the_team_is_403_and_writes_nothing() {
    let mail = mail::setup().await;
    for from in ["a@unknown.test", "a@sub.acme.test"] {
        mail.app.post("/emails", with("from", json!(from))).await.assert_error(403, "validation_error");
    }
    let other = api::cli::create_team(&mail.app.pool, "Other").await.unwrap().1;
    let answer = tests::Answer::from(
        mail.app.request_as(&other, reqwest::Method::POST, "/emails").json(&Mail::message("jo@inbox.test")).send().await.unwrap(),
    )
    .await;
    answer.assert_error(403, "validation_error");
    assert_nothing_written(&mail).await;
}

#[tokio::test]
async fn a_refused_sender_domain_is_told_what_to_call_and_which_records_are_missing() {
    let mail = mail::setup().await;
    let refusal = |from: &'static str| {
        let send = mail.app.post("/emails", with("from", json!(from)));
        async move {
            let answer = send.await;
            answer.assert_error(403, "validation_error");
            assert_eq!(answer.body["errors"][0]["path"], "from", "{}", answer.body);
            answer.body["message"].as_str().unwrap().to_string()
        }
    };
    let unknown = refusal("a@unknown.test").await;
    assert!(unknown.contains("`POST /domains`") && unknown.contains("`POST /domains/{id}/verify`"), "{unknown}");

    let created = mail.app.post("/domains", json!({ "name": "pending.test" })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap();
    let verify = format!("`POST /domains/{id}/verify`");
    let fresh = refusal("a@pending.test").await;
    assert!(fresh.contains(&verify), "{fresh}");
    assert!(fresh.contains("`dkim` record is `not_started`") && fresh.contains("`mail_from` record is `not_started`"), "{fresh}");

    // DKIM published and checked, the mail-from CNAME still missing: only it is named.
    let dkim = created.body["records"].as_array().unwrap().iter().find(|r| r["kind"] == "dkim").unwrap();
    let (first, second) = dkim["value"].as_str().unwrap().split_at(255);
    mail.app.dns.zone.set_txt(dkim["fqdn"].as_str().unwrap(), &[&[first, second]]);
    let checked = mail.app.post(&format!("/domains/{id}/verify"), json!({})).await;
    assert_eq!(checked.body["status"], "pending", "{}", checked.body);
    let half = refusal("a@pending.test").await;
    assert!(half.contains(&verify) && half.contains("`mail_from` record is `pending`") && !half.contains("`dkim`"), "{half}");

    // Sending turned off on a verified domain: the PATCH that turns it on.
    let domain_id = mail.domain["id"].as_str().unwrap();
    let off = mail.app.patch(&format!("/domains/{domain_id}"), json!({ "capabilities": { "sending": "disabled" } })).await;
    assert_eq!(off.status, 200, "{}", off.body);
    let switched_off = refusal("billing@acme.test").await;
    assert!(switched_off.contains(&format!("`PATCH /domains/{domain_id}`")), "{switched_off}");
    for message in [unknown, fresh, half, switched_off] {
        assert!(!message.to_lowercase().contains("page"), "{message}");
    }
    assert_nothing_written(&mail).await;
}

#[tokio::test]
async fn a_key_pinned_to_a_domain_cannot_send_from_another() {
    let mail = mail::setup().await;
    let other = mail::verified_domain(&mail.app, "other.test", json!({})).await;
    let (_, pinned) =
        mail.app.create_key(json!({ "name": "pinned", "permission": "sending_access", "domain_id": other["id"] })).await;
    let send = |body: Value| {
        let request = mail.app.request_as(&pinned, reqwest::Method::POST, "/emails").json(&body);
        async move { tests::Answer::from(request.send().await.unwrap()).await }
    };
    send(Mail::message("jo@inbox.test")).await.assert_error(403, "validation_error");
    assert_nothing_written(&mail).await;
    let allowed = send(with("from", json!("ops@other.test"))).await;
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    let read = tests::Answer::from(mail.app.request_as(&pinned, reqwest::Method::GET, "/emails").send().await.unwrap()).await;
    read.assert_error(401, "restricted_api_key");
}

#[tokio::test]
async fn the_sandbox_delivers_only_to_the_simulator_and_the_teams_verified_domains() {
    let mail = mail::setup().await;
    sqlx::query("UPDATE teams SET sandbox_regions = ARRAY['us-east-1']").execute(&mail.app.pool).await.unwrap();
    let answer = mail.app.post("/emails", with("to", json!(["delivered@simulator.herald.test", "jo@inbox.test"]))).await;
    answer.assert_error(403, "validation_error");
    assert_eq!(answer.body["details"]["recipient"], "jo@inbox.test");
    assert_eq!(answer.body["details"]["region"], "us-east-1");
    assert_eq!(answer.body["details"]["allowed"], json!(["verified_domain", "verified_identity", "simulator"]));
    assert_nothing_written(&mail).await;
    for to in ["delivered@simulator.herald.test", "me@acme.test", "me@eu.acme.test"] {
        assert_eq!(mail.app.post("/emails", with("to", json!(to))).await.status, 200);
    }
}

#[tokio::test]
async fn past_the_daily_quota_sends_are_429_without_retry_after_and_write_nothing() {
    let mail = mail::setup().await;
    sqlx::query("UPDATE plans SET daily_cap = 2 WHERE code = 'pro'").execute(&mail.app.pool).await.unwrap();
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let batch = mail.app.post("/emails/batch", json!([Mail::message("a@inbox.test"), Mail::message("b@inbox.test")])).await;
    batch.assert_error(429, "daily_quota_exceeded");
    assert!(batch.header("retry-after").is_none());
    assert_eq!(mail.app.count("emails").await, 1, "the refused batch wrote nothing");
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let over = mail.app.post("/emails", Mail::message("delivered@simulator.herald.test")).await;
    over.assert_error(429, "daily_quota_exceeded");
    // A new UTC day starts a new count.
    sqlx::query("UPDATE send_usage SET period_start = period_start - 1 WHERE period_kind = 'day'").execute(&mail.app.pool).await.unwrap();
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
}

#[tokio::test]
async fn past_the_monthly_limit_sends_are_429_monthly_quota_exceeded() {
    let mail = mail::setup().await;
    sqlx::query("UPDATE plans SET monthly_limit = 1 WHERE code = 'pro'").execute(&mail.app.pool).await.unwrap();
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let over = mail.app.post("/emails", Mail::message("delivered@simulator.herald.test")).await;
    over.assert_error(429, "monthly_quota_exceeded");
    assert!(over.header("retry-after").is_none());
    assert_eq!(mail.app.count("emails").await, 1);
}

#[tokio::test]
async fn the_monthly_limit_counts_the_earlier_days_of_the_month_and_not_the_last_month() {
    let mail = mail::setup().await;
    sqlx::query("UPDATE plans SET monthly_limit = 3 WHERE code = 'pro'").execute(&mail.app.pool).await.unwrap();
    // Two emails on the last day of the previous month (not counted), two on the first of this one.
    use chrono::Datelike;
    let first = chrono::Utc::now().date_naive().with_day(1).unwrap();
    for day in [first - chrono::TimeDelta::days(1), first] {
        sqlx::query("INSERT INTO send_usage (team_id, period_kind, period_start, emails) VALUES ($1, 'day', $2, 2)")
            .bind(mail.app.team_id)
            .bind(day)
            .execute(&mail.app.pool)
            .await
            .unwrap();
    }
    mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let over = mail.app.post("/emails", Mail::message("delivered@simulator.herald.test")).await;
    over.assert_error(429, "monthly_quota_exceeded");
    assert_eq!(mail.app.count("emails").await, 1);
}

#[tokio::test]
async fn a_batch_with_one_bad_item_names_its_index_and_writes_nothing() {
    let mail = mail::setup().await;
    let bad = json!([Mail::message("a@inbox.test"), with("to", json!("nope")), Mail::message("c@inbox.test")]);
    let answer = mail.app.post("/emails/batch", bad).await;
    answer.assert_error(400, "validation_error");
    assert_eq!(answer.body["errors"][0]["path"], "[1].to[0]");
    let unverified = json!([Mail::message("a@inbox.test"), with("from", json!("x@unknown.test"))]);
    let answer = mail.app.post("/emails/batch", unverified).await;
    answer.assert_error(403, "validation_error");
    assert_eq!(answer.body["errors"][0]["path"], "[1].from");
    let too_many: Vec<Value> = (0..101).map(|i| Mail::message(&format!("r{i}@inbox.test"))).collect();
    mail.app.post("/emails/batch", json!(too_many)).await.assert_error(400, "validation_error");
    assert_nothing_written(&mail).await;

    let good = mail.app.post("/emails/batch", json!([Mail::message("a@inbox.test"), Mail::message("b@inbox.test")])).await;
    assert_eq!(good.status, 200, "{}", good.body);
    let ids: Vec<&str> = good.body["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(mail.app.count("apalis.jobs WHERE job_type = 'deliver'").await, 2);
    mail.sink.wait_for(2, std::time::Duration::from_secs(15)).await;
}

#[tokio::test]
async fn an_idempotency_key_replays_the_first_answer_and_refuses_another_body() {
    let mail = mail::setup().await;
    let send = |body: Value, key: &str| {
        let request = mail.app.request(reqwest::Method::POST, "/emails").header("Idempotency-Key", key).json(&body);
        async move { tests::Answer::from(request.send().await.unwrap()).await }
    };
    let first = send(Mail::message("delivered@simulator.herald.test"), "order-1").await;
    let again = send(Mail::message("delivered@simulator.herald.test"), "order-1").await;
    assert_eq!((first.status, again.status), (200, 200));
    assert_eq!(first.body, again.body);
    send(Mail::message("other@simulator.herald.test"), "order-1").await.assert_error(409, "invalid_idempotent_request");
    send(Mail::message("x@simulator.herald.test"), &"k".repeat(257)).await.assert_error(400, "invalid_idempotency_key");
    assert_eq!(mail.app.count("emails").await, 1);
}

#[tokio::test]
async fn fifty_concurrent_requests_with_one_idempotency_key_create_exactly_one_email() {
    let mail = mail::setup().await;
    let body = Mail::message("delivered@simulator.herald.test");
    let requests = (0..50).map(|_| {
        let request = mail.app.request(reqwest::Method::POST, "/emails").header("Idempotency-Key", "once").json(&body);
        async move { tests::Answer::from(request.send().await.unwrap()).await }
    });
    let answers = futures::future::join_all(requests).await;
    let ids: std::collections::HashSet<String> =
        answers.iter().filter(|a| a.status == 200).map(|a| a.body["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 1, "every success names the same email");
    for answer in answers.iter().filter(|a| a.status != 200) {
        answer.assert_error(409, "concurrent_idempotent_requests");
    }
    assert_eq!(mail.app.count("emails").await, 1);
    assert_eq!(mail.app.count("apalis.jobs WHERE job_type = 'deliver'").await, 1);
}

#[tokio::test]
async fn the_list_filters_by_status_key_dates_search_and_tags_and_retrieve_shows_everything() {
    let mail = mail::setup().await;
    let mut tagged = Mail::message("Jo <jo@inbox.test>");
    tagged["tags"] = json!([{ "name": "kind", "value": "receipt" }]);
    tagged["subject"] = json!("Receipt 42");
    tagged["attachments"] = json!([{ "filename": "r.txt", "content": base64::engine::general_purpose::STANDARD.encode("42"), "content_id": "r42" }]);
    let first = mail.send(tagged).await;
    let mut later = Mail::message("ann@inbox.test");
    later["scheduled_at"] = json!("in 2 hours");
    let second = mail.send(later).await;
    mail.wait_for_event(&first, "delivered").await;

    let ids = |answer: &tests::Answer| -> Vec<String> {
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body["data"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(ids(&mail.app.get("/emails").await), [second.as_str(), first.as_str()]);
    assert_eq!(ids(&mail.app.get("/emails?status=scheduled").await), [second.as_str()]);
    assert_eq!(ids(&mail.app.get("/emails?search=receipt%2042").await), [first.as_str()]);
    assert_eq!(ids(&mail.app.get("/emails?search=ann@inbox").await), [second.as_str()]);
    assert_eq!(ids(&mail.app.get("/emails?search=ANN@inbox.test").await), [second.as_str()], "a whole address, in any case");
    assert_eq!(ids(&mail.app.get("/emails?search=jo@inbox.test").await), [first.as_str()], "exactly that recipient");
    let sender = format!("billing@{}", tests::mail::SENDING_DOMAIN.to_uppercase());
    assert_eq!(ids(&mail.app.get(&format!("/emails?search={sender}")).await), [second.as_str(), first.as_str()], "the sender's address too");
    assert_eq!(ids(&mail.app.get("/emails?search=nobody@inbox.test").await).len(), 0);
    assert_eq!(ids(&mail.app.get("/emails?tags=kind:receipt").await), [first.as_str()]);
    assert_eq!(ids(&mail.app.get("/emails?tags=kind").await), [first.as_str()]);
    assert_eq!(ids(&mail.app.get("/emails?start_date=2000-01-01&end_date=2000-01-02").await).len(), 0);
    assert_eq!(ids(&mail.app.get("/emails?limit=1").await), [second.as_str()]);
    assert_eq!(ids(&mail.app.get(&format!("/emails?after={second}")).await), [first.as_str()]);
    let key_id: String = sqlx::query_scalar("SELECT api_key_id::text FROM emails LIMIT 1").fetch_one(&mail.app.pool).await.unwrap();
    assert_eq!(ids(&mail.app.get(&format!("/emails?api_key_id={key_id}")).await).len(), 2);
    mail.app.get("/emails?status=lost").await.assert_error(422, "invalid_parameter");
    mail.app.get("/emails?start_date=tomorrow").await.assert_error(422, "invalid_parameter");

    let email = mail.app.get(&format!("/emails/{first}")).await.body;
    assert_eq!(email["object"], "email");
    assert_eq!(email["to"], json!(["Jo <jo@inbox.test>"]));
    assert_eq!(email["html"], "<p>Thanks for your order.</p>");
    assert_eq!(email["last_event"], "delivered");
    let events: Vec<&str> = email["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(events, ["email.sent", "email.delivered"]);

    let attachments = mail.app.get(&format!("/emails/{first}/attachments")).await.body;
    assert_eq!(attachments["data"][0]["filename"], "r.txt");
    assert_eq!(attachments["data"][0]["content_id"], "r42");
    let attachment_id = attachments["data"][0]["id"].as_str().unwrap();
    assert_eq!(attachments["data"][0]["content_disposition"], "inline", "it has a Content-ID");
    let one = mail.app.get(&format!("/emails/{first}/attachments/{attachment_id}")).await.body;
    assert_eq!(one["content"], base64::engine::general_purpose::STANDARD.encode("42"));
    mail.app.get(&format!("/emails/{second}/attachments/{attachment_id}")).await.assert_error(404, "not_found");

    // Its download link needs no credential; an altered one is the same 404 as an unknown one.
    let link = one["download_url"].as_str().unwrap();
    assert!(link.starts_with(&format!("{}/email-attachments/", mail.app.config.public_url)), "{link}");
    let token = link.rsplit('/').next().unwrap();
    let downloaded = reqwest::get(mail.app.url(&format!("/email-attachments/{token}"))).await.unwrap();
    assert_eq!((downloaded.status().as_u16(), downloaded.headers()["content-type"].to_str().unwrap()), (200, "text/plain"));
    assert!(downloaded.headers()["content-disposition"].to_str().unwrap().starts_with("attachment;"));
    assert_eq!(downloaded.text().await.unwrap(), "42");
    let altered = format!("{}{}", &token[..token.len() - 2], if token.ends_with("AA") { "BB" } else { "AA" });
    for bad in [altered.as_str(), "nothing-here"] {
        assert_eq!(reqwest::get(mail.app.url(&format!("/email-attachments/{bad}"))).await.unwrap().status(), 404, "{bad}");
    }
}

#[tokio::test]
async fn another_teams_email_answers_not_found_everywhere() {
    let mail = mail::setup().await;
    let id = mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let (_, other) = api::cli::create_team(&mail.app.pool, "Other").await.unwrap();
    for (method, path) in [
        (reqwest::Method::GET, format!("/emails/{id}")),
        (reqwest::Method::PATCH, format!("/emails/{id}")),
        (reqwest::Method::POST, format!("/emails/{id}/cancel")),
        (reqwest::Method::GET, format!("/emails/{id}/attachments")),
        (reqwest::Method::GET, "/emails/not-an-id".to_string()),
    ] {
        let request = mail.app.request_as(&other, method, &path).json(&json!({ "scheduled_at": "in 1 hour" }));
        tests::Answer::from(request.send().await.unwrap()).await.assert_error(404, "not_found");
    }
    assert!(mail.app.get("/emails").await.body["data"].as_array().unwrap().len() == 1);
}

#[tokio::test]
async fn a_scheduled_email_can_be_rescheduled_and_canceled_until_it_is_dispatched() {
    let mail = mail::setup().await;
    let mut body = Mail::message("jo@inbox.test");
    body["scheduled_at"] = json!("tomorrow at 9am");
    let id = mail.send(body).await;
    mail.app.patch(&format!("/emails/{id}"), json!({ "scheduled_at": "soon" })).await.assert_error(400, "validation_error");
    let moved = mail.app.patch(&format!("/emails/{id}"), json!({ "scheduled_at": "in 3 hours" })).await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    let email = mail.app.get(&format!("/emails/{id}")).await.body;
    let at = chrono::DateTime::parse_from_rfc3339(email["scheduled_at"].as_str().unwrap()).unwrap();
    let ahead = at.with_timezone(&chrono::Utc) - chrono::Utc::now();
    assert!((ahead.num_minutes() - 180).abs() <= 1, "{ahead}");

    let canceled = mail.app.post(&format!("/emails/{id}/cancel"), json!({})).await;
    assert_eq!(canceled.status, 200, "{}", canceled.body);
    assert_eq!(mail.timeline(&id).await, ["email.scheduled", "email.canceled"]);
    mail.app.post(&format!("/emails/{id}/cancel"), json!({})).await.assert_error(409, "resource_locked");
    mail.app.patch(&format!("/emails/{id}"), json!({ "scheduled_at": "in 1 hour" })).await.assert_error(409, "resource_locked");

    let sent = mail.send(Mail::message("jo@inbox.test")).await;
    mail.wait_for_event(&sent, "delivered").await;
    mail.app.post(&format!("/emails/{sent}/cancel"), json!({})).await.assert_error(409, "resource_locked");
    mail.app.patch(&format!("/emails/{sent}"), json!({ "scheduled_at": "in 1 hour" })).await.assert_error(409, "resource_locked");
}

#[tokio::test]
async fn the_request_log_of_a_send_names_the_email_it_created() {
    let mail = mail::setup().await;
    let id = mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let batch = mail.app.post("/emails/batch", json!([Mail::message("delivered@simulator.herald.test")])).await;
    let first_of_batch = batch.body["data"][0]["id"].as_str().unwrap().to_string();
    mail.app.post("/emails", json!({})).await.assert_error(422, "missing_required_field");
    mail.app.wait_for_rows("request_logs WHERE endpoint LIKE '/emails%'", 3).await;
    let logged: Vec<(String, Option<uuid::Uuid>)> =
        sqlx::query_as("SELECT endpoint, email_id FROM request_logs WHERE endpoint LIKE '/emails%' ORDER BY id")
            .fetch_all(&mail.app.pool)
            .await
            .unwrap();
    let ids: Vec<Option<String>> = logged.iter().map(|(_, id)| id.map(|id| id.to_string())).collect();
    assert_eq!(ids, vec![Some(id.clone()), Some(first_of_batch), None], "{logged:?}");
    let log_id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM request_logs WHERE email_id IS NOT NULL ORDER BY id LIMIT 1")
        .fetch_one(&mail.app.pool)
        .await
        .unwrap();
    assert_eq!(mail.app.get(&format!("/logs/{log_id}")).await.body["email_id"], id.as_str());
}

#[tokio::test]
async fn a_permissive_batch_sends_the_valid_emails_and_lists_the_others_by_index() {
    let mail = mail::setup().await;
    let batch = json!([
        Mail::message("a@inbox.test"),
        with("to", json!("nope")),
        with("from", json!("x@unknown.test")),
        Mail::message("d@inbox.test")
    ]);
    let send = |validation: &str| {
        mail.app.request(reqwest::Method::POST, "/emails/batch").header("x-batch-validation", validation).json(&batch).send()
    };
    tests::Answer::from(send("lenient").await.unwrap()).await.assert_error(422, "invalid_parameter");
    tests::Answer::from(send("strict").await.unwrap()).await.assert_error(400, "validation_error");
    assert_nothing_written(&mail).await;

    let answer = tests::Answer::from(send("permissive").await.unwrap()).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["data"].as_array().unwrap().len(), 2);
    let refused: Vec<&Value> = answer.body["errors"].as_array().unwrap().iter().map(|e| &e["index"]).collect();
    assert_eq!(refused, [&json!(1), &json!(2)]);
    assert!(answer.body["errors"][0]["message"].as_str().unwrap().contains("nope"));
    assert_eq!(mail.app.count("emails").await, 2, "only the valid emails were accepted");
}

#[tokio::test]
async fn an_attachment_given_as_an_array_of_byte_values_is_sent_as_those_bytes() {
    let mail = mail::setup().await;
    let bytes: Vec<u8> = vec![0, 1, 2, 254, 255, b'\n', b'a'];
    let mut body = Mail::message("a@inbox.test");
    body["attachments"] = json!([{ "filename": "raw.bin", "content": bytes }]);
    let id = mail.send(body).await;
    let list = mail.app.get(&format!("/emails/{id}/attachments")).await;
    let attachment_id = list.body["data"][0]["id"].as_str().unwrap().to_string();
    let one = mail.app.get(&format!("/emails/{id}/attachments/{attachment_id}")).await;
    let content = base64::engine::general_purpose::STANDARD.decode(one.body["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, bytes);
    let mut bad = Mail::message("a@inbox.test");
    bad["attachments"] = json!([{ "filename": "raw.bin", "content": [1, 256] }]);
    mail.app.post("/emails", bad).await.assert_error(400, "validation_error");
}
