//! `GET /app`: the last 30 days in counts, and what to do next.

use super::client::Api;
use super::layout::{page, to_sign_in};
use poem::http::StatusCode;
use poem::web::Data;
use poem::{Request, Response, handler};

/// The counts shown, by the metric's name and its label.
const TILES: [(&str, &str); 6] = [("received", "Sent to Herald"), ("delivered", "Delivered"), ("bounced", "Bounced"), ("complained", "Complained"), ("opened", "Opened"), ("clicked", "Clicked")];

#[handler]
pub async fn page_handler(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let metrics = api.get(req, "/emails/metrics").await?;
    let domains = api.get(req, "/domains?limit=100").await?;
    let webhooks = api.get(req, "/webhooks?limit=1").await?;
    let tiles: String = TILES
        .iter()
        .map(|(key, label)| format!("<li><b>{}</b>{label}</li>", metrics.body["totals"][key].as_i64().unwrap_or(0)))
        .collect();
    let verified = domains.body["data"].as_array().is_some_and(|all| all.iter().any(|d| d["status"] == "verified"));
    let mut next = Vec::new();
    if !verified {
        next.push("<li>Verify a sending domain of your own: add it with <code>POST /domains</code>, publish its records, then verify.</li>");
    }
    if webhooks.body["data"].as_array().is_some_and(Vec::is_empty) {
        next.push("<li>Add a webhook to hear of deliveries, bounces and complaints as they happen.</li>");
    }
    if metrics.body["totals"]["received"].as_i64().unwrap_or(0) == 0 {
        next.push("<li>Send a first email: <code>POST /emails</code> with an API key. It shows up under <a href=\"/app/emails\">Emails</a>.</li>");
    }
    let next = if next.is_empty() { "<p>Everything is set up.</p>".to_string() } else { format!("<ul>{}</ul>", next.concat()) };
    let body = format!(
        "<h1>Overview</h1><section aria-labelledby=\"last30\"><h2 id=\"last30\">The last 30 days</h2><ul class=\"tiles\">{tiles}</ul></section>\
         <section aria-labelledby=\"next\" class=\"card\"><h2 id=\"next\">What to do next</h2>{next}</section>"
    );
    Ok(page(StatusCode::OK, "Overview", Some(&session), &body))
}
