//! Received mail: the list (search, paging), one received email with its senders and
//! recipients, headers, text, HTML in a sandboxed frame (no script, no remote image),
//! attachments and the raw source's link, through `/emails/receiving` as the session; and the
//! latest mail a domain received, for the domain's page.

use super::client::{Api, Session};
use super::emails::framed;
use super::kit::urlencoding;
use super::kit::{self, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::StatusCode;
use poem::web::{Data, Path, Query};
use poem::{Request, Response, handler};
use serde_json::Value;

/// Addresses as text (`a, b`).
fn addresses(value: &Value) -> String {
    match value {
        Value::Array(items) if !items.is_empty() => escape(&items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")),
        Value::String(s) => escape(s),
        _ => "—".to_string(),
    }
}

/// The table of received emails.
fn table(rows: &[Value], empty: &str) -> String {
    kit::table(
        &["Subject", "From", "To", "Received"],
        rows,
        |e| {
            let subject = e["subject"].as_str().filter(|s| !s.is_empty()).unwrap_or("(no subject)");
            let dropped = e["dropped_reason"].as_str().map_or_else(String::new, |why| format!(" <span class=\"muted\">(not stored: {})</span>", escape(&why.replace('_', " "))));
            vec![format!("{}{dropped}", kit::link(&format!("/app/receiving/{}", kit::id(&e["id"])), subject)), addresses(&e["from"]), addresses(&e["to"]), time(&e["created_at"])]
        },
        empty,
    )
}

/// The latest mail received at `domain`, for its page (empty when the API refuses).
pub async fn for_domain(req: &Request, api: &Api, domain: &str) -> poem::Result<String> {
    let answer = api.get(req, &format!("/emails/receiving?limit=10&search={}", urlencoding(&format!("@{domain}")))).await?;
    if !answer.ok() {
        return Ok(String::new());
    }
    let more = format!("<p>{}</p>", kit::link(&format!("/app/receiving?search={}", urlencoding(&format!("@{domain}"))), "All mail received at this domain"));
    Ok(kit::card("received", "Received mail", &format!("{}{more}", table(&kit::rows(&answer), "Nothing received yet. With receiving on, mail to any address at this domain shows here."))))
}

/// `GET /app/receiving`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = api.get(req, &paging.path("/emails/receiving", 50)).await?;
    if !answer.ok() {
        return Ok(kit::refused_page(&session, &answer));
    }
    let rows = table(&kit::rows(&answer), "No mail received yet. Turn receiving on for a domain (its page), point its MX record here, and mail to it shows up.");
    let body = format!("<h1>Received mail</h1>{}{rows}{}", paging.search_form("/app/receiving", "Subject, sender or recipient"), kit::pager(&paging.base("/app/receiving"), &answer));
    Ok(page(StatusCode::OK, "Received mail", Some(&session), &body))
}

/// `GET /app/receiving/{id}`.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let email = match kit::one(req, &api, &session, &format!("/emails/receiving/{}", urlencoding(&id))).await? {
        Ok(email) => email,
        Err(page) => return Ok(page),
    };
    Ok(page(StatusCode::OK, email["subject"].as_str().filter(|s| !s.is_empty()).unwrap_or("Received email"), Some(&session), &received_body(&id, &email)))
}

fn received_body(id: &str, email: &Value) -> String {
    let raw = email["raw"]["download_url"].as_str().map_or_else(|| "—".to_string(), |url| kit::link(url, "Download the source (15 minutes)"));
    let facts = kit::facts(&[
        ("From", addresses(&email["from"])),
        ("To", addresses(&email["to"])),
        ("Cc", addresses(&email["cc"])),
        ("Reply-To", addresses(&email["reply_to"])),
        ("Accepted for", addresses(&email["received_for"])),
        ("Message-ID", kit::text(&email["message_id"])),
        ("Received", time(&email["created_at"])),
        ("Not stored because", kit::word(&email["dropped_reason"])),
        ("Source", raw),
    ]);
    let frame = if email["html"].is_string() {
        format!("<iframe class=\"preview\" title=\"The email as HTML\" sandbox referrerpolicy=\"no-referrer\" src=\"/app/receiving/{}/preview\"></iframe>", escape(&urlencoding(id)))
    } else {
        "<p class=\"muted\">No HTML part.</p>".to_string()
    };
    let text = email["text"].as_str().map_or_else(|| "<p class=\"muted\">No text part.</p>".to_string(), |t| format!("<pre>{}</pre>", escape(t)));
    let headers: Vec<(String, String)> = email["header_values"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(name, values)| values.as_array().into_iter().flatten().filter_map(Value::as_str).map(|v| (name.clone(), v.to_string())).collect::<Vec<_>>())
        .collect();
    let headers = if headers.is_empty() {
        "<p class=\"muted\">No header kept.</p>".to_string()
    } else {
        format!("<dl>{}</dl>", headers.iter().map(|(k, v)| format!("<dt>{}</dt><dd>{}</dd>", escape(k), escape(v))).collect::<String>())
    };
    let attachments = kit::table(
        &["File", "Type", "Size"],
        email["attachments"].as_array().map_or(&[][..], Vec::as_slice),
        |a| vec![kit::text(&a["filename"]), kit::text(&a["content_type"]), format!("{} bytes", kit::text(&a["size"]))],
        "No attachment.",
    );
    let subject = email["subject"].as_str().filter(|s| !s.is_empty()).unwrap_or("(no subject)");
    format!(
        "<p><a href=\"/app/receiving\">← Received mail</a></p><h1>{}</h1><section class=\"card\">{facts}</section>{}{}{}{}",
        escape(subject),
        kit::card("html", "HTML", &frame),
        kit::card("text", "Text", &text),
        kit::card("attachments", "Attachments", &attachments),
        kit::card("headers", "Headers", &headers)
    )
}

/// `GET /app/receiving/{id}/preview`: the received HTML alone, for the frame.
#[handler]
pub async fn preview(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let Some(_session): Option<Session> = api.session(req).await? else {
        return Ok(framed(false, String::new()));
    };
    let email = api.get(req, &format!("/emails/receiving/{}", urlencoding(&id))).await?;
    let html = email.body["html"].as_str().filter(|_| email.ok()).unwrap_or_default().to_string();
    Ok(framed(email.ok(), html))
}
