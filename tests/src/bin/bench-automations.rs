//! The automations benchmark, run by `scripts/bench automations`.
//!
//! BENCH_RUNS (10,000) contacts, one enabled automation of three steps after its trigger
//! (a condition on a property, a contact update, a send of a published template to the
//! mailbox simulator), and one `POST /events/send` per contact from BENCH_CLIENTS (64)
//! concurrent clients, with the API and the workers in this process. Measures event sends
//! accepted per second (goal at least 1,000/s) and the time from the first send until every run
//! is completed (goal under 60 s).

use futures::StreamExt;
use serde_json::json;
use sqlx::PgPool;
use std::time::{Duration, Instant};
use tests::bench::setting;
use uuid::Uuid;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let runs = setting("BENCH_RUNS", 10_000) as i64;
    let clients = setting("BENCH_CLIENTS", 64) as usize;
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 40).await?;
    let (team_id, key) = team(&pool).await?;
    let contact_ids = audience(&pool, team_id, runs).await?;
    let mut config = tests::test_config(&database_url);
    config.db_max_connections = 40;
    config.rate_limit_capacity = 1_000_000_000;
    config.rate_limit_refill = 1_000_000_000.0;
    config.deliver_concurrency = 32;
    config.worker_concurrency = 4;
    // The shipped default (`HERALD_AUTOMATION_CONCURRENCY`, 8 tasks of up to 32 runs each) unless set.
    config.automation_concurrency = setting("BENCH_AUTOMATION_CONCURRENCY", config.automation_concurrency as u64) as usize;
    let api = tests::bench::Api::serve(&config, &pool, &database_url).await?;
    let base = api.base.clone();
    let client = reqwest::Client::builder().pool_max_idle_per_host(clients).build()?;
    let post = |path: &str, body: serde_json::Value| client.post(format!("{base}{path}")).bearer_auth(&key).header("user-agent", "bench/1.0").json(&body).send();
    anyhow::ensure!(post("/events", json!({ "name": "order.placed" })).await?.status() == 201, "defining the event failed");
    anyhow::ensure!(post("/contact-properties", json!({ "key": "plan", "type": "string" })).await?.status() == 201, "declaring plan failed");
    let template = post("/templates", json!({ "name": "Thanks", "from": "Bench <news@news.bench.test>", "subject": "Thanks, {{{FIRST_NAME|friend}}}",
        "html": "<p>Order {{{event.order}}} is on its way.</p>" }))
    .await?
    .json::<serde_json::Value>()
    .await?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    anyhow::ensure!(post(&format!("/templates/{template}/publish"), json!({})).await?.status() == 200, "publishing failed");
    let automation = post("/automations", json!({
        "name": "Order flow", "status": "enabled",
        "steps": [
            { "key": "start", "type": "trigger", "config": { "event_name": "order.placed" } },
            { "key": "pro", "type": "condition", "config": { "type": "rule", "field": "plan", "operator": "eq", "value": "pro" } },
            { "key": "mark", "type": "contact_update", "config": { "properties": { "ordered": true } } },
            { "key": "thank", "type": "send_email", "config": { "template": { "id": template } } },
        ],
        "connections": [
            { "from": "start", "to": "pro" }, { "from": "pro", "to": "mark", "type": "condition_met" }, { "from": "mark", "to": "thank" },
        ],
    }))
    .await?;
    anyhow::ensure!(automation.status() == 201, "creating the automation failed: {}", automation.text().await?);

    let mut options = api::cli::worker_options(&config, config.domain_checker()?);
    options.schedules = false;
    let (stop_workers, workers_stopped) = tokio::sync::oneshot::channel::<()>();
    let workers = tokio::spawn(jobs::run(pool.clone(), options, async move {
        let _ = workers_stopped.await;
    }));

    let started = Instant::now();
    let statuses: Vec<u16> = futures::stream::iter(contact_ids.iter().enumerate())
        .map(|(i, id)| {
            let request = post("/events/send", json!({ "event": "order.placed", "contact_id": id, "payload": { "order": format!("A-{i}") } }));
            async move { request.await.map(|r| r.status().as_u16()).unwrap_or(0) }
        })
        .buffer_unordered(clients)
        .collect()
        .await;
    let sends_took = started.elapsed().as_secs_f64();
    let accepted = statuses.iter().filter(|s| **s == 202).count();
    anyhow::ensure!(accepted == contact_ids.len(), "{} of {} event sends were accepted", accepted, contact_ids.len());
    // The probe reads the running runs' partial index (a count of the whole table every 50 ms
    // would be work of the benchmark's own beside the executor's).
    loop {
        let running: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM automation_runs WHERE status = 'running')").fetch_one(&pool).await?;
        if !running {
            break;
        }
        anyhow::ensure!(started.elapsed() < Duration::from_secs(600), "runs still running after 600 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let completed_at = started.elapsed().as_secs_f64();
    let completed: i64 = sqlx::query_scalar("SELECT count(*) FROM automation_runs WHERE status = 'completed'").fetch_one(&pool).await?;
    anyhow::ensure!(completed == runs, "{} of {runs} runs did not complete", runs - completed);
    let emails: i64 = sqlx::query_scalar("SELECT count(*) FROM emails").fetch_one(&pool).await?;
    println!("event sends accepted        {:>8.0}/s   ({accepted} in {sends_took:.2} s; goal >= 1,000/s)", accepted as f64 / sends_took);
    println!("every run completed         {completed_at:>8.2} s    ({runs} runs of 4 steps, {emails} emails; goal < 60 s)");
    let _ = stop_workers.send(());
    let _ = workers.await;
    let _ = api.stop().await;
    Ok(())
}

async fn team(pool: &PgPool) -> anyhow::Result<(Uuid, String)> {
    let (team_id, key) = api::cli::create_team(pool, "Bench").await?;
    sqlx::query("UPDATE teams SET plan_code = 'scale', sending_tier = 3, sandbox_regions = '{}' WHERE id = $1").bind(team_id).execute(pool).await?;
    let dkim = schema::domain::generate_dkim_key()?;
    sqlx::query(
        "INSERT INTO domains (id, team_id, name, zone, region, mail_from_code, dkim_private_key, dkim_public_key, status)
         VALUES (herald_uuid_v7(), $1, 'news.bench.test', 'news.bench.test', 'us-east-1', 'b1', $2, $3, 'verified')",
    )
    .bind(team_id)
    .bind(&dkim.private_pem)
    .bind(&dkim.public_base64)
    .execute(pool)
    .await?;
    api::http::key_cache::settle(pool).await?;
    Ok((team_id, key))
}

/// `count` contacts at the mailbox simulator, every one on the `pro` plan.
async fn audience(pool: &PgPool, team_id: Uuid, count: i64) -> anyhow::Result<Vec<Uuid>> {
    Ok(sqlx::query_scalar(
        "INSERT INTO contacts (id, team_id, email, first_name, properties)
         SELECT herald_uuid_v7(), $1, 'delivered+' || n || '@simulator.herald.test', 'C' || n, '{\"plan\": \"pro\"}' FROM generate_series(1, $2) n
         RETURNING id",
    )
    .bind(team_id)
    .bind(count)
    .fetch_all(pool)
    .await?)
}
