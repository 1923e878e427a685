//! Benchmarks of sending, run by `scripts/bench send`. Each prints Herald's rate beside the
//! machine's own limit measured in the same run, and the ratio.
//!
//! (a) `accept`: BENCH_CLIENTS (64) concurrent `wrk` connections `POST /emails` across
//!     BENCH_TEAMS (20) teams, against the API in this process (the rate is the emails committed
//!     over the run's wall time), alternating with the same rows (email, recipient, delivery job;
//!     one transaction per email) inserted straight through the store with the same concurrency
//!     and pool: a warm-up round, then BENCH_ROUNDS (5) rounds of BENCH_SECONDS (6) each,
//!     medians compared. Goals: at least 1,000 emails/s and a ratio of at least 0.5.
//! (b) `deliver`: BENCH_DELIVERIES (5,000) accepted emails delivered DKIM-signed through
//!     `HERALD_SMTP_RELAY` into Postfix's `smtp-sink`, beside `smtp-source` sending as many
//!     messages of the same size into the same sink. Goal: at least 500 signed emails/s.

use futures::{StreamExt, stream};
use schema::store::emails::{self, NewEmail, NewRecipient};
use serde_json::json;
use sqlx::PgPool;
use std::process::{Command, Stdio};
use tests::bench::{free_port, setting, start_postfix_sink};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let case = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    if case == "accept" || case == "all" {
        accept().await?;
    }
    if case == "deliver" || case == "all" {
        deliver().await?;
    }
    Ok(())
}

/// Teams on the `scale` plan, out of the sandbox, each with a verified domain `tN.bench.test`.
async fn teams(pool: &PgPool, count: u64) -> anyhow::Result<Vec<(Uuid, Uuid, String, String)>> {
    let key = schema::domain::generate_dkim_key()?;
    let mut teams = Vec::new();
    for n in 0..count {
        let (team_id, api_key) = api::cli::create_team(pool, &format!("Bench {n}")).await?;
        sqlx::query("UPDATE teams SET plan_code = 'scale', sending_tier = 3, sandbox_regions = '{}' WHERE id = $1").bind(team_id).execute(pool).await?;
        let name = format!("t{n}.bench.test");
        let domain_id: Uuid = sqlx::query_scalar(
            "INSERT INTO domains (id, team_id, name, zone, region, mail_from_code, dkim_private_key, dkim_public_key, status)
             VALUES (gen_random_uuid(), $1, $2, $2, 'us-east-1', $3, $4, $5, 'verified') RETURNING id",
        )
        .bind(team_id)
        .bind(&name)
        .bind(format!("c{n}"))
        .bind(&key.private_pem)
        .bind(&key.public_base64)
        .fetch_one(pool)
        .await?;
        teams.push((team_id, domain_id, name, api_key));
    }
    Ok(teams)
}

/// The row an accepted plain send becomes.
fn new_email(team_id: Uuid, domain_id: Uuid, domain: &str, n: u64) -> NewEmail {
    let id = schema::ids::new_id();
    NewEmail {
        id,
        team_id,
        api_key_id: None,
        domain_id,
        from_header: format!("Bench <bench@{domain}>"),
        from_email: format!("bench@{domain}"),
        subject: "Your receipt".into(),
        html: Some("<p>Thanks for your order.</p>".into()),
        text: Some("Thanks for your order.".into()),
        reply_to: Vec::new(),
        headers: json!({}),
        tags: json!({}),
        message_id: format!("{id}@{domain}"),
        scheduled_at: None,
        size_bytes: 60,
        created_at: chrono::Utc::now(),
        template: None,
        broadcast_id: None,
        recipients: vec![NewRecipient {
            kind: "to",
            address: format!("user{n}@inbox.bench.test"),
            email: format!("user{n}@inbox.bench.test"),
            suppressed: None,
        }],
        attachments: Vec::new(),
        inbox_channel_id: None,
        unsubscribe_link: false,
    }
}

/// Writes emails and their delivery jobs straight through the store, one transaction each.
async fn insert_straight(pool: &PgPool, email: NewEmail) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    let job = (schema::jobs::Deliver { email_id: email.id }, schema::jobs::RunAt::Now);
    emails::insert_many(&mut tx, &[email], None).await?;
    schema::jobs::enqueue_many(&mut tx, &[job]).await?;
    tx.commit().await?;
    Ok(())
}

/// Runs `clients` loops of `one(n)` for `seconds`; answers the completed count per second.
async fn run_for<F, Fut>(clients: u64, seconds: u64, one: F) -> anyhow::Result<f64>
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let one = Arc::new(one);
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients {
        let (one, done) = (one.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = client;
            while Instant::now() < deadline {
                one(n).await?;
                done.fetch_add(1, Ordering::Relaxed);
                n += clients;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

async fn accept() -> anyhow::Result<()> {
    let clients = setting("BENCH_CLIENTS", 64);
    let seconds = setting("BENCH_SECONDS", 6);
    let rounds = setting("BENCH_ROUNDS", 5).max(1);
    let team_count = setting("BENCH_TEAMS", 20);
    let pool_size = setting("BENCH_POOL", 20) as u32;
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, pool_size).await?;
    let teams = Arc::new(teams(&pool, team_count).await?);

    let mut config = tests::test_config(&database_url);
    config.db_max_connections = pool_size;
    config.rate_limit_capacity = 1_000_000_000;
    config.rate_limit_refill = 1_000_000_000.0;
    let app = api::app::Application::build(config).await?;
    let base = format!("http://127.0.0.1:{}", app.port());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run(async move {
        let _ = stopped.await;
    }));
    // The load comes from wrk (C, light), so the client takes little of the machine's cores.
    let script = std::env::temp_dir().join(format!("herald-bench-send-{}.lua", std::process::id()));
    let entries: Vec<String> = teams.iter().map(|(_, _, domain, key)| format!("{{key=\"{key}\", domain=\"{domain}\"}}")).collect();
    let lua = r#"local teams = { TEAMS }
local n = 0
request = function()
  n = n + 1
  local t = teams[(n % #teams) + 1]
  local body = string.format('{"from":"Bench <bench@%s>","to":"user%d@inbox.bench.test","subject":"Your receipt","text":"Thanks for your order.","html":"<p>Thanks for your order.</p>"}', t.domain, n)
  return wrk.format("POST", "/emails", {["Authorization"]="Bearer " .. t.key, ["Content-Type"]="application/json", ["User-Agent"]="bench/1.0"}, body)
end
"#;
    std::fs::write(&script, lua.replace("TEAMS", &entries.join(", ")))?;

    // Rounds alternate the API and the straight inserts so that the machine's drift (checkpoints,
    // autovacuum) falls on both; each figure is the median of its rounds.
    let mut api_rates = Vec::new();
    let mut straight_rates = Vec::new();
    let mut api_total = 0;
    // Round 0 warms both paths up (connections, prepared statements) and is not counted.
    for round in 0..=rounds {
        let before: i64 = sqlx::query_scalar("SELECT count(*) FROM emails").fetch_one(&pool).await?;
        let started = Instant::now();
        let output = tokio::process::Command::new("wrk")
            .args(["-t2", &format!("-c{clients}"), &format!("-d{seconds}s"), "-s"])
            .arg(&script)
            .arg(format!("{base}/emails"))
            .output()
            .await?;
        let elapsed = started.elapsed().as_secs_f64();
        let report = String::from_utf8_lossy(&output.stdout).to_string();
        anyhow::ensure!(output.status.success() && !report.contains("Non-2xx"), "wrk: {report}{}", String::from_utf8_lossy(&output.stderr));
        let after: i64 = sqlx::query_scalar("SELECT count(*) FROM emails").fetch_one(&pool).await?;
        api_total += after - before;

        let (teams, pool) = (teams.clone(), pool.clone());
        let straight = run_for(clients, seconds, move |n| {
            let (teams, pool) = (teams.clone(), pool.clone());
            async move {
                let (team_id, domain_id, domain, _) = &teams[(n % teams.len() as u64) as usize];
                insert_straight(&pool, new_email(*team_id, *domain_id, domain, n)).await
            }
        })
        .await?;
        if round > 0 {
            api_rates.push((after - before) as f64 / elapsed);
            straight_rates.push(straight);
        }
    }
    let _ = std::fs::remove_file(&script);
    let _ = stop.send(());
    server.await??;
    let emails: i64 = sqlx::query_scalar("SELECT count(*) FROM emails").fetch_one(&pool).await?;
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM apalis.jobs WHERE job_type = 'deliver'").fetch_one(&pool).await?;
    pool.close().await;

    let (api_rate, straight_rate) = (median(&mut api_rates), median(&mut straight_rates));
    let list = |rates: &[f64]| rates.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>().join(", ");
    println!("== accepted sends ({clients} connections, {team_count} teams, warm-up + {rounds} alternating rounds of {seconds}s, pool {pool_size})");
    println!("POST /emails                {api_rate:10.0} emails/s   (goal >= 1000; rounds {})", list(&api_rates));
    println!("straight inserts            {straight_rate:10.0} emails/s   (email, recipient, job, one transaction each; rounds {})", list(&straight_rates));
    println!("ratio api/straight          {:10.2}   (goal >= 0.50)", api_rate / straight_rate);
    println!("emails / jobs committed     {emails:10} / {jobs}   ({api_total} through the API)");
    Ok(())
}

fn median(rates: &mut [f64]) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

async fn deliver() -> anyhow::Result<()> {
    let count = setting("BENCH_DELIVERIES", 5000);
    let concurrency = setting("BENCH_DELIVER_CONCURRENCY", 64) as usize;
    let port = free_port()?;
    let mut sink = start_postfix_sink(port)?;

    // smtp-source: the same number of messages of about the same size, 32 sessions in parallel.
    let started = Instant::now();
    let status = Command::new("smtp-source")
        .args(["-s", "32", "-m", &count.to_string(), "-l", "1200", "-f", "bench@t0.bench.test", "-t", "user@inbox.bench.test"])
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "smtp-source failed");
    let source_rate = count as f64 / started.elapsed().as_secs_f64();

    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 20).await?;
    let teams = teams(&pool, 4).await?;
    stream::iter(0..count)
        .map(|n| {
            let (team_id, domain_id, domain, _) = &teams[(n % teams.len() as u64) as usize];
            insert_straight(&pool, new_email(*team_id, *domain_id, domain, n))
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()?;

    let mut config = tests::test_config(&database_url);
    config.smtp_relay = Some(jobs::smtp::Relay::parse(&format!("smtp://127.0.0.1:{port}"))?);
    config.deliver_concurrency = concurrency;
    let checker = config.domain_checker()?;
    let mut options = api::cli::worker_options(&config, checker);
    options.schedules = false;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let workers = tokio::spawn(jobs::run(pool.clone(), options, async move {
        let _ = stopped.await;
    }));
    let sent = loop {
        let sent: i64 = sqlx::query_scalar("SELECT count(*) FROM emails WHERE last_event = 'sent'").fetch_one(&pool).await?;
        if sent as u64 >= count || started.elapsed() > Duration::from_secs(300) {
            break sent;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let elapsed = started.elapsed().as_secs_f64();
    let _ = stop.send(());
    workers.await??;
    let _ = sink.kill();
    let _ = sink.wait();
    pool.close().await;

    println!("== DKIM-signed delivery into Postfix smtp-sink ({count} emails, {concurrency} deliveries at once)");
    println!("herald deliveries           {:10.0} emails/s   (goal >= 500; {sent} sent in {elapsed:.2} s)", sent as f64 / elapsed);
    println!("smtp-source                 {source_rate:10.0} msgs/s     (32 sessions, same sink)");
    println!("ratio herald/smtp-source    {:10.2}", (sent as f64 / elapsed) / source_rate);
    Ok(())
}
