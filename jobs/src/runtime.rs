//! The worker runtime: one apalis worker per named queue, woken by LISTEN/NOTIFY for new jobs
//! and by a one-second poll for scheduled and retried ones, with bounded concurrency and a
//! graceful shutdown that lets running jobs finish.

use apalis::prelude::{BackendExt, Monitor, WorkerBuilder, WorkerBuilderExt};
use apalis_postgres::{Config, PostgresStorage};
use crate::domains::DomainChecker;
use schema::jobs::{DomainSweep, Housekeeping, Job};
use sqlx::PgPool;
use std::future::Future;
use std::time::Duration;

/// How the workers run.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Jobs each queue runs at once in this process.
    pub concurrency: usize,
    /// How long a shutdown waits for running jobs.
    pub shutdown_timeout: Duration,
    /// Whether this process also ticks the schedules.
    pub schedules: bool,
    /// Checks domains against DNS.
    pub checker: DomainChecker,
}

/// How often a worker polls for scheduled and retried jobs.
pub const POLL: Duration = Duration::from_secs(1);
/// How often a worker reports itself alive (readiness reads it).
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// A name unique to this process and queue, so a restarted process never inherits a dead
/// one's claim on its jobs.
fn worker_name(queue: &str) -> String {
    let suffix: u32 = rand::random();
    format!("{queue}-{}-{suffix:08x}", std::process::id())
}

fn storage_config(queue: &str) -> Config {
    Config::default().queue(queue).heartbeat_interval(HEARTBEAT).missed_heartbeats(6).batch_size(10)
}

/// Runs every queue until `shutdown` resolves, then drains.
pub async fn run(pool: PgPool, options: WorkerOptions, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    let schedule = options.schedules.then(|| tokio::spawn(crate::schedule::run(pool.clone())));
    let monitor = Monitor::new()
        .register({
            let pool = pool.clone();
            let concurrency = options.concurrency;
            move |_restarts| {
                WorkerBuilder::new(worker_name(Housekeeping::QUEUE))
                    .backend(
                        PostgresStorage::<Housekeeping>::new(&pool)
                            .with_config(storage_config(Housekeeping::QUEUE))
                            .with_pubsub()
                            .poll_with_interval(POLL),
                    )
                    .data(pool.clone())
                    .concurrency(concurrency)
                    .build(crate::housekeeping::handle)
            }
        })
        .register({
            let pool = pool.clone();
            let concurrency = options.concurrency;
            let checker = options.checker.clone();
            move |_restarts| {
                WorkerBuilder::new(worker_name(DomainSweep::QUEUE))
                    .backend(
                        PostgresStorage::<DomainSweep>::new(&pool)
                            .with_config(storage_config(DomainSweep::QUEUE))
                            .with_pubsub()
                            .poll_with_interval(POLL),
                    )
                    .data(pool.clone())
                    .data(checker.clone())
                    .concurrency(concurrency)
                    .build(crate::domains::handle_sweep)
            }
        })
        .shutdown_timeout(options.shutdown_timeout);
    let result = monitor
        .run_with_signal(async move {
            shutdown.await;
            Ok(())
        })
        .await;
    if let Some(schedule) = schedule {
        schedule.abort();
    }
    result.map_err(|e| anyhow::anyhow!("workers stopped with an error: {e}"))
}
