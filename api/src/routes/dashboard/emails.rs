//! Emails: the list (search, status, paging), one email's timeline with its content, and its
//! HTML preview (a sandboxed frame: no script runs, no remote image loads).

use super::client::Api;
use super::kit::urlencoding;
use super::layout::{not_found, page, time, to_sign_in};
use crate::routes::pages::html::escape;
use poem::http::{StatusCode, header};
use poem::web::{Data, Form, Path, Query};
use poem::{Request, Response, handler};
use serde::Deserialize;
use serde_json::Value;

/// The statuses the list filters on (`GET /emails?status=`).
const STATUSES: [&str; 10] = ["queued", "scheduled", "sent", "delivered", "delivery_delayed", "bounced", "complained", "failed", "canceled", "suppressed"];

/// The preview frame's own policy: the email's inline styles and inline images only, no
/// script, no remote image, sandboxed, framed by the app only.
const PREVIEW_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox; base-uri 'none'; form-action 'none'; frame-ancestors 'self'";

/// The list's query.
#[derive(Deserialize, Default)]
pub struct ListQuery {
    search: Option<String>,
    status: Option<String>,
    after: Option<String>,
}

/// `GET /app/emails`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(query): Query<ListQuery>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let search = query.search.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let status = query.status.as_deref().filter(|s| STATUSES.contains(s));
    let mut path = String::from("/emails?limit=25");
    for (name, value) in [("search", search), ("status", status), ("after", query.after.as_deref())] {
        if let Some(value) = value {
            path.push_str(&format!("&{name}={}", urlencoding(value)));
        }
    }
    let answer = api.get(req, &path).await?;
    let form = search_form(search.unwrap_or_default(), status);
    if !answer.ok() {
        let body = format!("<h1>Emails</h1>{form}<p class=\"error\" role=\"alert\">{}</p>", escape(&answer.message()));
        return Ok(page(StatusCode::OK, "Emails", Some(&session), &body));
    }
    let rows = answer.body["data"].as_array().cloned().unwrap_or_default();
    let table = if rows.is_empty() {
        "<p>No email matches. Send one with <code>POST /emails</code> and it shows up here.</p>".to_string()
    } else {
        let lines: String = rows.iter().map(row).collect();
        format!("<div class=\"scroll\"><table><caption class=\"muted\">Newest first</caption><thead><tr><th scope=\"col\">To</th><th scope=\"col\">Subject</th><th scope=\"col\">Status</th><th scope=\"col\">Sent</th></tr></thead><tbody>{lines}</tbody></table></div>")
    };
    let more = match (answer.body["has_more"].as_bool(), rows.last().and_then(|r| r["id"].as_str())) {
        (Some(true), Some(last)) => {
            let mut next = format!("/app/emails?after={}", urlencoding(last));
            if let Some(search) = search {
                next.push_str(&format!("&search={}", urlencoding(search)));
            }
            if let Some(status) = status {
                next.push_str(&format!("&status={status}"));
            }
            format!("<nav class=\"pager\" aria-label=\"Pages\"><a href=\"{}\">Older emails</a></nav>", escape(&next))
        }
        _ => String::new(),
    };
    Ok(page(StatusCode::OK, "Emails", Some(&session), &format!("<h1>Emails</h1>{form}{table}{more}")))
}

fn search_form(search: &str, status: Option<&str>) -> String {
    let options: String = std::iter::once("<option value=\"\">Any status</option>".to_string())
        .chain(STATUSES.iter().map(|s| format!("<option value=\"{s}\"{}>{}</option>", if status == Some(s) { " selected" } else { "" }, s.replace('_', " "))))
        .collect();
    format!(
        "<form class=\"search\" method=\"get\" action=\"/app/emails\" role=\"search\">\
         <label class=\"muted\" for=\"search\">Search</label><input id=\"search\" name=\"search\" type=\"search\" maxlength=\"200\" value=\"{}\" placeholder=\"Address or subject\">\
         <label class=\"muted\" for=\"status\">Status</label><select id=\"status\" name=\"status\">{options}</select>\
         <button type=\"submit\">Filter</button></form>",
        escape(search)
    )
}

fn row(email: &Value) -> String {
    let id = email["id"].as_str().unwrap_or_default();
    let to = email["to"].as_array().map(|to| to.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default();
    let subject = email["subject"].as_str().filter(|s| !s.is_empty()).unwrap_or("(no subject)");
    format!(
        "<tr><td>{}</td><td><a href=\"/app/emails/{}\">{}</a></td><td>{}</td><td>{}</td></tr>",
        escape(&to),
        escape(id),
        escape(subject),
        escape(&email["last_event"].as_str().unwrap_or_default().replace('_', " ")),
        time(&email["created_at"])
    )
}

/// `GET /app/emails/{id}`: the email, its timeline, content and attachments.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let id = urlencoding(&id);
    let email = api.get(req, &format!("/emails/{id}")).await?;
    if email.status == 404 || email.status == 422 {
        return Ok(not_found(&session));
    }
    if !email.ok() {
        let body = format!("<h1>Email</h1><p class=\"error\" role=\"alert\">{}</p>", escape(&email.message()));
        return Ok(page(StatusCode::OK, "Email", Some(&session), &body));
    }
    let e = &email.body;
    let joined = |v: &Value| v.as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default();
    let facts = format!(
        "<dl><dt>From</dt><dd>{}</dd><dt>To</dt><dd>{}</dd><dt>Subject</dt><dd>{}</dd><dt>Status</dt><dd>{}</dd><dt>Sent</dt><dd>{}</dd><dt>Message-ID</dt><dd>{}</dd></dl>",
        escape(e["from"].as_str().unwrap_or_default()),
        escape(&joined(&e["to"])),
        escape(e["subject"].as_str().unwrap_or_default()),
        escape(&e["last_event"].as_str().unwrap_or_default().replace('_', " ")),
        time(&e["created_at"]),
        escape(e["message_id"].as_str().unwrap_or_default())
    );
    let events: String = e["events"].as_array().into_iter().flatten().map(event).collect();
    let timeline = if events.is_empty() { "<p class=\"muted\">No events yet.</p>".to_string() } else { format!("<ol class=\"timeline\">{events}</ol>") };
    let content = match (e["html"].as_str(), e["text"].as_str()) {
        (Some(_), text) => format!(
            "<iframe class=\"preview\" title=\"The email as HTML\" sandbox referrerpolicy=\"no-referrer\" loading=\"lazy\" src=\"/app/emails/{}/preview\"></iframe>{}",
            escape(&id),
            text.map_or_else(String::new, |t| format!("<details><summary>Text</summary><pre>{}</pre></details>", escape(t)))
        ),
        (None, Some(text)) => format!("<pre>{}</pre>", escape(text)),
        (None, None) => "<p class=\"muted\">The content is not available.</p>".to_string(),
    };
    let headers: String = e["headers"].as_object().into_iter().flatten().map(|(k, v)| format!("<dt>{}</dt><dd>{}</dd>", escape(k), escape(v.as_str().unwrap_or_default()))).collect();
    let headers = if headers.is_empty() { String::new() } else { format!("<section class=\"card\" aria-labelledby=\"headers\"><h2 id=\"headers\">Headers</h2><dl>{headers}</dl></section>") };
    let attachments = api.get(req, &format!("/emails/{id}/attachments?limit=100")).await?;
    let parts: String = attachments.body["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| format!("<li>{} <span class=\"muted\">{} · {} bytes</span></li>", escape(a["filename"].as_str().unwrap_or_default()), escape(a["content_type"].as_str().unwrap_or_default()), a["size"].as_i64().unwrap_or(0)))
        .collect();
    let parts = if parts.is_empty() { String::new() } else { format!("<section class=\"card\" aria-labelledby=\"attachments\"><h2 id=\"attachments\">Attachments</h2><ul>{parts}</ul></section>") };
    let title = e["subject"].as_str().filter(|s| !s.is_empty()).unwrap_or("Email");
    let scheduled = if e["last_event"] == "scheduled" && session.can_write() { scheduled_controls(&id, &session.csrf, &e["scheduled_at"]) } else { String::new() };
    let body = format!(
        "<p><a href=\"/app/emails\">← Emails</a></p><h1>{}</h1><section class=\"card\">{facts}{scheduled}</section>\
         <section class=\"card\" aria-labelledby=\"timeline\"><h2 id=\"timeline\">Timeline</h2>{timeline}</section>\
         <section class=\"card\" aria-labelledby=\"content\"><h2 id=\"content\">Content</h2>{content}</section>{headers}{parts}",
        escape(title)
    );
    Ok(page(StatusCode::OK, title, Some(&session), &body))
}

/// A scheduled email's controls: send it later (or sooner), or cancel it.
fn scheduled_controls(id: &str, csrf: &str, at: &Value) -> String {
    format!(
        "<p>Scheduled for {}.</p><form class=\"stack\" method=\"post\" action=\"/app/emails/{id}/reschedule\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label for=\"scheduled_at\">Send at (an ISO 8601 time, or a phrase such as “in 2 hours”)</label><input id=\"scheduled_at\" name=\"scheduled_at\" required maxlength=\"100\">\
         <button type=\"submit\">Reschedule</button></form>{}",
        super::layout::time(at),
        escape(csrf),
        super::kit::button(&format!("/app/emails/{id}/cancel"), csrf, "Cancel this email")
    )
}

/// `POST /app/emails/{id}/reschedule`: `PATCH /emails/{id}` with the new `scheduled_at`.
#[handler]
pub async fn reschedule(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<super::kit::Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = serde_json::json!({ "scheduled_at": form.get("scheduled_at").cloned().unwrap_or_default() });
    let answer = super::kit::write(req, &api, poem::http::Method::PATCH, &format!("/emails/{}", urlencoding(&id)), Some(&body), &form).await?;
    after_write(&session, &id, &answer)
}

/// `POST /app/emails/{id}/cancel`: `POST /emails/{id}/cancel`.
#[handler]
pub async fn cancel(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<super::kit::Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = super::kit::write(req, &api, poem::http::Method::POST, &format!("/emails/{}/cancel", urlencoding(&id)), None, &form).await?;
    after_write(&session, &id, &answer)
}

/// Back to the email after a write that worked; the API's refusal otherwise.
fn after_write(session: &super::client::Session, id: &str, answer: &super::client::Answer) -> poem::Result<Response> {
    if matches!(answer.status, 404 | 422) && answer.field_error("scheduled_at").is_none() {
        return Ok(not_found(session));
    }
    if !answer.ok() {
        return Ok(super::kit::refused_page(session, answer));
    }
    Ok(super::kit::see_other(&format!("/app/emails/{}", urlencoding(id))))
}

/// One event of the timeline, with the receiving server's reply when it has one.
fn event(item: &Value) -> String {
    let kind = item["type"].as_str().unwrap_or_default().trim_start_matches("email.").replace('_', " ");
    let data = &item["data"];
    let replies = [&data["bounce"]["message"], &data["bounce"]["diagnosticCode"], &data["failed"]["reason"], &data["suppressed"]["message"], &data["smtp_response"], &data["click"]["link"]]
        .iter()
        .filter_map(|v| v.as_str())
        .map(|text| format!(" <span class=\"muted\">{}</span>", escape(text)))
        .collect::<String>();
    format!("<li><b>{}</b> {}{replies}</li>", escape(&kind), time(&item["created_at"]))
}

/// `GET /app/emails/{id}/preview`: the email's HTML on its own, for the detail page's frame.
#[handler]
pub async fn preview(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    if api.session(req).await?.is_none() {
        return Ok(Response::builder().status(StatusCode::NOT_FOUND).finish());
    }
    let email = api.get(req, &format!("/emails/{}", urlencoding(&id))).await?;
    let html = email.body["html"].as_str().filter(|_| email.ok()).unwrap_or_default().to_string();
    Ok(framed(email.ok(), html))
}

/// An HTML preview for a frame of the app: no script, no remote image, framed by the app only.
pub fn framed(found: bool, html: String) -> Response {
    Response::builder()
        .status(if found { StatusCode::OK } else { StatusCode::NOT_FOUND })
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(header::CONTENT_SECURITY_POLICY, PREVIEW_POLICY)
        .header(header::X_FRAME_OPTIONS, "SAMEORIGIN")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::REFERRER_POLICY, "no-referrer")
        .body(html)
}
