//! The billing benchmark, run by `scripts/bench billing`: `GET /billing` for a team with
//! BENCH_EMAILS (1,000,000) emails this period (in its daily send counters, as accepting them
//! writes them) and BENCH_CONTACTS (100,000) contacts subscribed to a topic (one in 20
//! suppressed), from BENCH_CLIENTS (8) concurrent clients for BENCH_SECONDS (10). Goal: p95 under
//! 20 ms.

use chrono::{Datelike, Utc};
use std::time::{Duration, Instant};
use tests::bench::setting;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let emails = setting("BENCH_EMAILS", 1_000_000) as i64;
    let contacts = setting("BENCH_CONTACTS", 100_000) as i64;
    let clients = setting("BENCH_CLIENTS", 8) as usize;
    let seconds = setting("BENCH_SECONDS", 10);
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 40).await?;
    let (team_id, key) = api::cli::create_team(&pool, "Bench").await?;
    sqlx::query("UPDATE teams SET plan_code = 'scale' WHERE id = $1").bind(team_id).execute(&pool).await?;
    // The period's emails in its daily counters, spread over the month's days so far.
    let today = Utc::now().date_naive();
    let days = i64::from(today.day());
    sqlx::query(
        "INSERT INTO send_usage (team_id, period_kind, period_start, emails)
         SELECT $1, 'day', $2::date - d::int, ($3 / $4 + CASE WHEN d = 0 THEN $3 % $4 ELSE 0 END)::int FROM generate_series(0, $4 - 1) d",
    )
    .bind(team_id)
    .bind(today)
    .bind(emails)
    .bind(days)
    .execute(&pool)
    .await?;
    sqlx::query("INSERT INTO topics (id, team_id, name, default_subscription) VALUES (herald_uuid_v7(), $1, 'News', 'opt_in')").bind(team_id).execute(&pool).await?;
    sqlx::query("INSERT INTO contacts (id, team_id, email) SELECT herald_uuid_v7(), $1, 'c' || n || '@audience.bench.test' FROM generate_series(1, $2) n")
        .bind(team_id)
        .bind(contacts)
        .execute(&pool)
        .await?;
    sqlx::query(
        "INSERT INTO suppressions (id, team_id, email, origin)
         SELECT herald_uuid_v7(), $1, 'c' || n || '@audience.bench.test', 'manual' FROM generate_series(1, $2, 20) n",
    )
    .bind(team_id)
    .bind(contacts)
    .execute(&pool)
    .await?;
    sqlx::query("VACUUM ANALYZE contacts").execute(&pool).await?;
    sqlx::query("VACUUM ANALYZE suppressions").execute(&pool).await?;
    api::http::key_cache::settle(&pool).await?;

    let mut config = tests::test_config(&database_url);
    config.db_max_connections = 40;
    config.rate_limit_capacity = 1_000_000_000;
    config.rate_limit_refill = 1_000_000_000.0;
    let api = tests::bench::Api::serve(&config, &pool, &database_url).await?;
    let client = reqwest::Client::builder().pool_max_idle_per_host(clients).build()?;
    let first: serde_json::Value = client.get(format!("{}/billing", api.base)).bearer_auth(&key).header("user-agent", "bench/1.0").send().await?.json().await?;
    anyhow::ensure!(first["usage"]["emails"].as_i64() == Some(emails), "GET /billing counted {} emails", first["usage"]["emails"]);
    let billable = first["usage"]["billable_contacts"].as_i64().unwrap_or_default();
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, url, key) = (client.clone(), format!("{}/billing", api.base), key.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < until {
                let at = Instant::now();
                let response = client.get(&url).bearer_auth(&key).header("user-agent", "bench/1.0").send().await?;
                anyhow::ensure!(response.status() == 200, "GET /billing answered {}", response.status());
                response.bytes().await?;
                latencies.push(at.elapsed());
            }
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    all.sort();
    let at = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)].as_secs_f64() * 1000.0;
    println!("== billing: {emails} emails this period, {contacts} contacts ({billable} billable), {clients} clients");
    println!("GET /billing   p50 {:6.2} ms  p95 {:6.2} ms  p99 {:6.2} ms   ({} calls; goal p95 < 20 ms)", at(0.5), at(0.95), at(0.99), all.len());
    let _ = api.stop().await;
    Ok(())
}
