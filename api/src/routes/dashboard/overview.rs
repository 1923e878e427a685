//! `GET /app`: the last 30 days in counts, the plan's meters, what to do next, and a first
//! email sent from the page (`POST /emails` as the session).

use super::client::{Answer, Api, Session};
use super::kit::{self, Field, Fields, Input};
use super::layout::{page, to_sign_in};
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form};
use poem::{Request, Response, handler};
use serde_json::{Value, json};

/// The test email's form.
const TEST_FIELDS: &[Field] = &[
    Field::text("from", "From", 320),
    Field { name: "to", label: "To", input: Input::Email, required: true, max: Some(320) },
    Field::text("subject", "Subject", 998),
];

/// The counts shown, by the metric's name and its label.
const TILES: [(&str, &str); 6] = [("received", "Sent to Herald"), ("delivered", "Delivered"), ("bounced", "Bounced"), ("complained", "Complained"), ("opened", "Opened"), ("clicked", "Clicked")];

#[handler]
pub async fn page_handler(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    overview(req, &api, &session, None, None).await
}

async fn overview(req: &Request, api: &Api, session: &Session, values: Option<&Fields>, refused: Option<&Answer>) -> poem::Result<Response> {
    let metrics = api.get(req, "/emails/metrics?dimensions=period&granularity=daily").await?;
    let domains = api.get(req, "/domains?limit=100").await?;
    let webhooks = api.get(req, "/webhooks?limit=1").await?;
    let billing = api.get(req, "/billing").await?;
    let tiles: String = TILES
        .iter()
        .map(|(key, label)| format!("<li><b>{}</b>{label}</li>", metrics.body["totals"][key].as_i64().unwrap_or(0)))
        .collect();
    let all_domains = domains.body["data"].as_array().cloned().unwrap_or_default();
    let sender = all_domains.iter().find(|d| d["status"] == "verified").and_then(|d| d["name"].as_str());
    let own = all_domains.iter().any(|d| d["status"] == "verified" && d["name"] != schema::store::domains::DEV_SENDER_DOMAIN);
    let mut next = Vec::new();
    if !own {
        next.push("<li>Verify a sending domain of your own: add it under <a href=\"/app/domains\">Domains</a> (or <code>POST /domains</code>), publish its records, then verify.</li>");
    }
    if webhooks.body["data"].as_array().is_some_and(Vec::is_empty) {
        next.push("<li>Add a <a href=\"/app/webhooks\">webhook</a> to hear of deliveries, bounces and complaints as they happen.</li>");
    }
    if metrics.body["totals"]["received"].as_i64().unwrap_or(0) == 0 {
        next.push("<li>Send a first email, below or with <code>POST /emails</code> and an <a href=\"/app/api-keys\">API key</a>. It shows up under <a href=\"/app/emails\">Emails</a>.</li>");
    }
    let next = if next.is_empty() { "<p>Everything is set up.</p>".to_string() } else { format!("<ul>{}</ul>", next.concat()) };
    let chart = chart(metrics.body["data"].as_array().map(Vec::as_slice).unwrap_or_default());
    let meters = if billing.ok() { meters(&billing.body) } else { String::new() };
    let test = match (session.can_write(), sender) {
        (true, Some(domain)) => {
            let mut shown = Fields::from([
                ("from".to_string(), format!("Herald <hello@{domain}>")),
                ("to".to_string(), session.person_email.clone()),
                ("subject".to_string(), "Hello from Herald".to_string()),
            ]);
            if let Some(values) = values {
                shown.extend(values.iter().filter(|(k, _)| k.as_str() != "csrf").map(|(k, v)| (k.clone(), v.clone())));
            }
            let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
            kit::card("test-email", "Send a test email", &format!("{alert}{}", kit::form("/app/test-email", &session.csrf, TEST_FIELDS, &shown, refused, "Send")))
        }
        _ => String::new(),
    };
    let body = format!(
        "<h1>Overview</h1><section aria-labelledby=\"last30\"><h2 id=\"last30\">The last 30 days</h2><ul class=\"tiles\">{tiles}</ul>{chart}</section>{meters}\
         <section aria-labelledby=\"next\" class=\"card\"><h2 id=\"next\">What to do next</h2>{next}</section>{test}"
    );
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Overview", Some(session), &body))
}

/// `POST /app/test-email`: `POST /emails` with the form; then the email's own page, where its
/// timeline fills in as it is delivered.
#[handler]
pub async fn test_email(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    let subject = field("subject");
    let body = json!({
        "from": field("from"),
        "to": field("to"),
        "subject": subject,
        "text": "This is a test email sent from Herald's dashboard.",
        "html": "<p>This is a test email sent from Herald's dashboard.</p>",
    });
    let answer = kit::write(req, &api, Method::POST, "/emails", Some(&body), &form).await?;
    if !answer.ok() {
        return overview(req, &api, &session, Some(&form), Some(&answer)).await;
    }
    Ok(kit::see_other(&format!("/app/emails/{}", kit::id(&answer.body["id"]))))
}

/// The plan's meters this period: emails, today's emails and billable contacts against what the
/// plan allows (a limit of `null` shows the count alone).
fn meters(billing: &Value) -> String {
    let usage = &billing["usage"];
    let meter = |label: &str, used: &Value, of: &Value| {
        let used = used.as_i64().unwrap_or(0);
        match of.as_i64().filter(|limit| *limit > 0) {
            Some(limit) => format!(
                "<li><label>{label}: <b>{used}</b> of {limit}<meter min=\"0\" max=\"{limit}\" low=\"{}\" high=\"{}\" optimum=\"0\" value=\"{}\"></meter></label></li>",
                limit * 7 / 10,
                limit * 9 / 10,
                used.min(limit)
            ),
            None => format!("<li>{label}: <b>{used}</b> (no limit)</li>"),
        }
    };
    let monthly = if usage["monthly_limit"].is_null() { &usage["included_emails"] } else { &usage["monthly_limit"] };
    format!(
        "<section aria-labelledby=\"plan\" class=\"card\"><h2 id=\"plan\">Plan: {}</h2><ul class=\"meters\">{}{}{}</ul></section>",
        kit::text(&billing["plan"]["name"]),
        meter("Emails this period", &usage["emails"], monthly),
        meter("Emails today", &usage["emails_today"], &usage["daily_limit"]),
        meter("Billable contacts", &usage["billable_contacts"], &usage["contacts_included"])
    )
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
