//! Benchmark: recheck N domains (default 10,000) against the in-process DNS server and print
//! domains verified per second, beside the raw lookup rate of the same resolver and server in
//! the same run. Goal: the whole recheck within 60 s. Run by `scripts/bench domains`.

use futures::{StreamExt, stream};
use jobs::dns::Dns;
use jobs::domains::DomainChecker;
use schema::domain::RegionHosts;
use std::time::{Duration, Instant};
use tests::dns::TestDns;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let count: i64 = std::env::var("BENCH_DOMAINS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let database_url = tests::fresh_database().await;
    let pool = schema::connect(&database_url, 10).await?;
    let (team_id, _) = api::cli::create_team(&pool, "Bench").await?;
    sqlx::query("UPDATE teams SET plan_code = 'scale' WHERE id = $1").bind(team_id).execute(&pool).await?;

    let key = schema::domain::generate_dkim_key()?;
    sqlx::query(
        "INSERT INTO domains (id, team_id, name, zone, region, mail_from_code, dkim_private_key, dkim_public_key)
         SELECT gen_random_uuid(), $1, 'd' || n || '.bench.test', 'd' || n || '.bench.test', 'us-east-1', 'c' || n, $2, $3
         FROM generate_series(1, $4) AS n",
    )
    .bind(team_id)
    .bind(&key.private_pem)
    .bind(&key.public_base64)
    .bind(count)
    .execute(&pool)
    .await?;
    sqlx::query(
        "INSERT INTO domain_records (domain_id, kind)
         SELECT d.id, k FROM domains d CROSS JOIN unnest(ARRAY['dkim', 'mail_from', 'receiving', 'tracking']) AS k",
    )
    .execute(&pool)
    .await?;

    // Nine in ten domains publish DKIM and mail-from.
    let dns = TestDns::start().await;
    let [first, second] = schema::domain::dkim_zone_strings(&key.public_base64);
    let hosts = RegionHosts::under("herald.localhost");
    for n in (1..=count).filter(|n| n % 10 != 0) {
        dns.zone.set_txt(&format!("svc._domainkey.d{n}.bench.test"), &[&[&first, &second]]);
        dns.zone.set_cname(&format!("send.d{n}.bench.test"), &format!("c{n}.{}", hosts.mail_from_host(schema::domain::Region::UsEast1)));
    }
    let checker = DomainChecker { dns: Dns::new(&[dns.addr], Duration::from_secs(2))?, hosts };

    // The same resolver and server, lookups alone, as many as the sweep makes (four per domain).
    let lookups = count * 4;
    let started = Instant::now();
    stream::iter(0..lookups)
        .map(|n| {
            let dns = checker.dns.clone();
            async move { dns.txt(&format!("svc._domainkey.d{}.bench.test", n % count + 1)).await }
        })
        .buffer_unordered(256)
        .for_each(|_| async {})
        .await;
    let raw = lookups as f64 / started.elapsed().as_secs_f64();

    let started = Instant::now();
    let checked = jobs::domains::sweep(&pool, &checker).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let verified: i64 = sqlx::query_scalar("SELECT count(*) FROM domains WHERE status = 'verified'").fetch_one(&pool).await?;
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE type = 'domain.updated'").fetch_one(&pool).await?;

    println!("domains rechecked          {checked:10}");
    println!("verified / updated events  {verified:10} / {events}");
    println!("recheck took               {elapsed:10.2} s   (goal <= 60 s)");
    println!("domains per second         {:10.0}", checked as f64 / elapsed);
    println!("sweep lookups per second   {:10.0}", lookups as f64 / elapsed);
    println!("raw lookups per second     {raw:10.0}   (same resolver and server, 256 in flight)");
    println!("ratio sweep/raw            {:10.2}", (lookups as f64 / elapsed) / raw);
    pool.close().await;
    Ok(())
}
