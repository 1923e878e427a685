//! Benchmarks of the audience, run by `scripts/bench contacts`:
//! (a) import: a generated CSV of BENCH_CONTACTS (1,000,000) rows (about 44 MB) processed by
//!     the import job, printed as rows per second beside a PostgreSQL `COPY` of the same rows
//!     into an empty table with the same columns and indexes, in the same run. Goal: at least 50,000 rows/s.
//! (b) segment count: a three-condition filter (a string property, a number property and an
//!     address match) counted over those contacts, best and median of 5. Goal: under 500 ms.

use schema::store::imports::{self, ColumnMap, NewImport, PropertyColumn};
use schema::store::segments;
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::{Duration, Instant};

const PLANS: [&str; 4] = ["free", "pro", "team", "enterprise"];

fn row(i: u64) -> (String, String, String, &'static str, u64, bool) {
    (format!("u{i:07}@example{}.com", i % 50), format!("F{}", i % 997), format!("L{}", i % 991), PLANS[(i % 4) as usize], 18 + i % 60, i.is_multiple_of(3))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let count: u64 = std::env::var("BENCH_CONTACTS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 4).await?;
    let (team_id, _) = api::cli::create_team(&pool, "Bench").await?;
    sqlx::query("UPDATE teams SET plan_code = 'scale'").execute(&pool).await?;

    let mut csv = String::from("email,first_name,last_name,plan,age,vip\n");
    let mut copy = String::new();
    for i in 0..count {
        let (email, first, last, plan, age, vip) = row(i);
        writeln!(csv, "{email},{first},{last},{plan},{age},{vip}")?;
        let properties = json!({ "plan": plan, "age": age, "vip": vip }).to_string().replace('"', "\"\"");
        writeln!(copy, "{},{team_id},{email},{first},{last},\"{properties}\"", schema::ids::new_id())?;
    }
    println!("== contact import ({count} rows, {:.1} MB CSV)", csv.len() as f64 / 1e6);

    let mut properties = BTreeMap::new();
    for (key, kind) in [("plan", "string"), ("age", "number"), ("vip", "boolean")] {
        properties.insert(key.to_string(), PropertyColumn { column: key.to_string(), kind: kind.to_string() });
    }
    let map = ColumnMap { email: "email".into(), first_name: Some("first_name".into()), last_name: Some("last_name".into()), unsubscribed: None, properties };
    let new = NewImport { on_conflict: "skip", column_map: &map, segment_ids: &[], topics: json!([]), file: csv.as_bytes() };
    let import_id = imports::insert(&mut *pool.acquire().await?, team_id, &new).await?;
    let started = Instant::now();
    jobs::import_contacts::run(&pool, import_id).await?;
    let import_time = started.elapsed();
    let done = imports::get(&mut *pool.acquire().await?, team_id, import_id).await?.expect("the import");
    anyhow::ensure!(done.status == schema::status::ImportStatus::Completed && done.created == count as i64, "import ended {} with {} created", done.status, done.created);

    // The same rows into an empty table shaped like `contacts` (same columns, indexes and
    // constraints), so the segment count below reads only the imported contacts.
    let mut conn = pool.acquire().await?;
    sqlx::query("CREATE TABLE contacts_copy (LIKE contacts INCLUDING ALL)").execute(&mut *conn).await?;
    let started = Instant::now();
    let mut writer = conn.copy_in_raw("COPY contacts_copy (id, team_id, email, first_name, last_name, properties) FROM STDIN WITH (FORMAT csv)").await?;
    writer.send(copy.as_bytes()).await?;
    let copied = writer.finish().await?;
    let copy_time = started.elapsed();
    anyhow::ensure!(copied == count, "COPY wrote {copied} rows");
    sqlx::query("DROP TABLE contacts_copy").execute(&mut *conn).await?;

    let rate = |d: Duration| count as f64 / d.as_secs_f64();
    println!("import job                 {:>9.0} rows/s   (goal >= 50000; {count} rows in {:.2} s)", rate(import_time), import_time.as_secs_f64());
    println!("COPY of the same rows      {:>9.0} rows/s   ({:.2} s)", rate(copy_time), copy_time.as_secs_f64());
    println!("ratio import/COPY          {:>9.2}", copy_time.as_secs_f64() / import_time.as_secs_f64());

    sqlx::query("ANALYZE contacts").execute(&pool).await?;
    let filter = json!({ "all": [
        { "field": "properties.plan", "op": "eq", "value": "pro" },
        { "field": "properties.age", "op": "gte", "value": 40 },
        { "field": "email", "op": "contains", "value": "example7" }
    ] });
    let segment = segments::insert(&mut conn, team_id, "Bench", Some(&filter)).await?.expect("a new segment");
    let mut times = Vec::new();
    let mut members = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let membership = segments::membership(&mut conn, &segment).await?;
        members = segments::count_members(&mut conn, team_id, &membership).await?;
        times.push(started.elapsed());
    }
    times.sort();
    println!("== segment count (3 conditions over {count} contacts; {members} members)");
    println!("best / median              {:>5.0} / {:.0} ms   (goal < 500 ms)", times[0].as_secs_f64() * 1000.0, times[2].as_secs_f64() * 1000.0);
    Ok(())
}
