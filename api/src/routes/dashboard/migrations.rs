//! Migrations and exports (#26): moving a team's audience in from Resend, Mailchimp or
//! listmonk (through the platform's API with its credentials, or its export file), the review
//! of what will arrive and what it costs, Start and Cancel, progress that htmx refreshes until
//! the move ends, and exports of contacts or suppressions with their download links.

use super::client::{Answer, Api, Session};
use super::kit::urlencoding;
use super::kit::{self, Fields};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Multipart, Path};
use poem::{Request, Response, handler};
use serde_json::{Value, json};

/// `GET /app/migrations`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    listing(req, &api, &session, None).await
}

async fn listing(req: &Request, api: &Api, session: &Session, refused: Option<&Answer>) -> poem::Result<Response> {
    let migrations = api.get(req, "/migrations?limit=50").await?;
    if !migrations.ok() {
        return Ok(kit::refused_page(session, &migrations));
    }
    let migrations = kit::table(
        &["Migration", "From", "Status", "Contacts", "Asked for"],
        &kit::rows(&migrations),
        |m| {
            vec![
                kit::link(&format!("/app/migrations/{}", kit::id(&m["id"])), &format!("{} ({})", m["source"].as_str().unwrap_or_default(), m["mode"].as_str().unwrap_or_default())),
                kit::word(&m["source"]),
                kit::status(m),
                kit::text(&m["counts"]["total"]),
                time(&m["created_at"]),
            ]
        },
        "No migration yet. Connect Resend, Mailchimp or listmonk below, or upload its export: you review what arrives before anything is written, and no one is ever emailed.",
    );
    let exports = api.get(req, "/exports?limit=20").await?;
    let exports = kit::table(
        &["Export", "Status", "Rows", "Asked for", ""],
        &kit::rows(&exports),
        |e| {
            let download = e["download_url"].as_str().map_or_else(|| kit::text(&e["error"]), |url| kit::link(url, "Download CSV"));
            vec![kit::word(&e["kind"]), kit::status(e), kit::text(&e["rows"]), time(&e["created_at"]), download]
        },
        "No export yet.",
    );
    let forms = if session.can_write() {
        let csrf = escape(&session.csrf);
        let sources = "<option value=\"resend\">Resend</option><option value=\"mailchimp\">Mailchimp</option><option value=\"listmonk\">listmonk</option>";
        format!(
            "{}{}{}",
            kit::card(
                "connect",
                "Connect a platform",
                &format!(
                    "<form class=\"stack\" method=\"post\" action=\"/app/migrations\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                     <label for=\"m-source\">Platform</label><select id=\"m-source\" name=\"source\">{sources}</select>\
                     <label for=\"m-api_key\">API key (Resend, Mailchimp)</label><input id=\"m-api_key\" name=\"api_key\" type=\"password\" autocomplete=\"off\" maxlength=\"500\">\
                     <label for=\"m-base_url\">Address (listmonk)</label><input id=\"m-base_url\" name=\"base_url\" maxlength=\"2000\" placeholder=\"https://lists.example.com\">\
                     <label for=\"m-username\">API user (listmonk)</label><input id=\"m-username\" name=\"username\" maxlength=\"200\" autocomplete=\"off\">\
                     <label for=\"m-password\">API token (listmonk)</label><input id=\"m-password\" name=\"password\" type=\"password\" autocomplete=\"off\" maxlength=\"500\">\
                     <button type=\"submit\">Connect and review</button></form>"
                )
            ),
            kit::card(
                "upload",
                "Or upload an export",
                &format!(
                    "<form class=\"stack\" method=\"post\" action=\"/app/migrations/upload\" enctype=\"multipart/form-data\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                     <label for=\"m-file-source\">Platform</label><select id=\"m-file-source\" name=\"source\">{sources}</select>\
                     <label for=\"m-file\">Resend contacts CSV, Mailchimp audience ZIP or listmonk subscribers CSV (up to 50 MB)</label><input id=\"m-file\" name=\"file\" type=\"file\" required>\
                     <button type=\"submit\">Upload and review</button></form>"
                )
            ),
            kit::card(
                "export",
                "Export",
                &format!(
                    "<p class=\"muted\">A CSV of every contact (properties, topics, consent) is accepted back by a contacts import and by a Resend file migration.</p>{}{}",
                    kit::button("/app/exports?kind=contacts", &session.csrf, "Export contacts"),
                    kit::button("/app/exports?kind=suppressions", &session.csrf, "Export suppressions")
                )
            )
        )
    } else {
        String::new()
    };
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!("<h1>Migrations and exports</h1>{alert}{}{forms}{}", kit::card("migrations", "Migrations", &migrations), kit::card("exports", "Exports", &exports));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Migrations", Some(session), &body))
}

/// `POST /app/migrations`: `POST /migrations` with the platform's credentials (blank ones left
/// out); opens the migration, which reads the platform and waits in review.
#[handler]
pub async fn create(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let credentials: serde_json::Map<String, Value> = ["api_key", "base_url", "username", "password"].iter().filter_map(|k| kit::given(&form, k).map(|v| ((*k).to_string(), json!(v)))).collect();
    let body = json!({ "source": form.get("source").cloned().unwrap_or_default(), "credentials": credentials });
    let answer = kit::write(req, &api, Method::POST, "/migrations", Some(&body), &form).await?;
    opened(req, &api, &session, answer).await
}

/// `POST /app/migrations/upload`: the export file and its platform to `POST /migrations`.
#[handler]
pub async fn upload(req: &Request, api: Data<&Api>, multipart: Multipart) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let relayed = super::upload::relay(multipart, &["source", "file"]).await?;
    let answer = api.send(req, Method::POST, "/migrations", Some(relayed.payload), Some(&relayed.csrf), &[]).await?;
    opened(req, &api, &session, answer).await
}

async fn opened(req: &Request, api: &Api, session: &Session, answer: Answer) -> poem::Result<Response> {
    if !answer.ok() {
        return listing(req, api, session, Some(&answer)).await;
    }
    Ok(kit::see_other(&format!("/app/migrations/{}", kit::id(&answer.body["id"]))))
}

/// The migration's state, counts and review; htmx asks again every second while it reads or
/// runs.
fn progress(m: &Value) -> String {
    let status = m["status"].as_str().unwrap_or_default();
    let live = matches!(status, "connecting" | "running");
    let counts = &m["counts"];
    let n = |k: &str| counts[k].as_i64().unwrap_or(0);
    let done = n("created") + n("updated") + n("failed");
    let percent = match status {
        "completed" => 100,
        "running" if n("total") > 0 => (done * 100 / n("total")).min(100),
        _ => 0,
    };
    let poll = if live { format!(" hx-get=\"/app/migrations/{}/progress\" hx-trigger=\"every 1s\" hx-swap=\"outerHTML\"", kit::id(&m["id"])) } else { String::new() };
    let tiles: String = ["total", "created", "updated", "suppressed", "failed"].iter().map(|k| format!("<li><b>{}</b>{k}</li>", n(k))).collect();
    let error = m["error"].as_str().map_or_else(String::new, |e| kit::note(false, e));
    format!(
        "<div id=\"progress\"{poll}><p role=\"status\"><b>{}</b> · {percent}%</p>{error}<progress max=\"100\" value=\"{percent}\" aria-label=\"Migration progress\">{percent}%</progress><ul class=\"tiles\">{tiles}</ul></div>",
        escape(&status.replace('_', " "))
    )
}

/// What will arrive and what it costs.
fn review(r: &Value) -> String {
    let named = |items: &Value| -> String {
        let items: Vec<String> = items.as_array().into_iter().flatten().map(|t| format!("{}{}", kit::text(&t["name"]), if t["new"] == true { " (new)" } else { "" })).collect();
        if items.is_empty() { "none".into() } else { items.join(", ") }
    };
    let plain = |items: &Value| -> String {
        let items: Vec<String> = items.as_array().into_iter().flatten().map(kit::text).collect();
        if items.is_empty() { "none".into() } else { items.join(", ") }
    };
    let suppressions: Vec<String> = r["suppressions"].as_array().into_iter().flatten().map(|s| format!("{} {}", kit::text(&s["count"]), kit::word(&s["origin"]))).collect();
    let cost = &r["cost"];
    let verdict = if cost["refused"] == true { format!("<p class=\"error\" role=\"alert\">The plan refuses this move: {}</p>", kit::text(&cost["reason"])) } else { String::new() };
    let c = &r["contacts"];
    format!(
        "{}{verdict}",
        kit::facts(&[
            (
                "Contacts",
                format!(
                    "{} in all: {} new, {} already here, {} unsubscribed, {} unusable",
                    kit::text(&c["total"]),
                    kit::text(&c["new"]),
                    kit::text(&c["existing"]),
                    kit::text(&c["unsubscribed"]),
                    kit::text(&c["failed"])
                )
            ),
            ("Properties", {
                let p: Vec<String> = r["properties"].as_array().into_iter().flatten().map(|p| format!("{} ({})", kit::text(&p["key"]), kit::word(&p["type"]))).collect();
                if p.is_empty() { "none".into() } else { p.join(", ") }
            }),
            ("Topics", named(&r["topics"])),
            ("Segments", named(&r["segments"])),
            ("Suppressions", if suppressions.is_empty() { "none".into() } else { suppressions.join(", ") }),
            ("Templates (as drafts)", plain(&r["templates"])),
            ("Domains found", plain(&r["domains"])),
            ("Billable contacts after", format!("{} of {} on the plan", kit::text(&cost["billable_contacts_after"]), kit::text(&cost["plan_contacts"]))),
            ("Monthly overage it adds", format!("${}.{:02}", cost["monthly_overage_cents"].as_i64().unwrap_or(0) / 100, cost["monthly_overage_cents"].as_i64().unwrap_or(0) % 100)),
        ])
    )
}

/// `GET /app/migrations/{id}`.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    detail_page(req, &api, &session, &id, None).await
}

async fn detail_page(req: &Request, api: &Api, session: &Session, id: &str, refused: Option<&Answer>) -> poem::Result<Response> {
    let m = match kit::one(req, api, session, &format!("/migrations/{}", urlencoding(id))).await? {
        Ok(m) => m,
        Err(page) => return Ok(page),
    };
    let base = format!("/app/migrations/{}", urlencoding(id));
    let status = m["status"].as_str().unwrap_or_default();
    let mut actions = String::new();
    if session.can_write() && status == "review" && m["review"]["cost"]["refused"] != true {
        actions.push_str(&kit::button(&format!("{base}/start"), &session.csrf, "Start the move"));
    }
    if session.can_write() && matches!(status, "connecting" | "review" | "running") {
        actions.push_str(&kit::button(&format!("{base}/cancel"), &session.csrf, "Cancel"));
    }
    let review_card = if m["review"].is_object() { kit::card("review", "What will arrive", &review(&m["review"])) } else { String::new() };
    let failed = kit::table(
        &["Record", "Address", "Why"],
        m["failed_items"].as_array().map_or(&[][..], Vec::as_slice),
        |f| vec![kit::text(&f["row"]), kit::text(&f["email"]), kit::text(&f["message"])],
        "No record failed.",
    );
    let title = format!("Migration from {}", m["source"].as_str().unwrap_or("a platform"));
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!(
        "<p><a href=\"/app/migrations\">← Migrations</a></p><h1>{}</h1>{alert}<section class=\"card\">{}{actions}</section>{}{review_card}{}",
        escape(&title),
        kit::facts(&[("Mode", kit::word(&m["mode"])), ("Asked for", time(&m["created_at"])), ("Started", time(&m["started_at"])), ("Ended", time(&m["completed_at"]))]),
        kit::card("progress-title", "Progress", &progress(&m)),
        kit::card("failed", "Failed records", &failed)
    );
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), &title, Some(session), &body))
}

/// `GET /app/migrations/{id}/progress`: the progress alone, for htmx.
#[handler]
pub async fn progress_fragment(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    kit::fragment(req, &api, &format!("/migrations/{}", urlencoding(&id)), progress).await
}

/// `POST /app/migrations/{id}/start` and `/cancel`.
async fn act(req: &Request, api: &Api, id: &str, action: &str, form: &Fields) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else {
        return Ok(super::layout::to_sign_in());
    };
    let answer = kit::write(req, api, Method::POST, &format!("/migrations/{}/{action}", urlencoding(id)), None, form).await?;
    if !answer.ok() {
        return detail_page(req, api, &session, id, Some(&answer)).await;
    }
    Ok(kit::see_other(&format!("/app/migrations/{}", urlencoding(id))))
}

/// `POST /app/migrations/{id}/start`.
#[handler]
pub async fn start(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    act(req, &api, &id, "start", &form).await
}

/// `POST /app/migrations/{id}/cancel`.
#[handler]
pub async fn cancel(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    act(req, &api, &id, "cancel", &form).await
}

/// The export's kind, from the button's query.
#[derive(serde::Deserialize)]
pub struct ExportQuery {
    kind: String,
}

/// `POST /app/exports?kind=`: `POST /exports`; back to the list, where the link appears when
/// the file is ready.
#[handler]
pub async fn export(req: &Request, api: Data<&Api>, poem::web::Query(query): poem::web::Query<ExportQuery>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::POST, "/exports", Some(&json!({ "kind": query.kind })), &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, Some(&answer)).await;
    }
    Ok(kit::see_other("/app/migrations#exports"))
}
