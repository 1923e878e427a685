//! A team ready to send: Herald delivering to an SMTP sink the test started (as the MX of
//! `inbox.test`), a verified sending domain `acme.test`, and the team out of the sandbox.

use crate::{Answer, TestApp};
use crate::smtp::SmtpSink;
use api::config::Config;
use serde_json::{Value, json};
use std::net::Ipv4Addr;
use std::time::Duration;

/// The verified sending domain.
pub const SENDING_DOMAIN: &str = "acme.test";
/// The recipients' domain, whose MX is the sink.
pub const RECIPIENT_DOMAIN: &str = "inbox.test";

/// An app, its sink and its verified domain.
pub struct Mail {
    pub app: TestApp,
    pub sink: SmtpSink,
    /// The domain's view from the API.
    pub domain: Value,
}

/// Starts a sink and Herald with short SMTP timeouts, a two-step one-second retry schedule and
/// a one-second ambiguity window.
pub async fn setup() -> Mail {
    setup_with(SmtpSink::start().await, |_| {}).await
}

/// As [`setup`], with this sink and further configuration.
pub async fn setup_with(sink: SmtpSink, adjust: impl FnOnce(&mut Config)) -> Mail {
    let mut mail = setup_without_workers(sink, adjust).await;
    mail.app.start_workers();
    mail
}

/// As [`setup_with`], with no workers running in this process (a test starts `herald worker`).
pub async fn setup_without_workers(sink: SmtpSink, adjust: impl FnOnce(&mut Config)) -> Mail {
    setup_without_workers_on(&crate::fresh_database().await, sink, adjust).await
}

/// As [`setup_without_workers`], on a migrated database the test made (a private server's).
pub async fn setup_without_workers_on(database_url: &str, sink: SmtpSink, adjust: impl FnOnce(&mut Config)) -> Mail {
    let port = sink.port();
    let app = TestApp::spawn_on(database_url, |config| {
        config.mx_port = port;
        config.smtp_timeout_seconds = 5;
        config.smtp_data_timeout_seconds = 2;
        config.retry_schedule = vec![Duration::from_secs(1), Duration::from_secs(1)];
        config.ambiguous_window_seconds = 1;
        config.rate_limit_capacity = 1000;
        config.rate_limit_refill = 1000.0;
        adjust(config);
    })
    .await;
    sqlx::query("UPDATE teams SET plan_code = 'pro' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    let domain = verified_domain(&app, SENDING_DOMAIN, json!({})).await;
    route_to_sink(&app, RECIPIENT_DOMAIN);
    leave_sandbox(&app).await;
    Mail { app, sink, domain }
}

/// Adds `name` (with extra create fields), publishes its records and verifies it.
pub async fn verified_domain(app: &TestApp, name: &str, extra: Value) -> Value {
    verified_domain_as(app, &app.key, name, extra).await
}

/// [`verified_domain`] with another team's key.
pub async fn verified_domain_as(app: &TestApp, key: &str, name: &str, extra: Value) -> Value {
    let mut body = json!({ "name": name });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let created = Answer::from(app.request_as(key, reqwest::Method::POST, "/domains").json(&body).send().await.unwrap()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let domain = created.body;
    publish_records(app, &domain);
    let path = format!("/domains/{}/verify", domain["id"].as_str().unwrap());
    let verified = Answer::from(app.request_as(key, reqwest::Method::POST, &path).json(&json!({})).send().await.unwrap()).await;
    assert_eq!(verified.body["status"], "verified", "{}", verified.body);
    verified.body
}

/// Publishes a domain's DKIM and mail-from records (as the API answered them) in the app's DNS.
pub fn publish_records(app: &TestApp, domain: &Value) {
    let record = |kind: &str| domain["records"].as_array().unwrap().iter().find(|r| r["kind"] == kind).unwrap().clone();
    let dkim = record("dkim");
    let (first, second) = dkim["value"].as_str().unwrap().split_at(255);
    app.dns.zone.set_txt(dkim["fqdn"].as_str().unwrap(), &[&[first, second]]);
    let mail_from = record("mail_from");
    app.dns.zone.set_cname(mail_from["fqdn"].as_str().unwrap(), mail_from["value"].as_str().unwrap());
}

/// Points `domain`'s MX at 127.0.0.1 (the sink listens on the configured MX port).
pub fn route_to_sink(app: &TestApp, domain: &str) {
    let host = format!("mx.{domain}");
    app.dns.zone.set_mx(domain, 10, &host);
    app.dns.zone.set_a(&host, Ipv4Addr::LOCALHOST);
}

/// Takes every region of the app's team out of the sending sandbox.
pub async fn leave_sandbox(app: &TestApp) {
    sqlx::query("UPDATE teams SET sandbox_regions = '{}' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
}

/// The public key (`p=` value) of the domain's DKIM record.
pub fn dkim_public_key(domain: &Value) -> String {
    let dkim = domain["records"].as_array().unwrap().iter().find(|r| r["kind"] == "dkim").unwrap();
    dkim["value"].as_str().unwrap().trim_start_matches("p=").to_string()
}

impl Mail {
    /// Sends and returns the new id (asserting 200).
    pub async fn send(&self, body: Value) -> String {
        let answer = self.app.post("/emails", body).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body["id"].as_str().unwrap().to_string()
    }

    /// A plain send from the verified domain to `to`.
    pub fn message(to: &str) -> Value {
        json!({
            "from": format!("Acme <billing@{SENDING_DOMAIN}>"),
            "to": to,
            "subject": "Your receipt",
            "text": "Thanks for your order.",
            "html": "<p>Thanks for your order.</p>",
        })
    }

    /// Waits until the email's latest event is `last_event`, then returns the email.
    pub async fn wait_for_event(&self, id: &str, last_event: &str) -> Value {
        wait_for_event(&self.app, id, last_event).await
    }

    /// The data of the email's first event of `event_type`.
    pub async fn event(&self, id: &str, event_type: &str) -> Value {
        sqlx::query_scalar("SELECT data FROM events WHERE type = $1 AND email_id = $2::uuid ORDER BY id LIMIT 1")
            .bind(event_type)
            .bind(id)
            .fetch_one(&self.app.pool)
            .await
            .unwrap_or_else(|e| panic!("no {event_type} event for {id}: {e}"))
    }

    /// The event types of an email's timeline, in order.
    pub async fn timeline(&self, id: &str) -> Vec<String> {
        let email = self.app.get(&format!("/emails/{id}")).await;
        email.body["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap().to_string()).collect()
    }
}

/// Waits until the email's latest event (read through `app`) is `last_event`, then returns the
/// email.
pub async fn wait_for_event(app: &TestApp, id: &str, last_event: &str) -> Value {
    let started = std::time::Instant::now();
    loop {
        let email = app.get(&format!("/emails/{id}")).await;
        if email.body["last_event"] == last_event {
            return email.body;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "email {id} never reached {last_event}: {}", email.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Mail {
    /// A `herald worker` process delivering for this test's database, DNS server and sink, with
    /// short SMTP timeouts and retries, and `extra` settings.
    pub fn start_worker(&self, extra: &[(&str, &str)]) -> std::process::Child {
        self.worker_command(extra).spawn().expect("start herald worker")
    }

    /// The command [`Mail::start_worker`] runs, for a test that redirects its output; `extra`
    /// settings (`DATABASE_URL` among them) win over the defaults.
    pub fn worker_command(&self, extra: &[(&str, &str)]) -> std::process::Command {
        let mut command = std::process::Command::new(crate::herald_binary());
        command
            .arg("worker")
            .env("DATABASE_URL", &self.app.database_url)
            .env("HERALD_DNS_SERVERS", self.app.dns.addr.to_string())
            .env("HERALD_DNS_TIMEOUT_MS", "400")
            .env("HERALD_MX_PORT", self.sink.port().to_string())
            .env("HERALD_SMTP_TIMEOUT_SECONDS", "5")
            .env("HERALD_SMTP_DATA_TIMEOUT_SECONDS", "5")
            .env("HERALD_DELIVERY_RETRY_SCHEDULE", "1s,1s,1s")
            .env("HERALD_AMBIGUOUS_WINDOW_SECONDS", "1")
            .env("HERALD_DELIVER_CONCURRENCY", "16")
            .env("HERALD_DB_MAX_CONNECTIONS", "8")
            .env("HERALD_PUBLIC_URL", &self.app.state.config.public_url)
            .env("HERALD_ENV", "test")
            .env("HERALD_LOG", "error")
            .stdout(std::process::Stdio::null());
        for (name, value) in extra {
            command.env(name, value);
        }
        command
    }
}
