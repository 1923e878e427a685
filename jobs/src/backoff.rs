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

/// Postpones the job `id` by the backoff for `attempt` and returns `error` for the worker to
/// record as the failure.
pub async fn retry_later(pool: &PgPool, id: &PgTaskId, attempt: usize, error: anyhow::Error) -> BoxDynError {
    let wait = delay(attempt, Duration::from_secs(30), Duration::from_secs(3600));
    let run_at = chrono::Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default();
    let postponed = async {
        let mut conn = pool.acquire().await?;
        schema::store::jobs::postpone(&mut conn, &id.to_string(), run_at).await
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
}
