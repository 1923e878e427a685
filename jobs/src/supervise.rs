//! Loops that do not die for good. Each background loop of a worker process (the webhook
//! dispatcher, the automation executor, the schedules) runs under [`supervise`]: when it ends
//! before shutdown, by returning or by a panic, it is started again after a capped, jittered
//! backoff. The job queues' workers are restarted by the apalis monitor the same way (see
//! [`crate::runtime`]). Every restart is counted per loop, for `/metrics`.
//!
//! Each loop also beats once per round ([`beat`]); [`report_beats`] writes the process's beats
//! to PostgreSQL every few seconds, where readiness finds a loop that is alive but stuck (a
//! round that never ends, as on a stalled connection), which a restart counter cannot show.

use sqlx::PgPool;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// When each loop of this process last went round, and how long a round may take.
static BEATS: LazyLock<Mutex<BTreeMap<&'static str, (Instant, Duration)>>> = LazyLock::new(|| Mutex::new(BTreeMap::new()));

/// Declares that loop `name` goes round at least once per `bound` from now on.
pub fn expect_beats(name: &'static str, bound: Duration) {
    BEATS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(name, (Instant::now(), bound));
}

/// Loop `name` went round (a loop not declared with [`expect_beats`] is ignored).
pub fn beat(name: &'static str) {
    if let Some(entry) = BEATS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get_mut(name) {
        entry.0 = Instant::now();
    }
}

/// This process's loops: seconds since each went round, and its bound.
pub fn beats() -> Vec<schema::store::jobs::LoopBeat> {
    let beats = BEATS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    beats
        .iter()
        .map(|(name, (last, bound))| schema::store::jobs::LoopBeat {
            loop_name: name.to_string(),
            since_seconds: last.elapsed().as_secs_f64(),
            bound_seconds: bound.as_secs_f64(),
        })
        .collect()
}

/// How often a process writes its loops' beats.
pub const REPORT_EVERY: Duration = Duration::from_secs(5);

/// This process's name in the heartbeat rows, unique across restarts.
static PROCESS: LazyLock<String> = LazyLock::new(|| format!("{}-{:08x}", std::process::id(), rand::random::<u32>()));

/// Whether a reporter runs in this process already.
static REPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes this process's beats every [`REPORT_EVERY`] until `stopped`, then removes them; a
/// write that fails (PostgreSQL away) is tried again on the next round. One reporter runs per
/// process: a second call (a server that also runs the workers) returns at once.
pub async fn report_beats(pool: PgPool, mut stopped: watch::Receiver<bool>) {
    if REPORTING.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let process = PROCESS.as_str();
    loop {
        let beats = beats();
        if !beats.is_empty() {
            let written = async { schema::store::jobs::report_loops(&mut *pool.acquire().await?, process, &beats).await }.await;
            if let Err(error) = written {
                tracing::debug!(%error, "writing loop heartbeats failed");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(REPORT_EVERY) => {}
            _ = stopped.wait_for(|stop| *stop) => break,
        }
    }
    if let Ok(mut conn) = pool.acquire().await {
        let _ = schema::store::jobs::forget_loops(&mut conn, process).await;
    }
    REPORTING.store(false, std::sync::atomic::Ordering::SeqCst);
}

/// Restarts per loop name since this process started.
static RESTARTS: LazyLock<Mutex<BTreeMap<String, u64>>> = LazyLock::new(|| Mutex::new(BTreeMap::new()));

/// The longest wait before a restart.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Counts one restart of `name`.
pub fn count_restart(name: &str) {
    let mut restarts = RESTARTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    *restarts.entry(name.to_string()).or_default() += 1;
}

/// Every loop restarted since this process started, with its count, by name.
pub fn restarts() -> Vec<(String, u64)> {
    RESTARTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).iter().map(|(name, count)| (name.clone(), *count)).collect()
}

/// The wait before the `attempt`th restart in a row: 250 ms doubled per attempt up to
/// [`MAX_BACKOFF`], less up to a quarter at random so that processes do not restart in step.
pub fn backoff(attempt: u32) -> Duration {
    let full = Duration::from_millis(250).saturating_mul(1u32 << attempt.min(8)).min(MAX_BACKOFF);
    full.mul_f64(1.0 - rand::random::<f64>() * 0.25)
}

/// Runs the loop that `start` makes until `stopped` turns true, starting it again whenever it
/// ends before that. A loop that ran for a minute before it ended starts its backoff over. The
/// loop beats ([`beat`]) at least once per `bound`.
pub async fn supervise<F, L>(name: &'static str, bound: Duration, mut stopped: watch::Receiver<bool>, start: F)
where
    F: Fn() -> L,
    L: Future<Output = ()> + Send + 'static,
{
    expect_beats(name, bound);
    let mut attempt = 0;
    loop {
        let started = tokio::time::Instant::now();
        let ended = tokio::spawn(start()).await;
        if *stopped.borrow() {
            return;
        }
        match ended {
            Ok(()) => tracing::error!(r#loop = name, "a background loop ended before shutdown; restarting it"),
            Err(error) => tracing::error!(r#loop = name, %error, "a background loop panicked; restarting it"),
        }
        if started.elapsed() > Duration::from_secs(60) {
            attempt = 0;
        }
        count_restart(name);
        tokio::select! {
            _ = tokio::time::sleep(backoff(attempt)) => {}
            _ = stopped.wait_for(|stop| *stop) => return,
        }
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn a_declared_loop_is_reported_with_the_time_since_its_last_beat() {
        expect_beats("test-beating-loop", Duration::from_secs(7));
        std::thread::sleep(Duration::from_millis(30));
        let stale = beats().into_iter().find(|b| b.loop_name == "test-beating-loop").unwrap();
        assert!(stale.since_seconds >= 0.03 && stale.bound_seconds == 7.0, "{stale:?}");
        beat("test-beating-loop");
        let fresh = beats().into_iter().find(|b| b.loop_name == "test-beating-loop").unwrap();
        assert!(fresh.since_seconds < 0.03, "{fresh:?}");
    }

    #[test]
    fn backoff_grows_to_its_cap_with_jitter_below_it() {
        assert!(backoff(0) <= Duration::from_millis(250) && backoff(0) >= Duration::from_millis(187));
        assert!(backoff(2) <= Duration::from_secs(1) && backoff(2) >= Duration::from_millis(750));
        assert!(backoff(30) <= MAX_BACKOFF && backoff(30) >= MAX_BACKOFF.mul_f64(0.75));
    }

    #[tokio::test]
    async fn a_loop_that_panics_is_started_again_and_counted_until_shutdown() {
        let (stop, stopped) = watch::channel(false);
        let runs = Arc::new(AtomicU32::new(0));
        let supervised = {
            let runs = runs.clone();
            tokio::spawn(supervise("test-panicking-loop", Duration::from_secs(60), stopped, move || {
                let runs = runs.clone();
                async move {
                    if runs.fetch_add(1, Ordering::SeqCst) < 2 {
                        panic!("a poison message");
                    }
                    std::future::pending::<()>().await;
                }
            }))
        };
        tokio::time::timeout(Duration::from_secs(5), async {
            while runs.load(Ordering::SeqCst) < 3 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the loop ran a third time");
        assert_eq!(restarts().into_iter().find(|(name, _)| name == "test-panicking-loop").map(|(_, n)| n), Some(2));
        stop.send(true).unwrap();
        // The running loop is not waited for here; the supervisor returns once it is told to stop
        // and its loop ends.
        supervised.abort();
    }
}
