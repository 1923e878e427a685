//! The integration test harness: a fresh database per test (cloned from a migrated template),
//! the real `herald` application on port 0, job workers on demand, and an HTTP client.

pub mod bench;
pub mod browser;
pub mod clients;
pub mod cloudflare;
pub mod dashboard;
pub mod dkim;
pub mod dns;
pub mod faults;
pub mod https;
pub mod inbox;
pub mod mail;
pub mod oidc;
pub mod openai;
pub mod platforms;
pub mod postgres;
pub mod proxy;
pub mod receiver;
pub mod smtp;
pub mod stripe;

use api::app::Application;
use api::config::Config;
use serde_json::Value;
use sqlx::{Connection, PgConnection, PgPool};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use uuid::Uuid;

/// The server tests create databases on (`DATABASE_URL`'s server, else the local one).
fn admin_url() -> String {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    with_database(&url, "postgres")
}

fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let root = match base.rfind('/') {
        Some(slash) if base[..slash].contains("://") && slash > base.find("://").unwrap() + 2 => &base[..slash],
        _ => base,
    };
    match query {
        Some(query) => format!("{root}/{database}?{query}"),
        None => format!("{root}/{database}"),
    }
}

/// Name of the migrated template, changing whenever the migrations do.
fn template_name() -> String {
    let mut material = String::new();
    for migration in schema::MIGRATOR.iter() {
        material.push_str(&migration.version.to_string());
        material.push_str(&String::from_utf8_lossy(&migration.checksum));
    }
    material.push_str(&schema::store::jobs::QUEUE_GUARDS.concat());
    material.push_str(env!("CARGO_PKG_VERSION"));
    format!("herald_tpl_{}", &schema::secret::digest_hex(material.as_bytes())[..16])
}

/// Creates a fresh, migrated database and returns its URL.
pub async fn fresh_database() -> String {
    let admin_url = admin_url();
    let mut admin = PgConnection::connect(&admin_url).await.expect("connect to PostgreSQL (set DATABASE_URL)");
    let template = template_name();
    // One process builds the template; the others wait on the lock, then find it.
    sqlx::query("SELECT pg_advisory_lock(4242)").execute(&mut admin).await.unwrap();
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(&template)
        .fetch_one(&mut admin)
        .await
        .unwrap();
    if !exists {
        let building = format!("{template}_building");
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {building}"))).execute(&mut admin).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {building}"))).execute(&mut admin).await.unwrap();
        {
            let pool = PgPool::connect(&with_database(&admin_url, &building)).await.unwrap();
            schema::migrate(&pool).await.expect("migrations apply to a new database");
            pool.close().await;
        }
        sqlx::query(sqlx::AssertSqlSafe(format!("ALTER DATABASE {building} RENAME TO {template}")))
            .execute(&mut admin)
            .await
            .unwrap();
    }
    sqlx::query("SELECT pg_advisory_unlock(4242)").execute(&mut admin).await.unwrap();
    let name = format!("herald_test_{}", Uuid::now_v7().simple());
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name} TEMPLATE {template}")))
        .execute(&mut admin)
        .await
        .expect("clone the template database");
    with_database(&admin_url, &name)
}

/// A running Herald against its own database, with one team and its full-access key.
pub struct TestApp {
    pub base: String,
    pub database_url: String,
    pub pool: PgPool,
    pub team_id: Uuid,
    pub key: String,
    pub client: reqwest::Client,
    stop: watch::Sender<bool>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    workers: Vec<tokio::task::JoinHandle<anyhow::Result<()>>>,
    /// The server's DNS checker (tests run sweeps with it).
    pub checker: jobs::domains::DomainChecker,
    /// The DNS server this instance resolves through.
    pub dns: std::sync::Arc<dns::TestDns>,
    /// The configuration it runs with.
    pub config: Config,
    /// The server's shared state (its key cache and rate-limit buckets).
    pub state: api::state::AppState,
}

/// The configuration tests run with: port 0 and small pools.
pub fn test_config(database_url: &str) -> Config {
    let url = database_url.to_string();
    Config::from_lookup(move |name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "HERALD_HTTP_ADDR" => Some("127.0.0.1:0".into()),
        "HERALD_DB_MAX_CONNECTIONS" => Some("6".into()),
        "HERALD_SHUTDOWN_SECONDS" => Some("5".into()),
        "HERALD_ENV" => Some("test".into()),
        // One spool per database: the processes of a test share it, tests never do.
        "HERALD_SPOOL_DIR" => {
            let database = url.rsplit('/').next().unwrap_or("herald").to_string();
            Some(std::env::temp_dir().join("herald-spool").join(database).to_string_lossy().into_owned())
        }
        _ => None,
    })
    .unwrap()
}

impl TestApp {
    /// Starts Herald on a fresh database with default configuration.
    pub async fn spawn() -> Self {
        Self::spawn_with(|_| {}).await
    }

    /// Starts Herald with a rate limit no test reaches (for tests making many calls).
    pub async fn spawn_unthrottled() -> Self {
        Self::spawn_with(|config| {
            config.rate_limit_capacity = 1000;
            config.rate_limit_refill = 1000.0;
        })
        .await
    }

    /// Starts Herald with the configuration changed by `adjust`.
    pub async fn spawn_with(adjust: impl FnOnce(&mut Config)) -> Self {
        Self::spawn_on(&fresh_database().await, adjust).await
    }

    /// As [`TestApp::spawn_with`], on a migrated database the test made (a private server's).
    pub async fn spawn_on(database_url: &str, adjust: impl FnOnce(&mut Config)) -> Self {
        let database_url = database_url.to_string();
        let pool = schema::connect(&database_url, 12).await.unwrap();
        let (team_id, key) = api::cli::create_team(&pool, "Test team").await.unwrap();
        let mut app = Self::start(&database_url, pool, adjust).await;
        app.team_id = team_id;
        app.key = key;
        app
    }

    /// Starts another Herald process-equivalent on an existing database.
    pub async fn start(database_url: &str, pool: PgPool, adjust: impl FnOnce(&mut Config)) -> Self {
        let dns = std::sync::Arc::new(dns::TestDns::start().await);
        let mut config = test_config(database_url);
        config.dns_servers = vec![dns.addr];
        config.dns_timeout_ms = 400;
        adjust(&mut config);
        let relaxed = schema::connect_relaxed(database_url, 4).await.unwrap();
        let application = build_on_its_port(config, &pool, &relaxed).await;
        let base = format!("http://127.0.0.1:{}", application.port());
        let checker = application.state().checker.clone();
        let config = application.state().config.clone();
        let state = application.state().clone();
        let (stop, stopped) = watch::channel(false);
        let server = tokio::spawn(application.run(wait_for_stop(stopped)));
        Self {
            base,
            database_url: database_url.to_string(),
            pool,
            team_id: Uuid::nil(),
            key: String::new(),
            client: reqwest::Client::builder().user_agent("herald-tests/1.0").build().unwrap(),
            stop,
            server: Some(server),
            workers: Vec::new(),
            checker,
            dns,
            config,
            state,
        }
    }

    /// Runs the job workers in this test until `shutdown`.
    pub fn start_workers(&mut self) {
        let mut options = api::cli::worker_options(&self.config, self.checker.clone());
        options.concurrency = 2;
        options.shutdown_timeout = Duration::from_secs(5);
        options.schedules = false;
        let handle = tokio::spawn(jobs::run(self.pool.clone(), options, wait_for_stop(self.stop.subscribe())));
        self.workers.push(handle);
    }

    /// Graceful shutdown: the server drains and flushes its logs; workers finish their jobs.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(server) = self.server.take() {
            server.await.unwrap().unwrap();
        }
        for worker in self.workers.drain(..) {
            worker.await.unwrap().unwrap();
        }
    }

    /// Starts the inbound SMTP server for this app on a free port (short timeouts, `adjust`ed);
    /// answers the port.
    pub async fn start_inbound(&self, adjust: impl FnOnce(&mut jobs::inbound::InboundSettings)) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut settings = self.config.inbound().unwrap();
        settings.command_timeout = std::time::Duration::from_secs(5);
        settings.data_timeout = std::time::Duration::from_secs(5);
        adjust(&mut settings);
        tokio::spawn(jobs::inbound::serve(self.pool.clone(), settings, listener, std::future::pending()));
        port
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A request with this app's key.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.request_as(&self.key, method, path)
    }

    /// A request with another bearer token.
    pub fn request_as(&self, key: &str, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, self.url(path)).bearer_auth(key)
    }

    pub async fn get(&self, path: &str) -> Answer {
        Answer::from(self.request(reqwest::Method::GET, path).send().await.unwrap()).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Answer {
        Answer::from(self.request(reqwest::Method::POST, path).json(&body).send().await.unwrap()).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Answer {
        Answer::from(self.request(reqwest::Method::PATCH, path).json(&body).send().await.unwrap()).await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        Answer::from(self.request(reqwest::Method::DELETE, path).send().await.unwrap()).await
    }

    /// Creates a key through the API and returns `(id, token)`.
    pub async fn create_key(&self, body: Value) -> (String, String) {
        let answer = self.post("/api-keys", body).await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        (answer.body["id"].as_str().unwrap().to_string(), answer.body["token"].as_str().unwrap().to_string())
    }

    /// Counts rows of a table (or a WHERE-restricted part of it).
    pub async fn count(&self, from: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {from}"))).fetch_one(&self.pool).await.unwrap()
    }

    /// Waits until `from` holds at least `n` rows (logs are written off the request path).
    pub async fn wait_for_rows(&self, from: &str, n: i64) -> i64 {
        eventually(|| async { Some(self.count(from).await).filter(|c| *c >= n) }).await
    }
}

async fn wait_for_stop(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// Polls `probe` until it returns `Some`, for at most ten seconds.
pub async fn eventually<T, F: Future<Output = Option<T>>>(mut probe: impl FnMut() -> F) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "condition not met within 10 seconds");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A response: status, headers and JSON body.
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Answer {
    pub async fn from(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("every response is JSON, got {text:?}"));
        Self { status, headers, body }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts an error answer's status and `name`.
    #[track_caller]
    pub fn assert_error(&self, status: u16, name: &str) {
        assert_eq!((self.status, self.body["name"].as_str().unwrap_or_default()), (status, name), "{}", self.body);
        assert_eq!(self.body["statusCode"], status);
        assert!(self.body["message"].is_string());
    }
}

/// Path to the `herald` binary built next to the test executables.
pub fn herald_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    let dir = if dir.ends_with("deps") { dir.parent().unwrap() } else { dir };
    dir.join("herald")
}

/// A `multipart/form-data` body built by hand: `(name, file name, content)`.
pub fn multipart(parts: &[(&str, Option<&str>, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "herald-test-boundary-7d1f";
    let mut body = Vec::new();
    for (name, file_name, content) in parts {
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").as_bytes());
        match file_name {
            Some(file_name) => body.extend_from_slice(format!("; filename=\"{file_name}\"\r\nContent-Type: text/csv\r\n\r\n").as_bytes()),
            None => body.extend_from_slice(b"\r\n\r\n"),
        }
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Builds the application. A test that names its port (so its public URL can say where it
/// listens) picked that port free a moment earlier, and another test may have taken it since:
/// then it moves to another free port, public URL and all, rather than failing.
async fn build_on_its_port(mut config: Config, pool: &PgPool, relaxed: &PgPool) -> Application {
    for _ in 0..5 {
        match Application::build_with(config.clone(), pool.clone(), relaxed.clone()).await {
            Ok(application) => return application,
            Err(error) if config.http_addr.port() != 0 && is_address_in_use(&error) => {
                let taken = format!(":{}", config.http_addr.port());
                let port = bench::free_port().unwrap();
                config.http_addr.set_port(port);
                if let Some(base) = config.public_url.strip_suffix(&taken) {
                    config.public_url = format!("{base}:{port}");
                }
            }
            Err(error) => panic!("the application does not start: {error:#}"),
        }
    }
    panic!("no free port after five tries")
}

fn is_address_in_use(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::AddrInUse))
}
