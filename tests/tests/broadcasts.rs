//! Broadcasts: drafts, the compliance gate in order, content checks, and the fan-out into one
//! email per recipient delivered over SMTP with one-click unsubscribe headers.

use serde_json::{Value, json};
use std::time::Duration;
use tests::mail::{self, RECIPIENT_DOMAIN, SENDING_DOMAIN};
use tests::{Answer, TestApp, eventually};

fn address() -> Value {
    json!({ "line1": "1 Main St", "city": "Springfield", "postal_code": "62701", "country": "US" })
}

async fn segment(app: &TestApp) -> String {
    let created = app.post("/segments", json!({ "name": "Readers" })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["id"].as_str().unwrap().to_string()
}

fn draft(segment_id: &str) -> Value {
    json!({
        "name": "November news",
        "from": format!("Acme <news@{SENDING_DOMAIN}>"),
        "subject": "News for {{{FIRST_NAME|friend}}}",
        "segment_id": segment_id,
        "html": "<p>Hi {{{FIRST_NAME|friend}}}, your plan is {{{PLAN|basic}}}.</p><p><a href=\"https://acme.example/news\">Read</a></p>",
        "text": "Hi {{{FIRST_NAME|friend}}}, your plan is {{{PLAN|basic}}}.",
        "preview_text": "What is new this month",
    })
}

async fn status_of(app: &TestApp, id: &str) -> String {
    app.get(&format!("/broadcasts/{id}")).await.body["status"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_gate_refuses_in_document_order_and_a_refused_send_creates_nothing() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let segment_id = segment(app).await;
    app.post("/contacts", json!({ "email": format!("ada@{RECIPIENT_DOMAIN}"), "segments": [{ "id": segment_id }] })).await;
    let mut body = draft(&segment_id);
    body["send"] = json!(true);

    // 1. The from domain must be verified.
    let mut unverified = body.clone();
    unverified["from"] = json!("news@unverified.example");
    let refused = app.post("/broadcasts", unverified).await;
    refused.assert_error(422, "validation_error");
    assert_eq!(refused.body["errors"][0]["path"], "sending_domain");
    // 2. The postal address.
    let refused = app.post("/broadcasts", body.clone()).await;
    refused.assert_error(422, "validation_error");
    assert_eq!(refused.body["errors"][0]["path"], "postal_address");
    app.patch("/team", json!({ "postal_address": address() })).await;
    // 3. A live segment.
    let mut no_segment = body.clone();
    no_segment.as_object_mut().unwrap().remove("segment_id");
    let refused = app.post("/broadcasts", no_segment).await;
    assert_eq!((refused.status, refused.body["errors"][0]["path"].as_str()), (422, Some("segment")), "{}", refused.body);
    // 4. A body.
    let mut no_body = body.clone();
    no_body.as_object_mut().unwrap().remove("html");
    no_body.as_object_mut().unwrap().remove("text");
    let refused = app.post("/broadcasts", no_body).await;
    assert_eq!((refused.status, refused.body["errors"][0]["path"].as_str()), (422, Some("body")), "{}", refused.body);
    // 5. Marketing paused platform-wide.
    schema::store::switches::set(&mut app.pool.acquire().await.unwrap(), schema::store::switches::Switch::Marketing, false).await.unwrap();
    let refused = app.post("/broadcasts", body.clone()).await;
    refused.assert_error(403, "validation_error");
    assert_eq!(refused.body["errors"][0]["path"], "marketing_enabled");
    schema::store::switches::set(&mut app.pool.acquire().await.unwrap(), schema::store::switches::Switch::Marketing, true).await.unwrap();
    // 6. The team in good standing.
    sqlx::query("UPDATE teams SET risk_state = 'under_review' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();
    let refused = app.post("/broadcasts", body.clone()).await;
    refused.assert_error(403, "validation_error");
    assert_eq!(refused.body["errors"][0]["path"], "team_standing");
    assert_eq!(app.count("broadcasts").await, 0, "a refused send creates nothing");
    assert_eq!(app.count("apalis.jobs WHERE job_type = 'send_broadcast'").await, 0);
    sqlx::query("UPDATE teams SET risk_state = 'normal' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();

    // The checklist runs the same gate without sending.
    let saved = app.post("/broadcasts", draft(&segment_id)).await;
    let id = saved.body["id"].as_str().unwrap();
    let checklist = app.get(&format!("/broadcasts/{id}/checklist")).await.body;
    let names: Vec<&str> = checklist["steps"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["sending_domain", "postal_address", "segment", "body", "marketing_enabled", "team_standing"]);
    assert_eq!(checklist["ready"], true, "{checklist}");
    assert_eq!(status_of(app, id).await, "draft");
}

#[tokio::test]
async fn a_failing_content_check_stops_a_send_until_acknowledged() {
    let mail = mail::setup().await;
    let app = &mail.app;
    app.patch("/team", json!({ "postal_address": address() })).await;
    let segment_id = segment(app).await;
    let mut body = draft(&segment_id);
    body["html"] = json!("<p>Hi {{{FIRST_NAME}}} <a href=\"#\">here</a></p>");
    let id = app.post("/broadcasts", body).await.body["id"].as_str().unwrap().to_string();
    let checks = app.post(&format!("/broadcasts/{id}/checks"), json!({})).await.body;
    assert_eq!(checks["has_failures"], true, "{checks}");
    let refused = app.post(&format!("/broadcasts/{id}/send"), json!({})).await;
    refused.assert_error(422, "validation_error");
    let links = refused.body["details"]["checks"].as_array().unwrap().iter().find(|c| c["name"] == "links").unwrap().clone();
    assert_eq!(links["status"], "fail");
    assert_eq!(status_of(app, &id).await, "draft");
    let sent = app.post(&format!("/broadcasts/{id}/send"), json!({ "acknowledge_checks": true })).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert_ne!(status_of(app, &id).await, "draft");
}

#[tokio::test]
async fn bad_drafts_and_changes_to_sent_broadcasts_are_refused() {
    let app = TestApp::spawn_unthrottled().await;
    let segment_id = segment(&app).await;
    let mut scheduled_without_send = draft(&segment_id);
    scheduled_without_send["scheduled_at"] = json!("in 2 hours");
    app.post("/broadcasts", scheduled_without_send).await.assert_error(422, "invalid_parameter");
    let mut unknown_segment = draft(&segment_id);
    unknown_segment["segment_id"] = json!(uuid::Uuid::now_v7().to_string());
    app.post("/broadcasts", unknown_segment).await.assert_error(422, "invalid_parameter");
    let mut unknown_topic = draft(&segment_id);
    unknown_topic["topic_id"] = json!(uuid::Uuid::now_v7().to_string());
    app.post("/broadcasts", unknown_topic).await.assert_error(422, "invalid_parameter");
    let mut bad_format = draft(&segment_id);
    bad_format["html"] = json!("<p>{{{TOTAL|0|currency:usd}}}</p>");
    app.post("/broadcasts", bad_format).await.assert_error(422, "validation_error");
    let mut missing = draft(&segment_id);
    missing.as_object_mut().unwrap().remove("subject");
    app.post("/broadcasts", missing).await.assert_error(422, "missing_required_field");
    assert_eq!(app.count("broadcasts").await, 0);

    let id = app.post("/broadcasts", draft(&segment_id)).await.body["id"].as_str().unwrap().to_string();
    let renamed = app.patch(&format!("/broadcasts/{id}"), json!({ "name": "Renamed", "audience_id": segment_id })).await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    let read = app.get(&format!("/broadcasts/{id}")).await.body;
    assert_eq!((read["name"].as_str(), read["audience_id"].as_str()), (Some("Renamed"), Some(segment_id.as_str())));
    let copy = app.post(&format!("/broadcasts/{id}/duplicate"), json!({})).await;
    assert_eq!(copy.status, 201);
    sqlx::query("UPDATE broadcasts SET status = 'sent' WHERE id = $1::uuid").bind(&id).execute(&app.pool).await.unwrap();
    app.patch(&format!("/broadcasts/{id}"), json!({ "name": "Again" })).await.assert_error(422, "validation_error");
    app.delete(&format!("/broadcasts/{id}")).await.assert_error(422, "validation_error");
    app.post(&format!("/broadcasts/{id}/cancel"), json!({})).await.assert_error(422, "validation_error");
    assert_eq!(app.get(&format!("/broadcasts/{id}")).await.body["name"], "Renamed");
    let listed = app.get("/broadcasts?status=sent").await.body;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let theirs = app.request_as(&other, reqwest::Method::GET, &format!("/broadcasts/{id}")).send().await.unwrap();
    Answer::from(theirs).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_send_fans_out_one_personalised_email_per_recipient_with_unsubscribe_headers() {
    let mail = mail::setup().await;
    let app = &mail.app;
    app.patch("/team", json!({ "postal_address": address() })).await;
    let segment_id = segment(app).await;
    let topic = app.post("/topics", json!({ "name": "News", "default_subscription": "opt_in" })).await.body["id"].as_str().unwrap().to_string();
    app.post("/contact-properties", json!({ "key": "plan", "type": "string" })).await;
    let contacts = 120;
    for i in 0..contacts {
        let body = json!({ "email": format!("reader{i}@{RECIPIENT_DOMAIN}"), "first_name": format!("Reader{i}"),
            "properties": { "plan": if i % 2 == 0 { "pro" } else { "free" } }, "segments": [{ "id": segment_id }] });
        assert_eq!(app.post("/contacts", body).await.status, 201);
    }
    app.post("/contacts", json!({ "email": format!("gone@{RECIPIENT_DOMAIN}"), "unsubscribed": true, "segments": [{ "id": segment_id }] })).await;
    app.post("/contacts", json!({ "email": format!("quiet@{RECIPIENT_DOMAIN}"), "segments": [{ "id": segment_id }], "topics": [{ "id": topic, "subscription": "opt_out" }] })).await;
    app.post("/contacts", json!({ "email": format!("blocked@{RECIPIENT_DOMAIN}"), "segments": [{ "id": segment_id }] })).await;
    app.post("/suppressions", json!({ "email": format!("blocked@{RECIPIENT_DOMAIN}") })).await;

    let mut body = draft(&segment_id);
    body["topic_id"] = json!(topic);
    body["send"] = json!(true);
    let created = app.post("/broadcasts", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let messages = mail.sink.wait_for(contacts, Duration::from_secs(60)).await;
    assert_eq!(messages.len(), contacts);
    eventually(|| async { (status_of(app, &id).await == "sent").then_some(()) }).await;

    let read = app.get(&format!("/broadcasts/{id}")).await.body;
    assert_eq!(read["counts"]["recipients"], contacts + 3);
    assert_eq!(read["counts"]["excluded"], 3);
    assert_eq!(read["counts"]["sent"], contacts);
    let excluded = app.get(&format!("/broadcasts/{id}/recipients?type=unsubscribed")).await.body;
    let mut reasons: Vec<&str> = excluded["data"].as_array().unwrap().iter().map(|r| r["excluded_reason"].as_str().unwrap()).collect();
    reasons.sort();
    assert_eq!(reasons, ["topic_opt_out", "unsubscribed"]);
    let suppressed = app.get(&format!("/broadcasts/{id}/recipients?type=suppressed")).await.body;
    assert_eq!(suppressed["data"][0]["excluded_reason"], "suppressed");

    // Each email is the contact's own: merge variables, the footer, both unsubscribe headers.
    let one = messages.iter().find(|m| m.rcpt_to[0] == format!("reader7@{RECIPIENT_DOMAIN}")).unwrap();
    let list_unsubscribe = one.header("List-Unsubscribe").unwrap();
    assert!(list_unsubscribe.contains("/unsubscribe/") && list_unsubscribe.contains("mailto:"), "{list_unsubscribe}");
    assert_eq!(one.header("List-Unsubscribe-Post").as_deref(), Some("List-Unsubscribe=One-Click"));
    tests::clients::dkimpy_verify(&one.data, &mail::dkim_public_key(&mail.domain)).expect("the signature verifies");
    let recipients = app.get(&format!("/broadcasts/{id}/recipients?type=sent&limit=100")).await.body;
    assert_eq!((recipients["data"].as_array().unwrap().len(), recipients["has_more"].as_bool()), (100, Some(true)));
    assert_eq!(recipients["data"][0]["id"], recipients["data"][0]["contact_id"], "a row's id is its paging cursor");
    let email_id: uuid::Uuid = sqlx::query_scalar("SELECT email_id FROM broadcast_recipients WHERE email = $1")
        .bind(format!("reader7@{RECIPIENT_DOMAIN}"))
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let email = app.get(&format!("/emails/{email_id}")).await.body;
    assert_eq!(email["subject"], "News for Reader7");
    assert!(email["text"].as_str().unwrap().starts_with("Hi Reader7, your plan is free."), "{}", email["text"]);
    assert!(email["text"].as_str().unwrap().contains("1 Main St, Springfield, 62701, US"), "the footer carries the postal address");
    assert!(email["html"].as_str().unwrap().contains("/unsubscribe/"), "the footer links to unsubscribe");

    // The one-click POST from the arrived header leaves the broadcast's topic.
    let url = list_unsubscribe.split(['<', '>']).find(|part| part.starts_with("http")).unwrap().to_string();
    let path = url.split_once("://").unwrap().1.split_once('/').unwrap().1;
    let posted = reqwest::Client::new().post(app.url(&format!("/{path}"))).body("List-Unsubscribe=One-Click").header("content-type", "application/x-www-form-urlencoded").send().await.unwrap();
    assert!(posted.status().is_success(), "{}", posted.status());
    let contact = app.get(&format!("/contacts/reader7@{RECIPIENT_DOMAIN}/topics")).await.body;
    assert_eq!(contact["data"][0]["subscription"], "opt_out", "{contact}");

    // The mailto of another arrived header, mailed as a mailbox provider would, does the same.
    let other = messages.iter().find(|m| m.rcpt_to[0] == format!("reader8@{RECIPIENT_DOMAIN}")).unwrap();
    let mailto = other.header("List-Unsubscribe").unwrap().split(['<', '>']).find(|part| part.starts_with("mailto:")).unwrap().to_string();
    let (address, query) = mailto.trim_start_matches("mailto:").split_once('?').unwrap();
    let subject = query.trim_start_matches("subject=").replace("%20", " ");
    let port = app.start_inbound(|_| {}).await;
    let raw = format!("From: reader8@{RECIPIENT_DOMAIN}\r\nTo: {address}\r\nSubject: {subject}\r\n\r\nThis message will unsubscribe you.\r\n");
    let from = format!("reader8@{RECIPIENT_DOMAIN}");
    tests::smtp::submit(port, &from, address, raw.as_bytes()).await.expect("the inbound server takes the unsubscribe mail");
    let contact = app.get(&format!("/contacts/reader8@{RECIPIENT_DOMAIN}/topics")).await.body;
    assert_eq!(contact["data"][0]["subscription"], "opt_out", "{contact}");
    assert_eq!(app.count("received_emails").await, 0, "an unsubscribe is no received email");
}

#[tokio::test]
async fn two_runs_of_the_fan_out_at_once_give_each_recipient_exactly_one_email() {
    // No workers: the test runs the job itself, twice at once (as when a worker's claim on the
    // job expired while it still ran), a page of 25 contacts at a time.
    let mail = mail::setup_without_workers(tests::smtp::SmtpSink::start().await, |_| {}).await;
    let app = &mail.app;
    app.patch("/team", json!({ "postal_address": address() })).await;
    let segment_id = segment(app).await;
    let contacts = 130;
    many_contacts(app, &segment_id, contacts).await;
    let mut body = draft(&segment_id);
    body["send"] = json!(true);
    let id: uuid::Uuid = app.post("/broadcasts", body).await.body["id"].as_str().unwrap().parse().unwrap();
    let settings = jobs::broadcasts::BroadcastSettings { public_url: app.state.config.public_url.clone(), page_size: 25, development: false };
    let (first, second) = tokio::join!(
        jobs::broadcasts::run(&app.pool, &settings, id),
        jobs::broadcasts::run(&app.pool, &settings, id)
    );
    first.unwrap();
    second.unwrap();
    // A third run, after the end, changes nothing.
    jobs::broadcasts::run(&app.pool, &settings, id).await.unwrap();
    let per_contact: Vec<i64> = sqlx::query_scalar(
        "SELECT count(*) FROM email_recipients r JOIN emails e ON e.id = r.email_id WHERE e.broadcast_id = $1 GROUP BY r.email",
    )
    .bind(id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(per_contact.len(), contacts as usize);
    assert!(per_contact.iter().all(|n| *n == 1), "{per_contact:?}");
    assert_eq!(app.count(&format!("emails WHERE broadcast_id = '{id}'")).await, i64::from(contacts));
    assert_eq!(paged_deliveries(app).await, i64::from(contacts));
    assert_eq!(status_of(app, &id.to_string()).await, "sent");
}

#[tokio::test]
async fn a_send_past_the_marketing_meter_is_429_without_retry_after_and_changes_nothing() {
    let mail = mail::setup_without_workers(tests::smtp::SmtpSink::start().await, |_| {}).await;
    let app = &mail.app;
    app.patch("/team", json!({ "postal_address": address() })).await;
    sqlx::query("UPDATE plans SET marketing_monthly = 3 WHERE code = 'pro'").execute(&app.pool).await.unwrap();
    let segment_id = segment(app).await;
    for i in 0..4 {
        app.post("/contacts", json!({ "email": format!("m{i}@{RECIPIENT_DOMAIN}"), "segments": [{ "id": segment_id }] })).await;
    }
    let id = app.post("/broadcasts", draft(&segment_id)).await.body["id"].as_str().unwrap().to_string();
    let refused = app.post(&format!("/broadcasts/{id}/send"), json!({})).await;
    refused.assert_error(429, "marketing_quota_exceeded");
    assert!(refused.header("retry-after").is_none());
    assert_eq!(status_of(app, &id).await, "draft");
    assert_eq!(app.count("apalis.jobs WHERE job_type = 'send_broadcast'").await, 0);
    sqlx::query("UPDATE plans SET marketing_monthly = 4 WHERE code = 'pro'").execute(&app.pool).await.unwrap();
    assert_eq!(app.post(&format!("/broadcasts/{id}/send"), json!({})).await.status, 200);
}

#[tokio::test]
async fn a_canceled_broadcast_creates_no_email_and_a_scheduled_one_waits_for_its_time() {
    let mail = mail::setup_without_workers(tests::smtp::SmtpSink::start().await, |_| {}).await;
    let app = &mail.app;
    app.patch("/team", json!({ "postal_address": address() })).await;
    let segment_id = segment(app).await;
    app.post("/contacts", json!({ "email": format!("c@{RECIPIENT_DOMAIN}"), "segments": [{ "id": segment_id }] })).await;
    let settings = jobs::broadcasts::BroadcastSettings { public_url: app.state.config.public_url.clone(), page_size: 25, development: false };

    // Scheduled: the job does nothing before its time, and a cancel stops it for good.
    let id = app.post("/broadcasts", draft(&segment_id)).await.body["id"].as_str().unwrap().to_string();
    let scheduled = app.post(&format!("/broadcasts/{id}/send"), json!({ "scheduled_at": "in 2 hours" })).await;
    assert_eq!(scheduled.status, 200, "{}", scheduled.body);
    assert_eq!(status_of(app, &id).await, "scheduled");
    assert!(!app.get(&format!("/broadcasts/{id}")).await.body["scheduled_at"].is_null());
    jobs::broadcasts::run(&app.pool, &settings, id.parse().unwrap()).await.unwrap();
    assert_eq!(app.count("emails").await, 0, "not before its time");
    assert_eq!(app.post(&format!("/broadcasts/{id}/cancel"), json!({})).await.status, 200);
    assert_eq!(status_of(app, &id).await, "canceled");
    sqlx::query("UPDATE broadcasts SET scheduled_at = now() WHERE id = $1::uuid").bind(&id).execute(&app.pool).await.unwrap();
    jobs::broadcasts::run(&app.pool, &settings, id.parse().unwrap()).await.unwrap();
    assert_eq!(app.count("emails").await, 0, "a canceled broadcast sends nothing");

    // Queued, then canceled before the job ran.
    let id = app.post("/broadcasts", draft(&segment_id)).await.body["id"].as_str().unwrap().to_string();
    app.post(&format!("/broadcasts/{id}/send"), json!({})).await;
    assert_eq!(status_of(app, &id).await, "queued");
    app.post(&format!("/broadcasts/{id}/cancel"), json!({})).await;
    jobs::broadcasts::run(&app.pool, &settings, id.parse().unwrap()).await.unwrap();
    assert_eq!(app.count("emails").await, 0);
    assert_eq!(app.count("broadcast_recipients").await, 0);
}

#[tokio::test]
async fn a_nul_or_a_ten_megabyte_string_in_any_broadcast_field_is_refused_and_writes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    let segment_id = segment(&app).await;
    let huge = "x".repeat(10 * 1024 * 1024);
    for field in ["name", "from", "subject", "html", "text", "preview_text", "segment_id", "topic_id"] {
        for bad in [huge.as_str(), "a\u{0}b"] {
            let mut body = draft(&segment_id);
            body[field] = json!(bad);
            let answer = app.post("/broadcasts", body).await;
            assert!((400..500).contains(&answer.status), "{field}: {} {}", answer.status, answer.body);
        }
    }
    let mut body = draft(&segment_id);
    body["reply_to"] = json!([huge]);
    assert!((400..500).contains(&app.post("/broadcasts", body).await.status));
    assert_eq!(app.count("broadcasts").await, 0);
}

/// `count` contacts in `segment_id`, written in two statements.
async fn many_contacts(app: &TestApp, segment_id: &str, count: i32) {
    sqlx::query(
        "INSERT INTO contacts (id, team_id, email, first_name)
         SELECT herald_uuid_v7(), $1, 'r' || n || '@inbox.test', 'R' || n FROM generate_series(1, $2) n",
    )
    .bind(app.team_id)
    .bind(count)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO segment_members (segment_id, contact_id) SELECT $1::uuid, id FROM contacts WHERE team_id = $2")
        .bind(segment_id)
        .bind(app.team_id)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// Emails the fan-out's delivery jobs (one per page) name.
async fn paged_deliveries(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT COALESCE(sum(jsonb_array_length(convert_from(job, 'UTF8')::jsonb -> 'email_ids')), 0)::int8
         FROM apalis.jobs WHERE job_type = 'deliver_page'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

async fn broadcast_emails(app: &TestApp, id: &str) -> i64 {
    app.count(&format!("emails WHERE broadcast_id = '{id}'")).await
}

#[tokio::test]
async fn a_cancel_while_sending_stops_at_the_next_page_and_the_emails_made_still_go_out() {
    let mail = mail::setup_without_workers(tests::smtp::SmtpSink::start().await, |_| {}).await;
    let app = &mail.app;
    app.patch("/team", json!({ "postal_address": address() })).await;
    let segment_id = segment(app).await;
    let contacts = 400;
    many_contacts(app, &segment_id, contacts).await;
    let mut body = draft(&segment_id);
    body["send"] = json!(true);
    let id = app.post("/broadcasts", body).await.body["id"].as_str().unwrap().to_string();
    // One contact per page, so the cancel lands mid-send.
    let settings = jobs::broadcasts::BroadcastSettings { public_url: app.state.config.public_url.clone(), page_size: 1, development: false };
    let (pool, broadcast_id) = (app.pool.clone(), id.parse().unwrap());
    let run = tokio::spawn(async move { jobs::broadcasts::run(&pool, &settings, broadcast_id).await });
    eventually(|| async { (broadcast_emails(app, &id).await >= 5).then_some(()) }).await;
    assert_eq!(status_of(app, &id).await, "sending");
    let canceled = app.post(&format!("/broadcasts/{id}/cancel"), json!({})).await;
    assert_eq!(canceled.status, 200, "{}", canceled.body);
    run.await.unwrap().unwrap();

    assert_eq!(status_of(app, &id).await, "canceled");
    let made = broadcast_emails(app, &id).await;
    assert!((5..i64::from(contacts)).contains(&made), "{made} emails");
    assert_eq!(paged_deliveries(app).await, made, "every email made is delivered");
    assert_eq!(app.count("broadcast_recipients").await, made, "no contact after the cancel was resolved");
    // The run after the cancel (a retry of the job) makes no more.
    let settings = jobs::broadcasts::BroadcastSettings { public_url: app.state.config.public_url.clone(), page_size: 1, development: false };
    jobs::broadcasts::run(&app.pool, &settings, id.parse().unwrap()).await.unwrap();
    assert_eq!(broadcast_emails(app, &id).await, made);
    assert!(app.post(&format!("/broadcasts/{id}/send"), json!({})).await.status >= 400, "a canceled broadcast is not sent again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_fan_out_and_replaced_leaves_each_recipient_exactly_one_email() {
    let mail = mail::setup_without_workers(tests::smtp::SmtpSink::start().await, |_| {}).await;
    let app = &mail.app;
    app.patch("/team", json!({ "postal_address": address() })).await;
    let segment_id = segment(app).await;
    let contacts = 2000;
    many_contacts(app, &segment_id, contacts).await;
    let mut body = draft(&segment_id);
    body["send"] = json!(true);
    let id = app.post("/broadcasts", body).await.body["id"].as_str().unwrap().to_string();

    let mut first = mail.start_worker(&[("HERALD_BROADCAST_PAGE_SIZE", "10")]);
    let started = std::time::Instant::now();
    while broadcast_emails(app, &id).await < 200 {
        assert!(started.elapsed() < Duration::from_secs(60), "the fan-out did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().expect("SIGKILL the worker");
    first.wait().unwrap();
    let at_kill = broadcast_emails(app, &id).await;
    assert!(at_kill < i64::from(contacts), "the fan-out finished before the kill");

    // The dead worker's job passes to a live one after its missed heartbeats (30 seconds).
    let mut second = mail.start_worker(&[("HERALD_BROADCAST_PAGE_SIZE", "10")]);
    let started = std::time::Instant::now();
    while status_of(app, &id).await != "sent" {
        assert!(started.elapsed() < Duration::from_secs(150), "the fan-out never finished");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    second.kill().unwrap();
    second.wait().unwrap();

    let per_contact: Vec<i64> = sqlx::query_scalar(
        "SELECT count(e.id) FROM contacts c LEFT JOIN email_recipients r ON r.email = c.email
         LEFT JOIN emails e ON e.id = r.email_id AND e.broadcast_id = $1::uuid GROUP BY c.id",
    )
    .bind(&id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(per_contact.len(), contacts as usize);
    assert!(per_contact.iter().all(|n| *n == 1), "a contact without exactly one email");
    assert_eq!(app.count(&format!("broadcast_recipients WHERE broadcast_id = '{id}' AND email_id IS NOT NULL")).await, i64::from(contacts));
    let mut arrivals = std::collections::HashMap::new();
    for message in mail.sink.messages() {
        *arrivals.entry(message.header("Message-ID").unwrap()).or_insert(0) += 1;
    }
    assert!(arrivals.values().all(|n| *n == 1), "a message arrived twice");
    println!("{contacts} contacts: {at_kill} emails made before the kill, each contact given one");
}

#[tokio::test]
async fn a_template_broadcast_renders_each_contact_s_show_when_blocks_under_the_broadcast_s_subject() {
    let mail = mail::setup().await;
    let app = &mail.app;
    app.patch("/team", json!({ "postal_address": address() })).await;
    let segment_id = segment(app).await;
    app.post("/contact-properties", json!({ "key": "plan", "type": "string" })).await;
    for (name, plan) in [("pro", "pro"), ("free", "free")] {
        let body = json!({ "email": format!("{name}@{RECIPIENT_DOMAIN}"), "first_name": name.to_uppercase(),
            "properties": { "plan": plan }, "segments": [{ "id": segment_id }] });
        assert_eq!(app.post("/contacts", body).await.status, 201);
    }
    let document = json!({ "kind": "svc.blocks", "version": 1, "lang": "en", "sections": [{ "columns": [{ "blocks": [
        { "type": "text", "text": "Hello {{{FIRST_NAME|friend}}}" },
        { "type": "text", "text": "Your pro perks", "show_when": { "match": "all", "conditions": [{ "field": "properties.plan", "op": "eq", "value": "pro" }] } },
    ] }] }] });
    let template = app.post("/templates", json!({ "name": "Perks", "subject": "The template's subject", "document": document })).await;
    assert_eq!(template.status, 201, "{}", template.body);
    let template_id = template.body["id"].as_str().unwrap().to_string();
    assert_eq!(app.post(&format!("/templates/{template_id}/publish"), json!({})).await.status, 200);

    let created = app
        .post(
            "/broadcasts",
            json!({ "from": format!("news@{SENDING_DOMAIN}"), "subject": "Perks for {{{FIRST_NAME}}}", "segment_id": segment_id,
                "template": { "id": template_id }, "send": true, "acknowledge_checks": true }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    mail.sink.wait_for(2, Duration::from_secs(30)).await;
    eventually(|| async { (status_of(app, &id).await == "sent").then_some(()) }).await;
    let emails: Vec<(String, String, Option<String>, Option<i32>)> = sqlx::query_as(
        "SELECT r.email, e.subject, e.html, e.template_version FROM emails e JOIN email_recipients r ON r.email_id = e.id
         WHERE e.broadcast_id = $1::uuid ORDER BY r.email",
    )
    .bind(&id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let [(_, free_subject, free_html, version), (_, pro_subject, pro_html, _)] = emails.as_slice() else { panic!("{emails:?}") };
    assert_eq!((free_subject.as_str(), pro_subject.as_str()), ("Perks for FREE", "Perks for PRO"));
    assert_eq!(*version, Some(1));
    let (free_html, pro_html) = (free_html.as_deref().unwrap(), pro_html.as_deref().unwrap());
    assert!(pro_html.contains("Hello PRO") && pro_html.contains("Your pro perks"), "{pro_html}");
    assert!(free_html.contains("Hello FREE") && !free_html.contains("Your pro perks"), "{free_html}");
    assert!(free_html.contains("/unsubscribe/"), "the footer is added to a template without an unsubscribe link");
}
