//! Domains: the team's domains, and one domain's DNS records (each value with a copy button)
//! with a "verify now" that answers each record's status. Verifying is `POST
//! /domains/{id}/verify` made as the session; a viewer sees no button, and the API refuses a
//! viewer's post anyway.

use super::client::Api;
use super::layout::{not_found, page, time, to_sign_in};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path};
use poem::{Request, Response, handler};
use serde::Deserialize;
use serde_json::Value;

/// The verify form's field.
#[derive(Deserialize)]
pub struct VerifyForm {
    csrf: String,
}

/// `GET /app/domains`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let answer = api.get(req, "/domains?limit=100").await?;
    let rows: String = answer.body["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            format!(
                "<tr><td><a href=\"/app/domains/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(d["id"].as_str().unwrap_or_default()),
                escape(d["name"].as_str().unwrap_or_default()),
                escape(&d["status"].as_str().unwrap_or_default().replace('_', " ")),
                escape(d["region"].as_str().unwrap_or_default()),
                time(&d["created_at"])
            )
        })
        .collect();
    let table = if rows.is_empty() {
        "<p>No domain yet. Add one with <code>POST /domains</code>, publish the records it answers, then verify it here.</p>".to_string()
    } else {
        format!("<div class=\"scroll\"><table><thead><tr><th scope=\"col\">Domain</th><th scope=\"col\">Status</th><th scope=\"col\">Region</th><th scope=\"col\">Added</th></tr></thead><tbody>{rows}</tbody></table></div>")
    };
    Ok(page(StatusCode::OK, "Domains", Some(&session), &format!("<h1>Domains</h1>{table}")))
}

/// `GET /app/domains/{id}`.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let answer = api.get(req, &format!("/domains/{}", super::emails::urlencoding(&id))).await?;
    if !answer.ok() {
        return Ok(not_found(&session));
    }
    Ok(page(StatusCode::OK, answer.body["name"].as_str().unwrap_or("Domain"), Some(&session), &domain_body(&answer.body, &session.csrf, session.can_write(), None)))
}

/// `POST /app/domains/{id}/verify`: checks the records now and shows what DNS said.
#[handler]
pub async fn verify(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<VerifyForm>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let path = format!("/domains/{}", super::emails::urlencoding(&id));
    let answer = api.call(req, Method::POST, &format!("{path}/verify"), None, Some(&form.csrf)).await?;
    if answer.status == 404 {
        return Ok(not_found(&session));
    }
    let ok = answer.ok();
    let status = if ok { StatusCode::OK } else { StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_REQUEST) };
    let (domain, note) = if ok {
        (answer.body, "Checked just now: each record's status is what DNS said.".to_string())
    } else {
        let note = answer.message();
        (api.get(req, &path).await?.body, note)
    };
    Ok(page(status, domain["name"].as_str().unwrap_or("Domain"), Some(&session), &domain_body(&domain, &session.csrf, session.can_write(), Some((ok, note)))))
}

fn domain_body(domain: &Value, csrf: &str, can_write: bool, outcome: Option<(bool, String)>) -> String {
    let id = domain["id"].as_str().unwrap_or_default();
    let records: String = domain["records"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let value = r["value"].as_str().unwrap_or_default();
            format!(
                "<tr><th scope=\"row\">{}</th><td>{}</td><td><code>{}</code></td><td><code class=\"value\">{}</code> <button type=\"button\" data-copy=\"{}\" aria-label=\"Copy the {} value\">Copy</button></td><td>{}{}</td></tr>",
                escape(r["record"].as_str().unwrap_or_default()),
                escape(r["type"].as_str().unwrap_or_default()),
                escape(r["fqdn"].as_str().unwrap_or_default()),
                escape(value),
                escape(value),
                escape(r["record"].as_str().unwrap_or_default()),
                escape(&r["status"].as_str().unwrap_or_default().replace('_', " ")),
                if r["required"] == true { "" } else { " <span class=\"muted\">(not needed yet)</span>" }
            )
        })
        .collect();
    let outcome = outcome.map_or_else(String::new, |(ok, note)| format!("<p class=\"{}\" role=\"status\">{}</p>", if ok { "muted" } else { "error" }, escape(&note)));
    let action = if can_write {
        format!(
            "<form method=\"post\" action=\"/app/domains/{}/verify\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Verify now</button></form>",
            escape(id),
            escape(csrf)
        )
    } else {
        "<p class=\"muted\">A viewer reads the records; a member or an admin verifies.</p>".to_string()
    };
    format!(
        "<p><a href=\"/app/domains\">← Domains</a></p><h1>{}</h1>\
         <section class=\"card\"><dl><dt>Status</dt><dd>{}</dd><dt>Region</dt><dd>{}</dd><dt>Last checked</dt><dd>{}</dd></dl>{action}{outcome}</section>\
         <section class=\"card\" aria-labelledby=\"records\"><h2 id=\"records\">DNS records</h2><div class=\"scroll\"><table>\
         <thead><tr><th scope=\"col\">Record</th><th scope=\"col\">Type</th><th scope=\"col\">Name</th><th scope=\"col\">Value</th><th scope=\"col\">Status</th></tr></thead>\
         <tbody>{records}</tbody></table></div></section>",
        escape(domain["name"].as_str().unwrap_or_default()),
        escape(&domain["status"].as_str().unwrap_or_default().replace('_', " ")),
        escape(domain["region"].as_str().unwrap_or_default()),
        time(&domain["checked_at"])
    )
}
