//! A TCP proxy between Herald and PostgreSQL (or a mail server, or a webhook receiver) that a fault test can break the way networks
//! break: **cut** (every open connection closed, new ones accepted and closed at once, as when
//! the path goes away), **stall** (connections stay open but no byte passes either way, as
//! when a link or a firewall silently drops packets), and **slow** (every chunk delayed).
//! Restored, bytes pass again; a stalled connection resumes where it stopped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// How bytes pass through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Passage {
    Open,
    Stalled,
    Slow(Duration),
}

/// A running proxy to `upstream`.
pub struct Proxy {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    /// Bumped on every cut: each forwarded connection ends when it changes.
    generation: watch::Sender<u64>,
    passage: watch::Sender<Passage>,
}

/// Copies `from` to `to` chunk by chunk, each chunk waiting while the passage is stalled and
/// delayed while it is slow.
async fn pump(mut from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, mut passage: watch::Receiver<Passage>) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        let now = *passage.borrow_and_update();
        match now {
            Passage::Open => {}
            Passage::Slow(delay) => tokio::time::sleep(delay).await,
            Passage::Stalled => {
                if passage.wait_for(|p| *p != Passage::Stalled).await.is_err() {
                    return;
                }
            }
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let (generation, _) = watch::channel(0u64);
        let (passage, _) = watch::channel(Passage::Open);
        let (cut_flag, generations, passages) = (cut.clone(), generation.clone(), passage.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if cut_flag.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let mut ended = generations.subscribe();
                let (up, down) = (passages.subscribe(), passages.subscribe());
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else { return };
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::select! {
                        _ = pump(client_read, server_write, up) => {}
                        _ = pump(server_read, client_write, down) => {}
                        // Both ends see their connection close mid-conversation.
                        _ = ended.changed() => {}
                    }
                });
            }
        });
        Proxy { addr, cut, generation, passage }
    }

    /// Where the proxy listens (for a peer that is not a database: an SMTP server, a webhook
    /// receiver).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `url` (a PostgreSQL URL to 127.0.0.1:5432 or localhost:5432) through this proxy.
    pub fn url_through(&self, url: &str) -> String {
        let mut parsed = url::Url::parse(url).expect("a database URL");
        parsed.set_host(Some("127.0.0.1")).unwrap();
        parsed.set_port(Some(self.addr.port())).unwrap();
        parsed.to_string()
    }

    /// Closes every open connection and refuses new ones until [`Proxy::restore`].
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.generation.send_modify(|g| *g += 1);
    }

    /// Holds every byte, on open and new connections alike, until [`Proxy::restore`].
    pub fn stall(&self) {
        self.passage.send_replace(Passage::Stalled);
    }

    /// Delays every chunk by `delay` until [`Proxy::restore`].
    pub fn slow(&self, delay: Duration) {
        self.passage.send_replace(Passage::Slow(delay));
    }

    /// Lets connections and bytes through again.
    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
        self.passage.send_replace(Passage::Open);
    }
}

/// Where the test database's server listens, from its URL.
pub fn upstream_of(url: &str) -> SocketAddr {
    let parsed = url::Url::parse(url).expect("a database URL");
    let host = match parsed.host_str() {
        Some("localhost") | None => "127.0.0.1",
        Some(host) => host,
    };
    format!("{host}:{}", parsed.port().unwrap_or(5432)).parse().expect("a host:port")
}
