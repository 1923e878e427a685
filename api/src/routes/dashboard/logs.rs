//! Request logs: every call the team's keys and people made (search, paging), and one call with
//! its request and response bodies, through `/logs` as the session.

use super::client::Api;
use super::kit::urlencoding;
use super::kit::{self, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::StatusCode;
use poem::web::{Data, Path, Query};
use poem::{Request, Response, handler};

/// `GET /app/logs`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = api.get(req, &paging.path("/logs", 50)).await?;
    if !answer.ok() {
        return Ok(kit::refused_page(&session, &answer));
    }
    let table = kit::table(
        &["Request", "Status", "Source", "Latency", "When"],
        &kit::rows(&answer),
        |l| {
            let label = format!("{} {}", l["method"].as_str().unwrap_or_default(), l["endpoint"].as_str().unwrap_or_default());
            vec![kit::link(&format!("/app/logs/{}", kit::id(&l["id"])), &label), kit::text(&l["response_status"]), kit::word(&l["source"]), format!("{} ms", kit::text(&l["latency_ms"])), time(&l["created_at"])]
        },
        "No request matches. Every call to the API, from a key or from here, is logged.",
    );
    let body = format!("<h1>Request logs</h1>{}{table}{}", paging.search_form("/app/logs", "Path, request id or user agent"), kit::pager(&paging.base("/app/logs"), &answer));
    Ok(page(StatusCode::OK, "Request logs", Some(&session), &body))
}

/// `GET /app/logs/{id}`.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let log = match kit::one(req, &api, &session, &format!("/logs/{}", urlencoding(&id))).await? {
        Ok(log) => log,
        Err(page) => return Ok(page),
    };
    let pretty = |v: &serde_json::Value| if v.is_null() { "<p class=\"muted\">None.</p>".to_string() } else { format!("<pre>{}</pre>", escape(&serde_json::to_string_pretty(v).unwrap_or_default())) };
    let email = log["email_id"].as_str().map_or_else(|| "—".to_string(), |e| kit::link(&format!("/app/emails/{}", urlencoding(e)), e));
    let facts = kit::facts(&[
        ("Path", format!("<code>{}</code>", kit::text(&log["path"]))),
        ("Status", kit::text(&log["response_status"])),
        ("Source", kit::word(&log["source"])),
        ("User agent", kit::text(&log["user_agent"])),
        ("Request id", kit::text(&log["request_id"])),
        ("Latency", format!("{} ms", kit::text(&log["latency_ms"]))),
        ("Email", email),
        ("When", time(&log["created_at"])),
    ]);
    let title = format!("{} {}", log["method"].as_str().unwrap_or_default(), log["endpoint"].as_str().unwrap_or_default());
    let body = format!(
        "<p><a href=\"/app/logs\">← Request logs</a></p><h1>{}</h1><section class=\"card\">{facts}</section>{}{}",
        escape(&title),
        kit::card("request", "Request body", &pretty(&log["request_body"])),
        kit::card("response", "Response body", &pretty(&log["response_body"]))
    );
    Ok(page(StatusCode::OK, &title, Some(&session), &body))
}
