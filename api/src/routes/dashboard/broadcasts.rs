//! Broadcasts: the list, composing one (from a template or HTML, to a segment), one
//! broadcast's checklist and content checks, sending it, its fan-out's live progress (htmx
//! asks every two seconds while it sends), opens, clicks and recipients.

use super::client::{Answer, Api, Session};
use super::kit::urlencoding;
use super::kit::{self, Fields, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path, Query};
use poem::{Request, Response, handler};
use serde_json::{Value, json};

/// `GET /app/broadcasts`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    listing(req, &api, &session, &paging, &Fields::new(), None).await
}

async fn listing(req: &Request, api: &Api, session: &Session, paging: &Paging, values: &Fields, refused: Option<&Answer>) -> poem::Result<Response> {
    let answer = api.get(req, &paging.path("/broadcasts", 25)).await?;
    let table = kit::table(
        &["Broadcast", "Status", "Recipients", "Delivered", "Created"],
        &kit::rows(&answer),
        |b| {
            let name = b["name"].as_str().filter(|n| !n.is_empty()).or(b["subject"].as_str()).unwrap_or_default();
            vec![kit::link(&format!("/app/broadcasts/{}", kit::id(&b["id"])), name), kit::status(b), kit::text(&b["counts"]["recipients"]), kit::text(&b["counts"]["delivered"]), time(&b["created_at"])]
        },
        "No broadcast yet. Compose one here from a template or your own HTML, to a segment.",
    );
    let form = if session.can_write() { kit::card("compose", "Compose", &compose_form(req, api, session, values, refused).await?) } else { String::new() };
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!("<h1>Broadcasts</h1>{alert}{form}{}{table}{}", paging.search_form("/app/broadcasts", "Name or subject"), kit::pager(&paging.base("/app/broadcasts"), &answer));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Broadcasts", Some(session), &body))
}

/// The compose form: segments and templates to choose from, the API's errors beside fields.
async fn compose_form(req: &Request, api: &Api, session: &Session, values: &Fields, refused: Option<&Answer>) -> poem::Result<String> {
    let segments = api.get(req, "/segments?limit=100").await?;
    let templates = api.get(req, "/templates?limit=100").await?;
    let options = |answer: &Answer, field: &str, none: &str| -> String {
        let chosen = values.get(field).map_or("", String::as_str);
        std::iter::once(format!("<option value=\"\">{none}</option>"))
            .chain(kit::rows(answer).iter().map(|row| {
                let id = row["id"].as_str().unwrap_or_default();
                format!("<option value=\"{}\"{}>{}</option>", escape(id), if id == chosen { " selected" } else { "" }, kit::text(&row["name"]))
            }))
            .collect()
    };
    let error = |field: &str| refused.and_then(|a| a.field_error(field)).map_or_else(String::new, |e| format!("<span class=\"error\">{}</span>", escape(&e)));
    let value = |field: &str| escape(values.get(field).map_or("", String::as_str));
    Ok(format!(
        "<form class=\"stack\" method=\"post\" action=\"/app/broadcasts\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label for=\"b-name\">Name</label><input id=\"b-name\" name=\"name\" maxlength=\"200\" value=\"{}\">{}\
         <label for=\"b-from\">From</label><input id=\"b-from\" name=\"from\" required maxlength=\"320\" value=\"{}\" placeholder=\"News &lt;news@example.com&gt;\">{}\
         <label for=\"b-subject\">Subject</label><input id=\"b-subject\" name=\"subject\" required maxlength=\"998\" value=\"{}\">{}\
         <label for=\"b-segment\">To the segment</label><select id=\"b-segment\" name=\"segment_id\">{}</select>{}\
         <label for=\"b-template\">Template</label><select id=\"b-template\" name=\"template\">{}</select>{}\
         <label for=\"b-html\">Or HTML</label><textarea id=\"b-html\" name=\"html\" rows=\"6\">{}</textarea>{}\
         <button type=\"submit\">Save as draft</button></form>",
        escape(&session.csrf),
        value("name"),
        error("name"),
        value("from"),
        error("from"),
        value("subject"),
        error("subject"),
        options(&segments, "segment_id", "Choose a segment"),
        error("segment_id"),
        options(&templates, "template", "No template"),
        error("template"),
        value("html"),
        error("html")
    ))
}

/// `POST /app/broadcasts`: `POST /broadcasts` as a draft.
#[handler]
pub async fn create(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let mut body = json!({ "from": form.get("from").cloned().unwrap_or_default(), "subject": form.get("subject").cloned().unwrap_or_default() });
    for name in ["name", "segment_id", "html"] {
        if let Some(value) = kit::given(&form, name) {
            body[name] = json!(value);
        }
    }
    if let Some(template) = kit::given(&form, "template") {
        body["template"] = json!({ "id": template });
    }
    let answer = kit::write(req, &api, Method::POST, "/broadcasts", Some(&body), &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &Paging::default(), &form, Some(&answer)).await;
    }
    Ok(kit::see_other(&format!("/app/broadcasts/{}", kit::id(&answer.body["id"]))))
}

/// `GET /app/broadcasts/{id}`.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    detail_page(req, &api, &session, &id, None).await
}

async fn detail_page(req: &Request, api: &Api, session: &Session, id: &str, refused: Option<&Answer>) -> poem::Result<Response> {
    let path = format!("/broadcasts/{}", urlencoding(id));
    let broadcast = match kit::one(req, api, session, &path).await? {
        Ok(broadcast) => broadcast,
        Err(page) => return Ok(page),
    };
    let status = broadcast["status"].as_str().unwrap_or_default();
    let base = format!("/app/broadcasts/{}", urlencoding(id));
    let mut sections = String::new();
    if status == "draft" {
        let checklist = api.get(req, &format!("{path}/checklist")).await?;
        let steps: String = checklist.body["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| format!("<li>{} <b>{}</b> <span class=\"muted\">{}</span></li>", if s["passed"] == true { "✓" } else { "✗" }, kit::word(&s["name"]), kit::text(&s["message"])))
            .collect();
        let schedule_error = refused.and_then(|a| a.field_error("scheduled_at")).map_or_else(String::new, |e| format!("<span class=\"error\" id=\"b-scheduled_at-error\">{}</span>", escape(&e)));
        let send_form = if session.can_write() {
            format!(
                "<form class=\"stack\" method=\"post\" action=\"{base}/send\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
                 <label class=\"check\"><input type=\"checkbox\" name=\"acknowledge_checks\" value=\"true\"> Send even if a content check fails</label>\
                 <label for=\"b-scheduled_at\">Or send later: an ISO 8601 time, or a phrase such as “tomorrow at 9am”</label>\
                 <input id=\"b-scheduled_at\" name=\"scheduled_at\" maxlength=\"100\"{}>{}\
                 <button type=\"submit\">Send now, or at that time</button></form>",
                escape(&session.csrf),
                if schedule_error.is_empty() { "" } else { " aria-invalid=\"true\" aria-describedby=\"b-scheduled_at-error\"" },
                schedule_error
            )
        } else {
            String::new()
        };
        sections.push_str(&kit::card("checklist", "Before it sends", &format!("<ul class=\"checklist\">{steps}</ul>{send_form}")));
    }
    if status == "scheduled" && session.can_write() {
        sections.push_str(&kit::button(&format!("{base}/cancel"), &session.csrf, "Cancel the scheduled send"));
    }
    sections.push_str(&kit::card("progress-title", "Progress", &progress(&broadcast)));
    if matches!(status, "sending" | "sent") {
        let links = api.get(req, &format!("{path}/clicked-links?limit=20")).await?;
        let links = kit::table(&["Link", "Clicks", "People"], &kit::rows(&links), |l| vec![kit::text(&l["link"]), kit::text(&l["clicks"]), kit::text(&l["unique_clickers"])], "No click yet.");
        let recipients = api.get(req, &format!("{path}/recipients?limit=50")).await?;
        let recipients = kit::table(
            &["Recipient", "Last event"],
            &kit::rows(&recipients),
            |r| {
                let to = r["email_id"].as_str().map_or_else(|| kit::text(&r["email"]), |e| kit::link(&format!("/app/emails/{}", urlencoding(e)), r["email"].as_str().unwrap_or_default()));
                vec![to, r["excluded_reason"].as_str().map_or_else(|| kit::word(&r["last_event"]), |why| format!("excluded: {}", escape(why)))]
            },
            "No recipient yet.",
        );
        sections.push_str(&kit::card("links", "Clicked links", &links));
        sections.push_str(&kit::card("recipients", "Recipients", &recipients));
    }
    let facts = kit::facts(&[
        ("Status", kit::word(&broadcast["status"])),
        ("From", kit::text(&broadcast["from"])),
        ("Subject", kit::text(&broadcast["subject"])),
        ("Scheduled", time(&broadcast["scheduled_at"])),
        ("Sent", time(&broadcast["sent_at"])),
        ("Failed because", kit::text(&broadcast["failed_reason"])),
    ]);
    let title = broadcast["name"].as_str().filter(|n| !n.is_empty()).or(broadcast["subject"].as_str()).unwrap_or("Broadcast").to_string();
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!("<p><a href=\"/app/broadcasts\">← Broadcasts</a></p><h1>{}</h1>{alert}<section class=\"card\">{facts}</section>{sections}", escape(&title));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), &title, Some(session), &body))
}


/// The fan-out: tiles of counts and a bar of messages sent of recipients; htmx asks again
/// every two seconds while it is queued or sending.
fn progress(broadcast: &Value) -> String {
    let counts = &broadcast["counts"];
    let n = |k: &str| counts[k].as_i64().unwrap_or(0);
    let status = broadcast["status"].as_str().unwrap_or_default();
    let live = matches!(status, "queued" | "sending");
    let recipients = n("recipients");
    let handled = n("sent") + n("failed") + n("excluded");
    let percent = if status == "sent" { 100 } else if recipients > 0 { (handled * 100 / recipients).min(100) } else { 0 };
    let poll = if live { format!(" hx-get=\"/app/broadcasts/{}/progress\" hx-trigger=\"every 2s\" hx-swap=\"outerHTML\"", kit::id(&broadcast["id"])) } else { String::new() };
    let tiles: String = ["recipients", "sent", "delivered", "opened", "clicked", "bounced", "complained", "failed", "excluded"]
        .iter()
        .map(|k| format!("<li><b>{}</b>{k}</li>", n(k)))
        .collect();
    format!(
        "<div id=\"progress\"{poll}><p role=\"status\"><b>{}</b> · {percent}%</p><progress max=\"100\" value=\"{percent}\" aria-label=\"Sending progress\">{percent}%</progress><ul class=\"tiles\">{tiles}</ul></div>",
        escape(&status.replace('_', " "))
    )
}

/// `GET /app/broadcasts/{id}/progress`: the progress alone, for htmx.
#[handler]
pub async fn progress_fragment(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    kit::fragment(req, &api, &format!("/broadcasts/{}", urlencoding(&id)), progress).await
}

/// `POST /app/broadcasts/{id}/send`: `POST /broadcasts/{id}/send`, now or at the time given.
#[handler]
pub async fn send(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let mut body = json!({ "acknowledge_checks": form.get("acknowledge_checks").is_some_and(|v| v == "true") });
    if let Some(at) = kit::given(&form, "scheduled_at") {
        body["scheduled_at"] = json!(at);
    }
    let answer = kit::write(req, &api, Method::POST, &format!("/broadcasts/{}/send", urlencoding(&id)), Some(&body), &form).await?;
    if !answer.ok() {
        return detail_page(req, &api, &session, &id, Some(&answer)).await;
    }
    Ok(kit::see_other(&format!("/app/broadcasts/{}", urlencoding(&id))))
}

/// `POST /app/broadcasts/{id}/cancel`: `POST /broadcasts/{id}/cancel`.
#[handler]
pub async fn cancel(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::POST, &format!("/broadcasts/{}/cancel", urlencoding(&id)), None, &form).await?;
    if !answer.ok() {
        return detail_page(req, &api, &session, &id, Some(&answer)).await;
    }
    Ok(kit::see_other(&format!("/app/broadcasts/{}", urlencoding(&id))))
}
