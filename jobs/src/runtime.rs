//! The worker runtime: one apalis worker per named queue, woken by LISTEN/NOTIFY for new jobs
//! and by a one-second poll for scheduled and retried ones, with bounded concurrency and a
//! graceful shutdown that lets running jobs finish; beside them, the webhook dispatcher and the
//! automation executor.

use crate::deliver::Delivery;
use crate::domains::DomainChecker;
use crate::supervise::{count_restart, supervise};
use apalis::prelude::Monitor;
use apalis_postgres::Config;
use schema::jobs::{BillingJob, Deliver, DeliverPage, DomainSweep, ExportJob, Housekeeping, MigrationJob, ImportContacts, ResolveAmbiguous, SendBroadcast};
use sqlx::PgPool;
use std::future::Future;
use std::time::Duration;

/// How the workers run.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Jobs each queue runs at once in this process.
    pub concurrency: usize,
    /// Deliveries this process runs at once.
    pub deliver_concurrency: usize,
    /// How long a shutdown waits for running jobs.
    pub shutdown_timeout: Duration,
    /// Whether this process also ticks the schedules.
    pub schedules: bool,
    /// Checks domains against DNS.
    pub checker: DomainChecker,
    /// Submits mail over SMTP.
    pub delivery: Delivery,
    /// Delivers webhooks.
    pub webhooks: crate::webhooks::WebhookSettings,
    /// Fans broadcasts out.
    pub broadcasts: crate::broadcasts::BroadcastSettings,
    /// Executes automation runs.
    pub automations: crate::automations::AutomationSettings,
    /// Stripe, when configured (plan changes due at a period's end).
    pub stripe: Option<crate::stripe::Stripe>,
    /// Reads other platforms for migrations.
    pub migrations: crate::migrate::MigrationSettings,
}

/// The job queues a worker process serves (one apalis worker each).
pub const QUEUES: u32 = 10;

/// The queues woken by PostgreSQL's notifications (each holds a connection for its LISTEN);
/// the others (billing's, exports' and migrations' rare jobs) are polled every [`POLL`] and hold none.
pub const LISTENING_QUEUES: u32 = 7;

/// The fewest pool connections a process running the workers can work with: each listening
/// queue's worker holds one connection for its LISTEN, every queue needs one to fetch and
/// acknowledge jobs, and the webhook dispatcher and the automation executor each need one. A
/// smaller pool leaves a queue waiting for a connection that never frees. Two are counted for
/// every queue, listening or polled, so a polled queue leaves one more for the jobs' own work.
pub const MIN_CONNECTIONS: u32 = 2 * QUEUES + 2;
const _: () = assert!(MIN_CONNECTIONS >= LISTENING_QUEUES + QUEUES + 2);

/// The pool size for a process that runs the workers: the configured size, raised to
/// [`MIN_CONNECTIONS`] (with a warning) when it is below.
pub fn pool_size(configured: u32) -> u32 {
    if configured < MIN_CONNECTIONS {
        tracing::warn!(configured, used = MIN_CONNECTIONS, "HERALD_DB_MAX_CONNECTIONS is below what the job workers hold; using the minimum");
    }
    configured.max(MIN_CONNECTIONS)
}

/// How often a worker polls for scheduled and retried jobs.
pub const POLL: Duration = Duration::from_secs(1);
/// How often a worker reports itself alive (readiness reads it).
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// A name unique to this process and queue, so a restarted process never inherits a dead
/// one's claim on its jobs.
pub fn worker_name(queue: &str) -> String {
    let suffix: u32 = rand::random();
    format!("{queue}-{}-{suffix:08x}", std::process::id())
}

/// The storage settings of queue `queue`, fetching `batch` jobs at a time.
pub fn storage_config(queue: &str, batch: usize) -> Config {
    Config::default().queue(queue).heartbeat_interval(HEARTBEAT).missed_heartbeats(6).batch_size(batch)
}

/// What [`queue_worker!`] builds with, for its expansion in other crates (the tests register a
/// handler of their own on a real queue with it).
#[doc(hidden)]
pub mod worker {
    pub use super::{POLL, storage_config, worker_name};
    pub use apalis::prelude::{BackendExt, BoxDynError, Monitor, WorkerBuilder, WorkerBuilderExt};
    pub use apalis_postgres::PostgresStorage;
    pub use schema::jobs::Job;
}

/// Registers on `$monitor` a worker for job type `$job` running `$handler` with `$concurrency`
/// jobs at once and the given shared data: woken by LISTEN/NOTIFY, polling every [`POLL`], and
/// catching a panic as the job's failure.
#[macro_export]
macro_rules! queue_worker {
    ($monitor:expr, $pool:expr, $job:ty, $concurrency:expr, $handler:expr, [$($data:ident),*], polled) => {{
        use $crate::runtime::worker::{BackendExt as _, WorkerBuilderExt as _};
        let pool = $pool.clone();
        let concurrency = $concurrency;
        $(let $data = $data.clone();)*
        $monitor.register(move |_restarts| {
            $crate::runtime::worker::WorkerBuilder::new($crate::runtime::worker::worker_name(<$job as $crate::runtime::worker::Job>::QUEUE))
                .backend(
                    $crate::runtime::worker::PostgresStorage::<$job>::new(&pool)
                        .with_config($crate::runtime::worker::storage_config(<$job as $crate::runtime::worker::Job>::QUEUE, concurrency.max(10)))
                        .poll_with_interval($crate::runtime::worker::POLL),
                )
                .data(pool.clone())
                $(.data($data.clone()))*
                .concurrency(concurrency)
                .catch_panic()
                .build($handler)
        })
    }};
    ($monitor:expr, $pool:expr, $job:ty, $concurrency:expr, $handler:expr, [$($data:ident),*]) => {{
        use $crate::runtime::worker::{BackendExt as _, WorkerBuilderExt as _};
        let pool = $pool.clone();
        let concurrency = $concurrency;
        $(let $data = $data.clone();)*
        $monitor.register(move |_restarts| {
            $crate::runtime::worker::WorkerBuilder::new($crate::runtime::worker::worker_name(<$job as $crate::runtime::worker::Job>::QUEUE))
                .backend(
                    $crate::runtime::worker::PostgresStorage::<$job>::new(&pool)
                        .with_config($crate::runtime::worker::storage_config(<$job as $crate::runtime::worker::Job>::QUEUE, concurrency.max(10)))
                        .with_pubsub()
                        .poll_with_interval($crate::runtime::worker::POLL),
                )
                .data(pool.clone())
                $(.data($data.clone()))*
                .concurrency(concurrency)
                // A panic is the job's failure (killed, not retried: see docs/decisions.md), never the worker's.
                .catch_panic()
                .build($handler)
        })
    }};
}

/// Runs every queue and the webhook dispatcher until `shutdown` resolves, then drains. A queue
/// worker whose storage fails (a pool timeout, a lost connection) or whose job panics is
/// restarted by the monitor, and the other loops by [`supervise`]: none ends before shutdown.
pub async fn run(pool: PgPool, options: WorkerOptions, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let until_stopped = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let schedule = options.schedules.then(|| {
        let (pool, loop_stopped) = (pool.clone(), stopped.clone());
        tokio::spawn(supervise("schedules", 3 * crate::schedule::TICK, stopped.clone(), move || {
            let (pool, stopped) = (pool.clone(), loop_stopped.clone());
            async move {
                tokio::select! {
                    () = crate::schedule::run(pool) => {}
                    () = until_stopped(stopped) => {}
                }
            }
        }))
    });
    let dispatcher = {
        let (pool, settings, loop_stopped) = (pool.clone(), options.webhooks.clone(), stopped.clone());
        tokio::spawn(supervise("webhooks", crate::webhooks::ROUND_BOUND, stopped.clone(), move || crate::webhooks::run(pool.clone(), settings.clone(), until_stopped(loop_stopped.clone()))))
    };
    let executor = {
        let (pool, settings, loop_stopped) = (pool.clone(), options.automations.clone(), stopped.clone());
        tokio::spawn(supervise("automations", crate::automations::ROUND_BOUND, stopped.clone(), move || crate::automations::run(pool.clone(), settings.clone(), until_stopped(loop_stopped.clone()))))
    };
    let reporter = tokio::spawn(crate::supervise::report_beats(pool.clone(), stopped.clone()));
    let WorkerOptions { concurrency, deliver_concurrency, checker, mut delivery, broadcasts, stripe, migrations, .. } = options;
    delivery.concurrency = deliver_concurrency;
    let retiring = pool.clone();
    let monitor = Monitor::new().should_restart(move |worker, error| {
        if worker.is_shutting_down() {
            return false;
        }
        let queue = queue_of(worker.name());
        tracing::warn!(queue, worker = worker.name(), error = %error, "restarting a job worker");
        count_restart(queue);
        tokio::spawn(retire(retiring.clone(), worker.name().to_string()));
        true
    });
    let monitor = queue_worker!(monitor, pool, Housekeeping, concurrency, crate::housekeeping::handle, []);
    let monitor = queue_worker!(monitor, pool, DomainSweep, concurrency, crate::domains::handle_sweep, [checker]);
    let monitor = queue_worker!(monitor, pool, Deliver, deliver_concurrency, crate::deliver::handle, [delivery]);
    // Two pages at once, each delivering half the process's concurrency.
    let monitor = queue_worker!(monitor, pool, DeliverPage, 2, crate::deliver::handle_page, [delivery]);
    let monitor = queue_worker!(monitor, pool, ResolveAmbiguous, concurrency, crate::deliver::handle_ambiguous, []);
    let monitor = queue_worker!(monitor, pool, ImportContacts, concurrency, crate::import_contacts::handle, []);
    let monitor = queue_worker!(monitor, pool, SendBroadcast, concurrency, crate::broadcasts::handle, [broadcasts]);
    let monitor = queue_worker!(monitor, pool, BillingJob, concurrency, crate::billing::handle, [stripe], polled);
    let monitor = queue_worker!(monitor, pool, ExportJob, concurrency, crate::exports::handle, [], polled);
    let monitor = queue_worker!(monitor, pool, MigrationJob, concurrency, crate::migrate::handle, [migrations], polled);
    let result = monitor
        .shutdown_timeout(options.shutdown_timeout)
        .run_with_signal(async move {
            until_stopped(stopped).await;
            Ok(())
        })
        .await;
    if let Some(schedule) = schedule {
        let _ = schedule.await;
    }
    let _ = dispatcher.await;
    let _ = executor.await;
    let _ = reporter.await;
    result.map_err(|e| anyhow::anyhow!("workers stopped with an error: {e}"))
}

/// Puts the jobs an ended worker had fetched or was running (they ended with it) back in its
/// queue, so they run again within a second of PostgreSQL answering rather than after the 30 s
/// a silent worker gets; one whose payload does not parse (it ended the worker) is killed. Tried every half second for ten minutes: a worker usually ends
/// because it could not reach PostgreSQL.
async fn retire(pool: PgPool, worker: String) {
    let started = tokio::time::Instant::now();
    while started.elapsed() < Duration::from_secs(600) {
        let retired = async { schema::store::jobs::retire_worker(&mut *pool.acquire().await?, queue_of(&worker), &worker).await }.await;
        match retired {
            Ok((back, killed)) => {
                tracing::info!(worker, jobs = back, "an ended worker's jobs are back in its queue");
                if killed > 0 {
                    tracing::error!(worker, jobs = killed, "jobs whose payload does not parse were killed (see herald jobs)");
                }
                return;
            }
            Err(error) => tracing::debug!(%error, worker, "retiring an ended worker failed; trying again"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tracing::warn!(worker, "an ended worker could not be retired; its jobs come back when its heartbeat is stale");
}

/// The queue a worker serves, from its name ([`worker_name`]: `queue-pid-suffix`).
fn queue_of(worker: &str) -> &str {
    worker.rsplitn(3, '-').nth(2).unwrap_or(worker)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_workers_queue_is_read_back_from_its_name() {
        assert_eq!(super::queue_of(&super::worker_name("resolve_ambiguous")), "resolve_ambiguous");
    }
}
