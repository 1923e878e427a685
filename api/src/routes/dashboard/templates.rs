//! Templates: the list, one template with its preview (desktop or mobile width, in a sandboxed
//! frame), its variables and versions, editing its subject and HTML, and publishing. A save
//! carries the `updated_at` the page was read at as `If-Match`: a second tab saving over the
//! first is told so (the API's `412`), and its edits stay in the form.

use super::client::{Answer, Api, Session};
use super::emails::{framed, urlencoding};
use super::kit::{self, Fields, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path, Query};
use poem::{Request, Response, handler};
use serde::Deserialize;
use serde_json::{Value, json};

/// The detail page's query: the preview's width.
#[derive(Deserialize, Default)]
pub struct View {
    width: Option<String>,
}

/// `GET /app/templates`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = api.get(req, &paging.path("/templates", 50)).await?;
    let table = kit::table(
        &["Template", "Alias", "Status", "Version", "Updated"],
        &kit::rows(&answer),
        |t| {
            let draft = if t["has_unpublished_versions"] == true { " <span class=\"muted\">(unpublished changes)</span>" } else { "" };
            vec![kit::link(&format!("/app/templates/{}", kit::id(&t["id"])), t["name"].as_str().unwrap_or_default()), kit::text(&t["alias"]), format!("{}{draft}", kit::status(t)), kit::text(&t["current_version"]), time(&t["updated_at"])]
        },
        "No template yet. Start from one of the starters with <code>POST /templates</code>, then edit and publish it here.",
    );
    let body = format!("<h1>Templates</h1>{}{table}{}", paging.search_form("/app/templates", "Name or alias"), kit::pager(&paging.base("/app/templates"), &answer));
    Ok(page(StatusCode::OK, "Templates", Some(&session), &body))
}

/// `GET /app/templates/{id}`.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>, Query(view): Query<View>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let mobile = view.width.as_deref() == Some("mobile");
    template_page(req, &api, &session, &id, mobile, None).await
}

async fn template_page(req: &Request, api: &Api, session: &Session, id: &str, mobile: bool, edit: Option<(&Fields, &Answer)>) -> poem::Result<Response> {
    let path = format!("/templates/{}", urlencoding(id));
    let template = match kit::one(req, api, session, &path).await? {
        Ok(template) => template,
        Err(page) => return Ok(page),
    };
    let base = format!("/app/templates/{}", urlencoding(id));
    let variables = kit::table(
        &["Variable", "Type", "Fallback"],
        template["variables"].as_array().map_or(&[][..], Vec::as_slice),
        |v| vec![format!("<code>{}</code>", kit::text(&v["key"])), kit::word(&v["type"]), kit::text(&v["fallback_value"])],
        "No variable.",
    );
    let versions = api.get(req, &format!("{path}/versions?limit=20")).await?;
    let versions = kit::table(&["Version", "Status", "Published", "Saved"], &kit::rows(&versions), |v| vec![kit::text(&v["version"]), kit::status(v), time(&v["published_at"]), time(&v["updated_at"])], "No version.");
    let widths = format!(
        "<p class=\"muted\">Width: {} · {}</p>",
        if mobile { kit::link(&base, "desktop") } else { "<b>desktop</b>".to_string() },
        if mobile { "<b>mobile</b>".to_string() } else { kit::link(&format!("{base}?width=mobile"), "mobile") }
    );
    let frame = format!(
        "{widths}<iframe class=\"preview{}\" title=\"The template as HTML\" sandbox referrerpolicy=\"no-referrer\" src=\"{base}/preview\"></iframe>",
        if mobile { " mobile" } else { "" }
    );
    let mut sections = kit::card("preview-title", "Preview", &frame);
    if session.can_write() {
        sections.push_str(&kit::card("edit", "Edit", &edit_form(&base, &session.csrf, &template, edit)));
    }
    sections.push_str(&kit::card("variables", "Variables", &variables));
    sections.push_str(&kit::card("versions", "Versions", &versions));
    let publish_button = if session.can_write() && template["has_unpublished_versions"] == true { kit::button(&format!("{base}/publish"), &session.csrf, "Publish") } else { String::new() };
    let facts = kit::facts(&[
        ("Status", kit::status(&template)),
        ("Alias", kit::text(&template["alias"])),
        ("Subject", kit::text(&template["subject"])),
        ("Published version", kit::text(&template["published_version"])),
        ("Updated", time(&template["updated_at"])),
    ]);
    let alert = edit.map_or_else(String::new, |(_, a)| kit::note(false, &a.message()));
    let title = template["name"].as_str().unwrap_or("Template").to_string();
    let body = format!("<p><a href=\"/app/templates\">← Templates</a></p><h1>{}</h1>{alert}<section class=\"card\">{facts}{publish_button}</section>{sections}", escape(&title));
    Ok(page(edit.map_or(StatusCode::OK, |(_, a)| kit::status_of(a)), &title, Some(session), &body))
}

/// The edit form: subject and HTML, with the `updated_at` they were read at.
fn edit_form(base: &str, csrf: &str, template: &Value, edit: Option<(&Fields, &Answer)>) -> String {
    let value = |field: &str| match edit {
        Some((form, _)) if !form.is_empty() => form.get(field).cloned().unwrap_or_default(),
        _ => template[field].as_str().unwrap_or_default().to_string(),
    };
    let error = |field: &str| edit.and_then(|(_, a)| a.field_error(field)).map_or_else(String::new, |e| format!("<span class=\"error\">{}</span>", escape(&e)));
    // After a conflict the form keeps the person's edits but now stands on the latest save.
    let read_at = template["updated_at"].as_str().unwrap_or_default();
    format!(
        "<form class=\"stack\" method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"updated_at\" value=\"{}\">\
         <label for=\"t-subject\">Subject</label><input id=\"t-subject\" name=\"subject\" maxlength=\"998\" value=\"{}\">{}\
         <label for=\"t-html\">HTML</label><textarea id=\"t-html\" name=\"html\" rows=\"14\" class=\"code\">{}</textarea>{}\
         <button type=\"submit\">Save draft</button></form>",
        escape(base),
        escape(csrf),
        escape(read_at),
        escape(&value("subject")),
        error("subject"),
        escape(&value("html")),
        error("html")
    )
}

/// `POST /app/templates/{id}`: `PATCH /templates/{id}` with `If-Match` the `updated_at` the
/// form was read at.
#[handler]
pub async fn save(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = json!({ "subject": form.get("subject").cloned().unwrap_or_default(), "html": form.get("html").cloned().unwrap_or_default() });
    let read_at = form.get("updated_at").cloned().unwrap_or_default();
    let headers: Vec<(&str, &str)> = if read_at.is_empty() { Vec::new() } else { vec![("if-match", read_at.as_str())] };
    let csrf = form.get("csrf").map_or("", String::as_str);
    let payload = ("application/json".to_string(), serde_json::to_vec(&body).unwrap_or_default());
    let answer = api.send(req, Method::PATCH, &format!("/templates/{}", urlencoding(&id)), Some(payload), Some(csrf), &headers).await?;
    if !answer.ok() {
        return template_page(req, &api, &session, &id, false, Some((&form, &answer))).await;
    }
    Ok(kit::see_other(&format!("/app/templates/{}", urlencoding(&id))))
}

/// `POST /app/templates/{id}/publish`.
#[handler]
pub async fn publish(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::POST, &format!("/templates/{}/publish", urlencoding(&id)), None, &form).await?;
    if !answer.ok() {
        return template_page(req, &api, &session, &id, false, Some((&Fields::new(), &answer))).await;
    }
    Ok(kit::see_other(&format!("/app/templates/{}", urlencoding(&id))))
}

/// `GET /app/templates/{id}/preview`: the current version's HTML, for the frame.
#[handler]
pub async fn preview(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    if api.session(req).await?.is_none() {
        return Ok(framed(false, String::new()));
    }
    let template = api.get(req, &format!("/templates/{}", urlencoding(&id))).await?;
    let html = template.body["html"].as_str().filter(|_| template.ok()).unwrap_or_default().to_string();
    Ok(framed(template.ok(), html))
}
