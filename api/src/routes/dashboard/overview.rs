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
    let metrics = api.get(req, "/emails/metrics?dimensions=period&granularity=daily").await?;
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
    let chart = chart(metrics.body["data"].as_array().map(Vec::as_slice).unwrap_or_default());
    let body = format!(
        "<h1>Overview</h1><section aria-labelledby=\"last30\"><h2 id=\"last30\">The last 30 days</h2><ul class=\"tiles\">{tiles}</ul>{chart}</section>\
         <section aria-labelledby=\"next\" class=\"card\"><h2 id=\"next\">What to do next</h2>{next}</section>"
    );
    Ok(page(StatusCode::OK, "Overview", Some(&session), &body))
}

/// The last 30 days per day (UTC), as bars of emails sent to Herald with their deliveries, and
/// the same figures as a table for screen readers and for copying.
fn chart(rows: &[serde_json::Value]) -> String {
    let today = chrono::Utc::now().date_naive();
    let days: Vec<chrono::NaiveDate> = (0..30).rev().map(|back| today - chrono::TimeDelta::days(back)).collect();
    let count = |day: &chrono::NaiveDate, metric: &str| {
        rows.iter()
            .find(|row| row["period"].as_str().is_some_and(|p| p.starts_with(&day.to_string())))
            .and_then(|row| row[metric].as_i64())
            .unwrap_or(0)
    };
    let most = days.iter().map(|day| count(day, "received")).max().unwrap_or(0).max(1);
    let (width, height, step) = (600, 160, 20);
    let bars: String = days
        .iter()
        .enumerate()
        .map(|(i, day)| {
            let bar = |metric: &str, offset: usize, class: &str| {
                let h = count(day, metric) * (height - 20) / most;
                format!("<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"8\" height=\"{h}\"></rect>", i * step + offset, height - h)
            };
            format!("{}{}", bar("received", 2, "sent"), bar("delivered", 10, "delivered"))
        })
        .collect();
    let lines: String = days
        .iter()
        .filter(|day| count(day, "received") > 0)
        .map(|day| format!("<tr><td>{day}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", count(day, "received"), count(day, "delivered"), count(day, "bounced"), count(day, "complained")))
        .collect();
    let table = if lines.is_empty() { "<p class=\"muted\">No email in the last 30 days.</p>".to_string() } else {
        format!("<div class=\"scroll\"><table><thead><tr><th scope=\"col\">Day (UTC)</th><th scope=\"col\">Sent to Herald</th><th scope=\"col\">Delivered</th><th scope=\"col\">Bounced</th><th scope=\"col\">Complained</th></tr></thead><tbody>{lines}</tbody></table></div>")
    };
    format!(
        "<figure class=\"card chart\"><svg viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"Emails sent to Herald and delivered, per day, for the last 30 days\">{bars}</svg>\
         <figcaption><span class=\"key sent\"></span> Sent to Herald <span class=\"key delivered\"></span> Delivered · per day (UTC), oldest left</figcaption>\
         <details><summary>The figures</summary>{table}</details></figure>"
    )
}
