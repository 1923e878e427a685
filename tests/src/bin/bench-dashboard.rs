//! The dashboard benchmark, run by `scripts/bench dashboard`: every page of `/app` for a team
//! with BENCH_EMAILS (1,000,000) emails over the last 30 days (each with a recipient and a
//! `sent` event) and BENCH_CONTACTS (100,000) contacts, as a signed-in admin. Each page is
//! read BENCH_READS (50) times after a warm-up, one at a time: its time over loopback (the
//! server's time plus a local round trip, so an upper bound of it) and the bytes it transfers.
//! Goals: p95 under 100 ms and under 100 KB for every page.

use std::time::{Duration, Instant};
use tests::bench::setting;
use uuid::Uuid;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let emails = setting("BENCH_EMAILS", 1_000_000) as i64;
    let contacts = setting("BENCH_CONTACTS", 100_000) as i64;
    let reads = setting("BENCH_READS", 50) as usize;
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 20).await?;
    let (team_id, key) = api::cli::create_team(&pool, "Bench").await?;
    let seeded = Instant::now();
    // Emails over the last 30 days, in batches so one statement stays small.
    let batch = 100_000_i64;
    let mut written = 0;
    while written < emails {
        let n = batch.min(emails - written);
        sqlx::query(
            "WITH src AS (
                 -- Each id minted at its email's time: its first 48 bits, then a fresh id's rest.
                 SELECT (left(herald_id_floor(at)::text, 13) || substr(herald_uuid_v7()::text, 14))::uuid AS id, at, g
                 FROM (SELECT now() - (random() * interval '30 days') AS at, g FROM generate_series(1, $2) g) timed
             ), e AS (
                 INSERT INTO emails (id, team_id, from_header, from_email, subject, html, message_id, last_event, size_bytes, created_at, updated_at)
                 SELECT id, $1, 'Bench <news@bench.test>', 'news@bench.test', 'Receipt ' || g, '<p>Thanks</p>', id || '@bench.test',
                        CASE WHEN g % 50 = 0 THEN 'bounced' ELSE 'delivered' END, 300, at, at
                 FROM src
             ), r AS (
                 INSERT INTO email_recipients (email_id, position, kind, address, email) SELECT id, 0, 'to', 'r' || g || '@example.com', 'r' || g || '@example.com' FROM src
             )
             INSERT INTO events (id, team_id, email_id, type, data, created_at)
             SELECT herald_uuid_v7(), $1, id, 'email.sent', '{}'::jsonb, at FROM src",
        )
        .bind(team_id)
        .bind(n)
        .execute(&pool)
        .await?;
        written += n;
    }
    sqlx::query("INSERT INTO contacts (id, team_id, email, first_name) SELECT herald_uuid_v7(), $1, 'c' || n || '@audience.bench.test', 'Reader ' || n FROM generate_series(1, $2) n")
        .bind(team_id)
        .bind(contacts)
        .execute(&pool)
        .await?;
    sqlx::query("VACUUM ANALYZE").execute(&pool).await?;
    let seeded = seeded.elapsed();
    // The scheduler keeps the metrics' hourly counts; here they catch up at once, as after an
    // upgrade (a one-time cost, spread over the scheduler's ticks in a running install).
    let counted = Instant::now();
    let now = chrono::Utc::now();
    while jobs::schedule::refresh_email_metrics(&pool, now).await? > 0 {}
    let counted = counted.elapsed();

    // An admin signed in.
    let person = Uuid::now_v7();
    sqlx::query("INSERT INTO people (id, email, name, password_hash) VALUES ($1, 'ada@bench.test', 'Ada', 'unused')").bind(person).execute(&pool).await?;
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) VALUES ($1, $2, 'admin')").bind(team_id).bind(person).execute(&pool).await?;
    let cookie = format!("bench_{}", person.simple());
    sqlx::query("INSERT INTO sessions (id, token_hash, person_id, team_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4, 'csrf', now() + interval '1 day')")
        .bind(Uuid::now_v7())
        .bind(schema::secret::hash(&cookie))
        .bind(person)
        .bind(team_id)
        .execute(&pool)
        .await?;
    api::http::key_cache::settle(&pool).await?;

    let config = tests::test_config(&database_url);
    let api = tests::bench::Api::serve(&config, &pool, &database_url).await?;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
    let email: Uuid = sqlx::query_scalar("SELECT id FROM emails WHERE team_id = $1 ORDER BY id DESC LIMIT 1").bind(team_id).fetch_one(&pool).await?;
    let contact: Uuid = sqlx::query_scalar("SELECT id FROM contacts WHERE team_id = $1 ORDER BY id DESC LIMIT 1").bind(team_id).fetch_one(&pool).await?;
    // A visual template and an automation with 10,000 runs, for their pages.
    let made = |path: &'static str, body: serde_json::Value| client.post(format!("{}{path}", api.base)).bearer_auth(&key).header("user-agent", "bench/1.0").json(&body).send();
    let template: serde_json::Value = made("/templates", serde_json::json!({ "name": "Newsletter", "starter": "newsletter" })).await?.json().await?;
    anyhow::ensure!(template["id"].is_string(), "the template was refused: {template}");
    let template = template["id"].as_str().unwrap_or_default().to_string();
    made("/events", serde_json::json!({ "name": "order.placed" })).await?;
    let steps = serde_json::json!([
        { "key": "start", "type": "trigger", "config": { "event_name": "order.placed" } },
        { "key": "wait", "type": "delay", "config": { "duration": "1 day" } },
        { "key": "mark", "type": "contact_update", "config": { "last_name": "Customer" } }
    ]);
    let connections = serde_json::json!([{ "from": "start", "to": "wait" }, { "from": "wait", "to": "mark" }]);
    let automation: serde_json::Value = made("/automations", serde_json::json!({ "name": "Orders", "steps": steps, "connections": connections })).await?.json().await?;
    anyhow::ensure!(automation["id"].is_string(), "the automation was refused: {automation}");
    let automation = automation["id"].as_str().unwrap_or_default().to_string();
    sqlx::query(
        "WITH runs AS (
             INSERT INTO automation_runs (id, team_id, automation_id, version, contact_id, trigger_event, status, step)
             SELECT herald_uuid_v7(), $1, $2::uuid, 1, herald_uuid_v7(), 'order.placed', 'running', 'wait' FROM generate_series(1, 10000) RETURNING id
         )
         INSERT INTO automation_run_steps (run_id, key, status) SELECT id, k, CASE WHEN k = 'wait' THEN 'waiting' ELSE 'completed' END FROM runs, unnest(ARRAY['start', 'wait']) k",
    )
    .bind(team_id)
    .bind(&automation)
    .execute(&pool)
    .await?;
    let pages = [
        "/app".to_string(),
        "/app/emails".to_string(),
        "/app/emails?status=bounced".to_string(),
        "/app/emails?search=r77@example.com".to_string(),
        "/app/emails?search=news@bench.test".to_string(),
        "/app/emails?search=Receipt%20777777".to_string(),
        format!("/app/emails/{email}"),
        "/app/domains".to_string(),
        "/app/contacts".to_string(),
        format!("/app/contacts/{contact}"),
        "/app/contacts/imports".to_string(),
        "/app/segments".to_string(),
        "/app/topics".to_string(),
        "/app/templates".to_string(),
        format!("/app/templates/{template}"),
        "/app/brand".to_string(),
        "/app/broadcasts".to_string(),
        "/app/automations".to_string(),
        format!("/app/automations/{automation}"),
        "/app/receiving".to_string(),
        "/app/inbox".to_string(),
        "/app/billing".to_string(),
        "/app/migrations".to_string(),
        "/app/webhooks".to_string(),
        "/app/api-keys".to_string(),
        "/app/logs".to_string(),
        "/app/suppressions".to_string(),
        "/app/team".to_string(),
    ];
    println!(
        "== dashboard: {emails} emails over 30 days and {contacts} contacts (seeded in {:.0} s, hourly metrics counted in {:.1} s), {reads} reads a page, one at a time",
        seeded.as_secs_f64(),
        counted.as_secs_f64()
    );
    println!("{:<40} {:>9} {:>9} {:>9} {:>10}", "page", "p50 ms", "p95 ms", "max ms", "bytes");
    let mut worst = (0.0_f64, 0_usize);
    for path in &pages {
        let url = format!("{}{path}", api.base);
        let read = || client.get(&url).header("cookie", format!("herald_session={cookie}")).header("user-agent", "bench/1.0").send();
        let first = read().await?;
        anyhow::ensure!(first.status() == 200, "{path} answered {}", first.status());
        let bytes = first.bytes().await?.len();
        let mut times: Vec<Duration> = Vec::with_capacity(reads);
        for _ in 0..reads {
            let at = Instant::now();
            read().await?.bytes().await?;
            times.push(at.elapsed());
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let p95 = ms(times[((times.len() as f64 * 0.95) as usize).min(times.len() - 1)]);
        println!("{path:<40} {:>9.2} {p95:>9.2} {:>9.2} {bytes:>10}", ms(times[times.len() / 2]), ms(times[times.len() - 1]));
        worst = (worst.0.max(p95), worst.1.max(bytes));
    }
    println!("worst p95 {:.2} ms (goal < 100 ms), largest page {} bytes (goal < 100 KB)", worst.0, worst.1);
    let _ = api.stop().await;
    Ok(())
}
