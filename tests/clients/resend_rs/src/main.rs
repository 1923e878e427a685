//! Runs the official Resend Rust SDK (crates.io `resend-rs` 0.35.1) against a live Herald server.
//!
//! Every SDK call that maps to a Herald route is made once (or more) and its answer is checked:
//! ids come back and match, names and values read back as written. One line per call:
//! `ok <call>`, `FAIL <call>: <why>` (the SDK's error, with the request it sent and Herald's
//! answer; for an answer the SDK could not parse, the field where its types stopped), or
//! `skip <call> (a call it needs failed)`. A step that may meet a difference listed in the table
//! under `### Where answers differ from the Resend SDKs' types` in docs/decisions.md prints
//! `diverge <call> [<key>]: ...` when the SDK fails to parse exactly that field; a difference not
//! listed there fails. Exit status 1 when anything failed or was skipped, after running everything.
//!
//! The SDK talks to a recording pass-through on 127.0.0.1 (src/proxy.rs), which forwards each
//! request to Herald unchanged; it keeps the last exchange to show on failure.
//!
//! Environment:
//!   HERALD_BASE_URL      the server, e.g. http://127.0.0.1:18081
//!   HERALD_API_KEY       a full_access key of the team (rk_...)
//!   HERALD_FROM_DOMAIN   a domain verified on the team, receiving enabled (sdk@<it> sends)
//!   HERALD_DOMAIN_ID     that domain's id
//!   HERALD_SMTP_PORT     Herald's inbound SMTP server on 127.0.0.1
//!   RESEND_RATE_LIMIT    the SDK's own limiter (requests a second); set it high, e.g. 1000
//!
//! The server must allow webhook endpoints on loopback (HERALD_WEBHOOK_ALLOW_PRIVATE=true).
//!
//! SDK calls left out: `domains.claim`/`get_claim`/`verify_claim` (Herald checks a claim on
//! POST /domains/{id}/verify), `receiving.forward` (a send built from the raw message, not a route),
//! `inboxes.*`, `oauth.*`, `usage.*`. The SDK has no webhook verifier (its example uses the
//! `svix` crate): deliveries are verified here with HMAC-SHA256 and parsed with
//! `resend_rs::events::try_parse_event`.

mod account;
mod audience;
mod campaigns;
mod check;
mod emails;
mod flows;
mod hooks;
mod inbound;
mod proxy;

use std::process::ExitCode;

use resend_rs::{ConfigBuilder, Resend};

pub struct Env {
    pub base: String,
    pub api_key: String,
    pub from_domain: String,
    pub domain_id: String,
    pub smtp_port: u16,
    pub run: String,
    pub from: String,
}

pub const DELIVERED: &str = "delivered@simulator.herald.test";
pub const CC: &str = "delivered+cc@simulator.herald.test";
pub const BCC: &str = "delivered+bcc@simulator.herald.test";

pub struct App {
    pub c: check::Ctx,
    pub r: Resend,
    pub e: Env,
    /// Plain HTTP, for what the SDK hands over as a URL (attachment downloads).
    pub http: reqwest::Client,
    pub proxy_base: String,
}

impl App {
    /// Another SDK client, with another key, through the same pass-through.
    pub fn with_key(&self, key: &str) -> Result<Resend, String> {
        Ok(Resend::with_config(ConfigBuilder::new(key).base_url(self.proxy_base.parse().map_err(|e| format!("{e}"))?).build()))
    }
}

fn env(name: &str) -> Result<String, String> {
    let value = std::env::var(name).unwrap_or_default().trim().to_owned();
    if value.is_empty() { Err(format!("resend-rs-check: set {name} (see the comment at the top of src/main.rs)")) } else { Ok(value) }
}

/// The keys of the table under `### Where answers differ from the Resend SDKs' types`.
fn listed_divergences() -> Result<Vec<String>, String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../docs/decisions.md");
    let text = std::fs::read_to_string(path).map_err(|e| format!("resend-rs-check: {path}: {e}"))?;
    let heading = "### Where answers differ from the Resend SDKs' types";
    let mut lines = text.lines().skip_while(|line| *line != heading);
    if lines.next().is_none() {
        return Err(format!("resend-rs-check: {path} has no line `{heading}`"));
    }
    Ok(lines
        .take_while(|line| !line.starts_with('#'))
        .filter_map(|line| line.strip_prefix("| `").and_then(|rest| rest.split_once("` |")).map(|(key, _)| key.to_owned()))
        .collect())
}

fn run_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
    format!("{:08x}", (nanos as u64 ^ (u64::from(std::process::id()) << 20)) as u32)
}

async fn setup() -> Result<App, String> {
    let base = env("HERALD_BASE_URL")?.trim_end_matches('/').to_owned();
    let from_domain = env("HERALD_FROM_DOMAIN")?;
    let run = run_id();
    let e = Env {
        api_key: env("HERALD_API_KEY")?,
        domain_id: env("HERALD_DOMAIN_ID")?,
        smtp_port: env("HERALD_SMTP_PORT")?.parse().map_err(|e| format!("HERALD_SMTP_PORT: {e}"))?,
        from: format!("SDK check <sdk@{from_domain}>"),
        from_domain,
        run,
        base,
    };
    let recorder = proxy::Recorder::default();
    let proxy_base = proxy::start(e.base.clone(), recorder.clone()).await.map_err(|e| format!("resend-rs-check: pass-through: {e}"))?;
    let r = Resend::with_config(ConfigBuilder::new(e.api_key.clone()).base_url(proxy_base.parse().map_err(|e| format!("{e}"))?).build());
    let http = reqwest::Client::builder().no_proxy().user_agent("resend-rs-check/1 (raw HTTP beside the SDK)").build().map_err(|e| format!("{e}"))?;
    Ok(App { c: check::Ctx::new(recorder, listed_divergences()?), r, e, http, proxy_base })
}

#[tokio::main]
async fn main() -> ExitCode {
    let app = match setup().await {
        Ok(app) => app,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    println!("Resend Rust SDK (resend-rs 0.35.1) against {} (run {})", app.e.base, app.e.run);
    hooks::webhooks(&app).await;
    emails::emails(&app).await;
    emails::scheduled(&app).await;
    emails::batch(&app).await;
    account::domains(&app).await;
    account::api_keys(&app).await;
    let property = audience::properties(&app).await;
    let topic = audience::topics(&app).await;
    let segment = audience::segments(&app).await;
    audience::contacts(&app, property.as_ref().map(|p| p.1.as_str()), topic.as_deref(), segment.as_deref()).await;
    audience::imports(&app).await;
    audience::remove_segment(&app, segment.as_deref()).await;
    audience::remove_topic(&app, topic.as_deref()).await;
    audience::remove_property(&app, property.as_ref().map(|p| p.0.as_str())).await;
    audience::suppressions(&app).await;
    let template = emails::templates(&app).await;
    campaigns::broadcasts(&app).await;
    inbound::receiving(&app).await;
    flows::events_and_automations(&app, template.as_deref()).await;
    emails::remove_template(&app, template.as_deref()).await;
    account::logs(&app).await;
    if app.c.summary() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
