//! Periodic work. Every worker process ticks; the first to claim a period enqueues its job in
//! the same transaction, so each period runs once however many workers there are.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use schema::jobs::{DomainSweep, Housekeeping, Job, enqueue};
use sqlx::PgPool;
use std::time::Duration;

/// How often a worker looks for a period to start.
pub const TICK: Duration = Duration::from_secs(30);

/// At most this many automations watching a time-based segment are evaluated per tick per
/// worker (one statement each); the longest unevaluated go first.
pub const TIME_WATCHES_PER_TICK: i64 = 100;

/// The start of the period holding `now`.
pub fn period_start(now: DateTime<Utc>, every: TimeDelta) -> DateTime<Utc> {
    now.duration_trunc(every).unwrap_or(now)
}

/// Starts every schedule's current period that has not started yet.
pub async fn tick(pool: &PgPool, now: DateTime<Utc>) -> anyhow::Result<()> {
    let period = period_start(now, TimeDelta::hours(1));
    let mut tx = pool.begin().await?;
    if schema::store::schedule::claim_tick(&mut tx, Housekeeping::QUEUE, period).await? {
        enqueue(&mut tx, &Housekeeping { period }).await?;
    }
    if schema::store::schedule::claim_tick(&mut tx, DomainSweep::QUEUE, period).await? {
        enqueue(&mut tx, &DomainSweep { period }).await?;
    }
    tx.commit().await?;
    enrol_time_entries(pool, now).await?;
    wake_snoozes(pool).await?;
    refresh_email_metrics(pool, now).await?;
    Ok(())
}

/// How long one tick spends catching the email metrics' watermark up (a first refresh after an
/// upgrade takes many ticks; each step is its own transaction, so none is lost).
pub const METRICS_BUDGET: Duration = Duration::from_secs(10);

/// Moves the kept email metrics on to nearly now, step by step within [`METRICS_BUDGET`]: see
/// `schema::store::email_metrics`. Answers how many steps it took.
pub async fn refresh_email_metrics(pool: &PgPool, now: DateTime<Utc>) -> anyhow::Result<u32> {
    let started = std::time::Instant::now();
    let mut steps = 0;
    while started.elapsed() < METRICS_BUDGET {
        let mut tx = pool.begin().await?;
        let moved = schema::store::email_metrics::refresh(&mut tx, now).await?;
        tx.commit().await?;
        if !moved {
            break;
        }
        steps += 1;
    }
    Ok(steps)
}

/// `svc:segment.entered` for contacts that entered a time-based segment as time passed (each
/// tick, so at most a tick late): see `schema::store::segment_entries`. Answers how many runs
/// started.
pub async fn enrol_time_entries(pool: &PgPool, now: DateTime<Utc>) -> anyhow::Result<u64> {
    let mut tx = pool.begin().await?;
    let mut started = 0;
    for watch in schema::store::segment_entries::claim(&mut tx, TIME_WATCHES_PER_TICK).await? {
        started += schema::store::segment_entries::enrol_since(&mut tx, &watch, now).await?;
    }
    tx.commit().await?;
    Ok(started)
}

/// Wakes the Inbox conversations whose snooze is due (each tick, so at most a tick late): they
/// are `open` again, with their `inbox.conversation.status_changed` event.
pub async fn wake_snoozes(pool: &PgPool) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    let woken = schema::store::inbox_people::wake_due(&mut tx).await?;
    let events: Vec<_> = woken
        .iter()
        .map(|w| schema::inbox::Facts { team_id: w.team_id, conversation_id: w.conversation_id, channel_id: w.channel_id, subject: &w.subject }.status_changed("open", &w.previous_status))
        .collect();
    schema::store::events::emit(&mut tx, &events).await?;
    tx.commit().await?;
    Ok(())
}

/// Ticks until the process stops.
pub async fn run(pool: PgPool) {
    let mut interval = tokio::time::interval(TICK);
    loop {
        interval.tick().await;
        // A tick that cannot finish (a stalled connection) is abandoned; the next one runs.
        match tokio::time::timeout(TICK, tick(&pool, Utc::now())).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(error = format!("{error:#}"), "schedule tick failed"),
            Err(_) => tracing::warn!("a schedule tick did not finish within {TICK:?}; abandoned"),
        }
        crate::supervise::beat("schedules");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_starts_on_the_hour() {
        let now: DateTime<Utc> = "2026-11-21T10:42:17Z".parse().unwrap();
        assert_eq!(period_start(now, TimeDelta::hours(1)).to_rfc3339(), "2026-11-21T10:00:00+00:00");
    }
}
