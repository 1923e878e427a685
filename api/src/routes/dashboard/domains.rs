//! Domains: the team's domains with a form to add one (or, for a name another team verified, to
//! claim it), and one domain's DNS records (each value with a copy button) with a "verify now"
//! that answers each record's status, its claim's TXT record while one runs, and the mail it
//! received. Verifying is `POST /domains/{id}/verify` made as the session; a viewer sees no
//! button, and the API refuses a viewer's post anyway.

use super::client::Api;
use super::layout::{not_found, page, time, to_sign_in};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path};
use poem::{Request, Response, handler};
use serde::Deserialize;
use serde_json::Value;

/// The settings form: tracking, receiving and TLS, as `PATCH /domains/{id}` takes them.
fn settings_form(domain: &Value, csrf: &str) -> String {
    let checked = |field: &str| if domain[field] == true { " checked" } else { "" };
    let receiving = domain["capabilities"]["receiving"].as_str().unwrap_or("disabled");
    let tls = domain["tls"].as_str().unwrap_or("opportunistic");
    let option = |value: &str, current: &str| format!("<option{}>{value}</option>", if value == current { " selected" } else { "" });
    format!(
        "<form class=\"stack\" method=\"post\" action=\"/app/domains/{}/settings\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label class=\"check\"><input type=\"checkbox\" name=\"open_tracking\" value=\"true\"{}> Track opens</label>\
         <label class=\"check\"><input type=\"checkbox\" name=\"click_tracking\" value=\"true\"{}> Track clicks</label>\
         <label for=\"d-receiving\">Receiving mail at this domain</label><select id=\"d-receiving\" name=\"receiving\">{}{}</select>\
         <label for=\"d-tls\">TLS to receiving servers</label><select id=\"d-tls\" name=\"tls\">{}{}</select>\
         <button type=\"submit\">Save settings</button></form>",
        escape(&super::kit::urlencoding(domain["id"].as_str().unwrap_or_default())),
        escape(csrf),
        checked("open_tracking"),
        checked("click_tracking"),
        option("disabled", receiving),
        option("enabled", receiving),
        option("opportunistic", tls),
        option("enforced", tls)
    )
}

/// `POST /app/domains/{id}/settings`: `PATCH /domains/{id}`; an unticked box is `false`.
#[handler]
pub async fn settings(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<super::kit::Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = serde_json::json!({
        "open_tracking": form.get("open_tracking").is_some_and(|v| v == "true"),
        "click_tracking": form.get("click_tracking").is_some_and(|v| v == "true"),
        "capabilities": { "receiving": super::kit::given(&form, "receiving").unwrap_or("disabled") },
        "tls": super::kit::given(&form, "tls").unwrap_or("opportunistic"),
    });
    let path = format!("/domains/{}", super::kit::urlencoding(&id));
    let answer = super::kit::write(req, &api, Method::PATCH, &path, Some(&body), &form).await?;
    after_write(req, &api, &session, &path, answer, "Settings saved.").await
}

/// `POST /app/domains/{id}/rotate`: `POST /domains/{id}/dkim/rotate`.
#[handler]
pub async fn rotate(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<super::kit::Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let path = format!("/domains/{}", super::kit::urlencoding(&id));
    let answer = super::kit::write(req, &api, Method::POST, &format!("{path}/dkim/rotate"), None, &form).await?;
    after_write(req, &api, &session, &path, answer, "A new DKIM key is ready: publish its record, then verify.").await
}

/// The domain's page after a write: the outcome beside the records (the API's status on a refusal).
async fn after_write(req: &Request, api: &Api, session: &super::client::Session, path: &str, answer: super::client::Answer, done: &str) -> poem::Result<Response> {
    let domain = api.get(req, path).await?;
    if !domain.ok() {
        return Ok(not_found(session));
    }
    let domain = domain.body;
    let outcome = if answer.ok() { (true, done.to_string()) } else { (false, answer.message()) };
    Ok(page(super::kit::status_of(&answer), domain["name"].as_str().unwrap_or("Domain"), Some(session), &domain_body(&domain, &session.csrf, session.can_write(), Some(outcome))))
}

/// The verify form's field.
#[derive(Deserialize)]
pub struct VerifyForm {
    csrf: String,
}

/// The new-domain form.
const NEW_FIELDS: &[super::kit::Field] = &[super::kit::Field::text("name", "Domain name", 253)];

/// `GET /app/domains`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    listing(req, &api, &session, &super::kit::Fields::new(), None).await
}

async fn listing(req: &Request, api: &Api, session: &super::client::Session, values: &super::kit::Fields, refused: Option<&super::client::Answer>) -> poem::Result<Response> {
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
        "<p>No domain yet. Add one here, publish the records it shows, then verify it.</p>".to_string()
    } else {
        format!("<div class=\"scroll\"><table><thead><tr><th scope=\"col\">Domain</th><th scope=\"col\">Status</th><th scope=\"col\">Region</th><th scope=\"col\">Added</th></tr></thead><tbody>{rows}</tbody></table></div>")
    };
    let form = if session.can_write() {
        let mut alert = refused.map_or_else(String::new, |a| super::kit::note(false, &a.message()));
        if refused.is_some_and(|a| a.body["claimable"] == true) {
            // Another team verified the name: claiming it is the way to it.
            let name = values.get("name").map_or("", String::as_str);
            alert.push_str(&format!(
                "<form class=\"row\" method=\"post\" action=\"/app/domains/claim\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"name\" value=\"{}\">\
                 <button type=\"submit\">Claim {}</button><span class=\"muted\">by publishing a TXT record at its root</span></form>",
                escape(&session.csrf),
                escape(name),
                escape(name)
            ));
        }
        super::kit::card("new-domain", "Add a domain", &format!("{alert}{}", super::kit::form("/app/domains", &session.csrf, NEW_FIELDS, values, refused, "Add domain")))
    } else {
        String::new()
    };
    Ok(page(refused.map_or(StatusCode::OK, super::kit::status_of), "Domains", Some(session), &format!("<h1>Domains</h1>{form}{table}")))
}

/// `POST /app/domains`: `POST /domains`; then the new domain's records to publish.
#[handler]
pub async fn create(req: &Request, api: Data<&Api>, Form(form): Form<super::kit::Fields>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let body = serde_json::json!({ "name": form.get("name").cloned().unwrap_or_default() });
    let answer = super::kit::write(req, &api, Method::POST, "/domains", Some(&body), &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &form, Some(&answer)).await;
    }
    Ok(super::kit::see_other(&format!("/app/domains/{}", super::kit::id(&answer.body["id"]))))
}

/// `POST /app/domains/claim`: `POST /domains/claim`; then the team's copy of the domain, with
/// the TXT record to publish.
#[handler]
pub async fn claim(req: &Request, api: Data<&Api>, Form(form): Form<super::kit::Fields>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let body = serde_json::json!({ "name": form.get("name").cloned().unwrap_or_default() });
    let answer = super::kit::write(req, &api, Method::POST, "/domains/claim", Some(&body), &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &form, Some(&answer)).await;
    }
    Ok(super::kit::see_other(&format!("/app/domains/{}", super::kit::id(&answer.body["domain_id"]))))
}

/// The claim made through this domain (its TXT record while it runs) and the mail it received.
async fn extras(req: &Request, api: &Api, domain: &Value) -> poem::Result<String> {
    let id = super::kit::urlencoding(domain["id"].as_str().unwrap_or_default());
    let latest = api.get(req, &format!("/domains/{id}/claim")).await?;
    let claim_card = if latest.ok() {
        let c = &latest.body;
        let value = c["record"]["value"].as_str().unwrap_or_default();
        super::kit::card(
            "claim",
            "Claim",
            &format!(
                "{}<p>Publish at the domain's root: <code>TXT</code> <code>{}</code> <code class=\"value\">{}</code> <button type=\"button\" data-copy=\"{}\" aria-label=\"Copy the claim record's value\">Copy</button></p>",
                super::kit::facts(&[
                    ("Status", super::kit::status(c)),
                    ("Waiting for", super::kit::word(&c["blocked_reason"])),
                    ("Checked", time(&c["checked_at"])),
                    ("Expires", time(&c["expires_at"])),
                    ("Transferred", time(&c["completed_at"])),
                ]),
                escape(c["record"]["fqdn"].as_str().unwrap_or_default()),
                escape(value),
                escape(value)
            ),
        )
    } else {
        String::new()
    };
    let received = super::received::for_domain(req, api, domain["name"].as_str().unwrap_or_default()).await?;
    Ok(format!("{claim_card}{received}"))
}

/// `GET /app/domains/{id}`.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let answer = api.get(req, &format!("/domains/{}", super::kit::urlencoding(&id))).await?;
    if !answer.ok() {
        return Ok(not_found(&session));
    }
    let extras = extras(req, &api, &answer.body).await?;
    Ok(page(StatusCode::OK, answer.body["name"].as_str().unwrap_or("Domain"), Some(&session), &format!("{}{extras}", domain_body(&answer.body, &session.csrf, session.can_write(), None))))
}

/// `POST /app/domains/{id}/verify`: checks the records now and shows what DNS said.
#[handler]
pub async fn verify(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<VerifyForm>) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else { return Ok(to_sign_in()) };
    let path = format!("/domains/{}", super::kit::urlencoding(&id));
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
    let extras = extras(req, &api, &domain).await?;
    Ok(page(status, domain["name"].as_str().unwrap_or("Domain"), Some(&session), &format!("{}{extras}", domain_body(&domain, &session.csrf, session.can_write(), Some((ok, note))))))
}

fn domain_body(domain: &Value, csrf: &str, can_write: bool, outcome: Option<(bool, String)>) -> String {
    let id = domain["id"].as_str().unwrap_or_default();
    let rotation = match (&domain["dkim_rotation"], can_write) {
        (Value::Object(_), _) => super::kit::card("dkim", "DKIM rotation", &format!(
            "<p>A new key is waiting for its record in DNS: publish the DKIM record below, then verify. <span class=\"muted\">{}</span></p>",
            escape(&domain["dkim_rotation"].to_string())
        )),
        (_, true) => super::kit::card("dkim", "DKIM key", &super::kit::button(&format!("/app/domains/{}/rotate", super::kit::urlencoding(id)), csrf, "Rotate the DKIM key")),
        _ => String::new(),
    };
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
        ) + &settings_form(domain, csrf)
    } else {
        "<p class=\"muted\">A viewer reads the records; a member or an admin verifies.</p>".to_string()
    };
    format!(
        "<p><a href=\"/app/domains\">← Domains</a></p><h1>{}</h1>\
         <section class=\"card\"><dl><dt>Status</dt><dd>{}</dd><dt>Region</dt><dd>{}</dd><dt>Last checked</dt><dd>{}</dd></dl>{action}{outcome}</section>\
         {rotation}<section class=\"card\" aria-labelledby=\"records\"><h2 id=\"records\">DNS records</h2><div class=\"scroll\"><table>\
         <thead><tr><th scope=\"col\">Record</th><th scope=\"col\">Type</th><th scope=\"col\">Name</th><th scope=\"col\">Value</th><th scope=\"col\">Status</th></tr></thead>\
         <tbody>{records}</tbody></table></div></section>",
        escape(domain["name"].as_str().unwrap_or_default()),
        escape(&domain["status"].as_str().unwrap_or_default().replace('_', " ")),
        escape(domain["region"].as_str().unwrap_or_default()),
        time(&domain["checked_at"])
    )
}
