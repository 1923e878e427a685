//! A real HTTP webhook receiver: records every request's headers and raw body, and can be told
//! to answer an error status or to hang. Signatures are checked here independently of Herald's
//! code (HMAC-SHA256 written out over `sha2`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub path: String,
    /// Lower-case names.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub at: Instant,
    /// Wall-clock arrival (delay measurements against database times).
    pub received_at: chrono::DateTime<chrono::Utc>,
}

impl Delivery {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or_default()
    }
}

/// What the receiver does with requests to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Status(u16),
    /// Never answers.
    Hang,
}

#[derive(Default)]
struct State {
    received: Vec<Delivery>,
    answers: HashMap<String, Answer>,
}

/// A running receiver on 127.0.0.1.
pub struct Receiver {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    loop {
                        let Some((path, headers, body)) = read_request(&mut stream).await else { return };
                        let answer = {
                            let mut state = state.lock().unwrap();
                            state.received.push(Delivery { path: path.clone(), headers, body, at: Instant::now(), received_at: chrono::Utc::now() });
                            state.answers.get(&path).copied().unwrap_or(Answer::Status(200))
                        };
                        match answer {
                            Answer::Hang => {
                                tokio::time::sleep(Duration::from_secs(3600)).await;
                                return;
                            }
                            Answer::Status(code) => {
                                let body = format!("answered {code}");
                                let response =
                                    format!("HTTP/1.1 {code} X\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n{body}", body.len());
                                if stream.write_all(response.as_bytes()).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
            }
        });
        Receiver { addr, state }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Answers requests to `path` this way from now on.
    pub fn answer(&self, path: &str, answer: Answer) {
        self.state.lock().unwrap().answers.insert(path.to_string(), answer);
    }

    /// How many requests arrived in all.
    pub fn count(&self) -> usize {
        self.state.lock().unwrap().received.len()
    }

    /// Every request to `path` so far.
    pub fn deliveries(&self, path: &str) -> Vec<Delivery> {
        self.state.lock().unwrap().received.iter().filter(|d| d.path == path).cloned().collect()
    }

    /// Waits until `path` has at least `count` requests, for at most `timeout`.
    pub async fn wait_for(&self, path: &str, count: usize, timeout: Duration) -> Vec<Delivery> {
        let started = Instant::now();
        loop {
            let found = self.deliveries(path);
            if found.len() >= count {
                return found;
            }
            assert!(started.elapsed() < timeout, "{path} got {} of {count} deliveries in {timeout:?}", found.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<(String, HashMap<String, String>, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split_whitespace().nth(1)?.to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let length: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Some((path, headers, body))
}

/// Document C's verification contract: every `v1,` entry of `hook-signature` that is the
/// base64 HMAC-SHA256 of `<hook-id>.<hook-timestamp>.<raw body>` under the secret's key.
/// Answers how many entries verify (0 rejects the delivery). The `webhook-*` headers must
/// repeat the `hook-*` ones, and the `standardwebhooks` library (PyPI), reading only those,
/// must reach the same verdict.
pub fn verified_signatures(secret: &str, delivery: &Delivery) -> usize {
    for name in ["id", "timestamp", "signature"] {
        assert_eq!(delivery.header(&format!("webhook-{name}")), delivery.header(&format!("hook-{name}")), "webhook-{name}");
    }
    let verified = own_verified_signatures(secret, delivery);
    let library = standard_webhooks_verifies(secret, delivery);
    assert_eq!(library.is_ok(), verified > 0, "standardwebhooks agrees with the contract: {library:?}");
    verified
}

/// Whether `standardwebhooks` from PyPI verifies the delivery (its reason when not).
pub fn standard_webhooks_verifies(secret: &str, delivery: &Delivery) -> Result<(), String> {
    let input = serde_json::json!({
        "secret": secret,
        "headers": delivery.headers,
        "body": String::from_utf8_lossy(&delivery.body),
    });
    let mut command = crate::clients::python();
    command.arg(crate::clients::script("standard_webhooks_verify.py"));
    let output = crate::clients::run(command, input.to_string().as_bytes());
    let said = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    if output.status.success() { Ok(()) } else { Err(said) }
}

fn own_verified_signatures(secret: &str, delivery: &Delivery) -> usize {
    let key = STANDARD.decode(secret.strip_prefix("whsec_").expect("a whsec_ secret")).expect("base64 key");
    let timestamp: i64 = delivery.header("hook-timestamp").parse().expect("a numeric hook-timestamp");
    assert!((chrono::Utc::now().timestamp() - timestamp).abs() <= 300, "the timestamp is within five minutes");
    let mut content = format!("{}.{}.", delivery.header("hook-id"), delivery.header("hook-timestamp")).into_bytes();
    content.extend_from_slice(&delivery.body);
    let expected = STANDARD.encode(hmac_sha256(&key, &content));
    delivery.header("hook-signature").split(' ').filter(|entry| entry.strip_prefix("v1,") == Some(expected.as_str())).count()
}

/// HMAC (RFC 2104) over SHA-256.
fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_test_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(hex(&mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}
