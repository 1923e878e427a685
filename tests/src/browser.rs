//! A minimal driver for headless Chromium over the Chrome DevTools Protocol (CDP),
//! meant for integration tests. One browser process, one page target, one websocket.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long to wait for page loads and for the browser to start.
const TIMEOUT: Duration = Duration::from_secs(15);

/// A running headless Chromium connected to its single page target.
pub struct Browser {
    child: Child,
    profile: PathBuf,
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// Events (messages with a `method` and no `id`) received while waiting for replies.
    events: VecDeque<Value>,
}

impl Browser {
    /// Starts `chromium` headless with a fresh temporary profile, finds its page target and
    /// connects to it. Returns `Ok(None)` if there is no `chromium` binary on the PATH.
    pub async fn launch() -> Result<Option<Browser>> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
        let profile = std::env::temp_dir().join(format!("cdp-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&profile)?;
        let spawned = Command::new("chromium")
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(["--remote-debugging-port=0", "about:blank"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile);
                return match e.kind() {
                    std::io::ErrorKind::NotFound => Ok(None),
                    _ => Err(e).context("spawning chromium"),
                };
            }
        };

        // Read stderr on a thread until "DevTools listening on ws://HOST:PORT/...", then keep
        // draining it so Chromium never blocks on a full pipe.
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, rx) = tokio::sync::oneshot::channel::<String>();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("DevTools listening on ")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        // Any failure from here on must kill the child and delete the profile itself.
        let connect = async {
            let browser_url = tokio::time::timeout(TIMEOUT, rx)
                .await
                .context("timed out waiting for the DevTools line on stderr")?
                .context("chromium exited before printing the DevTools URL")?;
            let host = browser_url
                .strip_prefix("ws://")
                .and_then(|rest| rest.split('/').next())
                .ok_or_else(|| anyhow!("unexpected DevTools URL {browser_url}"))?
                .to_string();
            let page_url = tokio::time::timeout(TIMEOUT, find_page_target(&host))
                .await
                .context("timed out querying /json/list")??;
            let (ws, _) = tokio_tungstenite::connect_async(page_url.as_str()).await?;
            Ok::<_, anyhow::Error>(ws)
        };
        match connect.await {
            Ok(ws) => Ok(Some(Browser {
                child,
                profile,
                ws,
                next_id: 0,
                events: VecDeque::new(),
            })),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = std::fs::remove_dir_all(&profile);
                Err(e)
            }
        }
    }

    /// Sends a CDP command and returns its `result`, buffering any events that arrive first.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({ "id": id, "method": method, "params": params });
        self.ws.send(Message::text(msg.to_string())).await?;
        loop {
            let msg = self.read().await?;
            if msg["id"].as_u64() == Some(id) {
                if let Some(err) = msg.get("error") {
                    bail!("{method} failed: {err}");
                }
                return Ok(msg["result"].clone());
            }
            if msg.get("method").is_some() {
                self.events.push_back(msg);
            }
        }
    }

    /// Reads the next JSON text frame from the websocket.
    async fn read(&mut self) -> Result<Value> {
        loop {
            match self.ws.next().await {
                None | Some(Ok(Message::Close(_))) => bail!("DevTools websocket closed"),
                Some(Ok(Message::Text(text))) => return Ok(serde_json::from_str(text.as_str())?),
                Some(Ok(_)) => continue, // ping/pong/binary: not used by CDP
                Some(Err(e)) => return Err(e.into()),
            }
        }
    }

    /// Waits (up to 15 s) for an event named `method`, taking it from the buffer if it already arrived.
    async fn wait_event(&mut self, method: &str) -> Result<Value> {
        let wait = async {
            loop {
                if let Some(pos) = self.events.iter().position(|e| e["method"] == method) {
                    return Ok(self.events.remove(pos).expect("position is valid"));
                }
                let msg = self.read().await?;
                if msg.get("method").is_some() {
                    self.events.push_back(msg);
                }
            }
        };
        tokio::time::timeout(TIMEOUT, wait)
            .await
            .with_context(|| format!("timed out waiting for {method}"))?
    }

    /// Forgets buffered events named `method`, so that a later wait only sees new ones.
    fn drop_events(&mut self, method: &str) {
        self.events.retain(|e| e["method"] != method);
    }

    /// Disables JavaScript for the page (persists across navigations).
    pub async fn disable_javascript(&mut self) -> Result<()> {
        self.call(
            "Emulation.setScriptExecutionDisabled",
            json!({ "value": true }),
        )
        .await?;
        Ok(())
    }

    /// Navigates to `url` and waits until its load event fires (timeout 15 s).
    pub async fn goto(&mut self, url: &str) -> Result<()> {
        self.call("Page.enable", json!({})).await?;
        self.drop_events("Page.loadEventFired");
        let res = self.call("Page.navigate", json!({ "url": url })).await?;
        if let Some(err) = res.get("errorText") {
            bail!("navigating to {url} failed: {err}");
        }
        self.wait_event("Page.loadEventFired").await?;
        Ok(())
    }

    /// Evaluates a JS expression in the page and returns its value (by value, as JSON).
    pub async fn eval(&mut self, expression: &str) -> Result<Value> {
        let params = json!({ "expression": expression, "returnByValue": true });
        let res = self.call("Runtime.evaluate", params).await?;
        if let Some(exc) = res.get("exceptionDetails") {
            bail!("evaluating {expression:?} threw: {exc}");
        }
        Ok(res["result"]["value"].clone())
    }

    /// Clicks the centre of the element matching `selector` with real mouse events; if
    /// `expect_navigation`, then waits for the next page load (timeout 15 s).
    pub async fn click(&mut self, selector: &str, expect_navigation: bool) -> Result<()> {
        let doc = self.call("DOM.getDocument", json!({ "depth": 0 })).await?;
        let root = doc["root"]["nodeId"].clone();
        let found = self
            .call(
                "DOM.querySelector",
                json!({ "nodeId": root, "selector": selector }),
            )
            .await?;
        let node = found["nodeId"].as_u64().unwrap_or(0);
        if node == 0 {
            bail!("no element matches {selector:?}");
        }
        self.call("DOM.scrollIntoViewIfNeeded", json!({ "nodeId": node }))
            .await?;
        let boxes = self
            .call("DOM.getBoxModel", json!({ "nodeId": node }))
            .await?;
        // `content` is a quad: [x1, y1, x2, y2, x3, y3, x4, y4].
        let quad: Vec<f64> = boxes["model"]["content"]
            .as_array()
            .ok_or_else(|| anyhow!("no box model for {selector:?}"))?
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        if quad.len() != 8 {
            bail!("unexpected box model for {selector:?}: {boxes}");
        }
        let x = (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0;
        let y = (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0;

        self.drop_events("Page.loadEventFired");
        for kind in ["mousePressed", "mouseReleased"] {
            let params = json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 });
            self.call("Input.dispatchMouseEvent", params).await?;
        }
        if expect_navigation {
            self.wait_event("Page.loadEventFired").await?;
        }
        Ok(())
    }

    /// The page's visible text (`document.body.innerText`).
    pub async fn text(&mut self) -> Result<String> {
        let value = self.eval("document.body.innerText").await?;
        value
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("innerText was not a string: {value}"))
    }
}

impl Drop for Browser {
    /// Kills Chromium, reaps it, and deletes the temporary profile.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Fetches `http://HOST:PORT/json/list` with a bare HTTP GET and returns the
/// `webSocketDebuggerUrl` of the first target whose type is "page". Retries briefly,
/// since the page target may appear just after the DevTools line is printed.
async fn find_page_target(host: &str) -> Result<String> {
    for _ in 0..50 {
        let targets: Value = serde_json::from_str(&http_get(host, "/json/list").await?)
            .context("parsing /json/list")?;
        let page = targets
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["type"] == "page");
        if let Some(url) = page.and_then(|t| t["webSocketDebuggerUrl"].as_str()) {
            return Ok(url.to_string());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("no page target in /json/list")
}

/// A minimal HTTP GET returning the body. Chromium's DevTools server sends an empty reply to
/// HTTP/1.0 and keeps HTTP/1.1 connections open even with `Connection: close`, so this
/// speaks HTTP/1.1 and reads exactly `Content-Length` body bytes instead of waiting for EOF.
async fn http_get(host: &str, path: &str) -> Result<String> {
    let mut stream = TcpStream::connect(host).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).await?;
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            });
            if length.is_some_and(|len| body.len() >= len) || n == 0 {
                return Ok(body.to_string());
            }
        }
        if n == 0 {
            bail!("connection closed before a full HTTP response from {host}{path}");
        }
    }
}
