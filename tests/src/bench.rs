//! What the benchmark binaries (`scripts/bench`) share.

use std::process::{Command, Stdio};
use std::time::Duration;

/// An integer setting from the environment, or `default`.
pub fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Postfix's `smtp-sink` on `port`: accepts everything and keeps nothing.
pub fn start_postfix_sink(port: u16) -> anyhow::Result<std::process::Child> {
    let mut command = Command::new("smtp-sink");
    // As root it must drop privileges.
    if is_root() {
        command.args(["-u", "nobody"]);
    }
    let child = command.args(["-m", "1024", &format!("127.0.0.1:{port}"), "1024"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    std::thread::sleep(Duration::from_millis(300));
    Ok(child)
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0")).unwrap_or(false)
}

/// A TCP port free right now.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Herald's API served in the benchmark's own process on its pool (and a relaxed pool of 4).
pub struct Api {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Api {
    pub async fn serve(config: &api::config::Config, pool: &sqlx::PgPool, database_url: &str) -> anyhow::Result<Api> {
        let relaxed = schema::connect_relaxed(database_url, 4).await?;
        let app = api::app::Application::build_with(config.clone(), pool.clone(), relaxed).await?;
        let base = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(app.run(async move {
            let _ = stopped.await;
        }));
        Ok(Api { base, stop, server })
    }

    /// Stops the server and waits for it.
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.server.await?
    }
}
