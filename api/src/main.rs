//! `herald`: read configuration, set up tracing, run the command.

use clap::Parser;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let json = std::env::var("HERALD_LOG_FORMAT").is_ok_and(|f| f == "json");
    let filter = EnvFilter::try_from_env("HERALD_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let subscriber = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if json {
        subscriber.json().init();
    } else {
        subscriber.init();
    }
    api::cli::run(api::cli::Cli::parse()).await
}
