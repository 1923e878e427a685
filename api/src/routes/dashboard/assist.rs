//! AI assist in the template editor (#25): subject lines suggested for a template (each saved
//! with one button), a heading, text or button block rewritten in place (see
//! `templates::edit_blocks`, and the page's `suggest_subjects`), and a new visual template drafted from a brief. Each is the AI
//! route's own call as the session, so credits, limits and refusals are the API's; the
//! controls show only while the team's AI assist is on.

use super::blocks::At;
use super::client::{Answer, Api};
use super::kit::{self, Fields};
use super::layout::page;
use crate::routes::pages::html::escape;
use poem::http::Method;
use poem::web::{Data, Form};
use poem::{Request, Response, handler};
use serde_json::{Value, json};

/// Whether the team's AI assist is on (`GET /team`).
pub async fn ai_on(req: &Request, api: &Api) -> poem::Result<bool> {
    Ok(api.get(req, "/team").await?.body["ai_assist_enabled"] == true)
}

/// AI assist's subject lines: a button asking for them, and after it each suggestion with a
/// button that saves it as the subject.
pub fn suggestions(base: &str, csrf: &str, template: &Value, edit: Option<(&Fields, &Answer)>) -> String {
    let read_at = escape(template["updated_at"].as_str().unwrap_or_default());
    let csrf = escape(csrf);
    let offered: String = edit
        .and_then(|(_, a)| a.body["suggestions"].as_array())
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|line| {
            format!(
                "<li><form class=\"row\" method=\"post\" action=\"{base}\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input type=\"hidden\" name=\"updated_at\" value=\"{read_at}\">\
                 <input type=\"hidden\" name=\"subject\" value=\"{0}\"><span>{0}</span><button type=\"submit\">Use</button></form></li>",
                escape(line)
            )
        })
        .collect();
    let offered = if offered.is_empty() { String::new() } else { format!("<ul class=\"suggestions\" aria-label=\"Suggested subject lines\">{offered}</ul>") };
    format!(
        "<form class=\"row\" method=\"post\" action=\"{base}/ai/subjects\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><button type=\"submit\">Suggest subject lines (AI)</button></form>{offered}"
    )
}

/// The block at `at` of `document` rewritten by `POST /ai/rewrite` with the form's preset (the
/// template as context); `Some` of the API's refusal when it did not.
pub async fn rewrite(req: &Request, api: &Api, template_id: &str, document: &mut Value, at: At, form: &Fields) -> poem::Result<Option<Answer>> {
    let pointer = format!("/sections/{}/columns/{}/blocks/{}", at.section, at.column, at.block.unwrap_or_default());
    let Some(slot) = document.pointer_mut(&pointer).filter(|b| b.is_object()) else {
        return Ok(Some(Answer { status: 422, body: json!({ "message": "That block is no longer in the template; reload the page." }), set_cookie: Vec::new() }));
    };
    let body = json!({ "block": slot, "preset": kit::given(form, "preset").unwrap_or("shorter"), "template_id": template_id });
    let rewritten = kit::write(req, api, Method::POST, "/ai/rewrite", Some(&body), form).await?;
    if !rewritten.ok() {
        return Ok(Some(rewritten));
    }
    *slot = rewritten.body["block"].clone();
    Ok(None)
}

/// The form that drafts a visual template from a brief.
pub fn draft_form(csrf: &str) -> String {
    format!(
        "<details><summary>Or draft one with AI</summary><form class=\"stack\" method=\"post\" action=\"/app/templates/draft\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label for=\"ai-name\">Name</label><input id=\"ai-name\" name=\"name\" maxlength=\"200\" required>\
         <label for=\"ai-brief\">What it should say</label><textarea id=\"ai-brief\" name=\"brief\" rows=\"3\" maxlength=\"2000\" required></textarea>\
         <button type=\"submit\">Draft the template</button></form></details>",
        escape(csrf)
    )
}

/// `POST /app/templates/draft`: `POST /ai/draft-blocks` with the brief, then `POST /templates`
/// with the document it drafted; opens the new template (a draft, never published by this).
#[handler]
pub async fn draft_template(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let drafted = kit::write(req, &api, Method::POST, "/ai/draft-blocks", Some(&json!({ "brief": form.get("brief").cloned().unwrap_or_default() })), &form).await?;
    let answer = if drafted.ok() {
        let mut body = json!({ "name": form.get("name").cloned().unwrap_or_default(), "document": drafted.body["document"] });
        let made = kit::write(req, &api, Method::POST, "/templates", Some(&body), &form).await?;
        // The draft's own `{{key}}` placeholders, declared as the API names them.
        match super::variables::redeclared(&made, &json!([])) {
            Some(variables) if !made.ok() => {
                body["variables"] = variables;
                kit::write(req, &api, Method::POST, "/templates", Some(&body), &form).await?
            }
            _ => made,
        }
    } else {
        drafted
    };
    if !answer.ok() {
        let body = format!("<p><a href=\"/app/templates\">← Templates</a></p><h1>Draft a template</h1>{}{}", kit::note(false, &answer.message()), draft_form(&session.csrf));
        return Ok(page(kit::status_of(&answer), "Draft a template", Some(&session), &body));
    }
    Ok(kit::see_other(&format!("/app/templates/{}", kit::id(&answer.body["id"]))))
}
