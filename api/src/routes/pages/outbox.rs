//! The development sender and its outbox: with `HERALD_ENV=development` every team can send
//! from `anything@dev.herald.localhost` without DNS, and `GET /outbox` shows what was
//! "delivered", signed as it would have gone out. Nothing from it ever leaves the machine.

use crate::routes::pages::html::{PAGE_POLICY, document, escape, message_body};
use crate::state::AppState;
use base64::Engine;
use poem::http::StatusCode;
use poem::web::{Data, Html};
use poem::{IntoResponse, Request, Response, handler};
use schema::store::{domains, keys, outbox};
use sqlx::PgPool;

/// How many messages the outbox page shows.
const SHOWN: i64 = 50;

/// Makes the development sender's DKIM key the first time and gives every team the development
/// sender (call it only in development; teams made later get it as they are made).
pub async fn ensure_dev_senders(pool: &PgPool) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    if keys::get(&mut conn, domains::DEV_DKIM_KEY).await?.is_none() {
        let key = tokio::task::spawn_blocking(schema::domain::generate_dkim_key).await??;
        let fresh = serde_json::to_vec(&serde_json::json!({ "private_pem": key.private_pem, "public_key": key.public_base64 }))?;
        keys::get_or_create(&mut conn, domains::DEV_DKIM_KEY, &fresh).await?;
    }
    let added = domains::give_dev_sender(&mut conn, None).await?;
    if added > 0 {
        tracing::info!(added, domain = domains::DEV_SENDER_DOMAIN, "gave teams the development sender");
    }
    Ok(())
}

/// `GET /outbox`: the latest mail of the development sender, for a browser on this machine,
/// under the hosted pages' content policy. Answers 404 unless the server runs in development
/// and the request comes from loopback.
#[handler]
pub async fn page(req: &Request, state: Data<&AppState>) -> poem::Result<Response> {
    let local = req.remote_addr().as_socket_addr().is_some_and(|addr| addr.ip().is_loopback());
    if !state.config.is_development() || !local {
        return Err(poem::Error::from_status(StatusCode::NOT_FOUND));
    }
    let messages = outbox::latest(&mut *state.pool.acquire().await.map_err(internal)?, SHOWN).await.map_err(internal)?;
    Ok(Html(render(&messages))
        .with_header("content-security-policy", PAGE_POLICY)
        .with_header("cache-control", "no-store")
        .into_response())
}

fn internal(error: sqlx::Error) -> poem::Error {
    tracing::error!(%error, "reading the outbox failed");
    poem::Error::from_status(StatusCode::INTERNAL_SERVER_ERROR)
}

fn render(messages: &[outbox::OutboxMessage]) -> String {
    let mut body = format!(
        "<main><h1>Herald outbox</h1><p>Mail from the development sender <code>{}</code>: signed as it would have \
         gone out, delivered only here. The newest {SHOWN} messages.</p>",
        domains::DEV_SENDER_DOMAIN
    );
    if messages.is_empty() {
        body.push_str("<p>Nothing yet. Send from <code>anything@dev.herald.localhost</code> with <code>POST /emails</code>; it appears here.</p>");
    }
    body.push_str("</main>");
    for message in messages {
        let raw = String::from_utf8_lossy(&message.message);
        let signed = raw.lines().any(|line| line.to_ascii_lowercase().starts_with("dkim-signature:"));
        let download = base64::engine::general_purpose::STANDARD.encode(&message.message);
        body.push_str(&format!(
            "<main id=\"{id}\"><h2>{subject}</h2>\
             <p><b>From</b> {from} <b>To</b> {to} <b>At</b> {at} <b>Email</b> <code>{email}</code> <b>DKIM</b> {dkim}</p>\
             {content}<details><summary>Source</summary><pre>{raw}</pre></details>\
             <p><a download=\"{id}.eml\" href=\"data:message/rfc822;base64,{download}\">Download .eml</a></p></main>",
            id = message.id,
            subject = escape(&message.subject),
            from = escape(&message.from_header),
            to = escape(&message.recipient),
            at = message.created_at.to_rfc3339(),
            email = message.email_id,
            dkim = if signed { "signed" } else { "unsigned" },
            content = message_body(message.html.as_deref(), message.text.as_deref()),
            raw = escape(&raw),
        ));
    }
    document("Herald outbox", &body)
}
