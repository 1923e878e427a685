//! The model shared by the API and the job workers: migrations, identifiers and value types,
//! every SQL statement (in [`store`]), job payloads and [`jobs::enqueue`].

/// Declares a text enum stored and served as its kebab or snake names.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, poem_openapi::Enum, serde::Serialize, serde::Deserialize, sqlx::Type)]
        #[sqlx(type_name = "text")]
        pub enum $name {
            $($(#[$vmeta])* #[oai(rename = $text)] #[serde(rename = $text)] #[sqlx(rename = $text)] $variant),+
        }

        impl $name {
            /// The stored and served name.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// The value with this stored name.
            pub fn parse(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub mod automation;
pub mod domain;
pub mod email;
pub mod filter;
pub mod ids;
pub mod import;
pub mod inbox;
pub mod jobs;
pub mod links;
pub mod migrate;
pub mod model;
pub mod net;
pub mod page;
pub mod secret;
pub mod status;
pub mod store;
pub mod tracking;
pub mod when;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgPool};
use std::str::FromStr;
use std::time::Duration;

pub use sqlx;

/// Migrations of Herald's own tables, embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Opens the shared pool. `synchronous_commit` stays on: a committed row survives a crash.
/// JIT compilation is off: Herald's queries are short, and compiling a segment's filter costs
/// more than evaluating it.
pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    connect_waiting(url, max_connections, WORKER_ACQUIRE_TIMEOUT).await
}

/// How long a worker or command waits for a pool connection: past a short outage, since a
/// job waiting costs no one's patience.
pub const WORKER_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest the relaxed pool waits for a connection: its work (rate-limit grants, key
/// lookups, request logs) fails open or is dropped rather than holding a request.
pub const RELAXED_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

/// As [`connect_waiting`], for a process that may start before its database (a container
/// started beside PostgreSQL, a host rebooting): while PostgreSQL is out of reach
/// ([`is_unavailable`]) the connection is tried again every second, with a warning, for up to
/// five minutes; any other error (a wrong URL, a refused password) fails at once.
pub async fn connect_when_up(url: &str, max_connections: u32, acquire_timeout: Duration) -> anyhow::Result<PgPool> {
    use sqlx::ConnectOptions;
    let options = PgConnectOptions::from_str(url)?;
    let started = std::time::Instant::now();
    loop {
        match options.connect().await {
            Ok(probe) => {
                let _ = sqlx::Connection::close(probe).await;
                return connect_waiting(url, max_connections, acquire_timeout).await;
            }
            Err(error) if started.elapsed() < Duration::from_secs(300) && is_unavailable(&error) => {
                tracing::warn!(%error, "PostgreSQL is not reachable yet; trying again in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// As [`connect`], giving up on a connection after `acquire_timeout` (a request path answers
/// `503` then, well within a client's patience).
pub async fn connect_waiting(url: &str, max_connections: u32, acquire_timeout: Duration) -> anyhow::Result<PgPool> {
    open_pool(PgConnectOptions::from_str(url)?.options([("jit", "off")]), max_connections, acquire_timeout).await
}

/// Opens a small pool for bookkeeping whose loss in a crash is harmless (rate-limit buckets,
/// `last_used_at`): its commits do not wait for the WAL flush, which keeps them off the hot path.
pub async fn connect_relaxed(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    open_pool(PgConnectOptions::from_str(url)?.options([("synchronous_commit", "off"), ("jit", "off")]), max_connections, RELAXED_ACQUIRE_TIMEOUT).await
}

async fn open_pool(options: PgConnectOptions, max_connections: u32, acquire_timeout: Duration) -> anyhow::Result<PgPool> {
    Ok(PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(acquire_timeout)
        .connect_with(options.disable_statement_logging())
        .await?)
}

/// Whether a storage error says PostgreSQL is saturated or out of reach (no connection free
/// within the pool's timeout, a connection refused, lost, reset or cut short mid-handshake, the
/// server shutting down or out of connection slots) rather than that the request or the code is
/// wrong: such a request is answered `503` with `retry-after`, never `500`, and such a job
/// failure is retried within seconds rather than on the job's own backoff.
pub fn is_unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) => true,
        // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections.
        sqlx::Error::Database(e) => e.code().is_some_and(|code| matches!(code.as_ref(), "57P01" | "57P02" | "57P03" | "53300")),
        _ => false,
    }
}

/// Applies Herald's migrations and the job queue's tables. Safe to run any number of times.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    MIGRATOR.run(pool).await?;
    jobs::setup(pool).await?;
    Ok(())
}
