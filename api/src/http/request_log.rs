//! Request logs: what is kept of a call, and the writers that batch them off the request path.
//! A handler never waits for a log insert; a graceful shutdown flushes every queued log.

use schema::store::request_logs::{self, RequestLog};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Most logs written in one statement.
const BATCH: usize = 500;
/// Logs queued before callers wait for the writers (back-pressure instead of loss).
const QUEUE: usize = 20_000;
/// Batches written at once: one insert keeps one PostgreSQL core busy at best, and a busy
/// server logs faster than that.
const WRITERS: usize = 3;

/// Hands logs to the background writers, in turn.
#[derive(Clone)]
pub struct LogWriter {
    senders: Arc<[mpsc::Sender<RequestLog>]>,
    next: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
}

/// The background writers; `close` flushes and waits.
pub struct LogWriterTask {
    writers: Vec<(JoinHandle<()>, tokio::sync::oneshot::Sender<()>)>,
}

impl LogWriter {
    /// Starts the writers on `pool`.
    pub fn start(pool: PgPool) -> (Self, LogWriterTask) {
        let dropped = Arc::new(AtomicU64::new(0));
        let mut senders = Vec::with_capacity(WRITERS);
        let mut writers = Vec::with_capacity(WRITERS);
        for _ in 0..WRITERS {
            let (sender, receiver) = mpsc::channel(QUEUE / WRITERS);
            let (stop, stopped) = tokio::sync::oneshot::channel();
            senders.push(sender);
            writers.push((tokio::spawn(write_batches(pool.clone(), receiver, stopped, dropped.clone())), stop));
        }
        (Self { senders: senders.into(), next: Arc::default(), dropped }, LogWriterTask { writers })
    }

    /// Queues one log, with what PostgreSQL cannot store (NUL) replaced.
    pub async fn write(&self, mut log: RequestLog) {
        sanitize(&mut log);
        let sender = &self.senders[self.next.fetch_add(1, Ordering::Relaxed) % self.senders.len()];
        if sender.send(log).await.is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::error!("request log writer has stopped; a log was not written");
        }
    }

    /// Logs this process could not write since it started (shown by `GET /health`).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl LogWriterTask {
    /// Stops taking logs, writes every queued one, and waits for that.
    pub async fn close(self) {
        let mut handles = Vec::with_capacity(self.writers.len());
        for (handle, stop) in self.writers {
            let _ = stop.send(());
            handles.push(handle);
        }
        for handle in handles {
            let _ = handle.await;
        }
    }
}

async fn write_batches(
    pool: PgPool,
    mut receiver: mpsc::Receiver<RequestLog>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
    dropped: Arc<AtomicU64>,
) {
    // Whatever queued while the previous batch was written goes in the next one, so batches
    // grow with load and a quiet server writes each log at once.
    let mut batch = Vec::with_capacity(BATCH);
    let mut stopping = false;
    loop {
        tokio::select! {
            _ = &mut stop, if !stopping => {
                // Take no new logs; what is queued is still received below.
                stopping = true;
                receiver.close();
            }
            received = receiver.recv_many(&mut batch, BATCH) => {
                if received == 0 {
                    return;
                }
                let lost = write_isolating(&pool, &mut batch).await;
                if lost > 0 {
                    dropped.fetch_add(lost, Ordering::Relaxed);
                }
                batch.clear();
            }
        }
    }
}

/// Writes `batch`; a batch PostgreSQL refuses is split in halves until the refused rows are
/// alone, so one bad row never takes others with it. A refused row is tried once more without
/// its bodies. Returns how many logs could not be written.
async fn write_isolating(pool: &PgPool, batch: &mut [RequestLog]) -> u64 {
    let mut lost = 0;
    let mut pending = Vec::new();
    pending.push(0..batch.len());
    while let Some(range) = pending.pop() {
        match insert_with_retry(pool, &batch[range.clone()]).await {
            Written::Yes => {}
            Written::Refused if range.len() > 1 => {
                let middle = range.start + range.len() / 2;
                pending.push(middle..range.end);
                pending.push(range.start..middle);
            }
            Written::Refused => {
                let log = &mut batch[range.start];
                let had_bodies = log.request_body.is_some() || log.response_body.is_some();
                log.request_body = None;
                log.response_body = None;
                if !had_bodies || !matches!(insert_with_retry(pool, std::slice::from_ref(log)).await, Written::Yes) {
                    tracing::error!(request_id = log.request_id, "request log dropped: PostgreSQL refused it");
                    lost += 1;
                } else {
                    tracing::warn!(request_id = log.request_id, "request log written without its bodies: PostgreSQL refused them");
                }
            }
            Written::Unreachable => {
                tracing::error!(rows = range.len(), "request logs dropped: the database could not be reached");
                lost += range.len() as u64;
            }
        }
    }
    lost
}

enum Written {
    Yes,
    /// PostgreSQL answered and refused the statement (a row it cannot store).
    Refused,
    /// No answer after every try.
    Unreachable,
}

async fn insert_with_retry(pool: &PgPool, batch: &[RequestLog]) -> Written {
    for attempt in 1..=5 {
        let result = async {
            let mut conn = pool.acquire().await?;
            request_logs::insert_batch(&mut conn, batch).await
        }
        .await;
        match result {
            Ok(()) => return Written::Yes,
            Err(sqlx::Error::Database(error)) => {
                tracing::warn!(%error, rows = batch.len(), "PostgreSQL refused a request log batch");
                return Written::Refused;
            }
            Err(error) => {
                tracing::warn!(%error, attempt, rows = batch.len(), "writing request logs failed");
                tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
            }
        }
    }
    Written::Unreachable
}

/// Replaces NUL, which PostgreSQL's `text` and `jsonb` cannot hold, in every field of a log.
fn sanitize(log: &mut RequestLog) {
    for text in [&mut log.endpoint, &mut log.path, &mut log.method, &mut log.user_agent, &mut log.source, &mut log.request_id] {
        if text.contains('\0') {
            *text = text.replace('\0', "\u{fffd}");
        }
    }
    for body in [&mut log.request_body, &mut log.response_body].into_iter().flatten() {
        replace_nul(body);
    }
}

fn replace_nul(value: &mut Value) {
    match value {
        Value::String(text) if text.contains('\0') => *text = text.replace('\0', "\u{fffd}"),
        Value::Array(items) => items.iter_mut().for_each(replace_nul),
        Value::Object(map) if map.keys().any(|key| key.contains('\0')) => {
            let entries = std::mem::take(map);
            for (key, mut inner) in entries {
                replace_nul(&mut inner);
                map.insert(key.replace('\0', "\u{fffd}"), inner);
            }
        }
        Value::Object(map) => map.values_mut().for_each(replace_nul),
        _ => {}
    }
}

/// The `source` of a call, read from its User-Agent: `herald-dashboard/…` is `dashboard`;
/// `herald-<name>/…`, `herald-<name>:…`, `resend-<name>…` (the SDKs' own agents) are
/// `sdk:<name>`; anything else is `api`.
pub fn source_of(user_agent: &str) -> String {
    let product = user_agent
        .split(|c: char| c == '/' || c == ':' || c.is_whitespace())
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if product == "herald-dashboard" {
        return "dashboard".into();
    }
    // The MCP server's tools call their routes as `herald-mcp`.
    if product == "herald-mcp" {
        return "mcp".into();
    }
    for vendor in ["herald-", "resend-"] {
        if let Some(name) = product.strip_prefix(vendor).filter(|name| !name.is_empty()) {
            return format!("sdk:{name}");
        }
    }
    "api".into()
}

/// What of a body's JSON is kept in the request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// The JSON as sent.
    Whole,
    /// A send's content fields as `{ size, sha256 }`.
    SendContent,
    /// Every string as `{ size, sha256 }` (AI assist's briefs and material).
    Sizes,
}

/// What is stored of a body: nothing when it names a password, token, secret or key anywhere;
/// otherwise the JSON, as `kept` says.
pub fn stored_body(raw: &[u8], kept: Kept) -> Option<Value> {
    if raw.is_empty() {
        return None;
    }
    if raw.len() > MAX_STORED_BODY {
        return Some(json!({ "truncated": { "size": raw.len(), "sha256": schema::secret::digest_hex(raw) } }));
    }
    let Ok(mut value) = serde_json::from_slice::<Value>(raw) else {
        return Some(json!({ "unparsed": { "size": raw.len(), "sha256": schema::secret::digest_hex(raw) } }));
    };
    if names_a_secret(&value) {
        return None;
    }
    match kept {
        Kept::Whole => {}
        Kept::SendContent => measure_content(&mut value),
        Kept::Sizes => measure_strings(&mut value),
    }
    Some(value)
}

fn names_a_secret(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(name, inner)| {
            let name = name.to_ascii_lowercase();
            ["password", "token", "secret", "key"].iter().any(|word| name.contains(word)) || names_a_secret(inner)
        }),
        Value::Array(items) => items.iter().any(names_a_secret),
        _ => false,
    }
}

/// Bodies larger than this are stored as their size and digest only (a log is for finding a
/// call, not for keeping megabytes of content).
const MAX_STORED_BODY: usize = 64 * 1024;

fn measure_strings(value: &mut Value) {
    match value {
        Value::String(text) => *value = json!({ "size": text.len(), "sha256": schema::secret::digest_hex(text.as_bytes()) }),
        Value::Object(map) => map.values_mut().for_each(measure_strings),
        Value::Array(items) => items.iter_mut().for_each(measure_strings),
        _ => {}
    }
}

/// Fields of a send that carry its content.
const CONTENT_FIELDS: &[&str] = &["html", "text", "content", "react"];

fn measure_content(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (name, inner) in map.iter_mut() {
                if CONTENT_FIELDS.contains(&name.as_str()) && inner.is_string() {
                    let text = inner.as_str().unwrap_or_default();
                    *inner = json!({ "size": text.len(), "sha256": schema::secret::digest_hex(text.as_bytes()) });
                } else if name == "content" && inner.is_array() {
                    // Attachment bytes sent as an array of numbers.
                    let bytes: Vec<u8> = inner.as_array().into_iter().flatten().filter_map(|b| b.as_u64()).map(|b| b as u8).collect();
                    *inner = json!({ "size": bytes.len(), "sha256": schema::secret::digest_hex(&bytes) });
                } else {
                    measure_content(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(measure_content),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_read_from_the_user_agent() {
        assert_eq!(source_of("curl/8.5.0"), "api");
        assert_eq!(source_of("herald-dashboard/1.0"), "dashboard");
        assert_eq!(source_of("herald-node:4.1.0"), "sdk:node");
        assert_eq!(source_of("resend-python/2.0"), "sdk:python");
        assert_eq!(source_of("herald-"), "api");
    }

    #[test]
    fn a_body_naming_a_token_is_dropped_whole() {
        assert_eq!(stored_body(br#"{"object":"api_key","id":"1","token":"rk_x"}"#, Kept::Whole), None);
        assert_eq!(stored_body(br#"{"user":{"password":"p"}}"#, Kept::Whole), None);
    }

    #[test]
    fn a_sends_content_is_replaced_by_its_size_and_digest() {
        let stored = stored_body(br#"{"to":["a@b.c"],"html":"<p>hi</p>"}"#, Kept::SendContent).unwrap();
        assert_eq!(stored["to"], json!(["a@b.c"]));
        assert_eq!(stored["html"]["size"], 9);
        assert_eq!(stored["html"]["sha256"].as_str().unwrap().len(), 64);
    }

    #[test]
    fn nul_is_replaced_in_every_string_and_key_of_a_stored_body() {
        let mut body = json!({ "a\u{0}": ["x\u{0}y", { "k": "\u{0}" }], "n": 1 });
        replace_nul(&mut body);
        assert_eq!(body, json!({ "a\u{fffd}": ["x\u{fffd}y", { "k": "\u{fffd}" }], "n": 1 }));
    }

    #[test]
    fn a_body_over_64_kib_is_kept_as_its_size_and_digest() {
        let raw = format!(r#"{{"name":"{}"}}"#, "x".repeat(70_000));
        let stored = stored_body(raw.as_bytes(), Kept::Whole).unwrap();
        assert_eq!(stored["truncated"]["size"], raw.len());
        assert!(stored.get("name").is_none());
    }

    #[test]
    fn an_ordinary_body_is_kept_as_sent() {
        assert_eq!(stored_body(br#"{"name":"Prod"}"#, Kept::Whole), Some(json!({"name":"Prod"})));
    }
}
