//! Clients in the wild, run as programs against a real Herald: the official Resend SDKs for
//! Python (PyPI `resend`), Node (npm `resend`) and Rust (crates.io `resend-rs`, the workspace
//! member `tests/clients/resend_rs`) make every call that maps to a Herald route
//! and check each answer. `scripts/test` installs them (`.venv/`, `tests/clients/node_modules`).

use std::process::Command;
use tests::clients::{python, run_ok, script};
use tests::mail::{self, Mail, SENDING_DOMAIN};
use tests::smtp::SmtpSink;

/// A team ready for the SDKs: a verified domain, out of the sandbox, workers running, webhook
/// endpoints allowed on loopback (the scripts receive deliveries themselves).
/// Herald with a sink, and an inbound SMTP server (answers its port): the clients read
/// received mail too.
/// The team's key also has write access to its Inbox, whose channel is `inbox@acme.test`.
async fn setup() -> (Mail, u16) {
    let mail = mail::setup_with(SmtpSink::start().await, |config| config.webhook_allow_private = true).await;
    let smtp_port = mail.app.start_inbound(|_| {}).await;
    let app = &mail.app;
    let receiving = app.patch(&format!("/domains/{}", mail.domain["id"].as_str().unwrap()), serde_json::json!({ "capabilities": { "receiving": "enabled" } })).await;
    assert_eq!(receiving.status, 200, "{}", receiving.body);
    let admin = tests::inbox::person(app, app.team_id, "admin", "Ada").await;
    let body = serde_json::json!({ "name": "Desk", "address": format!("inbox@{SENDING_DOMAIN}") });
    let channel = tests::inbox::as_person(app, &admin, reqwest::Method::POST, "/inbox/channels", Some(body)).await;
    assert_eq!(channel.status, 201, "{}", channel.body);
    sqlx::query("UPDATE api_keys SET inbox_access = 'write' WHERE team_id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    (mail, smtp_port)
}

fn with_env(mut command: Command, mail: &Mail, smtp_port: u16) -> Command {
    command
        .env("HERALD_SMTP_PORT", smtp_port.to_string())
        .env("HERALD_BASE_URL", &mail.app.base)
        .env("HERALD_API_KEY", &mail.app.key)
        .env("HERALD_FROM_DOMAIN", SENDING_DOMAIN)
        .env("HERALD_DOMAIN_ID", mail.domain["id"].as_str().unwrap());
    command
}

#[tokio::test]
async fn the_python_resend_sdk_makes_every_call_herald_serves() {
    let (mail, smtp_port) = setup().await;
    let mut command = python();
    command.arg(script("resend_sdk.py"));
    let said = run_ok(with_env(command, &mail, smtp_port)).await;
    assert!(said.lines().filter(|line| line.starts_with("ok ")).count() > 50, "{said}");
}

#[tokio::test]
async fn the_node_resend_sdk_makes_every_call_herald_serves() {
    let (mail, smtp_port) = setup().await;
    assert!(script("node_modules/resend").exists(), "tests/clients/node_modules is missing: run scripts/test (npm ci)");
    let mut command = Command::new("node");
    command.arg(script("resend_sdk.mjs"));
    let said = run_ok(with_env(command, &mail, smtp_port)).await;
    assert!(said.lines().filter(|line| line.starts_with("ok ")).count() > 50, "{said}");
}

#[tokio::test]
async fn the_rust_resend_sdk_makes_every_call_herald_serves() {
    let (mail, smtp_port) = setup().await;
    let binary = tests::clients::root().join("target/debug/resend-rs-check");
    assert!(binary.exists(), "{} is missing: build the workspace (cargo build --workspace --bins)", binary.display());
    let mut command = Command::new(binary);
    command.env("RESEND_RATE_LIMIT", "1000");
    let said = run_ok(with_env(command, &mail, smtp_port)).await;
    assert!(said.lines().filter(|line| line.starts_with("ok ")).count() > 50, "{said}");
}

#[tokio::test]
async fn a_client_generated_by_openapi_python_client_calls_every_list_and_get_route() {
    let (mail, smtp_port) = setup().await;
    let mut command = python();
    command.arg(script("generated_client.py"));
    let said = run_ok(with_env(command, &mail, smtp_port)).await;
    assert!(said.lines().any(|line| line.starts_with("ok ")), "{said}");
}

#[tokio::test]
async fn schemathesis_finds_no_failure_in_any_operation() {
    let (mail, smtp_port) = setup().await;
    let mut command = Command::new("bash");
    command.arg(script("schemathesis.sh")).env("HERALD_SCHEMATHESIS_EXAMPLES", "10").env("HERALD_SCHEMATHESIS_SEED", "7");
    run_ok(with_env(command, &mail, smtp_port)).await;
}
