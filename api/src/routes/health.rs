//! Liveness and readiness, unauthenticated.

use crate::http::fields::Nullable;
use crate::routes::Tag;
use crate::state::AppState;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use std::time::{Duration, Instant};

pub struct HealthApi;

/// The process is up.
#[derive(Object)]
pub struct Health {
    /// Always `ok`.
    pub status: String,
    /// Herald's version.
    pub version: String,
    /// The deployment name (`HERALD_ENV`).
    pub env: String,
    /// Request logs this process could not write since it started (PostgreSQL refused them or
    /// could not be reached); anything above 0 is in the process's error log.
    pub request_logs_dropped: u64,
}

/// One readiness check.
#[derive(Object)]
pub struct Check {
    /// `database`, `workers`, `queues` or `loops`.
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// How long it took.
    #[oai(rename = "durationMs")]
    pub duration_ms: u64,
    /// Why it failed.
    pub error: Nullable<String>,
}

/// Whether the service can do its work.
#[derive(Object)]
pub struct Readiness {
    /// `ok`, or `degraded` when a check failed.
    pub status: String,
    /// Herald's version.
    pub version: String,
    /// The deployment name (`HERALD_ENV`).
    pub env: String,
    /// Every check with its result.
    pub checks: Vec<Check>,
    /// Names of the failed checks.
    pub failed: Vec<String>,
}

#[derive(ApiResponse)]
pub enum ReadyResponse {
    /// Every check passed.
    #[oai(status = 200)]
    Ready(Json<Readiness>),
    /// A check failed.
    #[oai(status = 503)]
    Degraded(Json<Readiness>),
}

/// A check gives up after this long.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

#[poem_openapi::OpenApi(tag = "Tag::Operations")]
impl HealthApi {
    /// Liveness: answers while the process runs.
    #[oai(path = "/health", method = "get", operation_id = "get-health")]
    async fn health(&self, state: Data<&AppState>) -> Json<Health> {
        Json(Health {
            status: "ok".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            env: state.config.env.clone(),
            request_logs_dropped: state.logs.dropped(),
        })
    }

    /// Readiness: the database answers, a worker reported within 15 s, no queue's due jobs wait over 30 s unserved, and no loop is stuck.
    #[oai(path = "/ready", method = "get", operation_id = "get-ready")]
    async fn ready(&self, state: Data<&AppState>) -> ReadyResponse {
        let pool = &state.pool;
        let database = check("database", async {
            let mut conn = pool.acquire().await?;
            sqlx::query("SELECT 1").execute(&mut *conn).await?;
            Ok(())
        })
        .await;
        let workers = check("workers", async {
            let mut conn = pool.acquire().await?;
            let live = schema::store::jobs::live_workers(&mut conn, 3.0 * jobs::runtime::HEARTBEAT.as_secs_f64()).await?;
            anyhow::ensure!(live > 0, "no job worker has reported recently");
            Ok(())
        })
        .await;
        let queues = check("queues", async {
            let mut conn = pool.acquire().await?;
            let health = schema::store::jobs::queue_health(&mut conn, 3.0 * jobs::runtime::HEARTBEAT.as_secs_f64()).await?;
            let stranded: Vec<String> = health
                .iter()
                .filter(|q| q.live_workers == 0 && q.oldest_due_seconds.is_some_and(|age| age > STRANDED_AFTER_SECONDS))
                .map(|q| format!("{} ({} due, the oldest for {:.0} s)", q.queue, q.due, q.oldest_due_seconds.unwrap_or_default()))
                .collect();
            anyhow::ensure!(stranded.is_empty(), "due jobs with no live worker: {}", stranded.join(", "));
            Ok(())
        })
        .await;
        let loops = check("loops", async {
            let mut conn = pool.acquire().await?;
            let stuck = schema::store::jobs::stuck_loops(&mut conn, 3.0 * jobs::supervise::REPORT_EVERY.as_secs_f64()).await?;
            let named: Vec<String> = stuck
                .iter()
                .map(|l| format!("{} in {} (no round for {:.0} s, bound {:.0} s)", l.loop_name, l.process, l.since_seconds, l.bound_seconds))
                .collect();
            anyhow::ensure!(named.is_empty(), "stuck loops: {}", named.join(", "));
            Ok(())
        })
        .await;
        let checks = vec![database, workers, queues, loops];
        let failed: Vec<String> = checks.iter().filter(|c| !c.ok).map(|c| c.name.clone()).collect();
        let body = Readiness {
            status: if failed.is_empty() { "ok" } else { "degraded" }.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            env: state.config.env.clone(),
            checks,
            failed,
        };
        if body.failed.is_empty() { ReadyResponse::Ready(Json(body)) } else { ReadyResponse::Degraded(Json(body)) }
    }
}

/// How long a due job may wait with no live worker before readiness fails: longer than a
/// worker's restart after a storage error.
const STRANDED_AFTER_SECONDS: f64 = 30.0;

async fn check(name: &str, probe: impl Future<Output = anyhow::Result<()>>) -> Check {
    let started = Instant::now();
    let outcome = match tokio::time::timeout(CHECK_TIMEOUT, probe).await {
        Ok(outcome) => outcome,
        Err(_) => Err(anyhow::anyhow!("timed out after {CHECK_TIMEOUT:?}")),
    };
    Check {
        name: name.into(),
        ok: outcome.is_ok(),
        duration_ms: started.elapsed().as_millis() as u64,
        error: outcome.err().map(|e| format!("{e:#}")).into(),
    }
}
