//! Faults: PostgreSQL out of reach (a TCP proxy between Herald and the server, cut, stalled or
//! slowed), restarted or stopped (a private server driven with `pg_ctl`), and its connection
//! slots taken by another client. Herald's processes stay up through each and work again by
//! themselves within seconds: every accepted email is delivered once (or reported ambiguous),
//! and the API answers `503` with `retry-after`, never `500`, while it cannot reach the database.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tests::faults::*;
use tests::mail::{self, Mail};
use tests::postgres::Cluster;
use tests::proxy::{Proxy, upstream_of};
use tests::receiver::Receiver;
use tests::smtp::SmtpSink;

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

    // The path goes away for thirty seconds while sends go on being accepted.
    proxy.cut();
    send_batch(&mail, 20, 20).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    send_batch(&mail, 40, 20).await;
    proxy.restore();
    let back = drained(&mail, Duration::from_secs(20), &log).await;
    eprintln!("first 20 drained in {before:?}; 40 sent during the 30 s cut drained {back:?} after it ended");

    // The same process did it: it never exited.
    let mut worker = worker;
    assert!(worker.0.try_wait().unwrap().is_none(), "the worker exited:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    let delivered: i64 = sqlx::query_scalar("SELECT count(*) FROM emails WHERE last_event = 'delivered'").fetch_one(&mail.app.pool).await.unwrap();
    let arrivals = arrivals(&mail.sink);
    assert_eq!(delivered, 60, "every email delivered");
    assert!(arrivals.values().all(|&n| n == 1), "an email arrived twice: {arrivals:?}");
    assert_eq!(arrivals.len(), 60);
}

#[tokio::test]
async fn the_api_answers_503_with_retry_after_while_its_database_is_out_of_reach_and_200_once_it_is_back() {
    let mail = mail::setup_without_workers(SmtpSink::start().await, |_| {}).await;
    let proxy = Proxy::start(upstream_of(&mail.app.database_url)).await;
    let (server, base, log) = serve(&proxy.url_through(&mail.app.database_url));
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
        // Within the acquire timeout (5 s by default), never a client's whole patience.
        assert!(started.elapsed() < Duration::from_secs(7), "answered after {:?}", started.elapsed());
    }

    proxy.restore();
    let started = Instant::now();
    tests::eventually(|| async { list().await.ok().filter(|r| r.status() == 200) }).await;
    eprintln!("the API answered 200 again {:?} after the path came back", started.elapsed());
    let emails_after: i64 = sqlx::query_scalar("SELECT count(*) FROM emails").fetch_one(&mail.app.pool).await.unwrap();
    assert_eq!(emails_after, emails_before, "the send answered 503 wrote nothing");
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgresql_restart_under_load_loses_nothing_sends_nothing_twice_and_every_loop_works_again_within_seconds() {
    let cluster = std::sync::Arc::new(Cluster::start(100));
    let url = cluster.migrated_database("herald").await;
    let mail = mail::setup_without_workers_on(&url, SmtpSink::start().await, |config| config.webhook_allow_private = true).await;
    let app = &mail.app;
    let receiver = Receiver::start().await;
    let hook = app.post("/webhooks", json!({ "endpoint": receiver.url("/hook"), "events": ["email.delivered", "email.received"] })).await;
    assert_eq!(hook.status, 201, "{}", hook.body);
    let domain = mail.domain["id"].as_str().unwrap();
    assert_eq!(app.patch(&format!("/domains/{domain}"), json!({ "capabilities": { "receiving": "enabled" } })).await.status, 200);
    let inbound = app.start_inbound(|_| {}).await;
    let log = std::env::temp_dir().join(format!("herald-faults-restart-{}.log", std::process::id()));
    let mut command = mail.worker_command(&[("HERALD_WEBHOOK_ALLOW_PRIVATE", "true"), ("HERALD_WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s,1s,1s"), ("HERALD_LOG", "warn")]);
    command.stderr(std::fs::File::create(&log).unwrap());
    let mut worker = Running(command.spawn().unwrap());
    let worker_log = || std::fs::read_to_string(&log).unwrap_or_default();

    // Steady load: sends, inbound mail, and a broadcast whose pages fan out across the restart.
    let segment = readers(app, 100).await;
    // The load's sends go through a `herald serve` process, as clients' would.
    let (_server, base, _) = serve(&url);
    let client = reqwest::Client::builder().user_agent("herald-tests/1.0").timeout(Duration::from_secs(30)).build().unwrap();
    tests::eventually(|| async { client.get(format!("{base}/health")).send().await.ok().filter(|r| r.status() == 200) }).await;
    let sends = tokio::spawn(send_with_retries(client, base, app.key.clone(), "load", 60));
    let received = tokio::spawn(receive_with_retries(inbound, 40));
    send_broadcast(app, &segment).await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let restarting = Instant::now();
    let restarted = cluster.clone();
    tokio::task::spawn_blocking(move || restarted.restart(Duration::from_secs(3))).await.unwrap();
    let back = Instant::now();
    eprintln!("PostgreSQL was down and back in {:?}", back - restarting);

    // A send accepted after the restart is delivered within ten seconds of it, by the same worker.
    let sentinel = loop {
        let answer = app.post("/emails", Mail::message("sentinel@inbox.test")).await;
        if answer.status == 200 {
            break answer.body["id"].as_str().unwrap().to_string();
        }
        assert_eq!(answer.status, 503, "{}", answer.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let first = loop {
        let state: Option<String> = sqlx::query_scalar("SELECT last_event FROM emails WHERE id = $1::uuid").bind(&sentinel).fetch_optional(&app.pool).await.ok().flatten();
        if state.as_deref() == Some("delivered") {
            break back.elapsed();
        }
        assert!(back.elapsed() < Duration::from_secs(10), "the sentinel is {state:?} 10 s after the restart:\n{}", worker_log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let statuses = sends.await.unwrap();
    let answered = received.await.unwrap();
    let drained = drained(&mail, Duration::from_secs(60), &log).await;
    eprintln!("first delivery {first:?} after the restart; statuses seen by the sender {statuses:?}; all final {drained:?} later");
    assert_eq!(statuses.get(&500), None, "never a 500: {statuses:?}");
    assert!(worker.0.try_wait().unwrap().is_none(), "the worker exited:\n{}", worker_log());

    // Every email is final: delivered, or failed only as an ambiguous submission (sent but not
    // known to be); none arrived twice.
    let finals: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT id::text, last_event, failed_reason FROM emails").fetch_all(&app.pool).await.unwrap();
    assert_eq!(finals.len(), 60 * 5 + 100 + 1, "every accepted email is there once");
    let outcomes: Vec<(String, i64, f64)> = sqlx::query_as(
        "SELECT coalesce(failed_reason, last_event), count(*), extract(epoch FROM max(updated_at) - min(created_at))::float8 FROM emails GROUP BY 1",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    eprintln!("outcomes (count, span from first accepted to last settled): {outcomes:?}");
    let unexpected: Vec<_> = finals.iter().filter(|(_, state, reason)| state != "delivered" && reason.as_deref() != Some("ambiguous_submission")).collect();
    assert!(unexpected.is_empty(), "{unexpected:?}\n{}", worker_log());
    let arrivals = arrivals(&mail.sink);
    assert!(arrivals.values().all(|&n| n == 1), "an email arrived twice");
    let delivered = finals.iter().filter(|(_, state, _)| state == "delivered").count();
    assert!(arrivals.len() >= delivered, "{} arrivals for {delivered} delivered", arrivals.len());

    // Inbound mail answered 250 is all stored, and every event reached the webhook.
    let stored: Vec<String> = sqlx::query_scalar("SELECT subject FROM received_emails").fetch_all(&app.pool).await.unwrap();
    assert!(answered.iter().all(|subject| stored.contains(subject)), "answered {answered:?}, stored {stored:?}");
    let expected = delivered + stored.len();
    let hooks = receiver.wait_for("/hook", expected, Duration::from_secs(30)).await;
    let mut seen = std::collections::HashSet::new();
    for delivery in &hooks {
        let body = delivery.json();
        seen.insert((body["type"].as_str().unwrap().to_string(), body["data"]["email_id"].as_str().unwrap_or_default().to_string()));
    }
    assert_eq!(seen.len(), expected, "each event reached the endpoint\n{}", worker_log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowed_then_stalled_database_path_answers_503_at_the_deadline_and_loses_or_doubles_nothing() {
    let mail = mail::setup_without_workers(SmtpSink::start().await, |_| {}).await;
    let proxy = Proxy::start(upstream_of(&mail.app.database_url)).await;
    let through = proxy.url_through(&mail.app.database_url);
    let (_server, base, log) = serve_with(&through, &[("HERALD_REQUEST_TIMEOUT_SECONDS", "4")]);
    let worker_log = std::env::temp_dir().join(format!("herald-faults-stall-{}.log", std::process::id()));
    let mut command = mail.worker_command(&[("DATABASE_URL", &through), ("HERALD_LOG", "warn")]);
    command.stderr(std::fs::File::create(&worker_log).unwrap());
    let _worker = Running(command.spawn().unwrap());
    let client = reqwest::Client::builder().user_agent("herald-tests/1.0").timeout(Duration::from_secs(30)).build().unwrap();
    let send = |to: String| client.post(format!("{base}/emails")).bearer_auth(&mail.app.key).json(&Mail::message(&to)).send();
    tests::eventually(|| async { client.get(format!("{base}/health")).send().await.ok().filter(|r| r.status() == 200) }).await;
    // An inbound server on the same path, waiting 3 s for a lookup or a commit.
    let domain = mail.domain["id"].as_str().unwrap();
    assert_eq!(mail.app.patch(&format!("/domains/{domain}"), json!({ "capabilities": { "receiving": "enabled" } })).await.status, 200);
    let (_inbound, smtp_port, inbound_log) = inbound_with(&through, &[("HERALD_INBOUND_COMMIT_TIMEOUT_SECONDS", "3")]);
    let message = |subject: &str| format!("From: a@sender.test\r\nTo: support@acme.test\r\nSubject: {subject}\r\nMessage-ID: <{subject}@sender.test>\r\n\r\nHello.\r\n");
    let submit = |subject: &'static str| async move { tests::smtp::submit(smtp_port, "a@sender.test", "support@acme.test", message(subject).as_bytes()).await };
    tests::eventually(|| async { submit("before-stall").await.ok() }).await;

    // Slowed (20 ms per chunk each way): slower answers, all of them 200.
    proxy.slow(Duration::from_millis(20));
    for i in 0..5 {
        let answer = send(format!("slow{i}@inbox.test")).await.unwrap();
        assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    }

    // Stalled: no byte passes and no connection closes. A request is answered 503 with
    // retry-after at the 4 s deadline, never left hanging and never 500; readiness says so.
    proxy.stall();
    let started = Instant::now();
    let answer = send("stalled@inbox.test".into()).await.unwrap();
    let (status, retry_after) = (answer.status().as_u16(), answer.headers().get("retry-after").is_some());
    let body: Value = answer.json().await.unwrap();
    assert_eq!((status, body["name"].as_str()), (503, Some("service_unavailable")), "{body}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    assert!(retry_after, "a 503 says when to retry");
    assert!(started.elapsed() < Duration::from_secs(6), "answered after {:?}", started.elapsed());
    let ready = client.get(format!("{base}/ready")).send().await.unwrap();
    assert_eq!(ready.status(), 503, "readiness fails while the database does not answer");
    // A message offered meanwhile is answered 451 at the inbound server's 3 s bound, not held.
    let started = Instant::now();
    let refused = submit("during-stall").await;
    assert!(refused.is_err(), "a message was accepted while nothing could be stored: {refused:?}");
    assert!(started.elapsed() < Duration::from_secs(8), "answered after {:?}\n{}", started.elapsed(), std::fs::read_to_string(&inbound_log).unwrap_or_default());
    tokio::time::sleep(Duration::from_secs(4)).await;

    // Restored: the held bytes flow, requests answer 200 again, and every accepted email is
    // delivered once.
    proxy.restore();
    let started = Instant::now();
    let after = tests::eventually(|| async { send("after@inbox.test".into()).await.ok().filter(|r| r.status() == 200) }).await;
    eprintln!("200 again {:?} after the stall ended", started.elapsed());
    assert_eq!(after.status(), 200);
    drained(&mail, Duration::from_secs(30), &worker_log).await;
    let finals: Vec<(String, Option<String>)> = sqlx::query_as("SELECT last_event, failed_reason FROM emails").fetch_all(&mail.app.pool).await.unwrap();
    assert!(finals.len() >= 6, "{finals:?}");
    assert!(finals.iter().all(|(state, reason)| state == "delivered" || reason.as_deref() == Some("ambiguous_submission")), "{finals:?}");
    let arrivals = arrivals(&mail.sink);
    assert!(arrivals.values().all(|&n| n == 1), "an email arrived twice: {arrivals:?}");
    // The sender's retry of the refused message is stored.
    tests::eventually(|| async { submit("during-stall").await.ok() }).await;
    let stored: Vec<String> = sqlx::query_scalar("SELECT subject FROM received_emails").fetch_all(&mail.app.pool).await.unwrap();
    assert!(["before-stall", "during-stall"].iter().all(|s| stored.iter().any(|t| t == s)), "{stored:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_slots_taken_by_another_client_answer_503_and_everything_resumes_once_they_free() {
    let cluster = Cluster::start(40);
    let url = cluster.migrated_database("herald").await;
    let mail = mail::setup_without_workers_on(&url, SmtpSink::start().await, |_| {}).await;
    let (_server, base, log) = serve(&url);
    let worker_log = std::env::temp_dir().join(format!("herald-faults-slots-{}.log", std::process::id()));
    let mut command = mail.worker_command(&[("DATABASE_URL", &url), ("HERALD_LOG", "warn")]);
    command.stderr(std::fs::File::create(&worker_log).unwrap());
    let mut worker = Running(command.spawn().unwrap());
    let client = reqwest::Client::builder().user_agent("herald-tests/1.0").timeout(Duration::from_secs(30)).build().unwrap();
    let send = |to: String| client.post(format!("{base}/emails")).bearer_auth(&mail.app.key).json(&Mail::message(&to)).send();
    tests::eventually(|| async { client.get(format!("{base}/health")).send().await.ok().filter(|r| r.status() == 200) }).await;
    for i in 0..5 {
        assert_eq!(send(format!("before{i}@inbox.test")).await.unwrap().status(), 200);
    }
    drained(&mail, Duration::from_secs(20), &worker_log).await;

    // Another client takes every free slot, Herald's sessions are ended (as an operator's
    // pg_terminate_backend would) and the client takes the slots they freed. Herald's processes
    // are paused meanwhile so that they cannot win a freed slot back first.
    // The test's own server stops too (its listeners would reconnect); its pool stays for the
    // checks below.
    let Mail { app, sink, .. } = mail;
    // Its DNS server (the worker's resolver) stays up.
    let (pool, key, _dns) = (app.pool.clone(), app.key.clone(), app.dns.clone());
    app.shutdown().await;
    let send = |to: String| client.post(format!("{base}/emails")).bearer_auth(&key).json(&Mail::message(&to)).send();
    let (server, worker_ref) = (&_server, &worker);
    signal("STOP", server);
    signal("STOP", worker_ref);
    let mut held = hog(&url).await;
    let mut admin = held.pop().unwrap();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name <> 'hog'")
        .execute(&mut admin)
        .await
        .unwrap();
    let others = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name <> 'hog'";
    let ending = Instant::now();
    while sqlx::query_scalar::<_, i64>(others).fetch_one(&mut admin).await.unwrap() > 0 {
        assert!(ending.elapsed() < Duration::from_secs(10), "a session outlived pg_terminate_backend");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    held.extend(hog(&url).await);
    signal("CONT", server);
    signal("CONT", worker_ref);
    eprintln!("another client holds all {} connections", held.len() + 1);

    let started = Instant::now();
    let answer = send("refused@inbox.test".into()).await.unwrap();
    let status = answer.status().as_u16();
    let body: Value = answer.json().await.unwrap();
    assert_eq!((status, body["name"].as_str()), (503, Some("service_unavailable")), "{body}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    // Within the relaxed pool's 2 s (the rate limiter fails open) and the main pool's 5 s.
    assert!(started.elapsed() < Duration::from_secs(9), "answered after {:?}", started.elapsed());
    assert_eq!(client.get(format!("{base}/ready")).send().await.unwrap().status(), 503);

    // The slots free: within seconds, sends are accepted and every email is delivered once by
    // the same worker.
    drop(held);
    drop(admin);
    let freed = Instant::now();
    tests::eventually(|| async { send("after@inbox.test".into()).await.ok().filter(|r| r.status() == 200) }).await;
    eprintln!("200 again {:?} after the slots freed", freed.elapsed());
    let freed = Instant::now();
    while open_emails(&pool).await > 0 {
        assert!(freed.elapsed() < Duration::from_secs(20), "emails still open:\n{}", std::fs::read_to_string(&worker_log).unwrap_or_default());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(worker.0.try_wait().unwrap().is_none(), "the worker exited");
    let delivered: i64 = sqlx::query_scalar("SELECT count(*) FROM emails WHERE last_event = 'delivered'").fetch_one(&pool).await.unwrap();
    assert_eq!(delivered, 6, "the five before and the one after; the refused one was never accepted");
    assert_eq!(sink.messages().len(), 6);
}

/// The outage figures of #22: a backlog (`HERALD_FAULTS_BACKLOG`, default 300; the issue's
/// figure uses 5,000) drained by one worker with no outage, then the same backlog left waiting
/// while PostgreSQL is stopped for 5 s under API traffic, measured from the moment it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backlog_waiting_through_a_postgresql_outage_drains_about_as_fast_as_without_one() {
    let size: usize = std::env::var("HERALD_FAULTS_BACKLOG").ok().and_then(|n| n.parse().ok()).unwrap_or(300);
    let cluster = std::sync::Arc::new(Cluster::start(100));
    let url = cluster.migrated_database("herald").await;
    let mail = mail::setup_without_workers_on(&url, SmtpSink::start().await, |_| {}).await;
    let pool = mail.app.pool.clone();
    let log = std::env::temp_dir().join(format!("herald-faults-backlog-{}.log", std::process::id()));
    let mut command = mail.worker_command(&[("HERALD_LOG", "error"), ("HERALD_DELIVER_CONCURRENCY", "32")]);
    command.stderr(std::fs::File::create(&log).unwrap());
    let accepted = backlog(&mail, "calm", size).await;
    let worker = Running(command.spawn().unwrap());
    let (calm_first, calm_all) = deliveries_from(&pool, 0, size as i64, Duration::from_secs(600)).await;

    // The same backlog again, accepted while the worker is paused; then PostgreSQL stops for
    // five seconds while a client keeps calling the API of a `herald serve` process.
    let (_server, base, _) = serve(&url);
    let client = reqwest::Client::builder().user_agent("herald-tests/1.0").timeout(Duration::from_secs(30)).build().unwrap();
    tests::eventually(|| async { client.get(format!("{base}/health")).send().await.ok().filter(|r| r.status() == 200) }).await;
    signal("STOP", &worker);
    backlog(&mail, "outage", size).await;
    let stopping = cluster.clone();
    tokio::task::spawn_blocking(move || stopping.stop()).await.unwrap();
    signal("CONT", &worker);
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    let down = Instant::now();
    while down.elapsed() < Duration::from_secs(5) {
        let answer = client.get(format!("{base}/emails")).bearer_auth(&mail.app.key).send().await.unwrap();
        *statuses.entry(answer.status().as_u16()).or_default() += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let resuming = cluster.clone();
    tokio::task::spawn_blocking(move || resuming.resume()).await.unwrap();
    let (back_first, back_all) = deliveries_from(&pool, size as i64, 2 * size as i64, Duration::from_secs(600)).await;
    eprintln!(
        "backlog of {size} (accepted in {accepted:?}): no outage, first delivery {calm_first:?}, drained {calm_all:?} ({:.0}/s); \
         after a 5 s outage, from PostgreSQL back: first delivery {back_first:?}, drained {back_all:?} ({:.0}/s); \
         API answers during the outage {statuses:?}",
        size as f64 / calm_all.as_secs_f64(),
        size as f64 / back_all.as_secs_f64(),
    );
    assert_eq!(statuses.get(&500), None, "never a 500 during the outage");
    assert!(statuses.get(&503).is_some(), "the outage was seen: {statuses:?}");
    assert!(back_first < Duration::from_secs(10), "the first delivery came {back_first:?} after PostgreSQL was back");
    assert!(back_all < calm_all * 3 + Duration::from_secs(10), "the backlog drained in {back_all:?} against {calm_all:?} with no outage");
    let arrivals = arrivals(&mail.sink);
    assert!(arrivals.values().all(|&n| n == 1), "an email arrived twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_started_while_postgresql_is_down_waits_for_it_and_then_delivers() {
    let cluster = std::sync::Arc::new(Cluster::start(100));
    let url = cluster.migrated_database("herald").await;
    let mail = mail::setup_without_workers_on(&url, SmtpSink::start().await, |_| {}).await;
    let stopping = cluster.clone();
    tokio::task::spawn_blocking(move || stopping.stop()).await.unwrap();
    let log = std::env::temp_dir().join(format!("herald-faults-early-{}.log", std::process::id()));
    let mut command = mail.worker_command(&[("HERALD_LOG", "warn")]);
    command.stderr(std::fs::File::create(&log).unwrap());
    let mut worker = Running(command.spawn().unwrap());
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(worker.0.try_wait().unwrap().is_none(), "the worker gave up:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    assert!(std::fs::read_to_string(&log).unwrap_or_default().contains("PostgreSQL is not reachable yet"), "it says why it waits");

    let resuming = cluster.clone();
    tokio::task::spawn_blocking(move || resuming.resume()).await.unwrap();
    let id = tests::eventually(|| async {
        let answer = mail.app.post("/emails", Mail::message("early@inbox.test")).await;
        (answer.status == 200).then(|| answer.body["id"].as_str().unwrap().to_string())
    })
    .await;
    mail.wait_for_event(&id, "delivered").await;
    assert!(worker.0.try_wait().unwrap().is_none(), "the same worker delivered it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowed_then_cut_mail_server_and_webhook_receiver_cost_retries_and_never_a_lost_or_doubled_email_or_event() {
    let mail = mail::setup_without_workers(SmtpSink::start().await, |config| config.webhook_allow_private = true).await;
    let app = &mail.app;
    // Both peers sit behind a proxy the test slows and cuts.
    let smtp = Proxy::start(mail.sink.addr()).await;
    let receiver = Receiver::start().await;
    let hooks = Proxy::start(receiver.addr).await;
    let endpoint = format!("http://{}/hook", hooks.addr());
    let hook = app.post("/webhooks", json!({ "endpoint": endpoint, "events": ["email.delivered"] })).await;
    assert_eq!(hook.status, 201, "{}", hook.body);
    let log = std::env::temp_dir().join(format!("herald-faults-peers-{}.log", std::process::id()));
    let mut command = mail.worker_command(&[
        ("HERALD_MX_PORT", &smtp.addr().port().to_string()),
        ("HERALD_DELIVERY_RETRY_SCHEDULE", "1s,2s,2s,4s,4s,8s"),
        ("HERALD_WEBHOOK_ALLOW_PRIVATE", "true"),
        ("HERALD_WEBHOOK_RETRY_SCHEDULE", "1s,1s,2s,2s,4s,4s,8s"),
        ("HERALD_LOG", "warn"),
    ]);
    command.stderr(std::fs::File::create(&log).unwrap());
    let _worker = Running(command.spawn().unwrap());
    let worker_log = || std::fs::read_to_string(&log).unwrap_or_default();

    send_batch(&mail, 0, 20).await;
    // Slowed: 50 ms per chunk each way, on the mail server and on the receiver.
    smtp.slow(Duration::from_millis(50));
    hooks.slow(Duration::from_millis(50));
    send_batch(&mail, 20, 20).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Cut: both unreachable for 8 s, open conversations closed mid-way, while sends go on.
    smtp.cut();
    hooks.cut();
    send_batch(&mail, 40, 20).await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    smtp.restore();
    hooks.restore();
    let back = drained(&mail, Duration::from_secs(60), &log).await;
    eprintln!("every email final {back:?} after the peers came back");

    // Each email is delivered, or failed only where a cut left its submission ambiguous; none
    // reached the server twice.
    let finals: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT id::text, last_event, failed_reason FROM emails").fetch_all(&app.pool).await.unwrap();
    assert_eq!(finals.len(), 60);
    let unexpected: Vec<_> = finals.iter().filter(|(_, state, reason)| state != "delivered" && reason.as_deref() != Some("ambiguous_submission")).collect();
    assert!(unexpected.is_empty(), "{unexpected:?}\n{}", worker_log());
    let arrivals = arrivals(&mail.sink);
    assert!(arrivals.values().all(|&n| n == 1), "an email arrived twice: {arrivals:?}");
    let delivered: std::collections::HashSet<String> = finals.iter().filter(|(_, state, _)| state == "delivered").map(|(id, _, _)| id.clone()).collect();
    assert!(arrivals.len() >= delivered.len(), "{} arrivals for {} delivered", arrivals.len(), delivered.len());
    eprintln!("delivered {}, ambiguous {}", delivered.len(), finals.len() - delivered.len());

    // Every delivered event reached the receiver (a retry after a cut answer may repeat one).
    let started = Instant::now();
    loop {
        let reached: std::collections::HashSet<String> =
            receiver.deliveries("/hook").iter().filter_map(|d| d.json()["data"]["email_id"].as_str().map(str::to_string)).collect();
        if reached == delivered {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{} of {} events reached the receiver\n{}", reached.len(), delivered.len(), worker_log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_whose_clocks_are_an_hour_ahead_or_behind_postgresqls_deliver_and_retry_on_time_and_never_twice() {
    let mail = mail::setup_without_workers(SmtpSink::start().await, |_| {}).await;
    let app = &mail.app;
    let (ahead, behind) = (clock_off("+1h"), clock_off("-1h"));
    let settings = |clock: &[(&'static str, String)]| -> Vec<(&'static str, String)> {
        let mut all = clock.to_vec();
        all.extend([("HERALD_DELIVERY_RETRY_SCHEDULE", "1s,2s,4s,8s".to_string()), ("HERALD_LOG", "warn".to_string())]);
        all
    };
    let mut logs = Vec::new();
    let mut workers = Vec::new();
    for (name, clock) in [("ahead", &ahead), ("behind", &behind)] {
        let owned = settings(clock);
        let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let log = std::env::temp_dir().join(format!("herald-faults-clock-{name}-{}.log", std::process::id()));
        let mut command = mail.worker_command(&pairs);
        command.stderr(std::fs::File::create(&log).unwrap());
        workers.push(Running(command.spawn().unwrap()));
        logs.push(log);
    }
    let printed = || logs.iter().map(|log| std::fs::read_to_string(log).unwrap_or_default()).collect::<Vec<_>>().join("\n");
    // Each worker registered on PostgreSQL's clock: none looks an hour dead (its jobs would be
    // taken from it) or an hour alive.
    let registered = tests::eventually(|| async {
        let rows: Vec<f64> = sqlx::query_scalar("SELECT extract(epoch FROM now() - last_seen)::float8 FROM apalis.workers").fetch_all(&app.pool).await.unwrap();
        (rows.len() >= 2 * jobs::runtime::QUEUES as usize).then_some(rows)
    })
    .await;
    assert!(registered.iter().all(|age| age.abs() < 30.0), "worker ages on PostgreSQL's clock: {registered:?}");

    // Sends accepted by an API process whose clock runs an hour ahead; ten recipients defer the first attempts.
    let pairs: Vec<(&str, &str)> = ahead.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (_server, base, api_log) = serve_with(&app.database_url, &pairs);
    for i in 0..10 {
        mail.sink.set_behavior(&format!("late{i}@inbox.test"), tests::smtp::Behavior::TempFail);
    }
    let client = reqwest::Client::builder().user_agent("herald-tests/1.0").build().unwrap();
    tests::eventually(|| async { client.get(format!("{base}/health")).send().await.ok().filter(|r| r.status() == 200) }).await;
    let sends: Vec<Value> = (0..30).map(|i| Mail::message(&format!("user{i}@inbox.test"))).chain((0..10).map(|i| Mail::message(&format!("late{i}@inbox.test")))).collect();
    let answer = client.post(format!("{base}/emails/batch")).bearer_auth(&app.key).json(&sends).send().await.unwrap();
    assert_eq!(answer.status(), 200, "{}\n{}", answer.text().await.unwrap(), std::fs::read_to_string(&api_log).unwrap_or_default());

    // Delivered at once, not an hour later; the deferred ten retried a second later, not an hour.
    let started = Instant::now();
    while delivered(&app.pool).await < 30 {
        assert!(started.elapsed() < Duration::from_secs(20), "{} delivered\n{}", delivered(&app.pool).await, printed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The ten were each deferred (their first attempts may finish after the thirty).
    tests::eventually(|| async {
        let delayed: i64 = sqlx::query_scalar("SELECT count(DISTINCT email_id) FROM events WHERE type = 'email.delivery_delayed'").fetch_one(&app.pool).await.unwrap();
        (delayed == 10).then_some(())
    })
    .await;
    for i in 0..10 {
        mail.sink.set_behavior(&format!("late{i}@inbox.test"), tests::smtp::Behavior::Accept);
    }
    let back = drained(&mail, Duration::from_secs(20), &logs[0]).await;
    eprintln!("the deferred ten were delivered {back:?} after their recipients accepted");
    assert_eq!(delivered(&app.pool).await, 40, "{}", printed());
    let arrivals = arrivals(&mail.sink);
    assert_eq!(arrivals.len(), 40);
    assert!(arrivals.values().all(|&n| n == 1), "an email arrived twice: {arrivals:?}");
    drop(workers);
}
