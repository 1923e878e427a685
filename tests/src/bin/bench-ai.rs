//! The AI assist benchmark, run by `scripts/bench ai`: BENCH_AI_CALLS (300) `POST
//! /ai/draft-blocks` calls, one at a time, against the tests crate's OpenAI-compatible server,
//! spread over teams of ten calls each (the per-team limit is ten a minute). Herald's own time
//! per call is the answer's time at the client minus the provider's time that Herald reports in
//! `Server-Timing: provider;dur=`, so it includes the gate, the credit charge, the prompt, the
//! answer's check and the renderer's compile. Goal: p95 under 5 ms.

use std::time::Instant;
use tests::bench::setting;
use tests::openai::{API_KEY, OpenAiStandIn};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let calls = setting("BENCH_AI_CALLS", 300) as usize;
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 20).await?;
    sqlx::query("UPDATE plans SET ai_credits_monthly = NULL").execute(&pool).await?;
    let mut keys = Vec::new();
    for n in 0..calls.div_ceil(10) {
        let (team_id, key) = api::cli::create_team(&pool, &format!("Bench {n}")).await?;
        sqlx::query("UPDATE teams SET ai_assist_enabled = true WHERE id = $1").bind(team_id).execute(&pool).await?;
        keys.push(key);
    }
    api::http::key_cache::settle(&pool).await?;
    let provider = OpenAiStandIn::start().await;
    let mut config = tests::test_config(&database_url);
    config.rate_limit_capacity = 1_000_000_000;
    config.rate_limit_refill = 1_000_000_000.0;
    config.ai = Some(api::config::AiSettings { base_url: provider.base.clone(), api_key: Some(API_KEY.into()), model: "bench".into(), timeout: std::time::Duration::from_secs(30) });
    let api = tests::bench::Api::serve(&config, &pool, &database_url).await?;
    let client = reqwest::Client::new();
    let body = serde_json::json!({ "brief": "Announce the spring sale to our best customers", "goal": "promotion", "length": "medium" });
    let (mut own, mut total) = (Vec::new(), Vec::new());
    for n in 0..calls {
        let at = Instant::now();
        let response = client.post(format!("{}/ai/draft-blocks", api.base)).bearer_auth(&keys[n / 10]).header("user-agent", "bench/1.0").json(&body).send().await?;
        anyhow::ensure!(response.status() == 200, "draft-blocks answered {}", response.status());
        let timing = response.headers().get("server-timing").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        response.bytes().await?;
        let elapsed = at.elapsed().as_secs_f64() * 1000.0;
        let provider_ms: f64 = timing.strip_prefix("provider;dur=").and_then(|d| d.parse().ok()).unwrap_or(0.0);
        own.push(elapsed - provider_ms);
        total.push(elapsed);
    }
    let at = |v: &mut Vec<f64>, q: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
    };
    println!("== ai: {calls} POST /ai/draft-blocks, one at a time, against a local OpenAI-compatible server");
    println!("Herald's own time   p50 {:6.2} ms  p95 {:6.2} ms  p99 {:6.2} ms   (goal p95 < 5 ms)", at(&mut own, 0.5), at(&mut own, 0.95), at(&mut own, 0.99));
    println!("whole answer        p50 {:6.2} ms  p95 {:6.2} ms  p99 {:6.2} ms", at(&mut total, 0.5), at(&mut total, 0.95), at(&mut total, 0.99));
    let _ = api.stop().await;
    Ok(())
}
