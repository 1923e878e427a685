//! The segment condition builder: a name, a first group of up to five conditions ("all" or
//! "any") and an optional second group of three joined to it by "and" or "or" (one level of
//! nesting), over a contact's fields, declared properties and topic subscriptions, with the
//! count of matching contacts updated as the conditions change (htmx posts the form to
//! `/app/segments/count`, which asks `POST /segments/count`). Saving is `POST /segments`; a
//! refused condition's error stands beside its row. Values are typed by the property's
//! declared type.

use super::client::{Answer, Api, Session};
use super::kit::{self, Fields, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode, header};
use poem::web::{Data, Form, Query};
use poem::{Request, Response, handler};
use serde_json::{Map, Value, json};

/// The groups of rows: their rows and the form field saying "all" or "any".
const GROUPS: [(std::ops::Range<usize>, &str); 2] = [(0..5, "match"), (5..8, "match2")];
/// The operators a condition may use (the API says which suit which field); the last two are
/// a topic's.
const OPS: [(&str, &str); 11] = [
    ("eq", "is"),
    ("neq", "is not"),
    ("contains", "contains"),
    ("in", "is one of (comma-separated)"),
    ("exists", "has a value"),
    ("gt", "is more than / after"),
    ("gte", "is at least / from"),
    ("lt", "is less than / before"),
    ("lte", "is at most / until"),
    ("opt_in", "is subscribed to (a topic)"),
    ("opt_out", "opted out of (a topic)"),
];
/// The contact's own fields.
const FIELDS: [&str; 5] = ["email", "first_name", "last_name", "unsubscribed", "created_at"];

/// The team's declared properties: key and type.
async fn properties(req: &Request, api: &Api) -> poem::Result<Vec<(String, String)>> {
    let answer = api.get(req, "/contact-properties?limit=100").await?;
    Ok(kit::rows(&answer).iter().map(|p| (p["key"].as_str().unwrap_or_default().to_string(), p["type"].as_str().unwrap_or("string").to_string())).collect())
}

/// The team's topics: id and name.
async fn topics(req: &Request, api: &Api) -> poem::Result<Vec<(String, String)>> {
    let answer = api.get(req, "/topics?limit=100").await?;
    Ok(kit::rows(&answer).iter().map(|t| (t["id"].as_str().unwrap_or_default().to_string(), t["name"].as_str().unwrap_or_default().to_string())).collect())
}

/// The rows of `rows` that name a field, in order: their group's conditions, one each.
fn used_rows(form: &Fields, rows: std::ops::Range<usize>) -> Vec<usize> {
    rows.filter(|i| form.get(&format!("field{i}")).is_some_and(|f| !f.trim().is_empty())).collect()
}

/// "all" or "any", as the form's `name` says.
fn matching<'a>(form: &Fields, name: &str) -> &'a str {
    if kit::given(form, name) == Some("any") { "any" } else { "all" }
}

/// The groups that have conditions, with their key ("all" or "any") and rows.
fn groups(form: &Fields) -> Vec<(&'static str, Vec<usize>)> {
    GROUPS.iter().map(|(rows, name)| (matching(form, name), used_rows(form, rows.clone()))).filter(|(_, rows)| !rows.is_empty()).collect()
}

/// Where row `i`'s condition stands in the filter (`filter.all[0]`, or `filter.any[1].all[0]`
/// with a second group), for the API's errors.
fn condition_path(form: &Fields, i: usize) -> Option<String> {
    let groups = groups(form);
    let (g, (key, rows)) = groups.iter().enumerate().find(|(_, (_, rows))| rows.contains(&i))?;
    let j = rows.iter().position(|row| *row == i)?;
    Some(if groups.len() > 1 { format!("filter.{}[{g}].{key}[{j}]", matching(form, "join")) } else { format!("filter.{key}[{j}]") })
}

/// The filter the form describes, `None` when no row names a field: one group as it is, two
/// joined under "all" or "any".
fn filter(form: &Fields, properties: &[(String, String)]) -> Option<Value> {
    let built: Vec<Value> = groups(form)
        .into_iter()
        .map(|(key, rows)| {
            let mut group = Map::new();
            group.insert(key.into(), Value::Array(rows.into_iter().filter_map(|i| condition(form, i, properties)).collect()));
            Value::Object(group)
        })
        .collect();
    match built.len() {
        0 => None,
        1 => built.into_iter().next(),
        _ => Some(json!({ matching(form, "join"): built })),
    }
}

/// Row `i`'s condition: a topic's subscription for a `topic.<id>` field, else a field's test.
fn condition(form: &Fields, i: usize, properties: &[(String, String)]) -> Option<Value> {
    let field = form.get(&format!("field{i}")).map(|f| f.trim())?;
    if let Some(topic) = field.strip_prefix("topic.") {
        let subscription = if kit::given(form, &format!("op{i}")) == Some("opt_out") { "opt_out" } else { "opt_in" };
        return Some(json!({ "topic": topic, "subscription": subscription }));
    }
    let op = kit::given(form, &format!("op{i}")).unwrap_or("eq");
    let raw = form.get(&format!("value{i}")).map_or("", String::as_str);
    let kind = match field {
        "unsubscribed" => "boolean",
        f => f.strip_prefix("properties.").and_then(|key| properties.iter().find(|(k, _)| k == key)).map_or("string", |(_, t)| t.as_str()),
    };
    let value = match op {
        "exists" => json!(!matches!(raw.trim(), "false" | "no")),
        "in" => Value::Array(raw.split(',').map(|v| typed(v.trim(), kind)).collect()),
        _ => typed(raw, kind),
    };
    Some(json!({ "field": field, "op": op, "value": value }))
}

/// A value as its field's type takes it (left as text when it does not read as one, so the
/// API names the problem).
fn typed(raw: &str, kind: &str) -> Value {
    match kind {
        "number" => raw.trim().parse::<f64>().map_or_else(|_| json!(raw), |n| json!(n)),
        "boolean" => match raw.trim() {
            "true" | "yes" => json!(true),
            "false" | "no" => json!(false),
            _ => json!(raw),
        },
        _ => json!(raw),
    }
}

/// `GET /app/segments`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    segments_page(req, &api, &session, &paging, &Fields::new(), None).await
}

/// The segments, with the condition builder (filled with `values` after `refused`) for a writer.
async fn segments_page(req: &Request, api: &Api, session: &Session, paging: &Paging, values: &Fields, refused: Option<&Answer>) -> poem::Result<Response> {
    let answer = api.get(req, &paging.unsearched().path("/segments", 50)).await?;
    let table = kit::table(
        &["Segment", "Created"],
        &kit::rows(&answer),
        |s| vec![kit::link(&format!("/app/segments/{}", kit::id(&s["id"])), s["name"].as_str().unwrap_or_default()), time(&s["created_at"])],
        "No segment yet. Build one below from contacts' fields and properties.",
    );
    let builder = if session.can_write() { builder(req, api, session, values, refused).await? } else { String::new() };
    let body = format!("<p><a href=\"/app/contacts\">← Contacts</a></p><h1>Segments</h1>{builder}{table}{}", kit::pager("/app/segments", &answer));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Segments", Some(session), &body))
}

/// The builder's card: the form, filled with `values`, and `refused`'s errors beside the
/// rows they name. The name carries no `required`: htmx checks the form's validity before each
/// count, and an empty name would stop the count while the conditions are being built (the
/// API refuses a segment without one, beside the field).
pub async fn builder(req: &Request, api: &Api, session: &Session, values: &Fields, refused: Option<&Answer>) -> poem::Result<String> {
    let properties = properties(req, api).await?;
    let topics = topics(req, api).await?;
    let options: String = FIELDS
        .iter()
        .map(|f| (f.to_string(), String::new()))
        .chain(properties.iter().map(|(k, _)| (format!("properties.{k}"), String::new())))
        .chain(topics.iter().map(|(id, name)| (format!("topic.{id}"), format!("Topic: {name}"))))
        .map(|(value, label)| format!("<option value=\"{}\">{}</option>", escape(&value), escape(&label)))
        .collect();
    let value = |name: &str| escape(values.get(name).map_or("", String::as_str));
    let errors = refused.and_then(|a| a.body["errors"].as_array()).cloned().unwrap_or_default();
    let row = |i: usize| {
        let at = condition_path(values, i);
        let chosen = kit::given(values, &format!("op{i}")).unwrap_or("eq");
        let ops: String = OPS.iter().map(|(op, label)| format!("<option value=\"{op}\"{}>{label}</option>", if *op == chosen { " selected" } else { "" })).collect();
        let row_error: Vec<String> = errors
            .iter()
            .filter(|e| e["path"].as_str().zip(at.as_deref()).is_some_and(|(p, at)| p == at || p.strip_prefix(at).is_some_and(|rest| rest.starts_with(['.', '[']))))
            .filter_map(|e| e["message"].as_str().map(escape))
            .collect();
        let (invalid, note) = if row_error.is_empty() {
            (String::new(), String::new())
        } else {
            (format!(" aria-invalid=\"true\" aria-describedby=\"condition{i}-error\""), format!("<span class=\"error\" id=\"condition{i}-error\">{}</span>", row_error.join("; ")))
        };
        format!(
            "<fieldset class=\"condition\"><legend>Condition {n}</legend>\
             <label for=\"field{i}\">Field</label><input id=\"field{i}\" name=\"field{i}\" list=\"segment-fields\" maxlength=\"300\" value=\"{}\"{invalid}>\
             <label for=\"op{i}\">Test</label><select id=\"op{i}\" name=\"op{i}\">{ops}</select>\
             <label for=\"value{i}\">Value</label><input id=\"value{i}\" name=\"value{i}\" maxlength=\"1000\" value=\"{}\">{note}</fieldset>",
            value(&format!("field{i}")),
            value(&format!("value{i}")),
            n = i + 1
        )
    };
    let choose = |name: &str, label: &str, all: &str, any: &str| {
        format!(
            "<label for=\"segment-{name}\">{label}</label><select id=\"segment-{name}\" name=\"{name}\"><option value=\"all\">{all}</option><option value=\"any\"{}>{any}</option></select>",
            if kit::given(values, name) == Some("any") { " selected" } else { "" }
        )
    };
    let first: String = GROUPS[0].0.clone().map(row).collect();
    let second: String = GROUPS[1].0.clone().map(row).collect();
    let rows = format!(
        "{first}<fieldset class=\"group\"><legend>A second group (optional)</legend>{}{}{second}</fieldset>",
        choose("join", "Joined to the first by", "and (both groups hold)", "or (either group holds)"),
        choose("match2", "Contacts matching", "all of these", "any of these")
    );
    let name_error = refused.and_then(|a| a.field_error("name")).map_or_else(String::new, |m| format!("<span class=\"error\" id=\"segment-name-error\">{}</span>", escape(&m)));
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let form = format!(
        "{alert}<form class=\"stack\" method=\"post\" action=\"/app/segments\" hx-post=\"/app/segments/count\" hx-trigger=\"input delay:400ms, change\" hx-target=\"#segment-count\" hx-swap=\"innerHTML\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label for=\"segment-name\">Name</label><input id=\"segment-name\" name=\"name\" maxlength=\"200\" value=\"{}\"{}>{name_error}\
         {}<datalist id=\"segment-fields\">{options}</datalist>{rows}\
         <p><output id=\"segment-count\" aria-live=\"polite\">Add a condition to count the contacts it matches.</output></p>\
         <button type=\"submit\">Create segment</button></form>",
        escape(&session.csrf),
        value("name"),
        if name_error.is_empty() { "" } else { " aria-invalid=\"true\" aria-describedby=\"segment-name-error\"" },
        choose("match", "Contacts matching", "all of these", "any of these")
    );
    Ok(kit::card("new-segment", "New segment", &form))
}

/// `POST /app/segments/count` (htmx): how many contacts the form's conditions match now.
#[handler]
pub async fn count(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let Some(_session) = api.session(req).await? else { return Ok(Response::builder().status(StatusCode::UNAUTHORIZED).finish()) };
    let properties = properties(req, &api).await?;
    let said = match filter(&form, &properties) {
        None => "Add a condition to count the contacts it matches.".to_string(),
        Some(filter) => {
            let answer = kit::write(req, &api, Method::POST, "/segments/count", Some(&json!({ "filter": filter })), &form).await?;
            if answer.ok() {
                let n = answer.body["contacts"].as_i64().unwrap_or(0);
                format!("<b>{n}</b> contact{} match{} now.", if n == 1 { "" } else { "s" }, if n == 1 { "es" } else { "" })
            } else {
                let details: Vec<String> = answer.body["errors"].as_array().into_iter().flatten().filter_map(|e| e["message"].as_str().map(escape)).collect();
                format!("<span class=\"error\">{}{}</span>", escape(&answer.message()), if details.is_empty() { String::new() } else { format!(" {}", details.join("; ")) })
            }
        }
    };
    Ok(Response::builder().header(header::CONTENT_TYPE, "text/html; charset=utf-8").header(header::CACHE_CONTROL, "no-store").body(said))
}

/// `POST /app/segments`: `POST /segments` with the built filter (none: explicit members only);
/// then the new segment's page.
#[handler]
pub async fn create(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let properties = properties(req, &api).await?;
    let body = json!({ "name": form.get("name").cloned().unwrap_or_default(), "filter": filter(&form, &properties) });
    let answer = kit::write(req, &api, Method::POST, "/segments", Some(&body), &form).await?;
    if !answer.ok() {
        return segments_page(req, &api, &session, &Paging::default(), &form, Some(&answer)).await;
    }
    Ok(kit::see_other(&format!("/app/segments/{}", kit::id(&answer.body["id"]))))
}
