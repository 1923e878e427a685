//! The inbound benchmark, run by `scripts/bench inbound`: BENCH_MESSAGES (5,000) messages of
//! 10 KB from Postfix's `smtp-source` over 32 sessions into Herald's inbound server (each
//! parsed and committed before its `250`), as messages per second, beside `smtp-source` into
//! Postfix's `smtp-sink` (which keeps nothing) in the same run. Goals: at least 500 messages/s
//! and at least 0.2 of the sink's rate.

use sqlx::PgPool;
use std::process::Command;
use std::time::{Duration, Instant};
use tests::bench::{free_port, setting, start_postfix_sink};
use uuid::Uuid;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let messages = setting("BENCH_MESSAGES", 5_000) as i64;
    let sessions = 32;
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 40).await?;
    let team_id = team(&pool).await?;
    let mut config = tests::test_config(&database_url);
    config.smtp_max_connections_per_ip = 1_000;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let server = tokio::spawn(jobs::inbound::serve(pool.clone(), config.inbound()?, listener, std::future::pending()));

    // Herald: every message parsed and committed before its 250.
    let herald = source(port, messages, sessions).await?;
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM received_emails WHERE team_id = $1 AND dropped_reason IS NULL")
        .bind(team_id)
        .fetch_one(&pool)
        .await?;
    anyhow::ensure!(stored == messages, "{stored} of {messages} messages stored");

    // The same load into Postfix's smtp-sink.
    let sink_port = free_port()?;
    let mut sink = start_postfix_sink(sink_port)?;
    let baseline = source(sink_port, messages, sessions).await?;
    let _ = sink.kill();
    let _ = sink.wait();
    server.abort();

    let rate = messages as f64 / herald;
    let sink_rate = messages as f64 / baseline;
    println!("== inbound: {messages} messages of 10 KB, {sessions} smtp-source sessions");
    println!("Herald inbound (stored)     {rate:10.0} messages/s   ({herald:.2} s; goal >= 500)");
    println!("Postfix smtp-sink           {sink_rate:10.0} messages/s   ({baseline:.2} s)");
    println!("ratio                       {:10.2}                (goal >= 0.2)", rate / sink_rate);
    Ok(())
}

/// Seconds `smtp-source` takes to send `messages` messages of 10 KB over `sessions` sessions.
async fn source(port: u16, messages: i64, sessions: usize) -> anyhow::Result<f64> {
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("smtp-source")
            .args(["-s", &sessions.to_string(), "-l", "10240", "-m", &messages.to_string(), "-f", "sender@source.bench.test"])
            .args(["-t", "inbox@in.bench.test", &format!("127.0.0.1:{port}")])
            .output()
    })
    .await??;
    let elapsed = started.elapsed();
    anyhow::ensure!(output.status.success(), "smtp-source: {}", String::from_utf8_lossy(&output.stderr));
    Ok(elapsed.max(Duration::from_millis(1)).as_secs_f64())
}

/// A team on the `scale` plan (no inbound caps) receiving at `in.bench.test`.
async fn team(pool: &PgPool) -> anyhow::Result<Uuid> {
    let (team_id, _) = api::cli::create_team(pool, "Bench").await?;
    sqlx::query("UPDATE teams SET plan_code = 'scale', sending_tier = 3 WHERE id = $1").bind(team_id).execute(pool).await?;
    let dkim = schema::domain::generate_dkim_key()?;
    sqlx::query(
        "INSERT INTO domains (id, team_id, name, zone, region, mail_from_code, dkim_private_key, dkim_public_key, status,
             first_verified_at, receiving_enabled)
         VALUES (herald_uuid_v7(), $1, 'in.bench.test', 'in.bench.test', 'us-east-1', 'b1', $2, $3, 'verified', now(), true)",
    )
    .bind(team_id)
    .bind(&dkim.private_pem)
    .bind(&dkim.public_base64)
    .execute(pool)
    .await?;
    Ok(team_id)
}
