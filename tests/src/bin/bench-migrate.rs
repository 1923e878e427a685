//! The migration benchmark, run by `scripts/bench migrate`: BENCH_CONTACTS (1,000,000) members
//! of one audience read from the tests crate's Mailchimp stand-in (pages of 1,000 over HTTP)
//! and applied by the migration job, printed as contacts per second beside the contact import
//! job over a CSV of the same contacts (email, names, unsubscribed) in the same run, twice: as
//! bare contacts, and subscribed to a topic as the audience's members are (the same rows the
//! migration writes: the contact, its topic choice and a consent record). Goal: at least 0.5 of
//! the import's rate.

use schema::store::imports::{self, ColumnMap, NewImport};
use schema::store::migrations;
use schema::store::topics::{self, NewTopic};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::{Duration, Instant};
use tests::platforms::{self, Platforms};

const SECRET: &str = "bench-secret";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let count: usize = std::env::var("BENCH_CONTACTS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let stand_in = Platforms::start().await;
    stand_in.seed_mailchimp(platforms::bulk_mailchimp(count));
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 4).await?;
    let (migrating, _) = api::cli::create_team(&pool, "Migrating").await?;
    let (importing, _) = api::cli::create_team(&pool, "Importing").await?;
    let (subscribing, _) = api::cli::create_team(&pool, "Importing into a topic").await?;
    let topic = NewTopic { name: "Bulk", description: None, default_subscription: "opt_out", visibility: "private" };
    let topic = topics::insert(&mut *pool.acquire().await?, subscribing, &topic).await?.expect("a new topic");
    sqlx::query("UPDATE teams SET plan_code = 'scale'").execute(&pool).await?;
    let settings = jobs::migrate::MigrationSettings {
        secret_key: Some(SECRET.into()),
        resend_api_base: String::new(),
        mailchimp_api_base: stand_in.mailchimp_base(),
        allow_private: true,
    };
    println!("== migrate ({count} Mailchimp members)");

    let sealed = schema::secret::seal(SECRET, &serde_json::to_vec(&json!({ "api_key": platforms::MAILCHIMP_KEY }))?);
    let id = migrations::insert(&mut *pool.acquire().await?, migrating, "mailchimp", Some(&sealed), None).await?;
    let started = Instant::now();
    let outcome = jobs::migrate::run(&pool, &settings, id).await?;
    let read_time = started.elapsed();
    anyhow::ensure!(outcome == "review", "the read ended with {outcome}");
    migrations::transition(&mut *pool.acquire().await?, migrating, id, &["review"], "running").await?;
    let started = Instant::now();
    let outcome = jobs::migrate::run(&pool, &settings, id).await?;
    let apply_time = started.elapsed();
    let done = migrations::get(&mut *pool.acquire().await?, migrating, id).await?.expect("the migration");
    anyhow::ensure!(outcome == "completed" && done.created == count as i64, "the migration ended {outcome} with {} created", done.created);
    let migrate_time = read_time + apply_time;

    // The same contacts as a CSV, through the contact import job.
    let mut csv = String::from("email,first_name,last_name,unsubscribed\n");
    for i in 1..=count {
        writeln!(csv, "member{i}@bulk.example,First{i},Last{i},{}", i % 97 == 0 || i % 50 == 0)?;
    }
    let map = ColumnMap {
        email: "email".into(),
        first_name: Some("first_name".into()),
        last_name: Some("last_name".into()),
        unsubscribed: Some("unsubscribed".into()),
        properties: BTreeMap::new(),
    };
    let import_time = import(&pool, importing, &csv, &map, json!([])).await?;
    let subscribed_time = import(&pool, subscribing, &csv, &map, json!([{ "id": topic.id, "subscription": "opt_in" }])).await?;

    let rate = |d: Duration| count as f64 / d.as_secs_f64();
    println!("migration (read + apply)   {:>9.0} contacts/s   ({:.2} s: read {:.2} s, apply {:.2} s)", rate(migrate_time), migrate_time.as_secs_f64(), read_time.as_secs_f64(), apply_time.as_secs_f64());
    println!("CSV import, bare contacts  {:>9.0} contacts/s   ({:.2} s)", rate(import_time), import_time.as_secs_f64());
    println!("CSV import into a topic    {:>9.0} contacts/s   ({:.2} s)", rate(subscribed_time), subscribed_time.as_secs_f64());
    println!("ratio to the bare import   {:>9.2}", import_time.as_secs_f64() / migrate_time.as_secs_f64());
    println!("ratio to the topic import  {:>9.2}   (goal >= 0.5: the same rows written)", subscribed_time.as_secs_f64() / migrate_time.as_secs_f64());
    Ok(())
}

/// Runs the contact import job over `csv` for the team, subscribing each row to `topics`.
async fn import(pool: &sqlx::PgPool, team_id: uuid::Uuid, csv: &str, map: &ColumnMap, topics: serde_json::Value) -> anyhow::Result<Duration> {
    let new = NewImport { on_conflict: "skip", column_map: map, segment_ids: &[], topics, file: csv.as_bytes() };
    let import_id = imports::insert(&mut *pool.acquire().await?, team_id, &new).await?;
    let started = Instant::now();
    jobs::import_contacts::run(pool, import_id).await?;
    Ok(started.elapsed())
}
