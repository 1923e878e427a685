//! A TCP proxy between Herald and PostgreSQL that a fault test can cut: while cut, every open
//! connection is closed and new ones are refused (accepted and closed at once), as when the
//! network path to the database goes away; restored, connections pass again.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A running proxy to `upstream`.
pub struct Proxy {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    /// Bumped on every cut: each forwarded connection ends when it changes.
    generation: watch::Sender<u64>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let (generation, _) = watch::channel(0u64);
        let (cut_flag, generations) = (cut.clone(), generation.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if cut_flag.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let mut ended = generations.subscribe();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else { return };
                    let (mut client, mut server) = (client, server);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        // Both ends see their connection close mid-conversation.
                        _ = ended.changed() => {}
                    }
                });
            }
        });
        Proxy { addr, cut, generation }
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

    /// Lets connections through again.
    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
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
