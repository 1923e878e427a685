//! Configuration: environment variables, each with a default that works on one machine.
//! The README's configuration table lists every one.

use schema::store::domains::DEV_SENDER_DOMAIN;
use std::net::SocketAddr;

/// Everything the operator can set.
#[derive(Debug, Clone)]
pub struct Config {
    /// `DATABASE_URL`: the PostgreSQL database.
    pub database_url: String,
    /// `HERALD_HTTP_ADDR`: where the API listens.
    pub http_addr: SocketAddr,
    /// `HERALD_PUBLIC_URL`: the address clients and hosted pages use.
    pub public_url: String,
    /// `HERALD_ENV`: the deployment name shown by health and readiness.
    pub env: String,
    /// `HERALD_DB_MAX_CONNECTIONS`: size of the main pool.
    pub db_max_connections: u32,
    /// `HERALD_DB_ACQUIRE_TIMEOUT_SECONDS`: how long a request waits for a pool connection
    /// before it is answered `503` (default 5).
    pub db_acquire_timeout: std::time::Duration,
    /// `HERALD_REQUEST_TIMEOUT_SECONDS`: a request not answered by then is answered `503`
    /// (default 15).
    pub request_timeout: std::time::Duration,
    /// `HERALD_RATE_LIMIT_CAPACITY`: token bucket capacity per team.
    pub rate_limit_capacity: u32,
    /// `HERALD_RATE_LIMIT_REFILL`: tokens added per second per team.
    pub rate_limit_refill: f64,
    /// `HERALD_WORKER_CONCURRENCY`: jobs each queue runs at once in one worker process.
    pub worker_concurrency: usize,
    /// `HERALD_SHUTDOWN_SECONDS`: how long a graceful shutdown waits for requests and jobs.
    pub shutdown_seconds: u64,
    /// `HERALD_LOG_FORMAT`: `text` or `json`.
    pub log_format: String,
    /// `HERALD_SPOOL_DIR`: where `herald serve` spools open and click hits before they reach
    /// PostgreSQL (default `herald-spool` in the working directory; shared safely by the
    /// processes of one host).
    pub spool_dir: std::path::PathBuf,
    /// `HERALD_BROADCAST_PAGE_SIZE`: contacts a broadcast's fan-out resolves per transaction
    /// (default 500).
    pub broadcast_page_size: i64,
    /// `HERALD_AUTOMATION_CONCURRENCY`: automation executor tasks in a worker process, each
    /// advancing up to 32 due runs per transaction (default 4).
    pub automation_concurrency: usize,
    /// `HERALD_DNS_SERVERS`: comma-separated `ip:port` nameservers; empty means the system's.
    pub dns_servers: Vec<SocketAddr>,
    /// `HERALD_DNS_TIMEOUT_MS`: how long one DNS query may take.
    pub dns_timeout_ms: u64,
    /// `HERALD_MAIL_FROM_HOST`, `HERALD_INBOUND_HOST`, `HERALD_TRACKING_HOST`: the hosts domains
    /// point their records at (`{region}` is replaced by the domain's region).
    pub hosts: schema::domain::RegionHosts,
    /// `HERALD_SYSTEM_FROM`: the sender of account mail (address verification, password reset,
    /// invitations), such as `Herald <accounts@mail.example.com>`. Its domain must be a verified
    /// sending domain of some team on this server (the operator's); unset, no account mail is sent
    /// (in development it goes from the development sender: [`Config::account_sender`]).
    pub system_from: Option<String>,
    /// `HERALD_SECRET_KEY`: seals credentials the service keeps (DNS provider tokens).
    pub secret_key: Option<String>,
    /// `HERALD_CLOUDFLARE_API_URL`: Cloudflare's API base.
    pub cloudflare_api_url: String,
    /// The payment provider: `HERALD_STRIPE_SECRET_KEY` turns billing writes on; unset, each
    /// answers `503 service_unavailable` and `GET /billing` still answers.
    pub stripe: Option<StripeSettings>,
    /// `HERALD_MIGRATION_RESEND_API_BASE`: Resend's API root for migrations.
    pub migration_resend_api_base: String,
    /// `HERALD_MIGRATION_MAILCHIMP_API_BASE`: Mailchimp's API root for migrations; `{dc}` is
    /// replaced by the data centre the API key's suffix names.
    pub migration_mailchimp_api_base: String,
    /// `HERALD_MIGRATION_ALLOW_PRIVATE`: let a listmonk `base_url` reach loopback, private and
    /// link-local addresses. Always allowed outside `HERALD_ENV=production`.
    pub migration_allow_private: bool,
    /// AI assist's provider: `HERALD_AI_BASE_URL` turns the `/ai` routes on; unset, each
    /// answers `503 service_unavailable`.
    pub ai: Option<AiSettings>,
    /// `HERALD_SMTP_RELAY`: `smtp://[user:pass@]host:port` (or `smtps://`); unset delivers to
    /// each recipient's MX.
    pub smtp_relay: Option<jobs::smtp::Relay>,
    /// `HERALD_MX_PORT`: the port of recipients' MX hosts.
    pub mx_port: u16,
    /// `HERALD_SMTP_HELO`: the name given in EHLO.
    pub smtp_helo: String,
    /// `HERALD_SMTP_TIMEOUT_SECONDS`: connecting and each SMTP command.
    pub smtp_timeout_seconds: u64,
    /// `HERALD_SMTP_DATA_TIMEOUT_SECONDS`: the wait for the reply to a message.
    pub smtp_data_timeout_seconds: u64,
    /// `HERALD_DELIVERY_RETRY_SCHEDULE`: comma-separated waits (`30s`, `5m`, `2h`) before each
    /// retry of a deferred recipient; it bounces once they are spent.
    pub retry_schedule: Vec<std::time::Duration>,
    /// `HERALD_AMBIGUOUS_WINDOW_SECONDS`: how long an ambiguous submission waits before failing.
    pub ambiguous_window_seconds: u64,
    /// `HERALD_DELIVER_CONCURRENCY`: deliveries one worker process runs at once.
    pub deliver_concurrency: usize,
    /// `HERALD_ATTACHMENT_ALLOW_PRIVATE`: let attachment `path`s reach loopback, private and
    /// link-local addresses (self-hosted file servers, tests). Off by default.
    pub attachment_allow_private: bool,
    /// `HERALD_ATTACHMENT_CA_FILE`: PEM certificates trusted for attachment fetches besides the
    /// public roots (an internal CA).
    pub attachment_ca_file: Option<String>,
    /// `HERALD_WEBHOOK_RETRY_SCHEDULE`: waits before each webhook retry; the delivery fails once
    /// they are spent.
    pub webhook_retry_schedule: Vec<std::time::Duration>,
    /// `HERALD_WEBHOOK_TIMEOUT_SECONDS`: how long an endpoint has to answer.
    pub webhook_timeout_seconds: u64,
    /// `HERALD_WEBHOOK_ALLOW_PRIVATE`: allow endpoints on loopback, private and link-local
    /// addresses (self-hosted receivers, tests).
    pub webhook_allow_private: bool,
    /// `HERALD_WEBHOOK_CONCURRENCY`: webhook deliveries in flight per worker process.
    pub webhook_concurrency: usize,
    /// `HERALD_WEBHOOK_DISABLE_AFTER`: an endpoint failing every delivery this long is disabled.
    pub webhook_disable_after: std::time::Duration,
    /// `HERALD_METRICS_ADDR`: when set, `serve` also listens here and answers `GET /metrics`
    /// with no credential (bind it to a private network only).
    pub metrics_addr: Option<SocketAddr>,
    /// `HERALD_METRICS_TOKEN`: when set, `GET /metrics` on the API listener answers the
    /// `Authorization: Bearer` of this token; unset, it is an unknown path there.
    pub metrics_token: Option<String>,
    /// `HERALD_SMTP_ADDR`: where the inbound SMTP server listens (`herald inbound` defaults it
    /// to 127.0.0.1:2525; `herald serve` runs the server too when it is set).
    pub smtp_addr: Option<SocketAddr>,
    /// `HERALD_SMTP_TLS_CERT`, `HERALD_SMTP_TLS_KEY`: PEM files; STARTTLS is offered when both
    /// are set.
    pub smtp_tls: Option<(String, String)>,
    /// `HERALD_SMTP_MAX_MESSAGE_BYTES`: the largest message accepted (default 40 MB).
    pub smtp_max_message_bytes: usize,
    /// `HERALD_SMTP_MAX_ATTACHMENT_BYTES`: a received part larger than this (decoded) is listed
    /// with its size and not stored (default 25 MB).
    pub smtp_max_attachment_bytes: usize,
    /// `HERALD_SMTP_MAX_RECIPIENTS`: recipients per message (default 100).
    pub smtp_max_recipients: usize,
    /// `HERALD_SMTP_MAX_CONNECTIONS`, `HERALD_SMTP_MAX_CONNECTIONS_PER_IP`: sessions at once, in
    /// all (default 1,000) and from one address (default 50).
    pub smtp_max_connections: usize,
    pub smtp_max_connections_per_ip: usize,
    /// `HERALD_SMTP_MAX_MESSAGES_PER_CONNECTION`: messages one session may send (default 1,000).
    pub smtp_max_messages_per_connection: usize,
    /// `HERALD_SMTP_COMMAND_TIMEOUT_SECONDS`, `HERALD_SMTP_DATA_TIMEOUT_SECONDS_IN`: how long the
    /// server waits for a command (default 300) and for each chunk of message data (default 180).
    pub smtp_command_timeout_seconds: u64,
    pub smtp_data_timeout_in_seconds: u64,
    /// `HERALD_INBOUND_COMMIT_TIMEOUT_SECONDS`: how long the inbound server waits for the
    /// transaction that stores a message before answering `451` (default 30).
    pub inbound_commit_timeout_seconds: u64,
    /// `HERALD_CLAMD_ADDR`: a clamd (`host:port`) that scans each received message; unset, no
    /// scanning.
    pub clamd_addr: Option<String>,
}

/// Stripe's settings.
#[derive(Debug, Clone)]
pub struct StripeSettings {
    /// `HERALD_STRIPE_SECRET_KEY`: the secret API key (`sk_...`).
    pub secret_key: String,
    /// `HERALD_STRIPE_API_BASE`: Stripe's API (default `https://api.stripe.com`).
    pub api_base: String,
    /// `HERALD_STRIPE_WEBHOOK_SECRET`: the webhook endpoint's signing secret (`whsec_...`);
    /// unset, `POST /billing/stripe/webhook` refuses every event.
    pub webhook_secret: Option<String>,
    /// `HERALD_STRIPE_TIMEOUT_SECONDS`: how long one call may take (default 10).
    pub timeout: std::time::Duration,
}

/// AI assist's provider: a server speaking OpenAI's Chat Completions API.
#[derive(Debug, Clone)]
pub struct AiSettings {
    /// `HERALD_AI_BASE_URL`: the API base up to and including `/v1` (OpenAI's
    /// `https://api.openai.com/v1`, Ollama's `http://localhost:11434/v1`, ...).
    pub base_url: String,
    /// `HERALD_AI_API_KEY`: sent as a bearer token when set (never logged or answered).
    pub api_key: Option<String>,
    /// `HERALD_AI_MODEL`: the model to ask (default `gpt-4o-mini`).
    pub model: String,
    /// `HERALD_AI_TIMEOUT_SECONDS`: how long one call may take (default 30).
    pub timeout: std::time::Duration,
}

/// The default database: the local server with trust auth.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/herald";

impl Config {
    /// Reads the environment.
    pub fn from_env() -> anyhow::Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads configuration through `lookup` (tests pass their own).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        let get = |name: &str, default: &str| lookup(name).filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_string());
        let number = |name: &str, default: &str| -> anyhow::Result<f64> {
            let raw = get(name, default);
            raw.parse::<f64>().map_err(|_| anyhow::anyhow!("{name} must be a number, got {raw:?}"))
        };
        let http_addr = listen_address(&get)?;
        let public_url = get("HERALD_PUBLIC_URL", "http://127.0.0.1:8080").trim_end_matches('/').to_string();
        let log_format = get("HERALD_LOG_FORMAT", "text");
        anyhow::ensure!(matches!(log_format.as_str(), "text" | "json"), "HERALD_LOG_FORMAT must be text or json");
        let capacity = number("HERALD_RATE_LIMIT_CAPACITY", "10")?;
        anyhow::ensure!(capacity >= 1.0, "HERALD_RATE_LIMIT_CAPACITY must be at least 1");
        let refill = number("HERALD_RATE_LIMIT_REFILL", "10")?;
        anyhow::ensure!(refill > 0.0, "HERALD_RATE_LIMIT_REFILL must be positive");
        let dns_servers = get("HERALD_DNS_SERVERS", "")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().map_err(|_| anyhow::anyhow!("HERALD_DNS_SERVERS must list ip:port entries, got {s:?}")))
            .collect::<anyhow::Result<Vec<SocketAddr>>>()?;
        let defaults = schema::domain::RegionHosts::under(&host_base(&public_url));
        let hosts = schema::domain::RegionHosts {
            mail_from: get("HERALD_MAIL_FROM_HOST", &defaults.mail_from),
            inbound: get("HERALD_INBOUND_HOST", &defaults.inbound),
            tracking: get("HERALD_TRACKING_HOST", &defaults.tracking),
        };
        let smtp_relay = lookup("HERALD_SMTP_RELAY").filter(|v| !v.is_empty()).map(|url| jobs::smtp::Relay::parse(&url)).transpose()?;
        let retry_schedule = schedule("HERALD_DELIVERY_RETRY_SCHEDULE", &get("HERALD_DELIVERY_RETRY_SCHEDULE", "1m,5m,15m,30m,1h,2h,4h,8h"))?;
        let smtp_helo = get("HERALD_SMTP_HELO", &host_base(&public_url));
        let metrics_addr = lookup("HERALD_METRICS_ADDR")
            .filter(|v| !v.is_empty())
            .map(|addr| addr.parse().map_err(|_| anyhow::anyhow!("HERALD_METRICS_ADDR must be host:port, got {addr:?}")))
            .transpose()?;
        let smtp_addr = lookup("HERALD_SMTP_ADDR")
            .filter(|v| !v.is_empty())
            .map(|addr| addr.parse().map_err(|_| anyhow::anyhow!("HERALD_SMTP_ADDR must be host:port, got {addr:?}")))
            .transpose()?;
        let smtp_tls = match (lookup("HERALD_SMTP_TLS_CERT").filter(|v| !v.is_empty()), lookup("HERALD_SMTP_TLS_KEY").filter(|v| !v.is_empty())) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            _ => anyhow::bail!("HERALD_SMTP_TLS_CERT and HERALD_SMTP_TLS_KEY are set together"),
        };
        Ok(Self {
            smtp_addr,
            smtp_tls,
            smtp_max_message_bytes: number("HERALD_SMTP_MAX_MESSAGE_BYTES", "41943040")?.max(1024.0) as usize,
            smtp_max_attachment_bytes: number("HERALD_SMTP_MAX_ATTACHMENT_BYTES", "26214400")?.max(1.0) as usize,
            smtp_max_recipients: number("HERALD_SMTP_MAX_RECIPIENTS", "100")?.max(1.0) as usize,
            smtp_max_connections: number("HERALD_SMTP_MAX_CONNECTIONS", "1000")?.max(1.0) as usize,
            smtp_max_connections_per_ip: number("HERALD_SMTP_MAX_CONNECTIONS_PER_IP", "50")?.max(1.0) as usize,
            smtp_max_messages_per_connection: number("HERALD_SMTP_MAX_MESSAGES_PER_CONNECTION", "1000")?.max(1.0) as usize,
            smtp_command_timeout_seconds: number("HERALD_SMTP_COMMAND_TIMEOUT_SECONDS", "300")?.max(1.0) as u64,
            smtp_data_timeout_in_seconds: number("HERALD_SMTP_DATA_TIMEOUT_SECONDS_IN", "180")?.max(1.0) as u64,
            inbound_commit_timeout_seconds: number("HERALD_INBOUND_COMMIT_TIMEOUT_SECONDS", "30")?.max(1.0) as u64,
            clamd_addr: lookup("HERALD_CLAMD_ADDR").filter(|v| !v.is_empty()),
            smtp_relay,
            mx_port: number("HERALD_MX_PORT", "25")? as u16,
            smtp_helo,
            smtp_timeout_seconds: number("HERALD_SMTP_TIMEOUT_SECONDS", "30")? as u64,
            smtp_data_timeout_seconds: number("HERALD_SMTP_DATA_TIMEOUT_SECONDS", "120")? as u64,
            retry_schedule,
            ambiguous_window_seconds: number("HERALD_AMBIGUOUS_WINDOW_SECONDS", "7200")? as u64,
            deliver_concurrency: number("HERALD_DELIVER_CONCURRENCY", "32")?.max(1.0) as usize,
            attachment_allow_private: flag("HERALD_ATTACHMENT_ALLOW_PRIVATE", &get)?,
            attachment_ca_file: lookup("HERALD_ATTACHMENT_CA_FILE").filter(|v| !v.is_empty()),
            webhook_retry_schedule: schedule("HERALD_WEBHOOK_RETRY_SCHEDULE", &get("HERALD_WEBHOOK_RETRY_SCHEDULE", "5s,5m,30m,2h,5h,10h,10h"))?,
            webhook_timeout_seconds: number("HERALD_WEBHOOK_TIMEOUT_SECONDS", "15")?.max(1.0) as u64,
            webhook_allow_private: flag("HERALD_WEBHOOK_ALLOW_PRIVATE", &get)?,
            webhook_concurrency: number("HERALD_WEBHOOK_CONCURRENCY", "64")?.max(1.0) as usize,
            webhook_disable_after: duration(&get("HERALD_WEBHOOK_DISABLE_AFTER", "5d"))
                .ok_or_else(|| anyhow::anyhow!("HERALD_WEBHOOK_DISABLE_AFTER must be a duration such as 5d"))?,
            dns_servers,
            dns_timeout_ms: number("HERALD_DNS_TIMEOUT_MS", "2000")? as u64,
            hosts,
            secret_key: lookup("HERALD_SECRET_KEY").filter(|v| !v.is_empty()),
            system_from: lookup("HERALD_SYSTEM_FROM").map(|v| v.trim().to_string()).filter(|v| !v.is_empty()),
            metrics_addr,
            metrics_token: lookup("HERALD_METRICS_TOKEN").map(|v| v.trim().to_string()).filter(|v| !v.is_empty()),
            cloudflare_api_url: get("HERALD_CLOUDFLARE_API_URL", "https://api.cloudflare.com/client/v4"),
            stripe: match lookup("HERALD_STRIPE_SECRET_KEY").filter(|v| !v.is_empty()) {
                None => None,
                Some(secret_key) => Some(StripeSettings {
                    secret_key,
                    api_base: get("HERALD_STRIPE_API_BASE", jobs::stripe::DEFAULT_API_BASE),
                    webhook_secret: lookup("HERALD_STRIPE_WEBHOOK_SECRET").filter(|v| !v.is_empty()),
                    timeout: std::time::Duration::from_secs_f64(number("HERALD_STRIPE_TIMEOUT_SECONDS", "10")?.clamp(0.1, 120.0)),
                }),
            },
            ai: match lookup("HERALD_AI_BASE_URL").map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
                None => None,
                Some(base_url) => Some(AiSettings {
                    base_url,
                    api_key: lookup("HERALD_AI_API_KEY").filter(|v| !v.is_empty()),
                    model: get("HERALD_AI_MODEL", "gpt-4o-mini"),
                    timeout: std::time::Duration::from_secs_f64(number("HERALD_AI_TIMEOUT_SECONDS", "30")?.clamp(1.0, 120.0)),
                }),
            },
            migration_resend_api_base: get("HERALD_MIGRATION_RESEND_API_BASE", jobs::migrate::RESEND_API_BASE),
            migration_mailchimp_api_base: get("HERALD_MIGRATION_MAILCHIMP_API_BASE", jobs::migrate::MAILCHIMP_API_BASE),
            migration_allow_private: flag("HERALD_MIGRATION_ALLOW_PRIVATE", &get)? || get("HERALD_ENV", "development") != "production",
            database_url: get("DATABASE_URL", DEFAULT_DATABASE_URL),
            http_addr,
            public_url,
            env: get("HERALD_ENV", "development"),
            db_max_connections: number("HERALD_DB_MAX_CONNECTIONS", "20")? as u32,
            db_acquire_timeout: std::time::Duration::from_secs_f64(number("HERALD_DB_ACQUIRE_TIMEOUT_SECONDS", "5")?.clamp(0.5, 60.0)),
            request_timeout: std::time::Duration::from_secs_f64(number("HERALD_REQUEST_TIMEOUT_SECONDS", "15")?.clamp(1.0, 3600.0)),
            rate_limit_capacity: capacity as u32,
            rate_limit_refill: refill,
            worker_concurrency: number("HERALD_WORKER_CONCURRENCY", "4")?.max(1.0) as usize,
            shutdown_seconds: number("HERALD_SHUTDOWN_SECONDS", "20")? as u64,
            log_format,
            spool_dir: get("HERALD_SPOOL_DIR", "herald-spool").into(),
            broadcast_page_size: number("HERALD_BROADCAST_PAGE_SIZE", "500")?.clamp(1.0, 10_000.0) as i64,
            automation_concurrency: number("HERALD_AUTOMATION_CONCURRENCY", "4")?.clamp(1.0, 256.0) as usize,
        })
    }

    /// What the deliver job needs: SMTP settings over the configured resolver, and timing.
    pub fn delivery(&self, dns: jobs::dns::Dns) -> jobs::deliver::Delivery {
        use std::time::Duration;
        let settings = jobs::smtp::SmtpSettings {
            relay: self.smtp_relay.clone(),
            mx_port: self.mx_port,
            helo: self.smtp_helo.clone(),
            command_timeout: Duration::from_secs(self.smtp_timeout_seconds),
            data_timeout: Duration::from_secs(self.smtp_data_timeout_seconds),
            idle_per_host: self.deliver_concurrency,
        };
        jobs::deliver::Delivery::new(
            jobs::smtp::Mailer::new(settings, dns),
            jobs::deliver::DeliverySettings {
                retry_schedule: self.retry_schedule.clone(),
                ambiguous_window: Duration::from_secs(self.ambiguous_window_seconds),
                public_url: self.public_url.clone(),
            },
        )
    }

    /// Whether this is a development server (`HERALD_ENV=development`, the default): the
    /// development sender and the outbox work only then.
    /// What the migration job needs: the platforms' API roots and the key that opens the
    /// credentials it is given.
    pub fn migration_settings(&self) -> jobs::migrate::MigrationSettings {
        jobs::migrate::MigrationSettings {
            secret_key: self.secret_key.clone(),
            resend_api_base: self.migration_resend_api_base.clone(),
            mailchimp_api_base: self.migration_mailchimp_api_base.clone(),
            allow_private: self.migration_allow_private,
        }
    }

    pub fn is_development(&self) -> bool {
        self.env == "development"
    }

    /// The sender of account mail: `HERALD_SYSTEM_FROM`; unset in development, the development
    /// sender (`accounts@dev.herald.localhost`, into the outbox); unset elsewhere, none.
    pub fn account_sender(&self) -> Option<String> {
        match &self.system_from {
            Some(from) => Some(from.clone()),
            None if self.is_development() => Some(format!("Herald <accounts@{DEV_SENDER_DOMAIN}>")),
            None => None,
        }
    }

    /// The inbound SMTP server's settings (reads the TLS certificate and key when set).
    pub fn inbound(&self) -> anyhow::Result<jobs::inbound::InboundSettings> {
        use std::time::Duration;
        let tls = match &self.smtp_tls {
            Some((cert, key)) => Some(jobs::inbound::tls_acceptor(&std::fs::read(cert)?, &std::fs::read(key)?)?),
            None => None,
        };
        Ok(jobs::inbound::InboundSettings {
            hostname: self.smtp_helo.clone(),
            max_message_bytes: self.smtp_max_message_bytes,
            max_attachment_bytes: self.smtp_max_attachment_bytes,
            max_recipients: self.smtp_max_recipients,
            max_connections: self.smtp_max_connections,
            max_connections_per_ip: self.smtp_max_connections_per_ip,
            max_messages_per_connection: self.smtp_max_messages_per_connection,
            command_timeout: Duration::from_secs(self.smtp_command_timeout_seconds),
            data_timeout: Duration::from_secs(self.smtp_data_timeout_in_seconds),
            commit_timeout: Duration::from_secs(self.inbound_commit_timeout_seconds),
            tls,
            clamd: self.clamd_addr.clone(),
        })
    }

    /// The DNS checker the API and the workers share.
    pub fn domain_checker(&self) -> anyhow::Result<jobs::domains::DomainChecker> {
        let dns = jobs::dns::Dns::new(&self.dns_servers, std::time::Duration::from_millis(self.dns_timeout_ms))?;
        Ok(jobs::domains::DomainChecker { dns, hosts: self.hosts.clone() })
    }
}

/// `true` or `false` (also `1`/`0`, `yes`/`no`).
fn flag(name: &str, get: &impl Fn(&str, &str) -> String) -> anyhow::Result<bool> {
    match get(name, "false").to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        other => anyhow::bail!("{name} must be true or false, got {other:?}"),
    }
}

/// Comma-separated waits.
fn schedule(name: &str, raw: &str) -> anyhow::Result<Vec<std::time::Duration>> {
    raw.split(',').map(|step| duration(step.trim()).ok_or_else(|| anyhow::anyhow!("{name} has a bad step {step:?}"))).collect()
}

/// A wait such as `30s`, `5m`, `2h` or `1d` (a bare number is seconds).
fn duration(raw: &str) -> Option<std::time::Duration> {
    schema::when::parse_duration(raw)?.to_std().ok()
}

/// The host under which default record targets live: the public URL's host, or
/// `herald.localhost` when that is an IP address or `localhost`.
fn host_base(public_url: &str) -> String {
    let host = public_url.split("://").nth(1).unwrap_or(public_url).split(['/', ':']).next().unwrap_or("").to_ascii_lowercase();
    if host.is_empty() || host == "localhost" || host.parse::<std::net::IpAddr>().is_ok() || !host.contains('.') {
        "herald.localhost".to_string()
    } else {
        host
    }
}

/// Where `serve` listens: `HERALD_HTTP_ADDR`; else, on a PaaS (Heroku, Dokku, Render,
/// Railway) that hands the web process `PORT`, every interface on that port; else
/// `127.0.0.1:8080`.
fn listen_address(get: &impl Fn(&str, &str) -> String) -> anyhow::Result<SocketAddr> {
    let explicit = get("HERALD_HTTP_ADDR", "");
    if !explicit.is_empty() {
        return explicit.parse().map_err(|_| anyhow::anyhow!("HERALD_HTTP_ADDR must be host:port, got {explicit:?}"));
    }
    let port = get("PORT", "");
    if !port.is_empty() {
        let port: u16 = port.trim().parse().map_err(|_| anyhow::anyhow!("PORT must be a port number, got {port:?}"))?;
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    Ok(SocketAddr::from(([127, 0, 0, 1], 8080)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_has_a_working_default() {
        let config = Config::from_lookup(|_| None).unwrap();
        assert_eq!(config.http_addr.to_string(), "127.0.0.1:8080");
        assert_eq!(config.rate_limit_capacity, 10);
        assert_eq!(config.database_url, DEFAULT_DATABASE_URL);
    }

    #[test]
    fn metrics_are_off_unless_an_address_or_a_token_is_set() {
        let config = Config::from_lookup(|_| None).unwrap();
        assert_eq!((config.metrics_addr, config.metrics_token), (None, None));
        let error = Config::from_lookup(|name| (name == "HERALD_METRICS_ADDR").then(|| "localhost".into())).unwrap_err();
        assert!(error.to_string().contains("HERALD_METRICS_ADDR"));
    }

    #[test]
    fn a_paas_port_is_served_on_every_interface_unless_the_address_is_set() {
        let config = Config::from_lookup(|name| (name == "PORT").then(|| "5123".into())).unwrap();
        assert_eq!(config.http_addr.to_string(), "0.0.0.0:5123");
        let both = |name: &str| match name {
            "PORT" => Some("5123".into()),
            "HERALD_HTTP_ADDR" => Some("127.0.0.1:9000".into()),
            _ => None,
        };
        assert_eq!(Config::from_lookup(both).unwrap().http_addr.to_string(), "127.0.0.1:9000");
        let error = Config::from_lookup(|name| (name == "PORT").then(|| "web".into())).unwrap_err();
        assert!(error.to_string().contains("PORT"));
    }

    #[test]
    fn a_malformed_number_is_refused_with_its_name() {
        let error = Config::from_lookup(|name| (name == "HERALD_RATE_LIMIT_CAPACITY").then(|| "ten".into())).unwrap_err();
        assert!(error.to_string().contains("HERALD_RATE_LIMIT_CAPACITY"));
    }
}
