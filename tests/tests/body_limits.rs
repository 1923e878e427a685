//! Every request body is read with its operation's limit, before any credential is looked up:
//! past it the answer is `413` with the standard error body, as soon as `Content-Length` or the
//! stream passes the limit, and nothing is written.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tests::TestApp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const GIGABYTE: u64 = 1 << 30;

/// The resident memory of this process (the server runs in it), in bytes.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Reads an HTTP response from `stream` until the connection closes or the JSON body is whole:
/// its status and body.
async fn read_response(stream: &mut tokio::net::tcp::OwnedReadHalf) -> (u16, Value) {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let read = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        raw.extend_from_slice(&buf[..read]);
        let text = String::from_utf8_lossy(&raw);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap()));
            if length.is_some_and(|length| body.len() >= length) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no response: {text:?}"));
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {body:?}")))
}

/// Streams up to a gigabyte of JSON-looking bytes to `path` with chunked encoding (no
/// `Content-Length`), while reading the answer; answers it and how much was sent.
async fn stream_a_gigabyte(app: &TestApp, path: &str) -> ((u16, Value), u64) {
    let stream = TcpStream::connect(app.base.trim_start_matches("http://")).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: herald-tests/1.0\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    writer.write_all(head.as_bytes()).await.unwrap();
    let sent = Arc::new(AtomicU64::new(0));
    let counted = sent.clone();
    let writing = tokio::spawn(async move {
        let chunk = vec![b' '; 64 * 1024];
        let framed = [format!("{:x}\r\n", chunk.len()).into_bytes(), chunk, b"\r\n".to_vec()].concat();
        while counted.load(Ordering::Relaxed) < GIGABYTE {
            if writer.write_all(&framed).await.is_err() {
                return;
            }
            counted.fetch_add(64 * 1024, Ordering::Relaxed);
        }
        let _ = writer.write_all(b"0\r\n\r\n").await;
    });
    let answer = read_response(&mut reader).await;
    writing.abort();
    (answer, sent.load(Ordering::Relaxed))
}

#[tokio::test]
async fn a_gigabyte_streamed_to_sign_up_is_refused_with_413_early_and_memory_stays_flat() {
    let app = TestApp::spawn().await;
    // Warm the server (pools, caches) so the figure is the request's own.
    let _ = app.client.post(app.url("/auth/signup")).json(&json!({})).send().await.unwrap();
    let before = resident_bytes();
    let ((status, body), sent) = stream_a_gigabyte(&app, "/auth/signup").await;
    let grown = resident_bytes().saturating_sub(before);
    assert_eq!(status, 413, "{body}");
    assert_eq!((body["statusCode"].as_u64(), body["name"].as_str()), (Some(413), Some("validation_error")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("1048576 bytes"), "{body}");
    assert!(sent < GIGABYTE / 4, "the server read on: {sent} bytes were taken");
    assert!(grown < 8 * 1024 * 1024, "memory grew by {grown} bytes");
    assert_eq!(app.count("people").await, 0);
}

#[tokio::test]
async fn a_declared_length_past_the_limit_is_refused_before_any_byte_of_the_body() {
    let app = TestApp::spawn().await;
    for path in ["/oauth/register", "/emails"] {
        let stream = TcpStream::connect(app.base.trim_start_matches("http://")).await.unwrap();
        let (mut reader, mut writer) = stream.into_split();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: herald-tests/1.0\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {GIGABYTE}\r\n\r\n",
            app.key
        );
        writer.write_all(head.as_bytes()).await.unwrap();
        let (status, body) = read_response(&mut reader).await;
        assert_eq!(status, 413, "{path}: {body}");
        // Each route answers in its own error vocabulary: OAuth's on the registration endpoint.
        if path.starts_with("/oauth/") {
            assert_eq!(body["error"], "invalid_request", "{path}: {body}");
        } else {
            assert_eq!(body["name"], "validation_error", "{path}: {body}");
        }
    }
    assert_eq!(app.count("oauth_clients").await, 0);
    assert_eq!(app.count("emails").await, 0);
}

#[tokio::test]
async fn a_body_over_its_routes_limit_is_refused_and_nothing_is_written_while_a_send_takes_more() {
    let app = TestApp::spawn().await;
    // An API key's body is small: two megabytes of name is refused whole.
    let refused = app.post("/api-keys", json!({ "name": "k".repeat(2 * 1024 * 1024) })).await;
    refused.assert_error(413, "validation_error");
    let keys: i64 = sqlx::query_scalar("SELECT count(*) FROM api_keys").fetch_one(&app.pool).await.unwrap();
    assert_eq!(keys, 1);
    // A send's limit is the send's own: the same two megabytes reach the send's checks.
    let send = app.post("/emails", json!({ "from": "a@example.com", "to": "b@example.com", "subject": "s", "html": "x".repeat(2 * 1024 * 1024 + 1) })).await;
    assert_ne!(send.status, 413, "{}", send.body);
    assert_eq!(app.count("emails").await, 0);
}

#[tokio::test]
async fn a_body_that_cannot_be_read_is_an_error_never_an_empty_body() {
    let app = TestApp::spawn().await;
    let stream = TcpStream::connect(app.base.trim_start_matches("http://")).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    // A chunk size that is not hexadecimal breaks the stream after the head.
    let head = "POST /auth/signup HTTP/1.1\r\nHost: localhost\r\nUser-Agent: herald-tests/1.0\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    writer.write_all(head.as_bytes()).await.unwrap();
    let (status, body) = read_response(&mut reader).await;
    assert_eq!((status, body["name"].as_str()), (400, Some("validation_error")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("could not be read"), "{body}");
    assert_eq!(app.count("people").await, 0);
}
