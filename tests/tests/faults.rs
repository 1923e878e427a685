//! Faults: PostgreSQL out of reach (a TCP proxy between Herald and the server, cut and restored)
//! and a pool too small for the loops that share it. Herald's processes stay up through each and
//! work again by themselves: the workers deliver every accepted email once, and the API answers
//! `503` with `retry-after`, never `500`, while it cannot reach the database.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tests::mail::{self, Mail};
use tests::proxy::{Proxy, upstream_of};
use tests::smtp::SmtpSink;

/// Kills the child process when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Emails of this test's database not yet in a final state.
async fn open_emails(mail: &Mail) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM emails WHERE last_event NOT IN ('delivered', 'failed')").fetch_one(&mail.app.pool).await.unwrap()
}

async fn send_batch(mail: &Mail, first: usize, count: usize) {
    let sends: Vec<Value> = (first..first + count).map(|i| Mail::message(&format!("user{i}@inbox.test"))).collect();
    let answer = mail.app.post("/emails/batch", json!(sends)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

/// Waits until every email is final, or `limit` passes; answers how long it took.
async fn drained(mail: &Mail, limit: Duration, log: &std::path::Path) -> Duration {
    let started = Instant::now();
    loop {
        if open_emails(mail).await == 0 {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{} emails still open after {limit:?}; the worker printed:\n{}",
            open_emails(mail).await,
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_worker_whose_database_path_is_cut_and_restored_delivers_every_email_once_without_a_restart() {
    let mail = mail::setup_without_workers(SmtpSink::start().await, |_| {}).await;
    let proxy = Proxy::start(upstream_of(&mail.app.database_url)).await;
    let log = std::env::temp_dir().join(format!("herald-faults-worker-{}.log", std::process::id()));
    let through = proxy.url_through(&mail.app.database_url);
    // Six connections configured: the size that starved a Procfile worker's queues (each holds
    // one for its LISTEN) until they ended; the worker now raises it to what its queues hold.
    let mut command = mail.worker_command(&[("DATABASE_URL", &through), ("HERALD_DB_MAX_CONNECTIONS", "6"), ("HERALD_LOG", "warn")]);
    command.stderr(std::fs::File::create(&log).unwrap());
    let worker = Running(command.spawn().unwrap());

    send_batch(&mail, 0, 20).await;
    let before = drained(&mail, Duration::from_secs(30), &log).await;

    // The path goes away for five seconds while sends go on being accepted.
    proxy.cut();
    send_batch(&mail, 20, 20).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    send_batch(&mail, 40, 20).await;
    proxy.restore();
    let back = drained(&mail, Duration::from_secs(45), &log).await;
    eprintln!("first 20 drained in {before:?}; 40 sent during the cut drained {back:?} after it ended");

    // The same process did it: it never exited.
    let mut worker = worker;
    assert!(worker.0.try_wait().unwrap().is_none(), "the worker exited:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    let delivered: i64 = sqlx::query_scalar("SELECT count(*) FROM emails WHERE last_event = 'delivered'").fetch_one(&mail.app.pool).await.unwrap();
    let mut arrivals: HashMap<String, usize> = HashMap::new();
    for message in mail.sink.messages() {
        *arrivals.entry(message.header("Message-ID").unwrap()).or_default() += 1;
    }
    assert_eq!(delivered, 60, "every email delivered");
    assert!(arrivals.values().all(|&n| n == 1), "an email arrived twice: {arrivals:?}");
    assert_eq!(arrivals.len(), 60);
}

#[tokio::test]
async fn the_api_answers_503_with_retry_after_while_its_database_is_out_of_reach_and_200_once_it_is_back() {
    let mail = mail::setup_without_workers(SmtpSink::start().await, |_| {}).await;
    let proxy = Proxy::start(upstream_of(&mail.app.database_url)).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = std::env::temp_dir().join(format!("herald-faults-api-{port}.log"));
    let server = Running(
        Command::new(tests::herald_binary())
            .args(["serve", "--no-worker"])
            .env("DATABASE_URL", proxy.url_through(&mail.app.database_url))
            .env("HERALD_HTTP_ADDR", format!("127.0.0.1:{port}"))
            .env("HERALD_ENV", "test")
            .env("HERALD_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().user_agent("herald-tests/1.0").timeout(Duration::from_secs(30)).build().unwrap();
    let list = || client.get(format!("{base}/emails")).bearer_auth(&mail.app.key).send();
    tests::eventually(|| async { list().await.ok().filter(|r| r.status() == 200) }).await;
    let emails_before: i64 = sqlx::query_scalar("SELECT count(*) FROM emails").fetch_one(&mail.app.pool).await.unwrap();

    proxy.cut();
    for request in [
        client.get(format!("{base}/emails")).bearer_auth(&mail.app.key),
        client.post(format!("{base}/emails")).bearer_auth(&mail.app.key).json(&Mail::message("pat@inbox.test")),
    ] {
        let started = Instant::now();
        let answer = request.send().await.unwrap();
        let (status, retry_after) = (answer.status().as_u16(), answer.headers().get("retry-after").cloned());
        let body: Value = answer.json().await.unwrap();
        assert_eq!(status, 503, "{body}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        assert_eq!(body["name"], "service_unavailable", "{body}");
        assert!(retry_after.is_some(), "a 503 says when to retry");
        assert!(started.elapsed() < Duration::from_secs(12), "answered after {:?}", started.elapsed());
    }

    proxy.restore();
    let started = Instant::now();
    tests::eventually(|| async { list().await.ok().filter(|r| r.status() == 200) }).await;
    eprintln!("the API answered 200 again {:?} after the path came back", started.elapsed());
    let emails_after: i64 = sqlx::query_scalar("SELECT count(*) FROM emails").fetch_one(&mail.app.pool).await.unwrap();
    assert_eq!(emails_after, emails_before, "the send answered 503 wrote nothing");
    drop(server);
}
