//! The webhook dispatcher: leases due deliveries, POSTs each signed envelope to its endpoint,
//! and records every attempt. Each delivery runs on its own task under a process-wide limit and
//! a per-endpoint limit, so a slow or dead endpoint never holds up another's deliveries.

use base64::Engine;
use chrono::Utc;
use schema::store::webhooks::{self, Attempt, Due};
use serde_json::json;
use sqlx::PgPool;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, mpsc};

/// The `user-agent` of every delivery.
pub const USER_AGENT: &str = "Service-Webhooks/1.0";
/// Most response bytes kept on an attempt.
const KEPT_RESPONSE: usize = 2048;

/// How webhooks are delivered.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// `HERALD_WEBHOOK_RETRY_SCHEDULE`: the wait before each retry; the delivery fails once it
    /// is spent.
    pub retry_schedule: Vec<Duration>,
    /// `HERALD_WEBHOOK_TIMEOUT_SECONDS`: connecting and answering.
    pub timeout: Duration,
    /// `HERALD_WEBHOOK_ALLOW_PRIVATE`: deliver to loopback, private and link-local addresses.
    pub allow_private: bool,
    /// `HERALD_WEBHOOK_CONCURRENCY`: deliveries in flight in this process.
    pub concurrency: usize,
    /// Deliveries in flight to one endpoint.
    pub per_endpoint: usize,
    /// `HERALD_WEBHOOK_DISABLE_AFTER`: an endpoint failing every delivery this long is disabled.
    pub disable_after: Duration,
}

/// The body and headers of one delivery.
pub struct Signed {
    pub body: Vec<u8>,
    pub timestamp: i64,
    /// `v1,<base64>` entries separated by spaces, one per signing key.
    pub signature: String,
}

/// Builds the envelope `{ type, created_at, data }` and signs `<id>.<timestamp>.<body>` with
/// HMAC-SHA256 under each key.
pub fn sign(due: &Due, timestamp: i64) -> Signed {
    let body = serde_json::to_vec(&json!({
        "type": due.event_type,
        "created_at": due.event_created_at,
        "data": due.event_data,
    }))
    .expect("a JSON value serializes");
    let mut content = format!("{}.{timestamp}.", due.event_id).into_bytes();
    content.extend_from_slice(&body);
    let signature = std::iter::once(&due.signing_key)
        .chain(due.previous_signing_key.as_ref())
        .map(|key| {
            let tag = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key), &content);
            format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(tag.as_ref()))
        })
        .collect::<Vec<_>>()
        .join(" ");
    Signed { body, timestamp, signature }
}

/// Runs the dispatcher until `shutdown` resolves; in-flight deliveries finish first.
pub async fn run(pool: PgPool, settings: WebhookSettings, shutdown: impl Future<Output = ()> + Send + 'static) {
    let settings = Arc::new(settings);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout)
        .pool_max_idle_per_host(settings.per_endpoint)
        .build()
        .expect("the HTTP client builds");
    let slots = Arc::new(Semaphore::new(settings.concurrency));
    let (results, mut received) = mpsc::channel::<Attempt>(settings.concurrency * 2);
    let recorder = {
        let (pool, settings) = (pool.clone(), settings.clone());
        tokio::spawn(async move {
            while let Some(first) = received.recv().await {
                let mut batch = vec![first];
                while batch.len() < 500 {
                    match received.try_recv() {
                        Ok(more) => batch.push(more),
                        Err(_) => break,
                    }
                }
                record(&pool, &batch, &settings).await;
            }
        })
    };
    tokio::pin!(shutdown);
    let lease_seconds = settings.timeout.as_secs_f64() + 30.0;
    loop {
        crate::supervise::beat("webhooks");
        // Lease in batches: while most slots are busy, let a few more finish first.
        if slots.available_permits() < settings.concurrency / 4 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let free = slots.available_permits();
        let due = if free == 0 {
            Vec::new()
        } else {
            match lease(&pool, free, &settings, lease_seconds).await {
                Ok(due) => due,
                Err(error) => {
                    tracing::error!(%error, "leasing webhook deliveries failed");
                    Vec::new()
                }
            }
        };
        let idle = due.is_empty();
        for delivery in due {
            let permit = slots.clone().acquire_owned().await.expect("the semaphore stays open");
            let (client, settings, results) = (client.clone(), settings.clone(), results.clone());
            tokio::spawn(async move {
                let attempt = attempt(&client, &settings, delivery).await;
                let _ = results.send(attempt).await;
                drop(permit);
            });
        }
        let wait = if idle { Duration::from_millis(50) } else { Duration::ZERO };
        tokio::select! {
            _ = &mut shutdown => break,
            _ = tokio::time::sleep(wait) => {}
        }
    }
    // Let in-flight deliveries finish, then the recorder drains.
    let _ = slots.acquire_many(settings.concurrency as u32).await;
    drop(results);
    let _ = recorder.await;
}

/// How long one round of the dispatcher may take before readiness calls it stuck.
pub const ROUND_BOUND: Duration = Duration::from_secs(60);

/// How long a lease may take: a lease that cannot finish (a stalled connection) is abandoned,
/// and its deliveries, if the lease did commit, come due again when it ends.
const LEASE_TIMEOUT: Duration = Duration::from_secs(20);

async fn lease(pool: &PgPool, free: usize, settings: &WebhookSettings, lease_seconds: f64) -> anyhow::Result<Vec<Due>> {
    let leased = tokio::time::timeout(LEASE_TIMEOUT, async {
        let mut conn = pool.acquire().await?;
        webhooks::lease_due(&mut conn, free as i64, settings.per_endpoint as i64, lease_seconds).await
    })
    .await;
    Ok(leased.map_err(|_| anyhow::anyhow!("leasing did not finish within {LEASE_TIMEOUT:?}"))??)
}

async fn record(pool: &PgPool, batch: &[Attempt], settings: &WebhookSettings) {
    // A failure here leaves the deliveries leased; they are attempted again once the lease ends.
    let result = async {
        let mut conn = pool.acquire().await?;
        webhooks::record(&mut conn, batch, settings.disable_after.as_secs_f64()).await
    }
    .await;
    if let Err(error) = result {
        tracing::error!(%error, attempts = batch.len(), "recording webhook attempts failed");
    }
}

/// One POST: 2xx succeeds; anything else, a timeout or a refused connection is retried on the
/// schedule.
async fn attempt(client: &reqwest::Client, settings: &WebhookSettings, due: Due) -> Attempt {
    let started = Instant::now();
    let signed = sign(&due, Utc::now().timestamp());
    let outcome = post(client, settings, &due, signed).await;
    let latency_ms = started.elapsed().as_millis().min(i32::MAX as u128) as i32;
    let (status_code, error, response_body) = match outcome {
        Ok((status, body)) => (Some(status as i32), None, Some(body)),
        Err(error) => (None, Some(error), None),
    };
    let succeeded = status_code.is_some_and(|code| (200..300).contains(&code));
    let retry_after = if succeeded || due.replaying { None } else { settings.retry_schedule.get(due.attempts.max(0) as usize).copied() };
    Attempt { delivery_id: due.delivery_id, replay: due.replaying, endpoint_id: due.endpoint_id, status_code, error, response_body, latency_ms, succeeded, retry_after }
}

async fn post(client: &reqwest::Client, settings: &WebhookSettings, due: &Due, signed: Signed) -> Result<(u16, String), String> {
    let url = reqwest::Url::parse(&due.url).map_err(|_| "the endpoint URL is not a URL".to_string())?;
    if !settings.allow_private {
        check_public(&url).await?;
    }
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("user-agent", USER_AGENT)
        .header("hook-id", due.event_id.to_string())
        .header("hook-timestamp", signed.timestamp.to_string())
        .header("hook-signature", &signed.signature)
        // The same values under Standard Webhooks' names, which the `standardwebhooks` and
        // `svix` libraries and the Resend SDKs' verifiers read.
        .header("webhook-id", due.event_id.to_string())
        .header("webhook-timestamp", signed.timestamp.to_string())
        .header("webhook-signature", &signed.signature)
        .body(signed.body)
        .send()
        .await
        .map_err(|e| describe(&e))?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap_or_default();
    let kept = String::from_utf8_lossy(&bytes[..bytes.len().min(KEPT_RESPONSE)]).into_owned();
    Ok((status, kept))
}

fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "timed out".into()
    } else if error.is_connect() {
        "connection refused or unreachable".into()
    } else {
        error.to_string()
    }
}

/// Refuses a host that resolves to a loopback, private or link-local address (checked at each
/// attempt, so a name that later points inside is caught).
pub async fn check_public(url: &reqwest::Url) -> Result<(), String> {
    let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_string();
    let port = url.port_or_known_default().unwrap_or(443);
    schema::net::resolve_public(&host, port, false).await?;
    Ok(())
}
