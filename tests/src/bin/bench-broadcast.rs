//! The broadcast benchmark, run by `scripts/bench broadcast`.
//!
//! (a) A broadcast to BENCH_CONTACTS (100,000) contacts, sent through `POST /broadcasts` with the
//!     API and the workers in this process and delivery through `HERALD_SMTP_RELAY` into Postfix's
//!     `smtp-sink`: the time from the send to every recipient's email row created (goal under
//!     10 s), beside one `INSERT … SELECT` writing the same email and recipient rows in the same
//!     run (rolled back); and to the last message accepted by the sink (goal under 3 minutes).
//! (b) Tracking redirects per second: `wrk` (64 connections, BENCH_SECONDS, 10) on one signed
//!     click link, then the time until the spool's drain has written every hit (goal at least
//!     5,000 redirects/s).

use serde_json::json;
use sqlx::PgPool;
use std::time::{Duration, Instant};
use tests::bench::{free_port, setting, start_postfix_sink};
use uuid::Uuid;

const HTML: &str = "<p>Hi {{{FIRST_NAME|there}}},</p><p>Our autumn sale starts today.</p><p><a href=\"https://bench.example/sale\">See the sale</a></p>";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let contacts = setting("BENCH_CONTACTS", 100_000) as i64;
    let seconds = setting("BENCH_SECONDS", 10);
    let port = free_port()?;
    let mut sink = start_postfix_sink(port)?;
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 20).await?;
    let (team_id, key, domain_id) = team(&pool).await?;
    let segment_id = audience(&pool, team_id, contacts).await?;
    let straight = straight_insert(&pool, team_id, domain_id, segment_id).await?;
    let mut config = tests::test_config(&database_url);
    config.db_max_connections = 20;
    config.rate_limit_capacity = 1_000_000_000;
    config.rate_limit_refill = 1_000_000_000.0;
    config.smtp_relay = Some(jobs::smtp::Relay::parse(&format!("smtp://127.0.0.1:{port}"))?);
    config.deliver_concurrency = 64;
    config.worker_concurrency = 8;
    let api = tests::bench::Api::serve(&config, &pool, &database_url).await?;
    let base = api.base.clone();
    let mut options = api::cli::worker_options(&config, config.domain_checker()?);
    options.schedules = false;
    let (stop_workers, workers_stopped) = tokio::sync::oneshot::channel::<()>();
    let workers = tokio::spawn(jobs::run(pool.clone(), options, async move {
        let _ = workers_stopped.await;
    }));

    // (a) The send, then every row, then every message accepted.
    let client = reqwest::Client::new();
    let started = Instant::now();
    let created = client
        .post(format!("{base}/broadcasts"))
        .bearer_auth(&key)
        .header("user-agent", "bench/1.0")
        .json(&json!({ "name": "Bench", "from": "Bench <news@news.bench.test>", "subject": "Autumn sale, {{{FIRST_NAME|friend}}}",
            "segment_id": segment_id, "html": HTML, "send": true, "acknowledge_checks": true }))
        .send()
        .await?;
    anyhow::ensure!(created.status() == 201, "POST /broadcasts: {} {}", created.status(), created.text().await?);
    let broadcast_id: Uuid = created.json::<serde_json::Value>().await?["id"].as_str().unwrap_or_default().parse()?;
    let answered = started.elapsed().as_secs_f64();
    loop {
        let status: String = sqlx::query_scalar("SELECT status FROM broadcasts WHERE id = $1").bind(broadcast_id).fetch_one(&pool).await?;
        anyhow::ensure!(status != "failed" && started.elapsed() < Duration::from_secs(300), "the fan-out did not finish ({status})");
        if status == "sent" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rows_at = started.elapsed().as_secs_f64();
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM emails WHERE broadcast_id = $1").bind(broadcast_id).fetch_one(&pool).await?;
    let sent = loop {
        let sent: i64 = sqlx::query_scalar("SELECT count(*) FROM emails WHERE team_id = $1 AND last_event = 'sent'")
            .bind(team_id)
            .fetch_one(&pool)
            .await?;
        if sent >= rows || started.elapsed() > Duration::from_secs(600) {
            break sent;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let last_at = started.elapsed().as_secs_f64();

    // (b) Tracking redirects on one signed link of one of those emails.
    let link_key = schema::store::keys::get(&mut *pool.acquire().await?, "links").await?.ok_or_else(|| anyhow::anyhow!("no link key"))?;
    let email_id: Uuid = sqlx::query_scalar("SELECT id FROM emails WHERE broadcast_id = $1 LIMIT 1").bind(broadcast_id).fetch_one(&pool).await?;
    let token = schema::tracking::click_token(&link_key, email_id, "https://bench.example/sale");
    let output = tokio::process::Command::new("wrk")
        .args(["-t2", "-c64", &format!("-d{seconds}s"), "--latency"])
        .arg(format!("{base}/click/{token}"))
        .output()
        .await?;
    let report = String::from_utf8_lossy(&output.stdout).to_string();
    anyhow::ensure!(output.status.success() && !report.contains("Non-2xx"), "wrk: {report}{}", String::from_utf8_lossy(&output.stderr));
    let requests: i64 = report
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("wrk printed no request count: {report}"))?;
    let per_second = report.lines().find(|l| l.starts_with("Requests/sec:")).unwrap_or("Requests/sec: ?").to_string();
    let p99 = report.lines().find(|l| l.trim_start().starts_with("99%")).unwrap_or("99% ?").trim().to_string();
    let drained_from = Instant::now();
    let recorded = loop {
        let recorded: i64 = sqlx::query_scalar("SELECT count(*) FROM email_engagements").fetch_one(&pool).await?;
        if recorded >= requests || drained_from.elapsed() > Duration::from_secs(120) {
            break recorded;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let drained = drained_from.elapsed().as_secs_f64();

    api.stop().await?;
    let _ = stop_workers.send(());
    workers.await??;
    let _ = sink.kill();
    let _ = sink.wait();
    pool.close().await;

    println!("== broadcast to {contacts} contacts into Postfix smtp-sink (API and workers in one process)");
    println!("send answered               {answered:10.2} s");
    println!("every email row created     {rows_at:10.2} s   (goal < 10; {rows} rows)");
    println!("straight INSERT … SELECT    {straight:10.2} s   (the same email and recipient rows, one statement, rolled back)");
    println!("last message accepted       {last_at:10.2} s   (goal < 180; {sent} sent, {:.0} emails/s)", sent as f64 / last_at);
    println!("== tracking redirects (wrk, 64 connections, {seconds} s, one signed link)");
    println!("{per_second:<28}   (goal >= 5000; {requests} redirects; latency {p99})");
    println!("hits written by the drain   {recorded:10}   ({drained:.2} s after the load ended)");
    Ok(())
}

/// A team on the `scale` plan (no marketing meter), out of the sandbox, with a postal address
/// and a verified domain `news.bench.test`.
async fn team(pool: &PgPool) -> anyhow::Result<(Uuid, String, Uuid)> {
    let (team_id, key) = api::cli::create_team(pool, "Bench").await?;
    sqlx::query(
        "UPDATE teams SET plan_code = 'scale', sending_tier = 3, sandbox_regions = '{}',
             postal_address = '{\"line1\": \"1 Main St\", \"city\": \"Springfield\", \"postal_code\": \"62701\", \"country\": \"US\"}'
         WHERE id = $1",
    )
    .bind(team_id)
    .execute(pool)
    .await?;
    let dkim = schema::domain::generate_dkim_key()?;
    let domain_id: Uuid = sqlx::query_scalar(
        "INSERT INTO domains (id, team_id, name, zone, region, mail_from_code, dkim_private_key, dkim_public_key, status)
         VALUES (herald_uuid_v7(), $1, 'news.bench.test', 'news.bench.test', 'us-east-1', 'b1', $2, $3, 'verified') RETURNING id",
    )
    .bind(team_id)
    .bind(&dkim.private_pem)
    .bind(&dkim.public_base64)
    .fetch_one(pool)
    .await?;
    api::http::key_cache::settle(pool).await?;
    Ok((team_id, key, domain_id))
}

/// `count` contacts, every one in a new segment.
async fn audience(pool: &PgPool, team_id: Uuid, count: i64) -> anyhow::Result<Uuid> {
    sqlx::query(
        "INSERT INTO contacts (id, team_id, email, first_name)
         SELECT herald_uuid_v7(), $1, 'c' || n || '@inbox.bench.test', 'C' || n FROM generate_series(1, $2) n",
    )
    .bind(team_id)
    .bind(count)
    .execute(pool)
    .await?;
    let segment_id: Uuid = sqlx::query_scalar("INSERT INTO segments (id, team_id, name) VALUES (herald_uuid_v7(), $1, 'Everyone') RETURNING id")
        .bind(team_id)
        .fetch_one(pool)
        .await?;
    sqlx::query("INSERT INTO segment_members (segment_id, contact_id) SELECT $1, id FROM contacts WHERE team_id = $2")
        .bind(segment_id)
        .bind(team_id)
        .execute(pool)
        .await?;
    sqlx::query("ANALYZE").execute(pool).await?;
    Ok(segment_id)
}

/// Seconds one `INSERT … SELECT` takes to write an email and a recipient row per member.
async fn straight_insert(pool: &PgPool, team_id: Uuid, domain_id: Uuid, segment_id: Uuid) -> anyhow::Result<f64> {
    let mut tx = pool.begin().await?;
    let started = Instant::now();
    sqlx::query(
        "WITH src AS (
             SELECT herald_uuid_v7() AS id, c.email, c.first_name
             FROM segment_members m JOIN contacts c ON c.id = m.contact_id WHERE m.segment_id = $3
         ), e AS (
             INSERT INTO emails (id, team_id, domain_id, from_header, from_email, subject, html, message_id, last_event, size_bytes)
             SELECT id, $1, $2, 'Bench <news@news.bench.test>', 'news@news.bench.test', 'Autumn sale, ' || first_name,
                    replace($4, '{{{FIRST_NAME|there}}}', first_name), id || '@news.bench.test', 'queued', 300
             FROM src
         )
         INSERT INTO email_recipients (email_id, position, kind, address, email) SELECT id, 0, 'to', email, email FROM src",
    )
    .bind(team_id)
    .bind(domain_id)
    .bind(segment_id)
    .bind(HTML)
    .execute(&mut *tx)
    .await?;
    let elapsed = started.elapsed().as_secs_f64();
    tx.rollback().await?;
    Ok(elapsed)
}
