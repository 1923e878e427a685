//! Durable retries: a failing job moves its own next run later, then reports the failure, so
//! the wait survives restarts (apalis-postgres alone retries a failed job at once).

use apalis::prelude::BoxDynError;
use apalis_postgres::PgTaskId;
use sqlx::PgPool;
use std::time::Duration;

/// Delay before run number `attempt + 1`: `base * 2^(attempt-1)`, at most `cap`.
pub fn delay(attempt: usize, base: Duration, cap: Duration) -> Duration {
    let exponent = attempt.saturating_sub(1).min(20) as u32;
    base.saturating_mul(2u32.saturating_pow(exponent)).min(cap)
}

/// Whether `error` came from PostgreSQL being out of reach or saturated ([`schema::is_unavailable`]).
pub fn is_unavailable(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.downcast_ref::<sqlx::Error>().is_some_and(schema::is_unavailable))
}

/// The wait before run `attempt + 1` of a job that failed with `error`: 30 s doubled per run up
/// to an hour, or, when PostgreSQL was out of reach (an outage, a restart), 1 s doubled up to
/// 30 s, so that the work resumes within seconds of the database coming back.
pub fn retry_delay(attempt: usize, error: &anyhow::Error) -> Duration {
    if is_unavailable(error) { delay(attempt, Duration::from_secs(1), Duration::from_secs(30)) } else { delay(attempt, Duration::from_secs(30), Duration::from_secs(3600)) }
}

/// Postpones the job `id` by the backoff for `attempt` and returns `error` for the worker to
/// record as the failure.
pub async fn retry_later(pool: &PgPool, id: &PgTaskId, attempt: usize, error: anyhow::Error) -> BoxDynError {
    let wait = retry_delay(attempt, &error);
    let postponed = async {
        let mut conn = pool.acquire().await?;
        schema::store::jobs::postpone(&mut conn, &id.to_string(), wait).await
    }
    .await;
    if let Err(postpone_error) = postponed {
        tracing::error!(%postpone_error, job = %id, "could not postpone a failed job; it will retry at once");
    }
    format!("{error:#}").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_retry_waits_twice_as_long_up_to_the_cap() {
        let base = Duration::from_secs(30);
        let cap = Duration::from_secs(3600);
        assert_eq!(delay(1, base, cap), Duration::from_secs(30));
        assert_eq!(delay(2, base, cap), Duration::from_secs(60));
        assert_eq!(delay(3, base, cap), Duration::from_secs(120));
        assert_eq!(delay(30, base, cap), cap);
    }

    #[test]
    fn a_job_that_failed_because_postgresql_was_away_retries_within_seconds() {
        let outage = anyhow::Error::from(sqlx::Error::PoolTimedOut).context("reading the page's emails");
        assert_eq!(retry_delay(1, &outage), Duration::from_secs(1));
        assert_eq!(retry_delay(3, &outage), Duration::from_secs(4));
        assert_eq!(retry_delay(30, &outage), Duration::from_secs(30));
        let other = anyhow::anyhow!("the message could not be built");
        assert_eq!(retry_delay(1, &other), Duration::from_secs(30));
    }
}
