//! Migrations (#26): an audience moved in from Resend, Mailchimp or listmonk through stand-ins
//! that speak each platform's API, or from their export files; the review, the start and the
//! cancel; nothing ever sent to a migrated contact; and every refusal leaving nothing behind.

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tests::platforms::{self, Platforms};
use tests::{Answer, TestApp, eventually, multipart};

const SECRET: &str = "migration-test-secret";

/// A team on the `pro` plan (room for 50,000 contacts).
async fn pro(app: &TestApp) {
    sqlx::query("UPDATE teams SET plan_code = 'pro' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
}

async fn app_for(stand_in: &Platforms) -> TestApp {
    let (resend, mailchimp) = (stand_in.resend_base(), stand_in.mailchimp_base());
    let mut app = TestApp::spawn_with(|config| {
        config.rate_limit_capacity = 1000;
        config.rate_limit_refill = 1000.0;
        config.secret_key = Some(SECRET.into());
        config.migration_resend_api_base = resend;
        config.migration_mailchimp_api_base = mailchimp;
        config.webhook_allow_private = true;
    })
    .await;
    app.start_workers();
    app
}

/// Waits until the migration leaves `connecting` (or `running`); answers it.
async fn settled(app: &TestApp, id: &str) -> Value {
    eventually(|| async {
        let read = app.get(&format!("/migrations/{id}")).await.body;
        (!matches!(read["status"].as_str(), Some("connecting" | "running"))).then_some(read)
    })
    .await
}

async fn connect(app: &TestApp, source: &str, credentials: Value) -> Value {
    let created = app.post("/migrations", json!({ "source": source, "credentials": credentials })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!((created.body["object"].as_str(), created.body["status"].as_str()), (Some("migration"), Some("connecting")));
    settled(app, created.body["id"].as_str().unwrap()).await
}

/// Starts the migration once it is in review; answers it once it has run.
async fn start(app: &TestApp, id: &str) -> Value {
    settled(app, id).await;
    let started = app.post(&format!("/migrations/{id}/start"), json!({})).await;
    assert_eq!(started.status, 200, "{}", started.body);
    settled(app, id).await
}

async fn upload(app: &TestApp, source: &str, name: &str, file: &[u8]) -> Answer {
    let (content_type, body) = multipart(&[("source", None, source.as_bytes()), ("file", Some(name), file)]);
    Answer::from(app.request(Method::POST, "/migrations").header("content-type", content_type).body(body).send().await.unwrap()).await
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/migrations").join(name)).unwrap()
}

async fn scalar(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string())).bind(app.team_id).fetch_one(&app.pool).await.unwrap()
}

/// An enabled automation started by `svc:contact.created`, to show that migrated contacts start none.
async fn watch_new_contacts(app: &TestApp) {
    let steps = json!([
        { "key": "start", "type": "trigger", "config": { "event_name": "svc:contact.created" } },
        { "key": "mark", "type": "contact_update", "config": { "properties": { "welcomed": true } } }
    ]);
    let created = app.post("/automations", json!({ "name": "Welcome", "status": "enabled", "steps": steps, "connections": [{ "from": "start", "to": "mark" }] })).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

#[tokio::test]
async fn a_mailchimp_account_moves_in_with_consent_topics_tags_and_suppressions_and_nothing_is_sent() {
    let stand_in = Platforms::start().await;
    stand_in.seed_mailchimp(platforms::sample_mailchimp());
    let app = app_for(&stand_in).await;
    watch_new_contacts(&app).await;
    let receiver = tests::receiver::Receiver::start().await;
    let hook = app.post("/webhooks", json!({ "endpoint": receiver.url("/hook"), "events": ["contact.created"] })).await;
    assert_eq!(hook.status, 201, "{}", hook.body);

    let review = connect(&app, "mailchimp", json!({ "api_key": platforms::MAILCHIMP_KEY })).await;
    assert_eq!(review["status"], "review", "{review}");
    let r = &review["review"];
    assert!(r["contacts"]["total"].as_i64().unwrap() >= 4, "{r}");
    assert_eq!(r["contacts"]["new"], r["contacts"]["total"]);
    assert!(r["suppressions"].as_array().unwrap().iter().any(|s| s["origin"] == "bounce"), "{r}");
    assert!(r["properties"].as_array().unwrap().iter().any(|p| p["key"] == "seats" && p["type"] == "number" && p["new"] == true), "{r}");
    assert!(r["segments"].as_array().unwrap().iter().any(|s| s["name"] == "Customers"), "{r}");
    assert_eq!(r["cost"]["refused"], false);
    assert_eq!(scalar(&app, "SELECT count(*) FROM contacts WHERE team_id = $1").await, 0, "nothing arrives before the start");
    assert_eq!(scalar(&app, "SELECT count(*) FROM migrations WHERE team_id = $1 AND credentials IS NOT NULL").await, 0, "credentials erased once read");

    let id = review["id"].as_str().unwrap();
    let done = start(&app, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["counts"]["created"], r["contacts"]["total"]);

    let ada = app.get("/contacts/ada@example.com").await.body;
    assert_eq!((ada["first_name"].as_str(), ada["unsubscribed"].as_bool()), (Some("Ada"), Some(false)), "{ada}");
    assert_eq!(ada["properties"]["seats"], 3, "{ada}");
    assert_eq!(app.get("/contacts/bob@example.com").await.body["unsubscribed"], true);
    let cleo = app.get("/suppressions/cleo@example.com").await;
    assert_eq!((cleo.status, cleo.body["origin"].as_str()), (200, Some("bounce")), "{}", cleo.body);
    let sources: i64 = scalar(&app, "SELECT count(*) FROM consent_records WHERE team_id = $1 AND source = 'migration:mailchimp' AND ip_address IS NOT NULL").await;
    assert!(sources >= 1, "the opt-in IP is kept in a consent record");
    assert!(scalar(&app, "SELECT count(*) FROM segment_members m JOIN segments s ON s.id = m.segment_id WHERE s.team_id = $1 AND s.name = 'Customers'").await >= 1);

    // Nothing is sent: no automation run, no email; the webhook says where the contact came from.
    assert_eq!(scalar(&app, "SELECT count(*) FROM automation_runs WHERE team_id = $1").await, 0, "no automation starts for a migrated contact");
    assert_eq!(scalar(&app, "SELECT count(*) FROM emails WHERE team_id = $1").await, 0);
    let deliveries = receiver.wait_for("/hook", 1, Duration::from_secs(20)).await;
    assert_eq!(deliveries[0].json()["data"]["source"], "migration", "{}", deliveries[0].json());
    // The same automation does start for a contact made through the API (the check can fail).
    assert_eq!(app.post("/contacts", json!({ "email": "fresh@example.com" })).await.status, 201);
    eventually(|| async { (scalar(&app, "SELECT count(*) FROM automation_runs WHERE team_id = $1").await == 1).then_some(()) }).await;

    // The key never reached a request log, and only travelled in the Authorization header.
    let logged: i64 = sqlx::query_scalar("SELECT count(*) FROM request_logs WHERE request_body::text LIKE '%' || $1 || '%'")
        .bind(platforms::MAILCHIMP_KEY)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(logged, 0);
    assert!(stand_in.requests().iter().all(|seen| !seen.path.contains(platforms::MAILCHIMP_KEY)));
    assert_eq!(app.post(&format!("/migrations/{id}/start"), json!({})).await.status, 409, "a completed migration does not start again");
}

#[tokio::test]
async fn a_resend_account_brings_properties_segments_topics_and_templates_as_drafts() {
    let stand_in = Platforms::start().await;
    stand_in.seed_resend(platforms::sample_resend());
    let app = app_for(&stand_in).await;
    let review = connect(&app, "resend", json!({ "api_key": platforms::RESEND_KEY })).await;
    assert_eq!(review["status"], "review", "{review}");
    let r = &review["review"];
    assert!(r["templates"].as_array().unwrap().iter().any(|t| t == "Welcome"), "{r}");
    assert!(r["domains"].as_array().unwrap().iter().any(|d| d == "mail.example.com"), "{r}");
    assert!(r["topics"].as_array().unwrap().iter().any(|t| t["name"] == "Product news"), "{r}");
    let done = start(&app, review["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
    let ada = app.get("/contacts/ada@example.com").await.body;
    assert_eq!(ada["properties"]["company"], "Acme", "{ada}");
    assert_eq!(app.get("/contacts/bob@example.com").await.body["unsubscribed"], true);
    let templates = app.get("/templates").await.body;
    let welcome = templates["data"].as_array().unwrap().iter().find(|t| t["name"] == "Welcome").cloned().expect("the template came over");
    let full = app.get(&format!("/templates/{}", welcome["id"].as_str().unwrap())).await.body;
    assert!(full["html"].as_str().unwrap_or_default().contains("Hi"), "{full}");
    assert!(scalar(&app, "SELECT count(*) FROM segment_members m JOIN segments s ON s.id = m.segment_id WHERE s.team_id = $1 AND s.name = 'Customers'").await >= 1);
    // Segment memberships are further records of contacts read before: not counted twice.
    assert_eq!(done["counts"]["updated"], 0, "{done}");
}

#[tokio::test]
async fn a_listmonk_installation_brings_lists_as_topics_and_blocklisted_subscribers_as_suppressions() {
    let stand_in = Platforms::start().await;
    stand_in.seed_listmonk(platforms::sample_listmonk());
    let app = app_for(&stand_in).await;
    let credentials = json!({ "base_url": stand_in.listmonk_base(), "username": platforms::LISTMONK_USER, "password": platforms::LISTMONK_TOKEN });
    let review = connect(&app, "listmonk", credentials).await;
    assert_eq!(review["status"], "review", "{review}");
    let done = start(&app, review["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
    let topics = app.get("/topics").await.body;
    assert!(topics["data"].as_array().unwrap().iter().any(|t| t["name"] == "Newsletter"), "{topics}");
    let blocked: i64 = scalar(&app, "SELECT count(*) FROM suppressions WHERE team_id = $1 AND origin = 'manual'").await;
    assert!(blocked >= 1);
    let ada = app.get("/contacts/ada@example.com").await.body;
    assert_eq!(ada["properties"]["seats"], 3, "{ada}");
}

#[tokio::test]
async fn wrong_credentials_fail_the_migration_with_the_platforms_answer() {
    let stand_in = Platforms::start().await;
    stand_in.seed_mailchimp(platforms::sample_mailchimp());
    stand_in.seed_resend(platforms::sample_resend());
    let app = app_for(&stand_in).await;
    let failed = connect(&app, "mailchimp", json!({ "api_key": "ffffffffffffffffffffffffffffffff-us6" })).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(error.starts_with("Mailchimp answered 401"), "{error}");
    let failed = connect(&app, "resend", json!({ "api_key": "re_wrong" })).await;
    assert!(failed["error"].as_str().unwrap().starts_with("Resend answered 4"), "{failed}");
    assert_eq!(scalar(&app, "SELECT count(*) FROM contacts WHERE team_id = $1").await, 0);
    assert_eq!(scalar(&app, "SELECT count(*) FROM migrations WHERE team_id = $1 AND credentials IS NOT NULL").await, 0);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_waited_out_and_retried() {
    let stand_in = Platforms::start().await;
    stand_in.seed_resend(platforms::sample_resend());
    let app = app_for(&stand_in).await;
    stand_in.fail_next("resend", 429, Some(1), 2);
    let created = app.post("/migrations", json!({ "source": "resend", "credentials": { "api_key": platforms::RESEND_KEY } })).await;
    let id = created.body["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stand_in.fail_next("resend", 503, None, 2);
    let review = settled(&app, &id).await;
    assert_eq!(review["status"], "review", "{review}");
    let done = start(&app, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(app.get("/contacts/ada@example.com").await.status, 200);
}

#[tokio::test]
async fn export_files_of_each_platform_migrate() {
    let stand_in = Platforms::start().await;
    let app = app_for(&stand_in).await;
    for (source, name, expect) in [
        ("resend", "resend_contacts.csv", "ada@example.com"),
        ("mailchimp", "mailchimp_audience_export.zip", "eve@example.com"),
        ("listmonk", "listmonk_subscribers.csv", "dan@example.com"),
    ] {
        let created = upload(&app, source, name, &fixture(name)).await;
        assert_eq!(created.status, 201, "{source}: {}", created.body);
        assert_eq!(created.body["mode"], "file");
        let review = settled(&app, created.body["id"].as_str().unwrap()).await;
        assert_eq!(review["status"], "review", "{review}");
        let done = start(&app, created.body["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(app.get(&format!("/contacts/{expect}")).await.status, 200, "{source}");
    }
    assert_eq!(app.get("/suppressions/cleo@example.com").await.body["origin"], "bounce");
    assert_eq!(app.get("/contacts/bob@example.com").await.body["unsubscribed"], true);
    assert_eq!(scalar(&app, "SELECT count(*) FROM migration_files WHERE team_id = $1").await, 0, "files go once read");
}

#[tokio::test]
async fn a_bad_row_fails_alone_and_herald_exports_come_back_in() {
    let stand_in = Platforms::start().await;
    let app = app_for(&stand_in).await;
    pro(&app).await;
    let mut csv = String::from("email,first_name,plan\n");
    for n in 1..=10_000 {
        csv.push_str(&format!("person{n}@bulk.test,P{n},pro\n"));
    }
    csv.push_str("nul\0@bulk.test,Bad,pro\nnot-an-address,Worse,pro\nlast@bulk.test,Last,pro\n");
    let created = upload(&app, "resend", "contacts.csv", csv.as_bytes()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let review = settled(&app, &id).await;
    assert_eq!(review["review"]["contacts"]["total"], 10_001, "{}", review["review"]);
    let done = start(&app, &id).await;
    assert_eq!((done["counts"]["created"].as_i64(), done["counts"]["failed"].as_i64()), (Some(10_001), Some(2)), "{}", done["counts"]);
    let failed = app.get(&format!("/migrations/{id}")).await.body["failed_items"].clone();
    assert_eq!(failed[0]["row"], 10_002, "{failed}");
    assert_eq!(failed[0]["reason"], "invalid_email");

    // Herald's own contacts export is a Resend contacts file.
    let export = app.post("/exports", json!({ "kind": "contacts" })).await.body;
    let link = eventually(|| async {
        let read = app.get(&format!("/exports/{}", export["id"].as_str().unwrap())).await.body;
        read["download_url"].as_str().map(String::from)
    })
    .await;
    let path = link.split_once("://").unwrap().1.split_once('/').unwrap().1.to_string();
    let file = reqwest::get(app.url(&format!("/{path}"))).await.unwrap().bytes().await.unwrap();
    let other = app_for(&stand_in).await;
    pro(&other).await;
    let created = upload(&other, "resend", "export.csv", &file).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let done = start(&other, created.body["id"].as_str().unwrap()).await;
    assert_eq!(done["counts"]["created"], 10_001, "{}", done["counts"]);
    assert_eq!(other.get("/contacts/last@bulk.test").await.body["properties"]["plan"], "pro");
}

#[tokio::test]
async fn bad_input_is_refused_and_writes_nothing() {
    let stand_in = Platforms::start().await;
    let app = app_for(&stand_in).await;
    let refused = [
        (json!({ "source": "sendgrid", "credentials": { "api_key": "x" } }), 422, "validation_error"),
        (json!({ "source": "resend", "credentials": {} }), 422, "missing_required_field"),
        (json!({ "source": "mailchimp", "credentials": { "api_key": "nodatacentre" } }), 422, "invalid_parameter"),
        (json!({ "source": "listmonk", "credentials": { "base_url": "ftp://x", "username": "a", "password": "b" } }), 422, "validation_error"),
        (json!({ "source": "resend" }), 422, "missing_required_field"),
    ];
    for (body, status, name) in refused {
        app.post("/migrations", body.clone()).await.assert_error(status, name);
    }
    let not_export = upload(&app, "listmonk", "subscribers.csv", b"email,first\nada@example.com,Ada\n").await;
    not_export.assert_error(422, "validation_error");
    let message = not_export.body["message"].as_str().unwrap();
    assert!(message.contains("`name`") && message.contains("`status`"), "{message}");
    for (name, says) in [("zip_traversal.zip", "outside its root"), ("zip_bomb.zip", "more than 200 MB"), ("not_mailchimp.zip", "no subscribed")] {
        let answer = upload(&app, "mailchimp", name, &fixture(name)).await;
        answer.assert_error(422, "validation_error");
        assert!(answer.body["message"].as_str().unwrap().contains(says), "{name}: {}", answer.body);
    }
    assert_eq!(scalar(&app, "SELECT count(*) FROM migrations WHERE team_id = $1").await, 0);
    assert_eq!(app.count("apalis.jobs WHERE job_type = 'migrations'").await, 0);
    assert!(!std::path::Path::new("/tmp/evil").exists() && !std::path::Path::new("../evil").exists(), "nothing lands outside");

    // Without HERALD_SECRET_KEY credentials are refused; files still work.
    let keyless = TestApp::spawn_unthrottled().await;
    keyless.post("/migrations", json!({ "source": "resend", "credentials": { "api_key": "re_x" } })).await.assert_error(422, "validation_error");
}

#[tokio::test]
async fn a_private_base_url_is_refused_in_production() {
    let app = TestApp::spawn_with(|config| {
        config.secret_key = Some(SECRET.into());
        config.migration_allow_private = false;
    })
    .await;
    let body = json!({ "source": "listmonk", "credentials": { "base_url": "http://127.0.0.1:9000", "username": "a", "password": "b" } });
    let answer = app.post("/migrations", body).await;
    answer.assert_error(422, "validation_error");
    assert_eq!(answer.body["errors"][0]["path"], "credentials.base_url", "{}", answer.body);
    assert_eq!(app.count("migrations").await, 0);
}

#[tokio::test]
async fn start_twice_start_after_cancel_and_a_plan_that_refuses_answer_as_they_should() {
    let stand_in = Platforms::start().await;
    let app = app_for(&stand_in).await;
    let file = fixture("resend_contacts.csv");
    let first = upload(&app, "resend", "a.csv", &file).await.body["id"].as_str().unwrap().to_string();
    settled(&app, &first).await;
    assert_eq!(app.post(&format!("/migrations/{first}/start"), json!({})).await.status, 200);
    app.post(&format!("/migrations/{first}/start"), json!({})).await.assert_error(409, "resource_locked");

    let second = upload(&app, "resend", "b.csv", &file).await.body["id"].as_str().unwrap().to_string();
    settled(&app, &second).await;
    let canceled = app.post(&format!("/migrations/{second}/cancel"), json!({})).await;
    assert_eq!((canceled.status, canceled.body["status"].as_str()), (200, Some("canceled")), "{}", canceled.body);
    app.post(&format!("/migrations/{second}/start"), json!({})).await.assert_error(409, "resource_locked");
    app.post(&format!("/migrations/{second}/cancel"), json!({})).await.assert_error(409, "resource_locked");
    let left = scalar(&app, &format!("SELECT count(*) FROM migration_chunks WHERE team_id = $1 AND migration_id = '{second}'")).await;
    assert_eq!(left, 0, "a cancel erases what was read");

    // Another team's migration is not found.
    let other = TestApp::spawn_unthrottled().await;
    other.get(&format!("/migrations/{first}")).await.assert_error(404, "not_found");
    other.post(&format!("/migrations/{first}/cancel"), json!({})).await.assert_error(404, "not_found");

    // A plan whose contact limit the move passes: the review says so and the start is refused.
    sqlx::query("INSERT INTO team_limit_overrides (team_id, contacts) VALUES ($1, 2) ON CONFLICT (team_id) DO UPDATE SET contacts = 2")
        .bind(other.team_id)
        .execute(&other.pool)
        .await
        .unwrap();
    let mut other = other;
    other.start_workers();
    let id = upload(&other, "resend", "c.csv", &file).await.body["id"].as_str().unwrap().to_string();
    let review = settled(&other, &id).await;
    assert_eq!(review["review"]["cost"]["refused"], true, "{}", review["review"]);
    assert_eq!(review["review"]["cost"]["contact_limit"], 2);
    other.post(&format!("/migrations/{id}/start"), json!({})).await.assert_error(422, "validation_error");
    assert_eq!(other.get(&format!("/migrations/{id}")).await.body["status"], "review");
}

/// A `herald worker` process reading the stand-in.
fn worker(app: &TestApp, stand_in: &Platforms) -> tests::faults::Running {
    let child = std::process::Command::new(tests::herald_binary())
        .arg("worker")
        .env("DATABASE_URL", &app.database_url)
        .env("HERALD_SECRET_KEY", SECRET)
        .env("HERALD_MIGRATION_MAILCHIMP_API_BASE", stand_in.mailchimp_base())
        .env("HERALD_DB_MAX_CONNECTIONS", "8")
        .env("HERALD_ENV", "test")
        .env("HERALD_LOG", "error")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start herald worker");
    tests::faults::Running(child)
}

async fn progress(app: &TestApp, id: &str) -> (String, i32, i32) {
    sqlx::query_as("SELECT status, chunks_read, chunks_applied FROM migrations WHERE id = $1::uuid").bind(id).fetch_one(&app.pool).await.unwrap()
}

async fn until(app: &TestApp, id: &str, limit: Duration, done: impl Fn(&(String, i32, i32)) -> bool) -> (String, i32, i32) {
    let started = std::time::Instant::now();
    loop {
        let now = progress(app, id).await;
        if done(&now) || started.elapsed() > limit {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_read_and_mid_apply_leaves_every_contact_exactly_once() {
    const MEMBERS: usize = 60_000;
    let stand_in = Platforms::start().await;
    stand_in.seed_mailchimp(platforms::bulk_mailchimp(MEMBERS));
    let mailchimp = stand_in.mailchimp_base();
    let app = TestApp::spawn_with(|config| {
        config.secret_key = Some(SECRET.into());
        config.migration_mailchimp_api_base = mailchimp;
    })
    .await;
    sqlx::query("UPDATE teams SET plan_code = 'scale' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    let created = app.post("/migrations", json!({ "source": "mailchimp", "credentials": { "api_key": platforms::MAILCHIMP_KEY } })).await;
    let id = created.body["id"].as_str().unwrap().to_string();

    let mut first = worker(&app, &stand_in);
    let at_kill = until(&app, &id, Duration::from_secs(60), |(_, read, _)| *read >= 5).await;
    first.0.kill().unwrap();
    first.0.wait().unwrap();
    assert_eq!(at_kill.0, "connecting", "the read finished before the worker could be killed");

    // A dead worker's job passes to a live one after its missed heartbeats (30 seconds).
    let _second = worker(&app, &stand_in);
    let read = until(&app, &id, Duration::from_secs(150), |(status, _, _)| status != "connecting").await;
    assert_eq!(read.0, "review");
    let review = app.get(&format!("/migrations/{id}")).await.body;
    assert_eq!(review["review"]["contacts"]["total"], MEMBERS as i64, "no page read twice or skipped");
    drop(_second);

    let mut third = worker(&app, &stand_in);
    assert_eq!(app.post(&format!("/migrations/{id}/start"), json!({})).await.status, 200);
    let at_kill = until(&app, &id, Duration::from_secs(60), |(_, _, applied)| *applied >= 10).await;
    third.0.kill().unwrap();
    third.0.wait().unwrap();
    assert_eq!(at_kill.0, "running", "the apply finished before the worker could be killed");
    let _fourth = worker(&app, &stand_in);
    let done = until(&app, &id, Duration::from_secs(150), |(status, _, _)| status != "running").await;
    assert_eq!(done.0, "completed");

    let contacts = scalar(&app, "SELECT count(*) FROM contacts WHERE team_id = $1").await;
    assert_eq!(contacts, MEMBERS as i64, "every member arrived once");
    let counts = app.get(&format!("/migrations/{id}")).await.body["counts"].clone();
    assert_eq!(counts["created"], MEMBERS as i64, "{counts}");
    let doubled = scalar(
        &app,
        "SELECT count(*) FROM (SELECT contact_id FROM consent_records WHERE team_id = $1 AND topic_id IS NULL GROUP BY contact_id HAVING count(*) > 1) d",
    )
    .await;
    assert_eq!(doubled, 0, "no consent record written twice");
}

#[tokio::test]
async fn a_migration_left_in_review_for_thirty_days_is_canceled_and_what_it_read_erased() {
    let stand_in = Platforms::start().await;
    let app = app_for(&stand_in).await;
    let id = upload(&app, "resend", "a.csv", &fixture("resend_contacts.csv")).await.body["id"].as_str().unwrap().to_string();
    assert_eq!(settled(&app, &id).await["status"], "review");
    let fresh = jobs::housekeeping::purge(&app.pool).await.unwrap();
    assert_eq!(fresh.expired_migrations, 0, "a fresh review stays");
    sqlx::query("UPDATE migrations SET created_at = now() - interval '31 days' WHERE id = $1::uuid").bind(&id).execute(&app.pool).await.unwrap();
    let report = jobs::housekeeping::purge(&app.pool).await.unwrap();
    assert_eq!(report.expired_migrations, 1);
    let read = app.get(&format!("/migrations/{id}")).await.body;
    assert_eq!(read["status"], "canceled", "{read}");
    assert_eq!(scalar(&app, "SELECT count(*) FROM migration_chunks WHERE team_id = $1").await, 0);
}
