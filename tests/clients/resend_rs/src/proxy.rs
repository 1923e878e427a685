//! A recording pass-through on 127.0.0.1 between the SDK and Herald: the SDK's base URL points
//! here, each request goes on to Herald unchanged (429s are waited out, as the other checks'
//! transports do), and the last exchange is kept to show on failure and to find the field a
//! parse failure stopped at. Also the tiny HTTP/1.1 reading the webhook receiver shares.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::check::clip;

#[derive(Clone, Debug)]
pub struct Exchange {
    pub method: String,
    pub path: String,
    pub body: String,
    pub status: u16,
    pub answer: String,
}

impl Exchange {
    pub fn show(&self) -> String {
        let body = if self.body.is_empty() { String::new() } else { format!(" {}", clip(&self.body, 600)) };
        format!("request: {} {}{body}\n      answer: {} {}", self.method, self.path, self.status, clip(&self.answer, 1200))
    }
}

#[derive(Clone, Default)]
pub struct Recorder(Arc<Mutex<Option<Exchange>>>);

impl Recorder {
    pub fn clear(&self) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    pub fn last(&self) -> Option<Exchange> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn set(&self, exchange: Exchange) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(exchange);
    }
}

/// One HTTP/1.1 request as read off a socket.
pub struct Request {
    pub method: String,
    pub target: String,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Reads one request (Content-Length or chunked body); `None` at the end of the stream.
pub async fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).await? == 0 {
            return Ok(None);
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let mut request = Request { method, target, headers, body: Vec::new() };
    if request.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).await?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).await?;
            if size == 0 {
                break;
            }
            request.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = request.header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        request.body = vec![0; length];
        reader.read_exact(&mut request.body).await?;
    }
    Ok(Some(request))
}

/// Writes an answer and closes the connection.
pub async fn respond(stream: &mut TcpStream, status: u16, headers: &[(String, String)], body: &[u8]) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

/// Starts the pass-through to `upstream` (Herald's base URL); answers its own base URL.
pub async fn start(upstream: String, recorder: Recorder) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let client = reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().map_err(std::io::Error::other)?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (client, upstream, recorder) = (client.clone(), upstream.clone(), recorder.clone());
            tokio::spawn(async move {
                if let Err(error) = forward(stream, &client, &upstream, &recorder).await {
                    eprintln!("resend-rs-check: pass-through: {error}");
                }
            });
        }
    });
    Ok(format!("http://{address}"))
}

async fn forward(stream: TcpStream, client: &reqwest::Client, upstream: &str, recorder: &Recorder) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader).await? else { return Ok(()) };
    let mut stream = reader.into_inner();
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).map_err(std::io::Error::other)?;
    let url = format!("{}{}", upstream.trim_end_matches('/'), request.target);
    let mut answer = None;
    for _ in 0..20 {
        let mut outgoing = client.request(method.clone(), &url).body(request.body.clone());
        for (name, value) in &request.headers {
            if !matches!(name.as_str(), "host" | "content-length" | "transfer-encoding" | "connection") {
                outgoing = outgoing.header(name, value);
            }
        }
        let response = outgoing.send().await.map_err(std::io::Error::other)?;
        if response.status().as_u16() != 429 {
            answer = Some(response);
            break;
        }
        let wait = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok()).unwrap_or(1);
        tokio::time::sleep(Duration::from_secs(wait.clamp(1, 5))).await;
    }
    let Some(response) = answer else { return respond(&mut stream, 429, &[], b"").await };
    let status = response.status().as_u16();
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "content-length" | "transfer-encoding" | "connection"))
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or_default().to_owned()))
        .collect();
    let body = response.bytes().await.map_err(std::io::Error::other)?;
    let shown_body = if request.header("content-type").is_some_and(|t| t.starts_with("multipart/")) {
        "(multipart form)".to_owned()
    } else {
        String::from_utf8_lossy(&request.body).into_owned()
    };
    recorder.set(Exchange {
        method: request.method.clone(),
        path: request.target.clone(),
        body: shown_body,
        status,
        answer: String::from_utf8_lossy(&body).into_owned(),
    });
    respond(&mut stream, status, &headers, &body).await
}
