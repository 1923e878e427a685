//! Building and running the HTTP application.

use crate::config::Config;
use crate::http::gateway::Gateway;

use crate::http::request_log::{LogWriter, LogWriterTask};
use crate::state::AppState;
use poem::listener::{Acceptor, Listener, TcpAcceptor, TcpListener};
use poem::web::{Html, Json};
use poem::http::Method;
use poem::{Endpoint, EndpointExt, IntoResponse, Route, Server, get, handler};
use std::future::Future;
use std::time::Duration;

/// The application itself, handed to the parts that call its routes (the MCP server's tools,
/// the dashboard's pages) once it is built.
pub type AppSlot = std::sync::Arc<std::sync::OnceLock<std::sync::Arc<dyn poem::endpoint::DynEndpoint<Output = poem::Response>>>>;

/// The routes behind the gateway.
pub fn endpoint(state: AppState) -> impl Endpoint + 'static {
    let document = crate::document::document();
    let spec = get(handler_for(document));
    // The MCP server's tools call the application itself, which holds the MCP server: it is
    // handed the application once built.
    let app_slot = AppSlot::default();
    let routes = Route::new()
        .at("/mcp", crate::routes::mcp::McpEndpoint::new(app_slot.clone()))
        .nest("/app", crate::routes::dashboard::routes(app_slot.clone()))
        .at("/docs", get(reference))
        .at("/openapi.json", spec)
        .at("/outbox", get(crate::routes::pages::outbox::page))
        .at("/metrics", crate::http::metrics::guarded)
        .nest("/", crate::document::service());
    // The service nested at `/` also catches `/` itself (a catch-all child wins over its
    // node's own endpoint), so the index is answered before the routes.
    let inner = routes
        .around(|routes, req| async move {
            if req.uri().path() == "/" && req.method() == Method::GET {
                return Ok(index().into_response());
            }
            routes.call(req).await
        })
        .data(state.clone());
    let app: std::sync::Arc<dyn poem::endpoint::DynEndpoint<Output = poem::Response>> = std::sync::Arc::from(Gateway { inner, state }.boxed());
    let _ = app_slot.set(app.clone());
    app
}

/// `GET /`: what the deployment is and where to read about it, each a path on this host.
fn index() -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "name": "Herald",
        "version": env!("CARGO_PKG_VERSION"),
        "docs": "/docs",
        "openapi": "/openapi.json",
        "health": "/health",
    }))
}

/// `GET /docs`: the browsable API reference, served from the binary.
#[handler]
fn reference() -> Html<&'static str> {
    Html(crate::document::reference_page())
}

fn handler_for(document: serde_json::Value) -> impl Endpoint {
    #[handler]
    fn serve_document(document: poem::web::Data<&serde_json::Value>) -> Json<serde_json::Value> {
        Json(document.0.clone())
    }
    serve_document.data(document)
}

/// A bound, ready-to-serve API.
pub struct Application {
    acceptor: TcpAcceptor,
    port: u16,
    state: AppState,
    log_task: LogWriterTask,
    listener: crate::http::key_cache::ListenerTask,
    spool_task: crate::routes::pages::spool::SpoolTask,
}

impl Application {
    /// Connects to the database and binds the listener (port 0 picks a free port).
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let pool = schema::connect_when_up(&config.database_url, config.db_max_connections, config.db_acquire_timeout).await?;
        let relaxed = schema::connect_relaxed(&config.database_url, config.db_max_connections.div_ceil(2)).await?;
        Self::build_with(config, pool, relaxed).await
    }

    /// Builds on existing pools.
    pub async fn build_with(config: Config, pool: sqlx::PgPool, relaxed: sqlx::PgPool) -> anyhow::Result<Self> {
        // Logs are queued in memory before they are written, so waiting for the WAL flush on
        // their commits would guard nothing a crash of Herald does not lose anyway.
        let (logs, log_task) = LogWriter::start(relaxed.clone());
        let acceptor = TcpListener::bind(config.http_addr.to_string()).into_acceptor().await?;
        let port = acceptor
            .local_addr()
            .first()
            .and_then(|addr| addr.as_socket_addr().map(|a| a.port()))
            .ok_or_else(|| anyhow::anyhow!("the listener has no address"))?;
        let checker = config.domain_checker()?;
        let fetcher = crate::routes::emails::fetch::Fetcher::from_config(&config)?;
        let fresh: [u8; 32] = rand::random();
        let link_key = schema::store::keys::get_or_create(&mut *pool.acquire().await?, "links", &fresh).await?;
        if config.is_development() {
            crate::routes::pages::outbox::ensure_dev_senders(&pool).await?;
        }
        let (keys, listener) = crate::http::key_cache::KeyCache::start(relaxed.clone()).await?;
        let buckets = std::sync::Arc::new(crate::http::rate_limit::Buckets::new(
            relaxed.clone(),
            config.rate_limit_capacity as f64,
            config.rate_limit_refill,
        ));
        let link_key = std::sync::Arc::new(link_key);
        let (spool, spool_task) = crate::routes::pages::spool::Spool::start(&config.spool_dir, pool.clone())?;
        let stripe = config.stripe.as_ref().map(|s| jobs::stripe::Stripe::new(&s.api_base, &s.secret_key, s.timeout)).transpose()?;
        let ai = config.ai.as_ref().map(|a| jobs::ai::Ai::new(&a.base_url, a.api_key.as_deref(), &a.model, a.timeout)).transpose()?;
        let invoices = Default::default();
        let state =
            AppState::new(crate::state::Shared { pool, relaxed, config, logs, checker, fetcher, link_key, keys, buckets, spool, stripe, ai, invoices, sending: Default::default() });
        Ok(Self { acceptor, port, state, log_task, listener, spool_task })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The shared state (tests read the pool).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` resolves, lets requests finish, then writes every queued log.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let Self { acceptor, port: _, state, log_task, listener, spool_task } = self;
        let timeout = Duration::from_secs(state.config.shutdown_seconds);
        let metrics = crate::http::metrics::start(&state).await?;
        let endpoint = endpoint(state);
        let served = Server::new_with_acceptor(acceptor).run_with_graceful_shutdown(endpoint, shutdown, Some(timeout)).await;
        if let Some(metrics) = metrics {
            metrics.stop().await;
        }
        log_task.close().await;
        spool_task.close().await;
        listener.close().await;
        served?;
        Ok(())
    }
}
