//! View links of sent emails (returned once, stored as a hash, expiring, revocable, one 404 for
//! every dead link) and the metrics counts.

use serde_json::json;
use std::time::Duration;
use tests::mail::{self, Mail};

/// The page behind a share link, fetched without credentials from this app.
async fn open(mail: &Mail, url: &str) -> reqwest::Response {
    let path = &url[url.find("/share/").expect("a share url")..];
    reqwest::Client::new().get(mail.app.url(path)).header("user-agent", "Browser/1.0").send().await.unwrap()
}

#[tokio::test]
async fn a_share_link_shows_the_email_read_only_until_it_is_revoked() {
    let mail = mail::setup().await;
    let mut body = Mail::message("Jo <delivered@simulator.herald.test>");
    body["subject"] = json!("Receipt <#42>");
    body["html"] = json!("<p>Thanks <script>alert(1)</script>\"friend\"</p>");
    body["bcc"] = json!("hidden@simulator.herald.test");
    let id = mail.send(body).await;

    let shared = mail.app.post(&format!("/emails/{id}/share"), json!({})).await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    assert_eq!(shared.body["object"], "email_share");
    assert_eq!(shared.body["email_id"], id.as_str());
    assert_eq!(shared.body["id"], id.as_str(), "the email's id, where the Resend SDKs read it");
    let share_id: String = sqlx::query_scalar("SELECT id::text FROM email_shares").fetch_one(&mail.app.pool).await.unwrap();
    assert_eq!(shared.body["share_id"], share_id.as_str());
    let url = shared.body["url"].as_str().unwrap().to_string();
    assert!(url.starts_with(&format!("{}/share/", mail.app.config.public_url)), "{url}");
    let expires = chrono::DateTime::parse_from_rfc3339(shared.body["expires_at"].as_str().unwrap()).unwrap();
    let life = expires.with_timezone(&chrono::Utc) - chrono::Utc::now();
    assert!((life.num_minutes() - 48 * 60).abs() <= 1, "default life is 48 hours, got {life}");

    let token = url.rsplit('/').next().unwrap();
    let stored: Vec<u8> = sqlx::query_scalar("SELECT token_hash FROM email_shares").fetch_one(&mail.app.pool).await.unwrap();
    assert_eq!(stored, schema::secret::hash(token), "only the token's SHA-256 is stored");

    let page = open(&mail, &url).await;
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let policy = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(policy.contains("default-src 'none'"), "{policy}");
    let html = page.text().await.unwrap();
    assert!(html.contains("<h1>Receipt &lt;#42&gt;</h1>"), "{html}");
    assert!(html.contains("srcdoc=\"&lt;p&gt;Thanks &lt;script&gt;"), "the email's HTML is escaped into a sandboxed frame: {html}");
    assert!(html.contains("<iframe title=\"Message\" sandbox "));
    assert!(html.contains("Jo &lt;delivered@simulator.herald.test&gt;"));
    assert!(!html.contains("hidden@"), "bcc recipients are not shown");
    assert!(!html.contains("<script>"));

    let revoked = mail.app.delete(&format!("/emails/{id}/share")).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert_eq!(revoked.body["revoked"], 1);
    let gone = open(&mail, &url).await;
    assert_eq!(gone.status(), 404);
    let revoked_page = gone.text().await.unwrap();
    let unknown = open(&mail, &format!("{}/share/nothing-here", mail.app.base)).await;
    assert_eq!(unknown.status(), 404);
    assert_eq!(unknown.text().await.unwrap(), revoked_page, "revoked and unknown links answer the same page");
}

#[tokio::test]
async fn a_share_link_stops_working_when_it_expires() {
    let mail = mail::setup().await;
    let id = mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let short = mail.app.post(&format!("/emails/{id}/share"), json!({ "expires_in": "1s" })).await;
    assert_eq!(short.status, 200, "{}", short.body);
    let long = mail.app.post(&format!("/emails/{id}/share"), json!({ "expires_in": "1 day" })).await;
    assert_eq!(long.status, 200, "{}", long.body);
    let url = short.body["url"].as_str().unwrap();
    assert_eq!(open(&mail, url).await.status(), 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let expired = open(&mail, url).await;
    assert_eq!(expired.status(), 404);
    let unknown = open(&mail, &format!("{}/share/nothing-here", mail.app.base)).await;
    assert_eq!(expired.text().await.unwrap(), unknown.text().await.unwrap());
    assert_eq!(open(&mail, long.body["url"].as_str().unwrap()).await.status(), 200, "other links live on");
}

#[tokio::test]
async fn bad_share_requests_are_refused_and_write_nothing() {
    let mail = mail::setup().await;
    let id = mail.send(Mail::message("delivered@simulator.herald.test")).await;
    for expires_in in ["3 days", "49h", "0m", "soon", "10 parsecs"] {
        let answer = mail.app.post(&format!("/emails/{id}/share"), json!({ "expires_in": expires_in })).await;
        answer.assert_error(400, "validation_error");
        assert_eq!(answer.body["errors"][0]["path"], "expires_in", "{expires_in}: {}", answer.body);
    }
    let (_, other) = api::cli::create_team(&mail.app.pool, "Other").await.unwrap();
    for (method, path) in [
        (reqwest::Method::POST, format!("/emails/{id}/share")),
        (reqwest::Method::DELETE, format!("/emails/{id}/share")),
        (reqwest::Method::POST, "/emails/not-an-id/share".to_string()),
        (reqwest::Method::POST, format!("/emails/{}/share", uuid::Uuid::now_v7())),
    ] {
        let request = mail.app.request_as(&other, method, &path).json(&json!({}));
        tests::Answer::from(request.send().await.unwrap()).await.assert_error(404, "not_found");
    }
    let (_, sending_only) = mail.app.create_key(json!({ "name": "send", "permission": "sending_access" })).await;
    let request = mail.app.request_as(&sending_only, reqwest::Method::POST, &format!("/emails/{id}/share")).json(&json!({}));
    tests::Answer::from(request.send().await.unwrap()).await.assert_error(401, "restricted_api_key");
    assert_eq!(mail.app.count("email_shares").await, 0);
}

#[tokio::test]
async fn metrics_count_each_outcome_of_the_emails_accepted_in_the_window() {
    let mail = mail::setup().await;
    let delivered = mail.send(Mail::message("delivered@simulator.herald.test")).await;
    let bounced = mail.send(Mail::message("bounced@simulator.herald.test")).await;
    let complained = mail.send(Mail::message("complained@simulator.herald.test")).await;
    let mut later = Mail::message("delivered@simulator.herald.test");
    later["scheduled_at"] = json!("in 2 hours");
    let canceled = mail.send(later).await;
    assert_eq!(mail.app.post(&format!("/emails/{canceled}/cancel"), json!({})).await.status, 200);
    mail.wait_for_event(&delivered, "delivered").await;
    mail.wait_for_event(&bounced, "bounced").await;
    mail.wait_for_event(&complained, "complained").await;

    let metrics = mail.app.get("/emails/metrics").await;
    assert_eq!(metrics.status, 200, "{}", metrics.body);
    let m = &metrics.body;
    assert_eq!(m["object"], "metrics");
    assert_eq!(
        (&m["received"], &m["sent"], &m["delivered"], &m["bounced"], &m["complained"], &m["canceled"], &m["failed"]),
        (&json!(4), &json!(3), &json!(2), &json!(1), &json!(1), &json!(1), &json!(0)),
        "{m}"
    );
    assert_eq!(m["opened"], 0);
    assert_eq!((&m["totals"]["received"], &m["totals"]["delivered"], &m["totals"]["bounced"]), (&json!(4), &json!(2), &json!(1)), "{m}");
    assert_eq!(m["bounce_rate"], 0.25);
    assert!(m.get("data").is_none() && m["dimensions"] == json!([]), "totals only unless a breakdown is asked for");

    let by_day = mail.app.get("/emails/metrics?dimensions=period&granularity=daily").await;
    assert_eq!(by_day.status, 200, "{}", by_day.body);
    let today = chrono::Utc::now().format("%Y-%m-%dT00:00:00Z").to_string();
    assert_eq!((&by_day.body["dimensions"], by_day.body["data"].as_array().unwrap().len()), (&json!(["period"]), 1), "{}", by_day.body);
    let row = &by_day.body["data"][0];
    assert_eq!((&row["period"], &row["received"], &row["delivered"], &row["bounced"], &row["opened"]), (&json!(today), &json!(4), &json!(2), &json!(1), &json!(0)), "{row}");
    let by_hour = mail.app.get("/emails/metrics?dimensions=period&granularity=hourly").await.body;
    assert_eq!(by_hour["granularity"], "hourly");
    assert_eq!(by_hour["data"].as_array().unwrap().iter().map(|r| r["received"].as_i64().unwrap()).sum::<i64>(), 4);
    mail.app.get("/emails/metrics?dimensions=domain").await.assert_error(422, "invalid_parameter");
    mail.app.get("/emails/metrics?dimensions=period&granularity=yearly").await.assert_error(422, "invalid_parameter");
    assert_eq!(m["delivery_rate"], 0.5);

    let tomorrow = (chrono::Utc::now() + chrono::TimeDelta::days(1)).format("%Y-%m-%d");
    let empty = mail.app.get(&format!("/emails/metrics?start_date={tomorrow}")).await;
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert_eq!((&empty.body["received"], &empty.body["delivered"]), (&json!(0), &json!(0)));
    mail.app.get("/emails/metrics?start_date=2026-02-01&end_date=2026-01-01").await.assert_error(422, "invalid_parameter");
    mail.app.get("/emails/metrics?start_date=yesterday").await.assert_error(422, "invalid_parameter");
    let (_, other) = api::cli::create_team(&mail.app.pool, "Other").await.unwrap();
    let theirs = tests::Answer::from(mail.app.request_as(&other, reqwest::Method::GET, "/emails/metrics").send().await.unwrap()).await;
    assert_eq!(theirs.body["received"], 0, "another team's mail is not counted");
}
