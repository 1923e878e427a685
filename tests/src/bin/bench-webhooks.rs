//! Benchmarks of webhook delivery, run by `scripts/bench webhooks`, against real HTTP receivers
//! in this process:
//! (a) fan-out: BENCH_EVENTS (5,000) events each delivered to 4 endpoints by one dispatcher
//!     (concurrency 64), printed as deliveries per second beside the receivers' own rate for
//!     the same requests from a plain client. Goal: at least 2,000 deliveries/s.
//! (b) delay: events written at a steady 100 per second for BENCH_SECONDS (10) to one
//!     endpoint; the p50/p99 delay from the event row's time to its arrival. Goal: p99 < 1 s.

use futures::{StreamExt, stream};
use schema::store::events::{self, NewEvent};
use serde_json::json;
use std::time::{Duration, Instant};
use tests::receiver::Receiver;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn settings() -> jobs::webhooks::WebhookSettings {
    jobs::webhooks::WebhookSettings {
        retry_schedule: vec![Duration::from_secs(5)],
        timeout: Duration::from_secs(10),
        allow_private: true,
        concurrency: 64,
        per_endpoint: 16,
        disable_after: Duration::from_secs(86_400),
    }
}

async fn endpoint(pool: &sqlx::PgPool, team_id: uuid::Uuid, url: &str) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    schema::store::webhooks::insert(&mut conn, team_id, url, &["email.sent".to_string()], &[7u8; 32]).await?;
    Ok(())
}

fn event(team_id: uuid::Uuid, n: u64) -> NewEvent {
    NewEvent {
        team_id,
        event_type: "email.sent",
        data: json!({ "email_id": uuid::Uuid::now_v7(), "from": "Bench <bench@acme.test>", "to": [format!("user{n}@inbox.test")],
                      "subject": "Your receipt", "message_id": "m@acme.test", "created_at": chrono::Utc::now() }),
        email_id: None,
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let events_count = setting("BENCH_EVENTS", 5000);
    let seconds = setting("BENCH_SECONDS", 10);
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 20).await?;
    let (team_id, _) = api::cli::create_team(&pool, "Bench").await?;
    let receiver = Receiver::start().await;
    for n in 0..4 {
        endpoint(&pool, team_id, &receiver.url(&format!("/e{n}"))).await?;
    }

    // The receivers' own rate: the same number of POSTs from a plain client, 64 at a time.
    let client = reqwest::Client::new();
    let total = (events_count * 4) as usize;
    let started = Instant::now();
    stream::iter(0..total)
        .map(|n| {
            let (client, url) = (client.clone(), receiver.url("/plain"));
            async move { client.post(url).body(format!("{{\"n\":{n}}}")).send().await.map(|_| ()) }
        })
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await;
    let plain_rate = total as f64 / started.elapsed().as_secs_f64();

    // (a) Fan-out: the events exist before the dispatcher starts.
    for chunk in (0..events_count).collect::<Vec<_>>().chunks(500) {
        let batch: Vec<NewEvent> = chunk.iter().map(|n| event(team_id, *n)).collect();
        let mut tx = pool.begin().await?;
        events::emit(&mut tx, &batch).await?;
        tx.commit().await?;
    }
    let before = receiver.count();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let dispatcher = tokio::spawn(jobs::webhooks::run(pool.clone(), settings(), async move {
        let _ = stopped.await;
    }));
    while receiver.count() - before < total {
        anyhow::ensure!(started.elapsed() < Duration::from_secs(300), "the fan-out did not finish");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let fan_out = total as f64 / started.elapsed().as_secs_f64();
    // Let the last results be recorded.
    loop {
        let pending: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_deliveries WHERE status <> 'succeeded'").fetch_one(&pool).await?;
        if pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_attempts").fetch_one(&pool).await?;

    // (b) Steady 100 events/s to one endpoint (the first), the dispatcher already running.
    sqlx::query("UPDATE webhook_endpoints SET status = 'disabled' WHERE url <> $1").bind(receiver.url("/e0")).execute(&pool).await?;
    let mut ticker = tokio::time::interval(Duration::from_millis(10));
    let steady = (seconds * 100) as usize;
    let first_steady = receiver.deliveries("/e0").len();
    for n in 0..steady {
        ticker.tick().await;
        let mut conn = pool.acquire().await?;
        events::emit(&mut conn, &[event(team_id, n as u64)]).await?;
    }
    let arrived = loop {
        let arrived = receiver.deliveries("/e0");
        if arrived.len() >= first_steady + steady {
            break arrived;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let _ = stop.send(());
    dispatcher.await?;
    let mut delays: Vec<f64> = Vec::new();
    for delivery in &arrived[first_steady..] {
        let id: uuid::Uuid = delivery.header("hook-id").parse()?;
        let at: chrono::DateTime<chrono::Utc> =
            sqlx::query_scalar("SELECT created_at FROM events WHERE id = $1").bind(id).fetch_one(&pool).await?;
        delays.push((delivery.received_at - at).num_microseconds().unwrap_or(0) as f64 / 1000.0);
    }
    delays.sort_by(f64::total_cmp);
    let pick = |q: f64| delays[((delays.len() as f64 * q).ceil() as usize).saturating_sub(1).min(delays.len() - 1)];
    pool.close().await;

    println!("== webhook fan-out ({events_count} events x 4 endpoints, 64 in flight)");
    println!("deliveries per second       {fan_out:10.0}   (goal >= 2000; {total} delivered, {attempts} attempts recorded)");
    println!("plain client into receivers {plain_rate:10.0}   (same requests, 64 in flight)");
    println!("ratio dispatcher/plain      {:10.2}", fan_out / plain_rate);
    println!("== delay from event row to delivery (100 events/s for {seconds} s, one endpoint)");
    println!("p50 / p99 / max             {:.0} / {:.0} / {:.0} ms   (goal p99 < 1000 ms)", pick(0.50), pick(0.99), delays[delays.len() - 1]);
    Ok(())
}
