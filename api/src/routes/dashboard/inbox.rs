//! The support Inbox: conversations (by status, newest activity first), one conversation's
//! messages and notes, replying, writing a note, and changing its status or assignee (with the
//! version the page was read at as `If-Match`, so a change made meanwhile is reported, not
//! overwritten), through `/inbox/conversations` as the session.

use super::client::{Answer, Api, Session};
use super::kit::urlencoding;
use super::inbox_filing::{Where, filing, filing_card, folders_and_labels, sidebar};
use super::kit::{self, Fields, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path, Query};
use poem::{Request, Response, handler};
use serde::Deserialize;
use serde_json::{Value, json};

/// The statuses a conversation takes.
const STATUSES: [&str; 3] = ["open", "pending", "done"];

/// The list's query.
#[derive(Deserialize, Default)]
pub struct ListQuery {
    status: Option<String>,
    after: Option<String>,
    place: Option<String>,
    folder_id: Option<String>,
    label_id: Option<String>,
}

fn who(customer: &Value) -> String {
    customer["name"].as_str().filter(|n| !n.is_empty()).or(customer["email"].as_str()).unwrap_or_default().to_string()
}

/// `GET /app/inbox`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(query): Query<ListQuery>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let status = query.status.as_deref().filter(|s| STATUSES.contains(s)).unwrap_or("open");
    let place = Where { place: query.place.clone(), folder_id: query.folder_id.clone(), label_id: query.label_id.clone() };
    let filter = place.query();
    let query_text = if filter.is_empty() { format!("status={status}") } else { format!("status={status}&{filter}") };
    let base = format!("/app/inbox?{query_text}");
    let paging = Paging { after: query.after.clone(), search: None };
    let answer = api.get(req, &paging.path(&format!("/inbox/conversations?{query_text}"), 25)).await?;
    if answer.status == 403 {
        // No channel yet (or no Inbox access): what to do, as the list's empty state.
        return Ok(page(StatusCode::OK, "Inbox", Some(&session), &format!("<h1>Inbox</h1><p class=\"empty\">{}</p>", escape(&answer.message()))));
    }
    if !answer.ok() {
        return Ok(kit::refused_page(&session, &answer));
    }
    let (folders, labels) = folders_and_labels(req, &api).await?;
    let channels = kit::rows(&api.get(req, "/inbox/channels").await?);
    let side = sidebar(&session, &place, &folders, &labels, &channels);
    let tabs: String = STATUSES
        .iter()
        .map(|s| if *s == status { format!("<b aria-current=\"page\">{s}</b>") } else { kit::link(&base.replacen(&format!("status={status}"), &format!("status={s}"), 1), s) })
        .collect::<Vec<_>>()
        .join(" · ");
    let table = kit::table(
        &["Conversation", "Customer", "Assignee", "Messages", "Last message"],
        &kit::rows(&answer),
        |c| {
            let subject = c["subject"].as_str().filter(|s| !s.is_empty()).unwrap_or("(no subject)");
            vec![
                kit::link(&format!("/app/inbox/{}", kit::id(&c["id"])), subject),
                escape(&who(&c["customer"])),
                kit::text(&c["assignee"]["name"]),
                kit::text(&c["message_count"]),
                time(&c["last_message_at"]),
            ]
        },
        "No conversation here. Mail to a channel's address, or a form posting to <code>POST /inbox/conversations</code>, starts one.",
    );
    let body = format!("<h1>Inbox</h1>{side}<nav class=\"pager\" aria-label=\"Status\">{tabs}</nav>{table}{}", kit::pager(&base, &answer));
    Ok(page(StatusCode::OK, "Inbox", Some(&session), &body))
}

/// `GET /app/inbox/{id}`.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    conversation_page(req, &api, &session, &id, None).await
}

async fn conversation_page(req: &Request, api: &Api, session: &Session, id: &str, refused: Option<(&Fields, &Answer)>) -> poem::Result<Response> {
    let path = format!("/inbox/conversations/{}", urlencoding(id));
    let conversation = match kit::one(req, api, session, &path).await? {
        Ok(conversation) => conversation,
        Err(page) => return Ok(page),
    };
    let messages = api.get(req, &format!("{path}/messages?limit=100")).await?;
    let thread: String = kit::rows(&messages)
        .iter()
        .map(|m| {
            let kind = m["kind"].as_str().unwrap_or_default();
            let author = m["author"]["name"].as_str().map(str::to_string).unwrap_or_else(|| m["from_name"].as_str().filter(|n| !n.is_empty()).or(m["from"].as_str()).unwrap_or_default().to_string());
            let text = m["text"].as_str().map_or_else(|| "<p class=\"muted\">(HTML only)</p>".to_string(), |t| format!("<pre>{}</pre>", escape(t)));
            format!("<li class=\"message {}\"><p><b>{}</b> <span class=\"muted\">{} · {}</span></p>{text}</li>", escape(kind), escape(&author), escape(&kind.replace('_', " ")), time(&m["created_at"]))
        })
        .collect();
    let base = format!("/app/inbox/{}", urlencoding(id));
    let controls = if session.can_write() { controls(req, api, session, &base, &conversation, refused).await? } else { String::new() };
    let facts = kit::facts(&[
        ("Customer", escape(&who(&conversation["customer"]))),
        ("Channel", kit::text(&conversation["channel"]["address"])),
        ("Status", kit::status(&conversation)),
        ("Assignee", kit::text(&conversation["assignee"]["name"])),
        ("Last message", time(&conversation["last_message_at"])),
    ]);
    let alert = refused.map_or_else(String::new, |(_, a)| kit::note(false, &a.message()));
    let title = conversation["subject"].as_str().filter(|s| !s.is_empty()).unwrap_or("Conversation").to_string();
    let body = format!(
        "<p><a href=\"/app/inbox\">← Inbox</a></p><h1>{}</h1>{alert}<section class=\"card\">{facts}</section>{}{controls}",
        escape(&title),
        kit::card("thread", "Messages", &format!("<ol class=\"thread\">{thread}</ol>"))
    );
    Ok(page(refused.map_or(StatusCode::OK, |(_, a)| kit::status_of(a)), &title, Some(session), &body))
}

/// Reply, note, and status and assignee, each a form posting to this page's routes.
async fn controls(req: &Request, api: &Api, session: &Session, base: &str, conversation: &Value, refused: Option<(&Fields, &Answer)>) -> poem::Result<String> {
    // The person's saved draft fills the reply box, unless the box comes back refused.
    let draft = api.get(req, &format!("{}/draft", base.replacen("/app/inbox/", "/inbox/conversations/", 1))).await?;
    let draft = draft.body["text"].as_str().filter(|_| draft.ok()).unwrap_or_default().to_string();
    let kept = |field: &str| escape(refused.and_then(|(f, _)| f.get(field)).map_or(if field == "text" { draft.as_str() } else { "" }, String::as_str));
    let (folders, labels) = folders_and_labels(req, api).await?;
    let error = |field: &str| refused.and_then(|(_, a)| a.field_error(field)).map_or_else(String::new, |e| format!("<span class=\"error\">{}</span>", escape(&e)));
    let channel = conversation["channel"]["id"].as_str().unwrap_or_default();
    let teammates = api.get(req, &format!("/inbox/channels/{}/teammates?limit=100", urlencoding(channel))).await?;
    let assignee = conversation["assignee"]["id"].as_str().unwrap_or_default();
    let people: String = std::iter::once(format!("<option value=\"\"{}>Nobody</option>", if assignee.is_empty() { " selected" } else { "" }))
        .chain(kit::rows(&teammates).iter().map(|t| {
            let id = t["user_id"].as_str().unwrap_or_default();
            format!("<option value=\"{}\"{}>{}</option>", escape(id), if id == assignee { " selected" } else { "" }, kit::text(&t["name"]))
        }))
        .collect();
    let status = conversation["status"].as_str().unwrap_or_default();
    let statuses: String = STATUSES.iter().map(|s| format!("<option{}>{s}</option>", if *s == status { " selected" } else { "" })).collect();
    let csrf = escape(&session.csrf);
    Ok(format!(
        "{}{}{}{}",
        kit::card("reply", "Reply", &format!(
            "<form class=\"stack\" method=\"post\" action=\"{base}/reply\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <label for=\"reply-text\">Your reply (sent to the customer)</label><textarea id=\"reply-text\" name=\"text\" rows=\"6\" required>{}</textarea>{}\
             <div class=\"row\"><button type=\"submit\">Send reply</button><button type=\"submit\" formaction=\"{base}/draft\">Save draft</button></div></form>",
            kept("text"),
            error("text")
        )),
        kit::card("note", "Note", &format!(
            "<form class=\"stack\" method=\"post\" action=\"{base}/note\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <label for=\"note-text\">A note for teammates (never sent)</label><textarea id=\"note-text\" name=\"note\" rows=\"3\" required></textarea>\
             <button type=\"submit\">Add note</button></form>"
        )),
        kit::card("triage", "Status and assignee", &format!(
            "<form class=\"stack\" method=\"post\" action=\"{base}/update\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input type=\"hidden\" name=\"version\" value=\"{}\">\
             <label for=\"c-status\">Status</label><select id=\"c-status\" name=\"status\">{statuses}</select>\
             <label for=\"c-assignee\">Assignee</label><select id=\"c-assignee\" name=\"assignee_id\">{people}</select>\
             <button type=\"submit\">Save</button></form>",
            kit::text(&conversation["version"])
        )),
        filing_card(base, &session.csrf, conversation, &folders, &labels)
    ))
}

/// `POST /app/inbox/{id}/reply`: `POST /inbox/conversations/{id}/replies`.
#[handler]
pub async fn reply(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = json!({ "text": form.get("text").cloned().unwrap_or_default() });
    let answer = kit::write(req, &api, Method::POST, &format!("/inbox/conversations/{}/replies", urlencoding(&id)), Some(&body), &form).await?;
    done(req, &api, &session, &id, &form, answer).await
}

/// `POST /app/inbox/{id}/note`: `POST /inbox/conversations/{id}/notes`.
#[handler]
pub async fn note(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = json!({ "text": form.get("note").cloned().unwrap_or_default() });
    let answer = kit::write(req, &api, Method::POST, &format!("/inbox/conversations/{}/notes", urlencoding(&id)), Some(&body), &form).await?;
    done(req, &api, &session, &id, &form, answer).await
}

/// `POST /app/inbox/{id}/update`: `PATCH /inbox/conversations/{id}` with `If-Match` the version read.
#[handler]
pub async fn update(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let assignee = kit::given(&form, "assignee_id").map_or(Value::Null, |a| json!(a));
    let body = json!({ "status": kit::given(&form, "status").unwrap_or("open"), "assignee_id": assignee });
    let answer = patch(req, &api, &id, &body, &form).await?;
    done(req, &api, &session, &id, &form, answer).await
}

/// `POST /app/inbox/{id}/file`: place, folder and labels with `PATCH /inbox/conversations/{id}`,
/// as of the version read.
#[handler]
pub async fn file(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = patch(req, &api, &id, &filing(&form), &form).await?;
    done(req, &api, &session, &id, &form, answer).await
}

/// `POST /app/inbox/{id}/draft`: the reply box saved as the person's draft
/// (`PUT /inbox/conversations/{id}/draft`), which teammates see as "replying".
#[handler]
pub async fn save_draft(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = json!({ "text": form.get("text").cloned().unwrap_or_default() });
    let answer = kit::write(req, &api, Method::PUT, &format!("/inbox/conversations/{}/draft", urlencoding(&id)), Some(&body), &form).await?;
    done(req, &api, &session, &id, &form, answer).await
}

/// `PATCH /inbox/conversations/{id}` with `body` and `If-Match` the form's `version`.
async fn patch(req: &Request, api: &Api, id: &str, body: &Value, form: &Fields) -> poem::Result<Answer> {
    let version = form.get("version").cloned().unwrap_or_default();
    let headers: Vec<(&str, &str)> = if version.is_empty() { Vec::new() } else { vec![("if-match", version.as_str())] };
    let payload = ("application/json".to_string(), serde_json::to_vec(body).unwrap_or_default());
    let csrf = form.get("csrf").map_or("", String::as_str);
    api.send(req, Method::PATCH, &format!("/inbox/conversations/{}", urlencoding(id)), Some(payload), Some(csrf), &headers).await
}

async fn done(req: &Request, api: &Api, session: &Session, id: &str, form: &Fields, answer: Answer) -> poem::Result<Response> {
    if answer.ok() {
        return Ok(kit::see_other(&format!("/app/inbox/{}", urlencoding(id))));
    }
    conversation_page(req, api, session, id, Some((form, &answer))).await
}
