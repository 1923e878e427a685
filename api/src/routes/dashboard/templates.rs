//! Templates: the list with a form to start one (from a starter, blank visual or code), one
//! template with its preview (desktop or mobile width, light or dark, in a sandboxed frame),
//! its variables and versions, the block editor for a visual template or the HTML for a code
//! one, and publishing. Every save carries the `updated_at` the page was read at as
//! `If-Match`: a second tab saving over the first is told so (the API's `412`), and a code
//! template's edits stay in the form.

use super::assist;
use super::blocks;
use super::variables;
use super::client::{Answer, Api, Session};
use super::editor::{Stamp, editor};
use super::emails::framed;
use super::kit::urlencoding;
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
    theme: Option<String>,
}

/// How the preview is shown.
#[derive(Clone, Copy, Default)]
struct Look {
    mobile: bool,
    dark: bool,
}

impl Look {
    fn of(view: &View) -> Look {
        Look { mobile: view.width.as_deref() == Some("mobile"), dark: view.theme.as_deref() == Some("dark") }
    }

    /// The query that shows this look.
    fn query(self) -> String {
        let parts: Vec<&str> = [self.mobile.then_some("width=mobile"), self.dark.then_some("theme=dark")].into_iter().flatten().collect();
        if parts.is_empty() { String::new() } else { format!("?{}", parts.join("&")) }
    }
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
    let start = if session.can_write() {
        let drafted = if assist::ai_on(req, &api).await? { assist::draft_form(&session.csrf) } else { String::new() };
        kit::card("new-template", "New template", &format!("{}{drafted}", new_form(req, &api, &session.csrf, &Fields::new(), None).await?))
    } else {
        String::new()
    };
    let body = format!(
        "<h1>Templates</h1><p><a href=\"/app/brand\">Brand kit and saved blocks</a></p>{start}{}{table}{}",
        paging.search_form("/app/templates", "Name or alias"),
        kit::pager(&paging.base("/app/templates"), &answer)
    );
    Ok(page(StatusCode::OK, "Templates", Some(&session), &body))
}

/// The form that starts a template: a name, and a starter, a blank visual layout or code.
async fn new_form(req: &Request, api: &Api, csrf: &str, values: &Fields, refused: Option<&Answer>) -> poem::Result<String> {
    let starters = api.get(req, "/starters?limit=100").await?;
    let chosen = values.get("starter").map_or("", String::as_str);
    let option = |value: &str, label: &str| format!("<option value=\"{}\"{}>{}</option>", escape(value), if chosen == value { " selected" } else { "" }, escape(label));
    let mut options = option("blank", "Blank visual template") + &option("code", "Code (HTML)");
    for s in kit::rows(&starters) {
        options.push_str(&option(s["slug"].as_str().unwrap_or_default(), &format!("Starter: {}", s["name"].as_str().unwrap_or_default())));
    }
    let error = |field: &str| refused.and_then(|a| a.field_error(field)).map_or_else(String::new, |e| format!("<span class=\"error\" id=\"nt-{field}-error\">{}</span>", escape(&e)));
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    Ok(format!(
        "{alert}<form class=\"stack\" method=\"post\" action=\"/app/templates\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label for=\"nt-name\">Name</label><input id=\"nt-name\" name=\"name\" maxlength=\"200\" required value=\"{}\">{}\
         <label for=\"nt-starter\">Start from</label><select id=\"nt-starter\" name=\"starter\">{options}</select>{}\
         <button type=\"submit\">Create template</button></form>",
        escape(csrf),
        escape(values.get("name").map_or("", String::as_str)),
        error("name"),
        error("starter")
    ))
}

/// `POST /app/templates`: `POST /templates` from a starter, a blank block document or an
/// empty HTML body; opens the new template.
#[handler]
pub async fn create(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let name = form.get("name").cloned().unwrap_or_default();
    let body = match kit::given(&form, "starter").unwrap_or("blank") {
        "blank" => json!({ "name": name, "document": { "kind": "svc.blocks", "version": 1, "lang": "en", "sections": [{ "columns": [{ "blocks": [{ "type": "heading", "text": "A heading" }, { "type": "text", "text": "Write something here." }] }] }] } }),
        "code" => json!({ "name": name, "html": "<p>Hello {{{FIRST_NAME|there}}},</p>" }),
        starter => json!({ "name": name, "starter": starter }),
    };
    let answer = kit::write(req, &api, Method::POST, "/templates", Some(&body), &form).await?;
    if !answer.ok() {
        let inner = kit::card("new-template", "New template", &new_form(req, &api, &session.csrf, &form, Some(&answer)).await?);
        return Ok(page(kit::status_of(&answer), "New template", Some(&session), &format!("<p><a href=\"/app/templates\">← Templates</a></p><h1>New template</h1>{inner}")));
    }
    Ok(kit::see_other(&format!("/app/templates/{}", kit::id(&answer.body["id"]))))
}

/// `GET /app/templates/{id}`.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>, Query(view): Query<View>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    template_page(req, &api, &session, &id, Look::of(&view), None).await
}

/// What the last write was, when the page answers one: the form sent and the API's answer
/// (a refusal, or a note that worked).
type Edit<'a> = Option<(&'a Fields, &'a Answer)>;

async fn template_page(req: &Request, api: &Api, session: &Session, id: &str, look: Look, edit: Edit<'_>) -> poem::Result<Response> {
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
    let choice = |label: &str, other: Look, on: bool| if on { format!("<b>{label}</b>") } else { kit::link(&format!("{base}{}", other.query()), label) };
    let looks = format!(
        "<p class=\"muted\">Width: {} · {} — Colours: {} · {}</p>",
        choice("desktop", Look { mobile: false, ..look }, !look.mobile),
        choice("mobile", Look { mobile: true, ..look }, look.mobile),
        choice("light", Look { dark: false, ..look }, !look.dark),
        choice("dark", Look { dark: true, ..look }, look.dark),
    );
    let frame_query = if look.dark { "?theme=dark" } else { "" };
    let frame = format!(
        "{looks}<iframe class=\"preview{}\" title=\"The template as HTML\" sandbox referrerpolicy=\"no-referrer\" src=\"{base}/preview{frame_query}\"></iframe>",
        if look.mobile { " mobile" } else { "" }
    );
    let preview_card = kit::card("preview-title", "Preview", &frame);
    let refused = edit.map(|(_, a)| a).filter(|a| !a.ok());
    let mut sections = String::new();
    if !session.can_write() {
        sections.push_str(&preview_card);
    } else if template["document"].is_object() {
        // The blocks beside their preview (stacked on a narrow screen).
        let saved = api.get(req, "/saved-blocks?limit=100").await?;
        let saved: Vec<(String, String)> = kit::rows(&saved).iter().map(|b| (b["id"].as_str().unwrap_or_default().to_string(), b["name"].as_str().unwrap_or_default().to_string())).collect();
        let ai = assist::ai_on(req, api).await?;
        let stamp = Stamp { action: &format!("{base}/blocks"), csrf: &session.csrf, read_at: template["updated_at"].as_str().unwrap_or_default(), ai };
        let mut subject = edit_form(&base, &session.csrf, &template, edit, false);
        if ai {
            subject.push_str(&assist::suggestions(&base, &session.csrf, &template, edit));
        }
        sections.push_str(&kit::card("subject", "Subject", &subject));
        sections.push_str(&format!("<div class=\"studio\">{}{preview_card}</div>", kit::card("blocks", "Blocks", &editor(&template["document"], &saved, &stamp, refused))));
    } else {
        sections.push_str(&preview_card);
        sections.push_str(&kit::card("edit", "Edit", &edit_form(&base, &session.csrf, &template, edit, true)));
    }
    sections.push_str(&kit::card("variables", "Variables", &variables));
    sections.push_str(&kit::card("versions", "Versions", &versions));
    let publish_button = if session.can_write() && template["has_unpublished_versions"] == true { kit::button(&format!("{base}/publish"), &session.csrf, "Publish") } else { String::new() };
    let facts = kit::facts(&[
        ("Status", kit::status(&template)),
        ("Kind", if template["document"].is_object() { "visual (blocks)" } else { "code (HTML)" }.to_string()),
        ("Alias", kit::text(&template["alias"])),
        ("Subject", kit::text(&template["subject"])),
        ("Published version", kit::text(&template["published_version"])),
        ("Updated", time(&template["updated_at"])),
    ]);
    let alert = edit.filter(|(_, a)| !a.ok() || a.body["message"].is_string()).map_or_else(String::new, |(_, a)| kit::note(a.ok(), &a.message()));
    let title = template["name"].as_str().unwrap_or("Template").to_string();
    let body = format!("<p><a href=\"/app/templates\">← Templates</a></p><h1>{}</h1>{alert}<section class=\"card\">{facts}{publish_button}</section>{sections}", escape(&title));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), &title, Some(session), &body))
}

/// The edit form: the subject, and the HTML of a code template, with the `updated_at` they
/// were read at.
fn edit_form(base: &str, csrf: &str, template: &Value, edit: Edit<'_>, with_html: bool) -> String {
    let value = |field: &str| match edit {
        Some((form, answer)) if !answer.ok() && form.contains_key(field) => form.get(field).cloned().unwrap_or_default(),
        _ => template[field].as_str().unwrap_or_default().to_string(),
    };
    let error = |field: &str| edit.and_then(|(_, a)| a.field_error(field)).map_or_else(String::new, |e| format!("<span class=\"error\">{}</span>", escape(&e)));
    // After a conflict the form keeps the person's edits but now stands on the latest save.
    let read_at = template["updated_at"].as_str().unwrap_or_default();
    let html = if with_html {
        format!("<label for=\"t-html\">HTML</label><textarea id=\"t-html\" name=\"html\" rows=\"14\" class=\"code\">{}</textarea>{}", escape(&value("html")), error("html"))
    } else {
        String::new()
    };
    format!(
        "<form class=\"stack\" method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"updated_at\" value=\"{}\">\
         <label for=\"t-subject\">Subject</label><input id=\"t-subject\" name=\"subject\" maxlength=\"998\" value=\"{}\">{}{html}\
         <button type=\"submit\">Save draft</button></form>",
        escape(base),
        escape(csrf),
        escape(read_at),
        escape(&value("subject")),
        error("subject"),
    )
}

/// The `If-Match` header a form's `updated_at` makes (none when the form has none).
fn if_match(form: &Fields) -> Vec<(&str, &str)> {
    kit::given(form, "updated_at").map(|read_at| vec![("if-match", read_at)]).unwrap_or_default()
}

/// `PATCH /templates/{id}` with `body`, as of the form's `updated_at`.
async fn patch(req: &Request, api: &Api, id: &str, body: &Value, form: &Fields) -> poem::Result<Answer> {
    let csrf = form.get("csrf").map_or("", String::as_str);
    let payload = ("application/json".to_string(), serde_json::to_vec(body).unwrap_or_default());
    api.send(req, Method::PATCH, &format!("/templates/{}", urlencoding(id)), Some(payload), Some(csrf), &if_match(form)).await
}

/// [`patch`], then once more with the variables declared or dropped when the API refused only
/// because placeholders and `variables` disagree (see [`variables`]).
async fn patch_declaring(req: &Request, api: &Api, id: &str, mut body: Value, form: &Fields, current: &Value) -> poem::Result<Answer> {
    let answer = patch(req, api, id, &body, form).await?;
    match variables::redeclared(&answer, current) {
        Some(again) if !answer.ok() => {
            body["variables"] = again;
            patch(req, api, id, &body, form).await
        }
        _ => Ok(answer),
    }
}

/// `POST /app/templates/{id}`: `PATCH /templates/{id}` (the subject, and a code template's
/// HTML) with `If-Match` the `updated_at` the form was read at.
#[handler]
pub async fn save(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let mut body = json!({ "subject": form.get("subject").cloned().unwrap_or_default() });
    if let Some(html) = form.get("html") {
        body["html"] = json!(html);
    }
    let current = api.get(req, &format!("/templates/{}", urlencoding(&id))).await?.body["variables"].clone();
    let answer = patch_declaring(req, &api, &id, body, &form, &current).await?;
    if !answer.ok() {
        return template_page(req, &api, &session, &id, Look::default(), Some((&form, &answer))).await;
    }
    Ok(kit::see_other(&format!("/app/templates/{}", urlencoding(&id))))
}

/// `POST /app/templates/{id}/blocks`: one edit of the block document (see [`blocks::apply`])
/// saved with `PATCH /templates/{id}` as of the page's `updated_at`, or (`op=keep`) the block
/// kept as a saved block with `POST /saved-blocks`. Back on the page at the block.
#[handler]
pub async fn edit_blocks(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let template = match kit::one(req, &api, &session, &format!("/templates/{}", urlencoding(&id))).await? {
        Ok(template) => template,
        Err(page) => return Ok(page),
    };
    let mut document = template["document"].clone();
    let place = kit::given(&form, "to").or(kit::given(&form, "path")).and_then(blocks::At::parse);
    let answer = if kit::given(&form, "op") == Some("ai_rewrite") {
        let Some(at) = place.filter(|at| at.block.is_some()) else { return refused(req, &api, &session, &id, &form, "Choose a block.").await };
        match assist::rewrite(req, &api, &id, &mut document, at, &form).await? {
            Some(refusal) => refusal,
            None => {
                let answer = patch_declaring(req, &api, &id, json!({ "document": document }), &form, &template["variables"]).await?;
                if answer.ok() {
                    return Ok(kit::see_other(&format!("/app/templates/{}#block-{}", urlencoding(&id), at.path().replace('.', "-"))));
                }
                answer
            }
        }
    } else if kit::given(&form, "op") == Some("keep") {
        let block = place.and_then(|at| document["sections"][at.section]["columns"][at.column]["blocks"][at.block.unwrap_or(usize::MAX)].as_object().cloned());
        let Some(block) = block else { return refused(req, &api, &session, &id, &form, "That block is no longer in the template; reload the page.").await };
        let name = kit::given(&form, "name").map_or_else(|| block.get("type").and_then(Value::as_str).unwrap_or("block").to_string(), str::to_string);
        let answer = kit::write(req, &api, Method::POST, "/saved-blocks", Some(&json!({ "name": name, "content": block })), &form).await?;
        if answer.ok() { Answer { body: json!({ "message": format!("Kept as the saved block \"{name}\".") }), ..answer } } else { answer }
    } else {
        if let Err(why) = blocks::apply(&mut document, &form) {
            return refused(req, &api, &session, &id, &form, why).await;
        }
        let answer = patch_declaring(req, &api, &id, json!({ "document": document }), &form, &template["variables"]).await?;
        if answer.ok() {
            let anchor = place.map_or_else(String::new, |at| format!("#block-{}", at.path().replace('.', "-")));
            return Ok(kit::see_other(&format!("/app/templates/{}{anchor}", urlencoding(&id))));
        }
        answer
    };
    template_page(req, &api, &session, &id, Look::default(), Some((&form, &answer))).await
}

/// The template's page with `why` an edit was not made (nothing was sent to the API).
async fn refused(req: &Request, api: &Api, session: &Session, id: &str, form: &Fields, why: &str) -> poem::Result<Response> {
    let answer = Answer { status: 422, body: json!({ "message": why }), set_cookie: Vec::new() };
    template_page(req, api, session, id, Look::default(), Some((form, &answer))).await
}

/// `POST /app/templates/{id}/publish`.
#[handler]
pub async fn publish(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::POST, &format!("/templates/{}/publish", urlencoding(&id)), None, &form).await?;
    if !answer.ok() {
        return template_page(req, &api, &session, &id, Look::default(), Some((&Fields::new(), &answer))).await;
    }
    Ok(kit::see_other(&format!("/app/templates/{}", urlencoding(&id))))
}

/// `POST /app/templates/{id}/ai/subjects`: `POST /ai/subject-lines` for the template; the page
/// with the suggestions.
#[handler]
pub async fn suggest_subjects(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::POST, "/ai/subject-lines", Some(&json!({ "template_id": id })), &form).await?;
    template_page(req, &api, &session, &id, Look::default(), Some((&form, &answer))).await
}

/// What the dark preview adds to the HTML: the whole email inverted and its images turned back,
/// as the mail apps that force dark mode on a light email show it.
const DARK: &str = "<style>html{filter:invert(1) hue-rotate(180deg);background:#fff}img{filter:invert(1) hue-rotate(180deg)}</style>";

/// `GET /app/templates/{id}/preview`: the current version's HTML, for the frame (`?theme=dark`
/// as a mail app in dark mode shows it).
#[handler]
pub async fn preview(req: &Request, api: Data<&Api>, Path(id): Path<String>, Query(view): Query<View>) -> poem::Result<Response> {
    if api.session(req).await?.is_none() {
        return Ok(framed(false, String::new()));
    }
    let template = api.get(req, &format!("/templates/{}", urlencoding(&id))).await?;
    let mut html = template.body["html"].as_str().filter(|_| template.ok()).unwrap_or_default().to_string();
    if Look::of(&view).dark {
        html = match html.find("</head>") {
            Some(at) => format!("{}{DARK}{}", &html[..at], &html[at..]),
            None => format!("{DARK}{html}"),
        };
    }
    Ok(framed(template.ok(), html))
}
