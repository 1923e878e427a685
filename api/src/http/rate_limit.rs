//! The per-team token bucket, shared by every process through PostgreSQL without a write per
//! request: a process takes tokens from the team's bucket in grants and spends them locally.
//!
//! - A grant is what the requests queued for the team in this process need right now (so a
//!   burst costs one round trip, and nothing is taken that no request is waiting for); above
//!   100 requests a second, also a twentieth of the last second's requests, so a busy team
//!   costs about twenty round trips a second per process.
//! - A grant is spent within its lifetime, `max(1, capacity / 10) / refill` seconds (0.1 s at
//!   the default 10 and 10), or lapses. So in any window of `T` seconds a team gets at most
//!   `capacity + refill × T + max(1, capacity / 10)` requests across all processes: one token of
//!   slack at the defaults.
//! - When the bucket is empty the process remembers when the next token is due and refuses
//!   locally until then.

use schema::store::auth;
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Every team's bucket as this process sees it.
pub struct Buckets {
    pool: PgPool,
    capacity: f64,
    refill: f64,
    teams: Mutex<HashMap<Uuid, Arc<TeamBucket>>>,
    /// Takes from PostgreSQL since the process started.
    takes: AtomicU64,
}

struct TeamBucket {
    /// Requests of this team waiting for a grant (the next grant's size).
    waiting: AtomicU32,
    lease: Mutex<Lease>,
    /// Held by the one request asking PostgreSQL for the team's next grant.
    refill: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Lease {
    /// Tokens taken from the bucket and not yet spent.
    held: u32,
    /// When the held tokens lapse.
    expires: Option<Instant>,
    /// The bucket was empty: no token is due before then.
    empty_until: Option<Instant>,
    /// The bucket's tokens after the last take.
    bucket: f64,
    /// Requests allowed in the current second, and in the one before.
    second_started: Option<Instant>,
    this_second: u32,
    last_second: u32,
}

/// The answer for one request.
#[derive(Debug, Clone, Copy)]
pub struct Verdict {
    pub allowed: bool,
    /// Tokens this team has left as far as this process knows (held plus the bucket's).
    pub remaining: f64,
    /// Whole seconds until a token is due (for `Retry-After` on a refusal).
    pub retry_after: u64,
}

impl Buckets {
    /// Buckets of `capacity` tokens refilled at `refill` a second, kept in `pool`.
    pub fn new(pool: PgPool, capacity: f64, refill: f64) -> Self {
        Self { pool, capacity, refill, teams: Mutex::new(HashMap::new()), takes: AtomicU64::new(0) }
    }

    /// How many takes went to PostgreSQL since the process started.
    pub fn takes(&self) -> u64 {
        self.takes.load(Ordering::Relaxed)
    }

    /// Takes one token for a request of `team_id`: from the process's lease when it holds one
    /// (a lock held for nanoseconds), else from PostgreSQL, one request per team at a time
    /// while the others queue for the grant it brings.
    pub async fn take(&self, team_id: Uuid) -> sqlx::Result<Verdict> {
        // A lock poisoned by a panic elsewhere holds nothing half-changed that matters: recover it.
        let bucket = self.teams.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(team_id).or_default().clone();
        if let Some(verdict) = bucket.local(Instant::now()) {
            return Ok(verdict);
        }
        bucket.waiting.fetch_add(1, Ordering::SeqCst);
        let _refilling = bucket.refill.lock().await;
        let waiting = bucket.waiting.fetch_sub(1, Ordering::SeqCst);
        // Whoever held the refill before may have brought enough for this request too.
        let now = Instant::now();
        if let Some(verdict) = bucket.local(now) {
            return Ok(verdict);
        }
        let recent = bucket.lease().recent_rate(now);
        let want = waiting.max(recent / 20).clamp(1, self.capacity.floor().clamp(1.0, i32::MAX as f64) as u32);
        self.takes.fetch_add(1, Ordering::Relaxed);
        let grant = auth::take_tokens(&mut *self.pool.acquire().await?, team_id, want as i32, self.capacity, self.refill).await?;
        let mut lease = bucket.lease();
        lease.bucket = grant.tokens;
        if grant.granted < 1 {
            let due = Duration::from_secs_f64(((1.0 - grant.tokens) / self.refill).max(0.001));
            lease.empty_until = Some(now + due);
            return Ok(Verdict { allowed: false, remaining: grant.tokens, retry_after: whole_seconds(due) });
        }
        lease.empty_until = None;
        lease.held = grant.granted as u32 - 1;
        lease.expires = Some(now + Duration::from_secs_f64((self.capacity / 10.0).max(1.0) / self.refill));
        Ok(lease.allow(now))
    }
}

impl TeamBucket {
    /// The lease; one poisoned by a panic is recovered empty (the next request asks PostgreSQL).
    fn lease(&self) -> std::sync::MutexGuard<'_, Lease> {
        self.lease.lock().unwrap_or_else(|poisoned| {
            self.lease.clear_poison();
            let mut lease = poisoned.into_inner();
            *lease = Lease::default();
            lease
        })
    }

    /// The answer from what the process holds: a held token, or a refusal while the bucket is
    /// known to be empty; `None` when PostgreSQL must be asked.
    fn local(&self, now: Instant) -> Option<Verdict> {
        let mut lease = self.lease();
        if lease.held > 0 && lease.expires.is_some_and(|expires| now < expires) {
            lease.held -= 1;
            return Some(lease.allow(now));
        }
        lease.held = 0;
        let until = lease.empty_until.filter(|until| now < *until)?;
        Some(Verdict { allowed: false, remaining: lease.bucket, retry_after: whole_seconds(until - now) })
    }
}

impl Default for TeamBucket {
    fn default() -> Self {
        Self { waiting: AtomicU32::new(0), lease: Mutex::new(Lease::default()), refill: tokio::sync::Mutex::new(()) }
    }
}

impl Lease {
    fn allow(&mut self, now: Instant) -> Verdict {
        self.roll(now);
        self.this_second += 1;
        Verdict { allowed: true, remaining: self.held as f64 + self.bucket, retry_after: 0 }
    }

    /// Requests allowed in the last second when that is at least 100 (below, grants follow the
    /// queue alone, which wastes nothing).
    fn recent_rate(&mut self, now: Instant) -> u32 {
        self.roll(now);
        if self.last_second >= 100 { self.last_second } else { 0 }
    }

    fn roll(&mut self, now: Instant) {
        let started = *self.second_started.get_or_insert(now);
        let elapsed = now - started;
        if elapsed >= Duration::from_secs(1) {
            self.last_second = if elapsed < Duration::from_secs(2) { self.this_second } else { 0 };
            self.this_second = 0;
            self.second_started = Some(now);
        }
    }
}

fn whole_seconds(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

/// Requests let through unmetered because PostgreSQL could not be reached.
static FAIL_OPEN: AtomicU64 = AtomicU64::new(0);

/// Counts one request let through while the limiter could not reach PostgreSQL.
pub fn count_fail_open() {
    FAIL_OPEN.fetch_add(1, Ordering::Relaxed);
}

/// Requests let through unmetered since this process started.
pub fn fail_open_count() -> u64 {
    FAIL_OPEN.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_poisoned_by_a_panic_is_recovered_empty_instead_of_failing_every_later_request() {
        let bucket = std::sync::Arc::new(TeamBucket { waiting: AtomicU32::new(0), lease: Mutex::new(Lease::default()), refill: tokio::sync::Mutex::new(()) });
        bucket.lease().held = 5;
        let poisoner = bucket.clone();
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.lease.lock().unwrap();
            panic!("a panic while the lease is held");
        })
        .join();
        assert!(bucket.lease.is_poisoned());
        assert_eq!(bucket.lease().held, 0, "recovered empty: the next request asks PostgreSQL");
        assert!(!bucket.lease.is_poisoned());
    }
}
