//! Agents, end to end with independent clients: `authlib` registers, runs the authorization
//! code flow with PKCE through the consent page in headless Chromium (no JavaScript), exchanges
//! and refreshes tokens and calls the API; the official MCP Python SDK then connects to `/mcp`
//! with that token, lists the tools and sends an email that arrives at the SMTP sink.

use serde_json::Value;
use tests::browser::Browser;
use tests::clients::{python, run_ok, script};
use tests::mail::{self, Mail, SENDING_DOMAIN};
use tests::smtp::SmtpSink;
use tests::eventually;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PASSWORD: &str = "correct horse battery";

/// A loopback "client app" that answers every request (the OAuth callback) with a page.
async fn callback_listener() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 8192];
                let _ = socket.read(&mut buffer).await;
                let body = "<html><body>callback received</body></html>";
                let answer = format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    format!("http://127.0.0.1:{port}/callback")
}

async fn setup() -> Mail {
    let port = tests::bench::free_port().unwrap();
    mail::setup_with(SmtpSink::start().await, |c| {
        c.http_addr = format!("127.0.0.1:{port}").parse().unwrap();
        c.public_url = format!("http://127.0.0.1:{port}");
    })
    .await
}

fn json_of(output: &str) -> Value {
    serde_json::from_str(output.trim().lines().last().unwrap_or_default()).unwrap_or_else(|_| panic!("{output}"))
}

#[tokio::test]
async fn authlib_runs_the_pkce_flow_through_the_consent_page_in_chromium_and_the_mcp_sdk_sends_an_email_with_the_token() {
    let mail = setup().await;
    let app = &mail.app;
    let base = app.base.clone();
    let signed_up = app.client.post(app.url("/auth/signup")).json(&serde_json::json!({ "email": "ada@example.com", "password": PASSWORD, "name": "Ada" })).send().await.unwrap();
    assert_eq!(signed_up.status().as_u16(), 201);
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) SELECT $1, id, 'admin' FROM people").bind(app.team_id).execute(&app.pool).await.unwrap();
    let redirect = callback_listener().await;

    let mut start = python();
    start.arg(script("oauth_client.py")).args(["start", &base, &redirect, "emails:send emails:read domains:read"]);
    let started = json_of(&run_ok(start).await);

    let mut browser = Browser::launch().await.unwrap().expect("chromium is installed (scripts/test installs it)");
    browser.disable_javascript().await.unwrap();
    browser.goto(started["url"].as_str().unwrap()).await.unwrap();
    let text = browser.text().await.unwrap();
    assert!(text.contains("Sign in to continue") && text.contains("authlib agent"), "{text}");
    browser.eval(&format!("document.querySelector('input[name=email]').value = 'ada@example.com'; document.querySelector('input[name=password]').value = '{PASSWORD}'")).await.unwrap();
    browser.click("button[type=submit]", true).await.unwrap();
    let text = browser.text().await.unwrap();
    assert!(text.contains("Allow authlib agent?") && text.contains("emails:send") && text.contains("Test team"), "{text}");
    browser.click(&format!("input[value=\"{}\"]", app.team_id), false).await.unwrap();
    browser.click("button[value=approve]", true).await.unwrap();
    let callback = browser.eval("location.href").await.unwrap().as_str().unwrap().to_string();
    assert!(callback.starts_with(&redirect) && callback.contains("code=rkc_"), "{callback}");
    assert!(browser.text().await.unwrap().contains("callback received"));

    let mut finish = python();
    finish.arg(script("oauth_client.py")).args([
        "finish",
        &base,
        &redirect,
        started["client_id"].as_str().unwrap(),
        started["verifier"].as_str().unwrap(),
        started["state"].as_str().unwrap(),
        &callback,
    ]);
    let tokens = json_of(&run_ok(finish).await);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(tokens["scope"], "domains:read emails:read emails:send");

    let to = format!("agent-reader@{}", mail::RECIPIENT_DOMAIN);
    let mut agent = python();
    agent.arg(script("mcp_client.py")).args([base.as_str(), access, &format!("Agent <agent@{SENDING_DOMAIN}>"), &to]);
    let answer = json_of(&run_ok(agent).await);
    let tools: Vec<&str> = answer["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "create_broadcast_draft", "draft_email", "find_contacts", "get_domain", "get_email", "list_domains", "list_emails", "list_inbox_conversations",
            "list_segments", "read_inbox_conversation", "reply_to_inbox_conversation", "search_inbox", "send_email", "suggest_subject_lines", "upsert_contact"
        ]
    );
    assert_eq!(answer["segments_refused"], true, "list_segments needs contacts:read, which the token lacks: {}", answer["segments_answer"]);
    assert!(answer["segments_answer"].as_str().unwrap().contains("invalid_permission"));

    let email_id = answer["email_id"].as_str().unwrap().to_string();
    let message = eventually(|| async { mail.sink.messages().into_iter().find(|m| m.rcpt_to.iter().any(|r| r == &to)) }).await;
    assert_eq!(message.header("subject").as_deref(), Some("Sent by an agent"));
    let (source, key): (String, Option<uuid::Uuid>) = eventually(|| async {
        sqlx::query_as("SELECT source, api_key_id FROM request_logs WHERE email_id = $1::uuid").bind(&email_id).fetch_optional(&app.pool).await.unwrap()
    })
    .await;
    assert_eq!((source.as_str(), key), ("mcp", None), "the tool's call is logged with source mcp and no key");
}
