//! Benchmark: the `GET /api-keys` list query through Herald's own store function and pool,
//! with no HTTP, at BENCH_CONNECTIONS (32) concurrent tasks for BENCH_SECONDS (10): what the
//! database driver alone reaches, beside the route and pgbench in `scripts/bench http`.

use schema::page::PageRequest;
use schema::store::api_keys::{self, ListFilter, StatusFilter};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let number = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (tasks, seconds) = (number("BENCH_CONNECTIONS", 32), number("BENCH_SECONDS", 10));
    let database_url = std::env::var("DATABASE_URL")?;
    let team_id: uuid::Uuid = std::env::var("BENCH_TEAM")?.parse()?;
    let pool = schema::connect(&database_url, number("HERALD_DB_MAX_CONNECTIONS", 20) as u32).await?;
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (pool, done) = (pool.clone(), done.clone());
        handles.push(tokio::spawn(async move {
            let filter = ListFilter { status: StatusFilter::Active, search: None, permission: None, inbox_access: None };
            let page = PageRequest { limit: PageRequest::DEFAULT_LIMIT, cursor: None };
            while started.elapsed() < Duration::from_secs(seconds) {
                let mut conn = pool.acquire().await.expect("a connection");
                api_keys::list(&mut conn, team_id, &filter, &page).await.expect("the list");
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for handle in handles {
        handle.await?;
    }
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    println!("{rate:.0}");
    Ok(())
}
