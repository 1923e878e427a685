//! Pieces of the fault suite (`tests/tests/faults.rs`): Herald's processes started and killed
//! with the test, load that retries as careful clients and sending MTAs do, another client that
//! takes every connection slot, and the waits and counts its scenarios assert.

use crate::TestApp;
use crate::mail::Mail;
use crate::smtp::SmtpSink;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the child process when the test ends, however it ends.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `herald serve --no-worker` process on `database_url` with the default acquire timeout;
/// answers it, its base URL and its log file.
pub fn serve(database_url: &str) -> (Running, String, std::path::PathBuf) {
    serve_with(database_url, &[])
}

/// As [`serve`], with `extra` settings.
pub fn serve_with(database_url: &str, extra: &[(&str, &str)]) -> (Running, String, std::path::PathBuf) {
    let limits = [("HERALD_RATE_LIMIT_CAPACITY", "1000"), ("HERALD_RATE_LIMIT_REFILL", "1000")];
    let (server, port, log) = herald(&["serve", "--no-worker"], "HERALD_HTTP_ADDR", database_url, &[&limits[..], extra].concat());
    (server, format!("http://127.0.0.1:{port}"), log)
}

/// A `herald inbound` process on `database_url` with `extra` settings; answers it, its SMTP
/// port and its log file.
pub fn inbound_with(database_url: &str, extra: &[(&str, &str)]) -> (Running, u16, std::path::PathBuf) {
    herald(&["inbound"], "HERALD_SMTP_ADDR", database_url, extra)
}

/// `herald <args>` listening at a free loopback port named by `address_variable`, in test mode
/// with warnings logged to a file; answers it, its port and its log file.
fn herald(args: &[&str], address_variable: &str, database_url: &str, extra: &[(&str, &str)]) -> (Running, u16, std::path::PathBuf) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = std::env::temp_dir().join(format!("herald-faults-{}-{port}.log", args[0]));
    let process = Running(
        Command::new(crate::herald_binary())
            .args(args)
            .env("DATABASE_URL", database_url)
            .env(address_variable, format!("127.0.0.1:{port}"))
            .env("HERALD_ENV", "test")
            .env("HERALD_LOG", "warn")
            .envs(extra.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    (process, port, log)
}

/// Emails of this test's database not yet in a final state.
pub async fn open_emails(pool: &sqlx::PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM emails WHERE last_event NOT IN ('delivered', 'failed')").fetch_one(pool).await.unwrap()
}

pub async fn send_batch(mail: &Mail, first: usize, count: usize) {
    let sends: Vec<Value> = (first..first + count).map(|i| Mail::message(&format!("user{i}@inbox.test"))).collect();
    let answer = mail.app.post("/emails/batch", json!(sends)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

/// Waits until every email is final, or `limit` passes; answers how long it took.
pub async fn drained(mail: &Mail, limit: Duration, log: &std::path::Path) -> Duration {
    let started = Instant::now();
    loop {
        if open_emails(&mail.app.pool).await == 0 {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{} emails still open after {limit:?}; the worker printed:\n{}",
            open_emails(&mail.app.pool).await,
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends `count` batches of five, one every 100 ms, each retried with its `Idempotency-Key`
/// until it is answered 200, as a careful client does; answers the statuses it saw on the way.
pub async fn send_with_retries(client: reqwest::Client, base: String, key: String, prefix: &str, count: usize) -> HashMap<u16, usize> {
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    for batch in 0..count {
        let sends: Vec<Value> = (0..5).map(|i| Mail::message(&format!("{prefix}{batch}x{i}@inbox.test"))).collect();
        let started = Instant::now();
        loop {
            let answer = client
                .post(format!("{base}/emails/batch"))
                .bearer_auth(&key)
                .header("idempotency-key", format!("{prefix}-{batch}"))
                .json(&sends)
                .send()
                .await;
            let status = answer.map(|a| a.status().as_u16()).unwrap_or(0);
            *statuses.entry(status).or_default() += 1;
            if status == 200 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "batch {batch} never accepted: {statuses:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    statuses
}

/// Submits `count` messages to the inbound server, retrying a refused one as a sending MTA would;
/// answers the subjects answered `250`.
pub async fn receive_with_retries(port: u16, count: usize) -> Vec<String> {
    let mut answered = Vec::new();
    for i in 0..count {
        let subject = format!("inbound {i}");
        let raw = format!("From: a@sender.test\r\nTo: support@acme.test\r\nSubject: {subject}\r\nMessage-ID: <in{i}@sender.test>\r\n\r\nHello.\r\n");
        let started = Instant::now();
        while crate::smtp::submit(port, "a@sender.test", "support@acme.test", raw.as_bytes()).await.is_err() {
            assert!(started.elapsed() < Duration::from_secs(60), "{subject} never accepted");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        answered.push(subject);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    answered
}

/// A segment of `contacts` readers; answers its id.
pub async fn readers(app: &TestApp, contacts: usize) -> String {
    app.patch("/team", json!({ "postal_address": { "line1": "1 Main St", "city": "Springfield", "postal_code": "62701", "country": "US" } })).await;
    let segment = app.post("/segments", json!({ "name": "Readers" })).await.body["id"].as_str().unwrap().to_string();
    for i in 0..contacts {
        let added = app.post("/contacts", json!({ "email": format!("reader{i}@inbox.test"), "segments": [{ "id": segment }] })).await;
        assert_eq!(added.status, 201, "{}", added.body);
    }
    segment
}

/// A broadcast to the segment, sent (its pages fan out in the worker).
pub async fn send_broadcast(app: &TestApp, segment: &str) {
    let draft = json!({
        "name": "News", "from": "Acme <news@acme.test>", "subject": "News", "segment_id": segment,
        "html": "<p>Hello</p>", "text": "Hello",
    });
    let id = app.post("/broadcasts", draft).await.body["id"].as_str().unwrap().to_string();
    let sent = app.post(&format!("/broadcasts/{id}/send"), json!({ "acknowledge_checks": true })).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
}

/// Opens connections to `url` as another client would until the server refuses one; answers them.
pub async fn hog(url: &str) -> Vec<sqlx::PgConnection> {
    use sqlx::ConnectOptions;
    let options: sqlx::postgres::PgConnectOptions = url.parse::<sqlx::postgres::PgConnectOptions>().unwrap().application_name("hog");
    let mut held = Vec::new();
    loop {
        match options.connect().await {
            Ok(conn) => held.push(conn),
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("53300") => return held,
            Err(error) => panic!("connecting a hog failed otherwise: {error}"),
        }
    }
}

/// Emails delivered so far (zero while the database is away).
pub async fn delivered(pool: &sqlx::PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM emails WHERE last_event = 'delivered'").fetch_one(pool).await.unwrap_or(0)
}

/// Accepts `count` emails in batches of 100 through the API; answers how long that took.
pub async fn backlog(mail: &Mail, prefix: &str, count: usize) -> Duration {
    let started = Instant::now();
    for first in (0..count).step_by(100) {
        let sends: Vec<Value> = (first..(first + 100).min(count)).map(|i| Mail::message(&format!("{prefix}{i}@inbox.test"))).collect();
        let answer = mail.app.post("/emails/batch", json!(sends)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    started.elapsed()
}

/// Waits for `target` deliveries; answers the time to the first one past `baseline` and to all.
pub async fn deliveries_from(pool: &sqlx::PgPool, baseline: i64, target: i64, limit: Duration) -> (Duration, Duration) {
    let started = Instant::now();
    let mut first = None;
    loop {
        let now = delivered(pool).await;
        if now > baseline && first.is_none() {
            first = Some(started.elapsed());
        }
        if now >= target {
            return (first.unwrap_or_default(), started.elapsed());
        }
        assert!(started.elapsed() < limit, "{now} of {target} delivered after {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many times each Message-ID reached the sink.
pub fn arrivals(sink: &SmtpSink) -> HashMap<String, usize> {
    let mut arrivals: HashMap<String, usize> = HashMap::new();
    for message in sink.messages() {
        *arrivals.entry(message.header("Message-ID").unwrap()).or_default() += 1;
    }
    arrivals
}

/// Sends `signal` (`STOP`, `CONT`) to a running process.
pub fn signal(name: &str, child: &Running) {
    assert!(Command::new("kill").arg(format!("-{name}")).arg(child.0.id().to_string()).status().unwrap().success());
}


/// libfaketime (Debian's `libfaketime`, installed by `scripts/test`).
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// Settings that start a process with its wall clock `offset` from the host's (`+1h`, `-1h`),
/// as a host whose clock jumped or drifted; its monotonic clock is left alone, as a jump
/// leaves it (timers and timeouts run on that one).
pub fn clock_off(offset: &str) -> Vec<(&'static str, String)> {
    assert!(std::path::Path::new(LIBFAKETIME).exists(), "{LIBFAKETIME} is missing: scripts/test installs libfaketime");
    vec![("LD_PRELOAD", LIBFAKETIME.to_string()), ("FAKETIME", offset.to_string()), ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_string())]
}
