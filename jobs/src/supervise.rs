//! Loops that do not die for good. Each background loop of a worker process (the webhook
//! dispatcher, the automation executor, the schedules) runs under [`supervise`]: when it ends
//! before shutdown, by returning or by a panic, it is started again after a capped, jittered
//! backoff. The job queues' workers are restarted by the apalis monitor the same way (see
//! [`crate::runtime`]). Every restart is counted per loop, for `/metrics`.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;
use tokio::sync::watch;

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
/// ends before that. A loop that ran for a minute before it ended starts its backoff over.
pub async fn supervise<F, L>(name: &'static str, mut stopped: watch::Receiver<bool>, start: F)
where
    F: Fn() -> L,
    L: Future<Output = ()> + Send + 'static,
{
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
            tokio::spawn(supervise("test-panicking-loop", stopped, move || {
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
