//! Nothing accepted is lost: a `herald worker` process killed with SIGKILL in the middle of a
//! 1,000-email run, then replaced, leaves every email delivered exactly once or reported as an
//! ambiguous submission, never sent twice.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tests::mail::{self, Mail};
use tests::smtp::SmtpSink;

const EMAILS: usize = 1000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_run_leaves_every_email_delivered_once_or_reported_ambiguous() {
    let mail = mail::setup_without_workers(SmtpSink::start().await, |_| {}).await;
    let mut ids = Vec::with_capacity(EMAILS);
    for batch in 0..EMAILS / 100 {
        let sends: Vec<Value> = (0..100).map(|i| Mail::message(&format!("user{}@inbox.test", batch * 100 + i))).collect();
        let answer = mail.app.post("/emails/batch", json!(sends)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        ids.extend(answer.body["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap().to_string()));
    }
    assert_eq!(ids.len(), EMAILS);

    let mut first = mail.start_worker(&[]);
    mail.sink.wait_for(EMAILS / 4, Duration::from_secs(60)).await;
    first.kill().expect("SIGKILL the worker");
    first.wait().unwrap();
    let at_kill = mail.sink.messages().len();
    assert!(at_kill < EMAILS, "the worker finished before it could be killed");

    // A dead worker's jobs pass to a live one after its missed heartbeats (30 seconds).
    let mut second = mail.start_worker(&[]);
    let started = Instant::now();
    let finished = loop {
        let open: i64 = sqlx::query_scalar("SELECT count(*) FROM emails WHERE last_event NOT IN ('delivered', 'failed')")
            .fetch_one(&mail.app.pool)
            .await
            .unwrap();
        if open == 0 {
            break true;
        }
        if started.elapsed() > Duration::from_secs(150) {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    second.kill().unwrap();
    second.wait().unwrap();
    assert!(finished, "some emails never reached a final state");

    let mut arrivals: HashMap<String, usize> = HashMap::new();
    for message in mail.sink.messages() {
        *arrivals.entry(message.header("Message-ID").unwrap()).or_default() += 1;
    }
    let rows: Vec<(String, String, Option<String>, String)> = sqlx::query_as(
        "SELECT e.id::text, e.last_event, e.failed_reason, '<' || e.message_id || '>'
         FROM emails e ORDER BY e.id",
    )
    .fetch_all(&mail.app.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), EMAILS);
    let mut ambiguous = 0;
    for (id, last_event, failed_reason, message_id) in &rows {
        let arrived = arrivals.get(message_id).copied().unwrap_or(0);
        assert!(arrived <= 1, "email {id} arrived {arrived} times");
        match last_event.as_str() {
            "delivered" => assert_eq!(arrived, 1, "email {id} is delivered but never arrived"),
            _ => {
                assert_eq!(failed_reason.as_deref(), Some("ambiguous_submission"), "email {id} failed otherwise");
                ambiguous += 1;
            }
        }
    }
    let failed_events: i64 = sqlx::query_scalar("SELECT count(DISTINCT email_id) FROM events WHERE type = 'email.failed'")
        .fetch_one(&mail.app.pool)
        .await
        .unwrap();
    assert_eq!(failed_events, ambiguous as i64, "every ambiguous email is reported with email.failed");
    assert!(ambiguous <= 32, "only the submissions in flight at the kill may be ambiguous, found {ambiguous}");
    println!("{EMAILS} emails: {at_kill} arrived before the kill, {ambiguous} ambiguous, none sent twice");
}
