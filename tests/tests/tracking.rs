//! Open and click tracking: with the domain's tracking on, delivered HTML carries signed
//! redirects and an open pixel on the domain's `links` host; following them over HTTP records
//! `email.clicked` / `email.opened` on the email, the broadcast, the metrics and the webhook
//! receiver; an altered token answers 404 and records nothing; hits left in the spool by a dead
//! process are drained once; with the spool's disk full, links still redirect.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use std::time::Duration;
use tests::mail::{self, Mail, RECIPIENT_DOMAIN, SENDING_DOMAIN};
use tests::receiver::Receiver;
use tests::smtp::{Received, SmtpSink};
use tests::{TestApp, eventually};

/// A sending team whose domain tracks opens and clicks (its `links` CNAME verified), and whose
/// webhooks may reach the local receiver.
async fn setup() -> Mail {
    let mail = mail::setup_with(SmtpSink::start().await, |config| config.webhook_allow_private = true).await;
    let app = &mail.app;
    let id = mail.domain["id"].as_str().unwrap();
    let patched = app.patch(&format!("/domains/{id}"), json!({ "open_tracking": true, "click_tracking": true })).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let domain = app.get(&format!("/domains/{id}")).await.body;
    let tracking = domain["records"].as_array().unwrap().iter().find(|r| r["kind"] == "tracking").unwrap();
    app.dns.zone.set_cname(tracking["fqdn"].as_str().unwrap(), tracking["value"].as_str().unwrap());
    let verified = app.post(&format!("/domains/{id}/verify"), json!({})).await;
    assert_eq!(verified.body["status"], "verified", "{}", verified.body);
    mail
}

/// The tracking links in an arrived message's HTML: `(clicks, open pixel)`, as paths.
fn tracking_paths(message: &Received) -> (Vec<String>, String) {
    let html = message.html().expect("an HTML part");
    let host = format!("http://links.{SENDING_DOMAIN}");
    let paths: Vec<String> = html
        .split('"')
        .filter_map(|part| part.strip_prefix(&host))
        .map(|path| path.replace("&amp;", "&"))
        .collect();
    let clicks = paths.iter().filter(|p| p.starts_with("/click/")).cloned().collect();
    let open = paths.iter().find(|p| p.starts_with("/open/")).expect("an open pixel").clone();
    (clicks, open)
}

/// A GET without a credential or User-Agent, redirects not followed (a mail client's).
async fn follow(app: &TestApp, path: &str) -> reqwest::Response {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    client.get(app.url(path)).send().await.unwrap()
}

async fn engagements(app: &TestApp) -> i64 {
    app.count("email_engagements").await
}

#[tokio::test]
async fn a_tracked_broadcast_records_clicks_and_opens_on_the_email_the_broadcast_and_the_webhook_receiver() {
    let mail = setup().await;
    let app = &mail.app;
    let receiver = Receiver::start().await;
    let hook = app.post("/webhooks", json!({ "endpoint": receiver.url("/hook"), "events": ["email.opened", "email.clicked"] })).await;
    assert_eq!(hook.status, 201, "{}", hook.body);
    app.patch("/team", json!({ "postal_address": { "line1": "1 Main St", "city": "Springfield", "postal_code": "62701", "country": "US" } })).await;
    let segment_id = app.post("/segments", json!({ "name": "Readers" })).await.body["id"].as_str().unwrap().to_string();
    for i in 0..3 {
        app.post("/contacts", json!({ "email": format!("r{i}@{RECIPIENT_DOMAIN}"), "segments": [{ "id": segment_id }] })).await;
    }
    let created = app
        .post(
            "/broadcasts",
            json!({
                "name": "Tracked", "from": format!("news@{SENDING_DOMAIN}"), "subject": "Hello", "segment_id": segment_id,
                "html": "<p>Hi</p><p><a href=\"https://acme.example/news\">News</a> <a href=\"https://acme.example/shop?a=1&amp;b=2\">Shop</a> <a href=\"mailto:help@acme.example\">Help</a></p>",
                "text": "Hi", "send": true,
            }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let broadcast_id = created.body["id"].as_str().unwrap().to_string();
    let messages = mail.sink.wait_for(3, Duration::from_secs(30)).await;
    let message = messages.iter().find(|m| m.rcpt_to[0] == format!("r1@{RECIPIENT_DOMAIN}")).unwrap();
    tests::clients::dkimpy_verify(&message.data, &mail::dkim_public_key(&mail.domain)).expect("the tracked message verifies");
    let html = message.html().unwrap();
    assert!(!html.contains("https://acme.example/"), "every web link is rewritten: {html}");
    assert!(html.contains("mailto:help@acme.example"), "other links are left alone");
    assert!(html.contains(&format!("{}/unsubscribe/", app.state.config.public_url)), "the unsubscribe link is not tracked");
    let (clicks, open) = tracking_paths(message);
    assert_eq!(clicks.len(), 2, "{html}");

    // A click redirects to the address as written; twice counts two clicks, one clicker.
    let followed = follow(app, &clicks[1]).await;
    assert_eq!(followed.status(), 302);
    assert_eq!(followed.headers()["location"], "https://acme.example/shop?a=1&b=2");
    assert_eq!(follow(app, &clicks[1]).await.status(), 302);
    let pixel = follow(app, &open).await;
    assert_eq!((pixel.status().as_u16(), pixel.headers()["content-type"].to_str().unwrap()), (200, "image/gif"));
    assert_eq!(pixel.bytes().await.unwrap().len(), 43);

    let email_id: String = sqlx::query_scalar("SELECT email_id::text FROM broadcast_recipients WHERE email = $1")
        .bind(format!("r1@{RECIPIENT_DOMAIN}"))
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let counts = eventually(|| async {
        let counts = app.get(&format!("/broadcasts/{broadcast_id}")).await.body["counts"].clone();
        (counts["clicked"] == 1 && counts["opened"] == 1).then_some(counts)
    })
    .await;
    assert_eq!(counts["sent"], 3);
    let links = app.get(&format!("/broadcasts/{broadcast_id}/clicked-links")).await.body;
    assert_eq!(links["data"], json!([{ "link": "https://acme.example/shop?a=1&b=2", "clicks": 2, "unique_clickers": 1 }]));
    let clicked = app.get(&format!("/broadcasts/{broadcast_id}/recipients?type=clicked")).await.body;
    assert_eq!(clicked["data"].as_array().unwrap().len(), 1);
    assert_eq!(clicked["data"][0]["email_id"], email_id.as_str());
    assert_eq!(app.get(&format!("/broadcasts/{broadcast_id}/recipients?type=opened")).await.body["data"].as_array().unwrap().len(), 1);
    let timeline = mail.timeline(&email_id).await;
    assert!(timeline.contains(&"email.clicked".to_string()) && timeline.contains(&"email.opened".to_string()), "{timeline:?}");
    let metrics = app.get("/emails/metrics").await.body;
    assert_eq!((metrics["opened"].as_i64(), metrics["clicked"].as_i64()), (Some(1), Some(1)), "{metrics}");

    let deliveries = receiver.wait_for("/hook", 3, Duration::from_secs(15)).await;
    let click = deliveries.iter().map(|d| d.json()).find(|e| e["type"] == "email.clicked").unwrap();
    assert_eq!(click["data"]["email_id"], email_id.as_str());
    assert_eq!(click["data"]["to"], json!([format!("r1@{RECIPIENT_DOMAIN}")]));
    assert_eq!(click["data"]["click"]["link"], "https://acme.example/shop?a=1&b=2");
    assert_eq!(click["data"]["click"]["ipAddress"], "127.0.0.1");
    assert!(click["data"]["click"]["timestamp"].is_string() && click["data"]["click"].get("userAgent").is_some(), "{click}");
    let opened = deliveries.iter().map(|d| d.json()).find(|e| e["type"] == "email.opened").unwrap();
    assert_eq!(opened["data"]["open"]["ipAddress"], "127.0.0.1");
}

#[tokio::test]
async fn an_altered_tracking_link_answers_404_and_records_nothing() {
    let mail = setup().await;
    let app = &mail.app;
    let mut message = Mail::message(&format!("a@{RECIPIENT_DOMAIN}"));
    message["html"] = json!("<a href=\"https://acme.example/a\">A</a>");
    mail.send(message).await;
    let arrived = mail.sink.wait_for(1, Duration::from_secs(30)).await;
    let (clicks, open) = tracking_paths(&arrived[0]);
    let token = clicks[0].trim_start_matches("/click/");

    // The same tag over another address (a redirect to a URL not in the email).
    let mut bytes = URL_SAFE_NO_PAD.decode(token).unwrap();
    bytes.truncate(32);
    bytes.extend_from_slice(b"https://evil.example/a");
    let elsewhere = format!("/click/{}", URL_SAFE_NO_PAD.encode(&bytes));
    // One character of the tag changed.
    let mut bytes = URL_SAFE_NO_PAD.decode(token).unwrap();
    bytes[20] ^= 1;
    let tampered = format!("/click/{}", URL_SAFE_NO_PAD.encode(&bytes));
    let forged_open = format!("{}A", open);
    for path in [elsewhere, tampered, forged_open, "/click/nonsense".into(), "/open/nonsense".into()] {
        let answer = follow(app, &path).await;
        assert_eq!(answer.status(), 404, "{path}");
        assert!(answer.headers().get("location").is_none());
    }
    // A real hit after the refused ones is drained; the refused ones never were.
    assert_eq!(follow(app, &open).await.status(), 200);
    eventually(|| async { (engagements(app).await > 0).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(engagements(app).await, 1);
    assert_eq!(app.count("events WHERE type = 'email.clicked'").await, 0);
}

#[tokio::test]
async fn transactional_mail_is_tracked_and_a_spool_left_by_a_dead_process_is_drained_once() {
    let mail = setup().await;
    let app = &mail.app;
    let mut message = Mail::message(&format!("t@{RECIPIENT_DOMAIN}"));
    message["html"] = json!("<html><body><a href=\"https://acme.example/t\">T</a></body></html>");
    let id = mail.send(message).await;
    let arrived = mail.sink.wait_for(1, Duration::from_secs(30)).await;
    let (clicks, _) = tracking_paths(&arrived[0]);
    assert_eq!(follow(app, &clicks[0]).await.headers()["location"], "https://acme.example/t");
    eventually(|| async { (mail.timeline(&id).await.contains(&"email.clicked".to_string())).then_some(()) }).await;
    let data = mail.event(&id, "email.clicked").await;
    assert_eq!(data["click"]["link"], "https://acme.example/t");

    // Two segments a dead process left with the same hit (its drain died between commit and
    // delete): the live process writes the hit once.
    let hit = json!({ "id": uuid::Uuid::now_v7(), "email_id": id, "link": null, "ip_address": "192.0.2.1",
        "user_agent": "Mail/1.0", "at": chrono::Utc::now() });
    let dir = &app.state.config.spool_dir;
    for name in ["0-dead-a.hits", "0-dead-b.hits"] {
        std::fs::write(dir.join(name), format!("{hit}\n{{\"torn")).unwrap();
    }
    eventually(|| async { (!dir.join("0-dead-a.hits").exists() && !dir.join("0-dead-b.hits").exists()).then_some(()) }).await;
    let opens: Vec<Value> = sqlx::query_scalar("SELECT data FROM events WHERE type = 'email.opened' AND email_id = $1::uuid")
        .bind(&id)
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(opens.len(), 1, "{opens:?}");
    assert_eq!(opens[0]["open"]["ipAddress"], "192.0.2.1");
}

/// A small tmpfs mounted for the test (root can mount one) and unmounted after it.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let dir = std::env::temp_dir().join(format!("herald-small-disk-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let mounted = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(&dir).status().unwrap();
        assert!(mounted.success(), "mounting a tmpfs for the spool failed (the suite runs as root)");
        SmallDisk(dir)
    }

    /// Writes a file until the disk refuses more.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let error = loop {
            if let Err(error) = file.write_all(&[0u8; 4096]) {
                break error;
            }
        };
        assert_eq!(error.raw_os_error(), Some(28), "ENOSPC: {error}");
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn with_the_spools_disk_full_a_link_still_redirects_the_hit_is_refused_in_the_log_and_recording_resumes_once_there_is_room() {
    let mail = setup().await;
    let app = &mail.app;
    let mut message = Mail::message(&format!("t@{RECIPIENT_DOMAIN}"));
    message["html"] = json!("<html><body><a href=\"https://acme.example/t\">T</a></body></html>");
    let id = mail.send(message).await;
    let (clicks, _) = tracking_paths(&mail.sink.wait_for(1, Duration::from_secs(30)).await[0]);
    // A `herald serve` process whose spool is on a disk the test fills.
    let disk = SmallDisk::mount("64k");
    let (_server, base, log) = tests::faults::serve_with(&app.database_url, &[("HERALD_SPOOL_DIR", &disk.0.to_string_lossy())]);
    let client = reqwest::Client::builder().user_agent("Mail/1.0").redirect(reqwest::redirect::Policy::none()).build().unwrap();
    eventually(|| async { client.get(format!("{base}/health")).send().await.ok().filter(|r| r.status() == 200) }).await;
    let filler = disk.fill();

    for _ in 0..3 {
        let answer = client.get(format!("{base}{}", clicks[0])).send().await.unwrap();
        assert_eq!(answer.status(), 302);
        assert_eq!(answer.headers()["location"], "https://acme.example/t");
    }
    let printed = std::fs::read_to_string(&log).unwrap();
    assert!(printed.contains("writing to the tracking spool failed") && printed.contains("No space left on device"), "{printed}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(mail.timeline(&id).await.iter().filter(|e| *e == "email.clicked").count(), 0, "a refused hit is not recorded");

    std::fs::remove_file(filler).unwrap();
    assert_eq!(client.get(format!("{base}{}", clicks[0])).send().await.unwrap().status(), 302);
    eventually(|| async { (mail.timeline(&id).await.contains(&"email.clicked".to_string())).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(mail.timeline(&id).await.iter().filter(|e| *e == "email.clicked").count(), 1, "{}", std::fs::read_to_string(&log).unwrap());
}
