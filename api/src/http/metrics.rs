//! Operator metrics: `GET /metrics` in the Prometheus text exposition format (0.0.4).
//!
//! Two ways in (see `docs/decisions.md`, "Operator metrics"): `HERALD_METRICS_ADDR` binds a
//! second listener that serves only `/metrics`, with no credential, for a private network; and
//! `HERALD_METRICS_TOKEN` opens `/metrics` on the API listener to `Authorization: Bearer
//! <token>`. With neither, the API listener answers `/metrics` as an unknown path.
//!
//! Request counts and latencies are recorded in this process by the gateway ([`record`]), as
//! every Prometheus client does: each process is scraped. Queue depths are read from
//! PostgreSQL at scrape time with bounded queries (`schema::store::metrics`).

use crate::http::error::{ApiError, ErrorKind};
use crate::http::operations::{OPERATIONS, Operation};
use crate::state::AppState;
use poem::http::{Method, StatusCode, header};
use poem::listener::{Acceptor, Listener, TcpAcceptor, TcpListener};
use poem::web::Data;
use poem::{Endpoint, EndpointExt, Request, Response, Route, Server, get, handler};
use schema::store::metrics as store;
use sha2::{Digest, Sha256};
use std::fmt::{Display, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

/// The exposition format's media type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds of the latency histogram's buckets, in microseconds (1 ms to 10 s).
const BUCKETS_MICROS: [u64; 13] =
    [1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000];

/// The `operation` label of a request the operation table does not route (unknown paths,
/// wrong methods, `/openapi.json`, `/metrics`).
pub const UNMATCHED: &str = "unmatched";

/// The window of `herald_emails_last_hour`.
const EMAIL_WINDOW: chrono::TimeDelta = chrono::TimeDelta::hours(1);

/// How long the scrape-time queries may take together.
const DATABASE_TIMEOUT: Duration = Duration::from_secs(5);

/// One operation's requests: a latency histogram in atomics, and counts per method and status
/// behind a lock held for a few comparisons (a handful of pairs per operation).
struct Series {
    /// Requests per bucket (not cumulative); the last one is above every bound.
    buckets: [AtomicU64; BUCKETS_MICROS.len() + 1],
    sum_micros: AtomicU64,
    statuses: Mutex<Vec<(&'static str, u16, u64)>>,
}

impl Series {
    fn new() -> Self {
        Self { buckets: std::array::from_fn(|_| AtomicU64::new(0)), sum_micros: AtomicU64::new(0), statuses: Mutex::new(Vec::new()) }
    }
}

/// Every operation's series, by position in [`OPERATIONS`]; the last is [`UNMATCHED`].
static HTTP: LazyLock<Box<[Series]>> = LazyLock::new(|| (0..=OPERATIONS.len()).map(|_| Series::new()).collect());

/// The position of `operation` in the table: the reference the gateway handed out, or the
/// operation with its id when it is a copy.
fn index_of(operation: &Operation) -> usize {
    OPERATIONS
        .iter()
        .position(|o| std::ptr::eq(o, operation))
        .or_else(|| OPERATIONS.iter().position(|o| o.id == operation.id))
        .unwrap_or(OPERATIONS.len())
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// Counts one request: its operation (`None`: [`UNMATCHED`]), method, status and latency.
/// Allocates nothing once an operation has seen its method and status.
pub fn record(operation: Option<&Operation>, method: &Method, status: StatusCode, elapsed: Duration) {
    let series = &HTTP[operation.map_or(OPERATIONS.len(), index_of)];
    let micros = elapsed.as_micros().min(u64::MAX as u128) as u64;
    let bucket = BUCKETS_MICROS.partition_point(|&bound| bound < micros);
    series.buckets[bucket].fetch_add(1, Ordering::Relaxed);
    series.sum_micros.fetch_add(micros, Ordering::Relaxed);
    let (method, status) = (method_label(method), status.as_u16());
    let mut statuses = series.statuses.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match statuses.iter_mut().find(|(m, s, _)| *m == method && *s == status) {
        Some((_, _, count)) => *count += 1,
        None => statuses.push((method, status, 1)),
    }
}

/// A text exposition being written.
#[derive(Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// Starts a metric family: its `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample line.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{label}=\"{}\"", escape_label_value(value));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// A label value as the format wants it: backslash, double quote and line feed escaped.
pub fn escape_label_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// HELP text: backslash and line feed escaped.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A float as the format writes it (`+Inf`, `-Inf`, `NaN`).
fn float(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        value.to_string()
    }
}

fn write_http(out: &mut Exposition) {
    let name_of = |index: usize| OPERATIONS.get(index).map_or(UNMATCHED, |o| o.id);
    out.family(
        "herald_http_requests_total",
        "counter",
        "HTTP requests this process answered, by operation id (or `unmatched`), method and status.",
    );
    for (index, series) in HTTP.iter().enumerate() {
        let mut statuses = series.statuses.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        statuses.sort_unstable();
        for (method, status, count) in statuses {
            let status = status.to_string();
            out.sample("herald_http_requests_total", &[("operation", name_of(index)), ("method", method), ("status", &status)], count);
        }
    }
    out.family(
        "herald_http_request_duration_seconds",
        "histogram",
        "Time from a request's arrival to its response's headers, by operation id (or `unmatched`).",
    );
    for (index, series) in HTTP.iter().enumerate() {
        let counts: Vec<u64> = series.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            continue;
        }
        let operation = name_of(index);
        let mut cumulative = 0;
        for (bound, count) in BUCKETS_MICROS.iter().zip(&counts) {
            cumulative += count;
            let le = float(*bound as f64 / 1e6);
            out.sample("herald_http_request_duration_seconds_bucket", &[("operation", operation), ("le", &le)], cumulative);
        }
        out.sample("herald_http_request_duration_seconds_bucket", &[("operation", operation), ("le", "+Inf")], total);
        let sum = series.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        out.sample("herald_http_request_duration_seconds_sum", &[("operation", operation)], float(sum));
        out.sample("herald_http_request_duration_seconds_count", &[("operation", operation)], total);
    }
}

/// What PostgreSQL says at scrape time.
struct Database {
    jobs: Vec<store::JobCount>,
    emails: Vec<store::StatusCount>,
    webhooks: store::WebhookBacklog,
    imports: Vec<store::StatusCount>,
}

async fn read_database(state: &AppState) -> anyhow::Result<Database> {
    let mut conn = state.pool.acquire().await?;
    Ok(Database {
        jobs: store::unfinished_jobs(&mut conn).await?,
        emails: store::recent_emails(&mut conn, chrono::Utc::now() - EMAIL_WINDOW).await?,
        webhooks: store::webhook_backlog(&mut conn).await?,
        imports: store::imports(&mut conn).await?,
    })
}

/// Counts by label, every known label value first (at 0 when absent) so a series does not
/// vanish when its count drops to nothing.
fn with_zeros<'a>(known: &[&'a str], found: &'a [store::StatusCount]) -> Vec<(&'a str, i64)> {
    let mut counts: Vec<(&str, i64)> = known.iter().map(|k| (*k, 0)).collect();
    for row in found {
        match counts.iter_mut().find(|(k, _)| *k == row.status) {
            Some((_, count)) => *count = row.count,
            None => counts.push((&row.status, row.count)),
        }
    }
    counts
}

fn write_database(out: &mut Exposition, db: &Database) {
    out.family(
        "herald_jobs",
        "gauge",
        "Unfinished jobs by queue and state (pending, scheduled, queued, running, retrying, failed, killed); finished jobs are not counted.",
    );
    let mut jobs: Vec<(&str, &str, i64)> =
        schema::jobs::QUEUES.iter().flat_map(|q| store::JOB_STATES.iter().map(move |s| (*q, *s, 0))).collect();
    for row in &db.jobs {
        match jobs.iter_mut().find(|(q, s, _)| *q == row.queue && *s == row.state) {
            Some((_, _, count)) => *count = row.count,
            None => jobs.push((&row.queue, &row.state, row.count)),
        }
    }
    for (queue, state, count) in jobs {
        out.sample("herald_jobs", &[("queue", queue), ("state", state)], count);
    }

    out.family(
        "herald_emails_last_hour",
        "gauge",
        "Emails accepted in the last hour by their latest status (at most the newest 100000 are counted).",
    );
    for (status, count) in with_zeros(store::EMAIL_STATUSES, &db.emails) {
        out.sample("herald_emails_last_hour", &[("status", status)], count);
    }

    out.family(
        "herald_webhook_deliveries_pending",
        "gauge",
        "Webhook deliveries to enabled endpoints not yet succeeded or failed, retries waiting included.",
    );
    out.sample("herald_webhook_deliveries_pending", &[], db.webhooks.pending);
    out.family("herald_webhook_deliveries_due", "gauge", "Pending webhook deliveries whose attempt is due now or in flight.");
    out.sample("herald_webhook_deliveries_due", &[], db.webhooks.due);
    out.family(
        "herald_webhook_oldest_pending_seconds",
        "gauge",
        "How long the oldest due webhook delivery has waited past its due time; 0 when the dispatcher keeps up.",
    );
    out.sample("herald_webhook_oldest_pending_seconds", &[], float(db.webhooks.oldest_due_seconds));

    out.family("herald_contact_imports", "gauge", "Contact imports by status.");
    for (status, count) in with_zeros(store::IMPORT_STATUSES, &db.imports) {
        out.sample("herald_contact_imports", &[("status", status)], count);
    }
}

/// The whole exposition: this process's counters, then what PostgreSQL says. A database that
/// cannot answer within 5 s leaves its metrics out and `herald_database_up` at 0.
pub async fn render(state: &AppState) -> String {
    let mut out = Exposition::default();
    out.family("herald_build_info", "gauge", "Always 1, labelled with the running version.");
    out.sample("herald_build_info", &[("version", env!("CARGO_PKG_VERSION"))], 1);
    write_http(&mut out);
    out.family(
        "herald_request_logs_dropped_total",
        "counter",
        "Request logs this process could not write since it started (the error log says why).",
    );
    out.sample("herald_request_logs_dropped_total", &[], state.logs.dropped());
    out.family(
        "herald_loop_restarts_total",
        "counter",
        "Times a job queue's worker or a background loop of this process ended before shutdown (a storage error, a panic) and was started again.",
    );
    for (name, count) in jobs::supervise::restarts() {
        out.sample("herald_loop_restarts_total", &[("loop", name.as_str())], count);
    }
    out.family(
        "herald_rate_limit_fail_open_total",
        "counter",
        "Requests this process let through unmetered because the rate limiter could not reach PostgreSQL.",
    );
    out.sample("herald_rate_limit_fail_open_total", &[], crate::http::rate_limit::fail_open_count());
    let database = match tokio::time::timeout(DATABASE_TIMEOUT, read_database(state)).await {
        Ok(Ok(database)) => Some(database),
        Ok(Err(error)) => {
            tracing::warn!(error = format!("{error:#}"), "metrics could not read the database");
            None
        }
        Err(_) => {
            tracing::warn!("metrics gave up reading the database after 5 s");
            None
        }
    };
    out.family("herald_database_up", "gauge", "1 when this scrape read PostgreSQL, 0 when it could not.");
    out.sample("herald_database_up", &[], u8::from(database.is_some()));
    if let Some(database) = &database {
        write_database(&mut out, database);
    }
    out.finish()
}

async fn exposition(state: &AppState) -> Response {
    Response::builder().status(StatusCode::OK).content_type(CONTENT_TYPE).body(render(state).await)
}

/// Whether `given` is the configured token, in time that does not depend on where they differ.
fn token_matches(given: &str, expected: &str) -> bool {
    let (given, expected) = (Sha256::digest(given.as_bytes()), Sha256::digest(expected.as_bytes()));
    given.iter().zip(expected.iter()).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

/// `GET /metrics` on the API listener: an unknown path unless `HERALD_METRICS_TOKEN` is set,
/// then `401 missing_api_key` without a Bearer token and `401 invalid_api_key` with another one
/// (the names of the closed list the API's own credentials use).
#[handler]
pub async fn guarded(req: &Request, state: Data<&AppState>) -> poem::Result<Response> {
    let Some(expected) = state.config.metrics_token.as_deref() else {
        return Err(ApiError::new(ErrorKind::NotFound, "The requested endpoint could not be found.").into());
    };
    let given = req.header(header::AUTHORIZATION).and_then(|value| {
        let (scheme, token) = value.trim().split_once(' ')?;
        let token = token.trim();
        (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
    });
    let Some(given) = given else {
        return Err(ApiError::new(ErrorKind::MissingApiKey, "Missing metrics token. Include the header `Authorization: Bearer <HERALD_METRICS_TOKEN>`.",
        )
        .into());
    };
    if !token_matches(given, expected) {
        return Err(ApiError::new(ErrorKind::InvalidApiKey, "The metrics token is invalid.").into());
    }
    Ok(exposition(&state).await)
}

#[handler]
async fn open(state: Data<&AppState>) -> Response {
    exposition(&state).await
}

/// What the `HERALD_METRICS_ADDR` listener serves: `GET /metrics` with no credential, and
/// nothing else (404).
pub fn private_endpoint(state: AppState) -> impl Endpoint + 'static {
    Route::new().at("/metrics", get(open)).data(state).map_to_response()
}

/// The running `HERALD_METRICS_ADDR` listener.
pub struct MetricsServer {
    stop: tokio::sync::oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Binds `HERALD_METRICS_ADDR`, when it is set, and serves [`private_endpoint`] there until
/// [`MetricsServer::stop`].
pub async fn start(state: &AppState) -> anyhow::Result<Option<MetricsServer>> {
    let Some(addr) = state.config.metrics_addr else { return Ok(None) };
    let acceptor = TcpListener::bind(addr.to_string())
        .into_acceptor()
        .await
        .map_err(|error| anyhow::anyhow!("HERALD_METRICS_ADDR {addr}: {error}"))?;
    let bound = acceptor.local_addr().first().map(ToString::to_string).unwrap_or_default();
    tracing::info!(addr = %bound, "serving metrics");
    Ok(Some(serve(acceptor, state.clone())))
}

fn serve(acceptor: TcpAcceptor, state: AppState) -> MetricsServer {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let endpoint = private_endpoint(state);
    let handle = tokio::spawn(async move {
        Server::new_with_acceptor(acceptor)
            .run_with_graceful_shutdown(
                endpoint,
                async move {
                    let _ = stopped.await;
                },
                Some(Duration::from_secs(5)),
            )
            .await
    });
    MetricsServer { stop, handle }
}

impl MetricsServer {
    /// Stops taking scrapes and waits for the ones under way.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        match self.handle.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "the metrics listener failed"),
            Err(error) => tracing::warn!(%error, "the metrics listener panicked"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_escape_backslash_quote_and_line_feed() {
        assert_eq!(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn a_sample_lists_its_labels_in_order() {
        let mut out = Exposition::default();
        out.family("x_total", "counter", "Help with a \\ and\na line feed.");
        out.sample("x_total", &[("a", "1"), ("b", "q\"")], 3);
        out.sample("y", &[], float(f64::INFINITY));
        assert_eq!(
            out.finish(),
            "# HELP x_total Help with a \\\\ and\\na line feed.\n# TYPE x_total counter\nx_total{a=\"1\",b=\"q\\\"\"} 3\ny +Inf\n"
        );
    }

    #[test]
    fn an_operation_is_found_by_its_place_in_the_table() {
        for (position, operation) in OPERATIONS.iter().enumerate() {
            assert_eq!(index_of(operation), position);
        }
        let copy = OPERATIONS[3].clone();
        assert_eq!(index_of(&copy), 3);
    }

    #[test]
    fn only_the_configured_token_matches() {
        assert!(token_matches("s3cret", "s3cret"));
        assert!(!token_matches("s3cret!", "s3cret"));
        assert!(!token_matches("", "s3cret"));
    }

    #[test]
    fn a_latency_falls_in_the_first_bucket_at_or_above_it() {
        assert_eq!(BUCKETS_MICROS.partition_point(|&b| b < 1_000), 0);
        assert_eq!(BUCKETS_MICROS.partition_point(|&b| b < 1_001), 1);
        assert_eq!(BUCKETS_MICROS.partition_point(|&b| b < 20_000_000), BUCKETS_MICROS.len());
    }
}
