//! The pieces pages are made of: escaped values, tables with paging, facts, forms whose errors
//! stand beside the field the API named, and the write every form makes (the API's own
//! route, as the session, with the form's CSRF token).

use super::client::{Answer, Api, Session};
use super::layout::{not_found, page};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode, header};
use poem::{Request, Response};
use serde_json::Value;
use std::collections::HashMap;

/// A form's submitted fields.
pub type Fields = HashMap<String, String>;

/// A value as text, escaped (`—` when absent).
pub fn text(value: &Value) -> String {
    match value {
        Value::String(s) if !s.is_empty() => escape(s),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        _ => "—".to_string(),
    }
}

/// A status or kind, its underscores as spaces.
pub fn word(value: &Value) -> String {
    escape(&value.as_str().unwrap_or("—").replace('_', " "))
}

/// A link to `href` reading `label` (both escaped).
pub fn link(href: &str, label: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape(href), escape(if label.is_empty() { "(unnamed)" } else { label }))
}

/// A path segment from a value (an id), percent-encoded.
pub fn id(value: &Value) -> String {
    urlencoding(value.as_str().unwrap_or_default())
}

/// The rows of a list as a table (`cells` makes each row's cells, already HTML), or `empty`
/// (which says what to do) when there are none.
pub fn table(headers: &[&str], rows: &[Value], cells: impl Fn(&Value) -> Vec<String>, empty: &str) -> String {
    if rows.is_empty() {
        return format!("<p class=\"empty\">{empty}</p>");
    }
    let head: String = headers.iter().map(|h| format!("<th scope=\"col\">{h}</th>")).collect();
    let body: String = rows.iter().map(|row| format!("<tr>{}</tr>", cells(row).iter().map(|c| format!("<td>{c}</td>")).collect::<String>())).collect();
    format!("<div class=\"scroll\"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")
}

/// The `data` rows of a list answer.
pub fn rows(answer: &Answer) -> Vec<Value> {
    answer.body["data"].as_array().cloned().unwrap_or_default()
}

/// "Next page" when the API says there is more: `base` with `after` the last row's id.
pub fn pager(base: &str, answer: &Answer) -> String {
    let last = answer.body["data"].as_array().and_then(|rows| rows.last()).and_then(|r| r["id"].as_str());
    match (answer.body["has_more"].as_bool(), last) {
        (Some(true), Some(last)) => {
            let joiner = if base.contains('?') { '&' } else { '?' };
            format!("<nav class=\"pager\" aria-label=\"Pages\"><a href=\"{}\">Next page</a></nav>", escape(&format!("{base}{joiner}after={}", urlencoding(last))))
        }
        _ => String::new(),
    }
}

/// Label and value pairs (values already HTML).
pub fn facts(pairs: &[(&str, String)]) -> String {
    format!("<dl>{}</dl>", pairs.iter().map(|(k, v)| format!("<dt>{k}</dt><dd>{v}</dd>")).collect::<String>())
}

/// A titled section.
pub fn card(anchor: &str, title: &str, inner: &str) -> String {
    format!("<section class=\"card\" aria-labelledby=\"{anchor}\"><h2 id=\"{anchor}\">{title}</h2>{inner}</section>")
}

/// What a write did: a quiet note, or the API's refusal as an alert.
pub fn note(ok: bool, message: &str) -> String {
    if ok { format!("<p class=\"muted\" role=\"status\">{}</p>", escape(message)) } else { format!("<p class=\"error\" role=\"alert\">{}</p>", escape(message)) }
}

/// A field's kind of input.
pub enum Input {
    Text,
    Email,
    /// A choice among values (shown as they are).
    Select(&'static [&'static str]),
}

/// A form field: its name (the API's field, so the API's error lands beside it), label and input.
pub struct Field {
    pub name: &'static str,
    pub label: &'static str,
    pub input: Input,
    pub required: bool,
    /// The browser's own limit; the API checks anyway.
    pub max: Option<usize>,
}

impl Field {
    pub const fn text(name: &'static str, label: &'static str, max: usize) -> Self {
        Self { name, label, input: Input::Text, required: true, max: Some(max) }
    }

    pub const fn optional(mut self) -> Self {
        self.required = false;
        self
    }

    pub const fn of(name: &'static str, label: &'static str, input: Input) -> Self {
        Self { name, label, input, required: true, max: None }
    }
}

/// A form posting to `action` with the session's CSRF token. After a refusal, `answer` is the
/// API's: each field's error beside the field, `values` kept (the page shows its message).
pub fn form(action: &str, csrf: &str, fields: &[Field], values: &Fields, answer: Option<&Answer>, submit: &str) -> String {
    let slug = action.trim_start_matches("/app/").replace(['/', '?', '&', '='], "-");
    let inputs: String = fields
        .iter()
        .map(|f| {
            let name = f.name;
            let input_id = format!("{slug}-{name}");
            let error = answer.and_then(|a| a.field_error(name));
            let described = error.as_ref().map_or_else(String::new, |_| format!(" aria-invalid=\"true\" aria-describedby=\"{input_id}-error\""));
            let required = if f.required { " required" } else { "" };
            let max = f.max.map_or_else(String::new, |m| format!(" maxlength=\"{m}\""));
            let value = escape(values.get(name).map_or("", String::as_str));
            let control = match &f.input {
                Input::Select(choices) => {
                    let options: String = choices.iter().map(|c| format!("<option{}>{c}</option>", if values.get(name).is_some_and(|v| v == c) { " selected" } else { "" })).collect();
                    format!("<select id=\"{input_id}\" name=\"{name}\"{required}{described}>{options}</select>")
                }
                other => {
                    let kind = if matches!(other, Input::Email) { "email" } else { "text" };
                    format!("<input id=\"{input_id}\" name=\"{name}\" type=\"{kind}\" value=\"{value}\"{required}{max}{described}>")
                }
            };
            let error = error.map_or_else(String::new, |e| format!("<span class=\"error\" id=\"{input_id}-error\">{}</span>", escape(&e)));
            format!("<label for=\"{input_id}\">{}</label>{control}{error}", f.label)
        })
        .collect();
    format!(
        "<form class=\"stack\" method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">{inputs}<button type=\"submit\">{submit}</button></form>",
        escape(action),
        escape(csrf)
    )
}

/// A one-button form (revoke, replay, send) with the session's CSRF token.
pub fn button(action: &str, csrf: &str, label: &str) -> String {
    format!("<form class=\"inline\" method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">{}</button></form>", escape(action), escape(csrf), escape(label))
}

/// A read of one thing: its JSON, or the not-found page for another team's id, a malformed
/// id or nothing at all.
pub async fn one(req: &Request, api: &Api, session: &Session, path: &str) -> poem::Result<Result<Value, Response>> {
    let answer = api.get(req, path).await?;
    Ok(if answer.ok() { Ok(answer.body) } else if matches!(answer.status, 404 | 422) { Err(not_found(session)) } else { Err(refused_page(session, &answer)) })
}

/// A page saying what the API refused.
pub fn refused_page(session: &Session, answer: &Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_REQUEST);
    page(status, "Refused", Some(session), &format!("<h1>That did not work</h1>{}<p><a href=\"/app\">Back to the overview</a>.</p>", note(false, &answer.message())))
}

/// A piece of a page for htmx: `render` of the API's answer at `path` (`401` without a
/// session, `404` for another team's id).
pub async fn fragment(req: &Request, api: &Api, path: &str, render: fn(&Value) -> String) -> poem::Result<Response> {
    if api.session(req).await?.is_none() {
        return Ok(Response::builder().status(StatusCode::UNAUTHORIZED).finish());
    }
    let answer = api.get(req, path).await?;
    if !answer.ok() {
        return Ok(Response::builder().status(StatusCode::NOT_FOUND).finish());
    }
    Ok(Response::builder()
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .body(render(&answer.body)))
}

/// A write made from a form: `method path` with the JSON `body` and the form's CSRF token.
pub async fn write(req: &Request, api: &Api, method: Method, path: &str, body: Option<&Value>, form: &Fields) -> poem::Result<Answer> {
    api.call(req, method, path, body, Some(form.get("csrf").map_or("", String::as_str))).await
}

/// After a write that worked: to `location` (post, redirect, get).
pub fn see_other(location: &str) -> Response {
    Response::builder().status(StatusCode::SEE_OTHER).header(header::LOCATION, location).header(header::CACHE_CONTROL, "no-store").finish()
}

/// The status a page answers after the API refused a write (the API's own).
pub fn status_of(answer: &Answer) -> StatusCode {
    if answer.ok() { StatusCode::OK } else { StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_REQUEST) }
}

/// A form field that is present and not blank, trimmed.
pub fn given<'a>(form: &'a Fields, name: &str) -> Option<&'a str> {
    form.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// A row's `status` as a cell.
pub fn status(row: &Value) -> String {
    word(&row["status"])
}

/// A list's query: a search (where the list has one) and paging.
#[derive(serde::Deserialize, Default)]
pub struct Paging {
    pub after: Option<String>,
    pub search: Option<String>,
}

impl Paging {
    /// `api` with `limit` and this page's `after`.
    pub fn path(&self, api: &str, limit: u32) -> String {
        let joiner = if api.contains('?') { '&' } else { '?' };
        let mut path = format!("{api}{joiner}limit={limit}");
        if let Some(after) = self.after.as_deref().filter(|a| !a.is_empty()) {
            path.push_str(&format!("&after={}", urlencoding(after)));
        }
        if let Some(search) = self.search() {
            path.push_str(&format!("&search={}", urlencoding(search)));
        }
        path
    }

    /// This page without its search (for lists the API does not search).
    pub fn unsearched(&self) -> Paging {
        Paging { after: self.after.clone(), search: None }
    }

    /// The search, when there is one.
    pub fn search(&self) -> Option<&str> {
        self.search.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }

    /// The app's own `base` with this page's search (for the next page's link).
    pub fn base(&self, base: &str) -> String {
        self.search().map_or_else(|| base.to_string(), |s| format!("{base}?search={}", urlencoding(s)))
    }

    /// A search box for the list at `action`.
    pub fn search_form(&self, action: &str, placeholder: &str) -> String {
        format!(
            "<form class=\"search\" method=\"get\" action=\"{}\" role=\"search\"><label class=\"muted\" for=\"search\">Search</label>\
             <input id=\"search\" name=\"search\" type=\"search\" maxlength=\"200\" value=\"{}\" placeholder=\"{}\"><button type=\"submit\">Search</button></form>",
            escape(action),
            escape(self.search().unwrap_or_default()),
            escape(placeholder)
        )
    }
}

/// What a query or path value keeps as it is: letters, digits and `-_.~` (RFC 3986's unreserved).
const RESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// A query or path value, percent-encoded.
pub fn urlencoding(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, RESERVED).to_string()
}
