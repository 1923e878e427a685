//! The in-process key cache: a bearer token's key is looked up in PostgreSQL once, then served
//! from memory until PostgreSQL says it changed.
//!
//! The guarantee: when a change that must take effect at once (a revoke, a suspension, a lowered
//! Inbox access) answers, every live serving process has already dropped the key, so the very
//! next request anywhere sees the change. It is kept like this:
//!
//! - Triggers on `api_keys` and `teams` send `key <id>` / `team <id>` on the `herald_auth`
//!   channel when a key or a team's standing changes, whatever wrote it; triggers on the OAuth
//!   tables and memberships send `oauth`, which drops every cached access token.
//! - Each process's listener task drops what a notification names. After committing such a
//!   change, the writer calls [`settle`]: it sends a `barrier <n>` notification and waits until
//!   every live process has recorded that it read a barrier at least as new. Notifications are
//!   delivered in commit order, so a process that has read the barrier has read the change.
//! - A process trusts its cache only while its listener works: each second it sends itself a
//!   ping through PostgreSQL, and when its own ping comes back it records a heartbeat. Three
//!   seconds without one and it stops using the cache (every request goes to PostgreSQL). A
//!   process whose heartbeat is ten seconds old is not waited for: it stopped trusting its cache
//!   seven seconds earlier.
//! - A lookup racing an eviction never stores what it read: each eviction bumps an epoch, and a
//!   lookup stores its answer only if the epoch did not move while it read.

use schema::store::auth::{self, KeyLookup};
use schema::store::oauth::TokenCaller;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// How long a process trusts its cache after its last heartbeat.
const TRUST: Duration = Duration::from_secs(3);
/// How often a process pings itself.
const PING_EVERY: Duration = Duration::from_secs(1);
/// The longest [`settle`] waits for a live process that does not answer (it then logs an error).
const SETTLE_LIMIT: Duration = Duration::from_secs(15);

/// The cache shared by a process's requests.
#[derive(Clone)]
pub struct KeyCache {
    inner: Arc<Inner>,
}

struct Inner {
    id: Uuid,
    pool: PgPool,
    entries: Mutex<Entries>,
    epoch: AtomicU64,
    trusted_until: Mutex<Option<Instant>>,
    /// Lookups that went to PostgreSQL.
    misses: AtomicU64,
}

impl Inner {
    /// The cached entries. A lock poisoned by a panic mid-change is recovered with every entry
    /// dropped (the next lookups go to PostgreSQL), never left to fail every later request.
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|poisoned| {
            self.entries.clear_poison();
            *self.trusted_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
            let mut entries = poisoned.into_inner();
            entries.evict("all");
            entries
        })
    }

    /// Until when the cache is trusted; a poisoned lock is recovered as untrusted.
    fn trusted(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.trusted_until.lock().unwrap_or_else(|poisoned| {
            self.trusted_until.clear_poison();
            let mut until = poisoned.into_inner();
            *until = None;
            until
        })
    }
}

#[derive(Default)]
struct Entries {
    by_token: HashMap<Vec<u8>, KeyLookup>,
    /// What OAuth access tokens act as (dropped together on any `oauth` change).
    by_access_token: HashMap<Vec<u8>, TokenCaller>,
}

impl Entries {
    fn evict(&mut self, what: &str) {
        match what.split_once(' ') {
            Some(("key", id)) => {
                let id: Option<Uuid> = id.parse().ok();
                self.by_token.retain(|_, key| Some(key.key_id) != id);
            }
            Some(("team", id)) => {
                let id: Option<Uuid> = id.parse().ok();
                self.by_token.retain(|_, key| Some(key.team_id) != id);
                self.by_access_token.retain(|_, token| Some(token.team_id) != id);
            }
            None if what == "oauth" => self.by_access_token.clear(),
            _ => {
                self.by_token.clear();
                self.by_access_token.clear();
            }
        }
    }
}

/// The listener's task; stop it with [`ListenerTask::close`].
pub struct ListenerTask {
    cache: KeyCache,
    reader: tokio::task::JoinHandle<()>,
    pinger: tokio::task::JoinHandle<()>,
}

impl ListenerTask {
    /// Stops listening and removes this process from the listeners (so no writer waits for it).
    pub async fn close(self) {
        self.reader.abort();
        self.pinger.abort();
        let _ = self.reader.await;
        let _ = self.pinger.await;
        self.cache.inner.entries().evict("all");
        *self.cache.inner.trusted() = None;
        if let Ok(mut conn) = self.cache.inner.pool.acquire().await
            && let Err(error) = auth::unregister_listener(&mut conn, self.cache.inner.id).await
        {
            tracing::warn!(%error, "leaving the key listeners failed");
        }
    }
}

impl KeyCache {
    /// Starts listening for key changes on `pool` (it holds one connection for that).
    pub async fn start(pool: PgPool) -> anyhow::Result<(Self, ListenerTask)> {
        let cache = KeyCache {
            inner: Arc::new(Inner {
                id: Uuid::new_v4(),
                pool: pool.clone(),
                entries: Mutex::new(Entries::default()),
                epoch: AtomicU64::new(0),
                trusted_until: Mutex::new(None),
                misses: AtomicU64::new(0),
            }),
        };
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen(auth::CHANNEL).await?;
        cache.resync(&mut listener).await?;
        let reader = tokio::spawn(cache.clone().read(listener));
        let pinger = tokio::spawn(cache.clone().ping());
        Ok((cache.clone(), ListenerTask { cache, reader, pinger }))
    }

    /// The key behind a token hash: from memory while the cache is trusted, else from
    /// PostgreSQL (and remembered).
    pub async fn find(&self, token_hash: &[u8]) -> sqlx::Result<Option<KeyLookup>> {
        let trusted = self.trusted();
        if trusted && let Some(key) = self.inner.entries().by_token.get(token_hash) {
            return Ok(Some(key.clone()));
        }
        self.inner.misses.fetch_add(1, Ordering::Relaxed);
        let epoch = self.inner.epoch.load(Ordering::SeqCst);
        let found = auth::find_key(&mut *self.inner.pool.acquire().await?, token_hash).await?;
        if trusted && let Some(key) = &found {
            let mut entries = self.inner.entries();
            if self.inner.epoch.load(Ordering::SeqCst) == epoch {
                entries.by_token.insert(token_hash.to_vec(), key.clone());
            }
        }
        Ok(found)
    }

    /// What a live OAuth access token acts as: from memory while the cache is trusted (and the
    /// token unexpired), else from PostgreSQL (and remembered).
    pub async fn find_token(&self, token_hash: &[u8]) -> sqlx::Result<Option<TokenCaller>> {
        let trusted = self.trusted();
        if trusted && let Some(token) = self.inner.entries().by_access_token.get(token_hash) {
            if token.expires_at > chrono::Utc::now() {
                return Ok(Some(token.clone()));
            }
        }
        self.inner.misses.fetch_add(1, Ordering::Relaxed);
        let epoch = self.inner.epoch.load(Ordering::SeqCst);
        let found = schema::store::oauth::access(&mut *self.inner.pool.acquire().await?, token_hash).await?;
        if trusted && let Some(token) = &found {
            let mut entries = self.inner.entries();
            if self.inner.epoch.load(Ordering::SeqCst) == epoch {
                entries.by_access_token.insert(token_hash.to_vec(), token.clone());
            }
        }
        Ok(found)
    }

    /// How many lookups went to PostgreSQL since the process started.
    pub fn misses(&self) -> u64 {
        self.inner.misses.load(Ordering::Relaxed)
    }

    /// Whether the listener has heartbeat recently enough for the cache to be used.
    fn trusted(&self) -> bool {
        self.inner.trusted().is_some_and(|until| Instant::now() < until)
    }

    fn evict(&self, what: &str) {
        let mut entries = self.inner.entries();
        self.inner.epoch.fetch_add(1, Ordering::SeqCst);
        entries.evict(what);
    }

    /// Trusts the cache until [`TRUST`] from now (called before recording a heartbeat, so the
    /// process stops trusting no later than three seconds after the heartbeat's time).
    fn extend_trust(&self) {
        *self.inner.trusted() = Some(Instant::now() + TRUST);
    }

    fn distrust(&self) {
        *self.inner.trusted() = None;
        self.evict("all");
    }

    /// After (re)connecting: forget everything, then take the latest barrier as read (anything
    /// committed before it is read fresh from now on).
    async fn resync(&self, listener: &mut PgListener) -> sqlx::Result<()> {
        self.distrust();
        self.extend_trust();
        auth::register_listener(&mut *listener, self.inner.id).await?;
        Ok(())
    }

    async fn read(self, mut listener: PgListener) {
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    let payload = notification.payload();
                    let heartbeat = match payload.split_once(' ') {
                        Some(("barrier", n)) => n.parse::<i64>().ok(),
                        Some(("ping", id)) if id == self.inner.id.to_string() => Some(0),
                        Some(("ping", _)) => None,
                        _ => {
                            self.evict(payload);
                            None
                        }
                    };
                    if let Some(seen) = heartbeat {
                        self.extend_trust();
                        if let Err(error) = auth::heartbeat(&mut listener, self.inner.id, seen).await {
                            tracing::warn!(%error, "recording the key listener's heartbeat failed");
                        }
                    }
                }
                Ok(None) => {
                    tracing::warn!("the key listener reconnected; its cache starts empty");
                    if let Err(error) = self.resync(&mut listener).await {
                        tracing::warn!(%error, "re-registering the key listener failed");
                        self.distrust();
                    }
                }
                Err(sqlx::Error::PoolClosed) => return self.distrust(),
                Err(error) => {
                    tracing::warn!(%error, "the key listener failed; requests read keys from PostgreSQL until it recovers");
                    self.distrust();
                    tokio::time::sleep(PING_EVERY).await;
                }
            }
        }
    }

    async fn ping(self) {
        let mut every = tokio::time::interval(PING_EVERY);
        loop {
            every.tick().await;
            let pinged = async {
                let mut conn = self.inner.pool.acquire().await?;
                auth::ping(&mut conn, self.inner.id).await
            };
            if let Err(error) = pinged.await {
                tracing::warn!(%error, "pinging the key listener failed");
            }
        }
    }
}

/// Waits until every live serving process has dropped what changed in a transaction that has
/// committed (see the module's documentation). Call it after the commit, before answering.
pub async fn settle(pool: &PgPool) -> sqlx::Result<()> {
    let started = Instant::now();
    let mut conn = pool.acquire().await?;
    let barrier = auth::send_barrier(&mut conn).await?;
    let mut pause = Duration::from_millis(2);
    loop {
        let behind = auth::listeners_behind(&mut conn, barrier).await?;
        if behind == 0 {
            return Ok(());
        }
        if started.elapsed() > SETTLE_LIMIT {
            tracing::error!(behind, barrier, "live processes did not confirm a key change in time");
            return Ok(());
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod poison_tests {
    use super::*;

    #[tokio::test]
    async fn a_cache_poisoned_by_a_panic_is_recovered_empty_and_untrusted() {
        let pool = sqlx::postgres::PgPoolOptions::new().connect_lazy("postgres://127.0.0.1/unused").unwrap();
        let inner = Arc::new(Inner {
            id: Uuid::nil(),
            pool,
            entries: Mutex::new(Entries::default()),
            epoch: AtomicU64::new(0),
            trusted_until: Mutex::new(Some(Instant::now() + Duration::from_secs(60))),
            misses: AtomicU64::new(0),
        });
        let poisoner = inner.clone();
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.entries.lock().unwrap();
            panic!("a panic while the entries are held");
        })
        .join();
        assert!(inner.entries.is_poisoned());
        assert!(inner.entries().by_token.is_empty());
        assert!(!inner.entries.is_poisoned());
        assert_eq!(*inner.trusted(), None, "a recovered cache is not trusted until it hears from PostgreSQL again");
    }
}
