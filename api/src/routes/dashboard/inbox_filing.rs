//! The Inbox's filing: places (inbox, archive, spam, trash), folders and labels to list by and
//! to file a conversation under, making folders and labels, and search across conversations
//! (`GET /inbox/search`, its snippets' matches in bold).

use super::client::{Answer, Api, Session};
use super::kit::urlencoding;
use super::kit::{self, Fields};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Query};
use poem::{Request, Response, handler};
use serde::Deserialize;
use serde_json::{Value, json};

/// The places a conversation is in.
pub const PLACES: [&str; 4] = ["inbox", "archive", "spam", "trash"];

/// Where the list looks: a place, a folder or a label.
#[derive(Deserialize, Default, Clone)]
pub struct Where {
    pub place: Option<String>,
    pub folder_id: Option<String>,
    pub label_id: Option<String>,
}

impl Where {
    /// The query (without `?`) the API and the app's links take.
    pub fn query(&self) -> String {
        let mut parts = Vec::new();
        if let Some(place) = self.place.as_deref().filter(|p| PLACES.contains(p)) {
            parts.push(format!("place={place}"));
        }
        for (name, value) in [("folder_id", &self.folder_id), ("label_id", &self.label_id)] {
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                parts.push(format!("{name}={}", urlencoding(value)));
            }
        }
        parts.join("&")
    }
}

/// The team's folders and labels, as the API lists them (empty when the Inbox refuses).
pub async fn folders_and_labels(req: &Request, api: &Api) -> poem::Result<(Vec<Value>, Vec<Value>)> {
    let folders = api.get(req, "/inbox/folders").await?;
    let labels = api.get(req, "/inbox/labels").await?;
    Ok((kit::rows(&folders), kit::rows(&labels)))
}

/// The side of the list: places, folders, labels, search, and (for writers) new folder and
/// label forms.
pub fn sidebar(session: &Session, now: &Where, folders: &[Value], labels: &[Value], channels: &[Value]) -> String {
    let link = |query: String, label: &str, on: bool| {
        if on { format!("<b aria-current=\"page\">{}</b>", escape(label)) } else { kit::link(&format!("/app/inbox?{query}"), label) }
    };
    let places: Vec<String> =
        PLACES.iter().map(|p| link(format!("place={p}"), p, now.place.as_deref() == Some(p) || (now.place.is_none() && now.folder_id.is_none() && now.label_id.is_none() && *p == "inbox"))).collect();
    let folders_html: Vec<String> =
        folders.iter().map(|f| link(format!("folder_id={}", kit::id(&f["id"])), f["name"].as_str().unwrap_or_default(), now.folder_id.as_deref() == f["id"].as_str())).collect();
    let labels_html: Vec<String> =
        labels.iter().map(|l| link(format!("label_id={}", kit::id(&l["id"])), l["name"].as_str().unwrap_or_default(), now.label_id.as_deref() == l["id"].as_str())).collect();
    let search_box = "<form class=\"search\" method=\"get\" action=\"/app/inbox/search\" role=\"search\"><label class=\"muted\" for=\"inbox-q\">Search conversations</label>\
                  <input id=\"inbox-q\" name=\"q\" type=\"search\" maxlength=\"200\" required><button type=\"submit\">Search</button></form>";
    let make = if session.can_write() && !channels.is_empty() {
        let csrf = escape(&session.csrf);
        let options: String = channels.iter().map(|c| format!("<option value=\"{}\">{}</option>", kit::id(&c["id"]), kit::text(&c["name"]))).collect();
        format!(
            "<details><summary>New folder or label</summary>\
             <form class=\"row\" method=\"post\" action=\"/app/inbox/folders\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><label for=\"folder-name\">Folder</label><input id=\"folder-name\" name=\"name\" maxlength=\"100\" required>\
             <label for=\"folder-channel\">in</label><select id=\"folder-channel\" name=\"channel_id\">{options}</select><button type=\"submit\">Add folder</button></form>\
             <form class=\"row\" method=\"post\" action=\"/app/inbox/labels\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><label for=\"label-name\">Label</label><input id=\"label-name\" name=\"name\" maxlength=\"50\" required>\
             <label for=\"label-colour\">Colour</label><input id=\"label-colour\" name=\"colour\" type=\"color\" value=\"#6b7280\"><button type=\"submit\">Add label</button></form></details>"
        )
    } else {
        String::new()
    };
    let or_none = |items: Vec<String>| {
        if items.is_empty() { "<span class=\"muted\">none</span>".to_string() } else { items.join(" · ") }
    };
    format!(
        "{search_box}<nav class=\"card\" aria-label=\"Places, folders and labels\"><p>Places: {}</p><p>Folders: {}</p><p>Labels: {}</p>{make}</nav>",
        places.join(" · "),
        or_none(folders_html),
        or_none(labels_html)
    )
}

/// The filing card of a conversation: place, folder and labels, as of its version.
pub fn filing_card(base: &str, csrf: &str, conversation: &Value, folders: &[Value], labels: &[Value]) -> String {
    let place = conversation["place"].as_str().unwrap_or("inbox");
    let places: String = PLACES.iter().map(|p| format!("<option{}>{p}</option>", if *p == place { " selected" } else { "" })).collect();
    let channel = conversation["channel"]["id"].as_str().unwrap_or_default();
    let folder = conversation["folder_id"].as_str().unwrap_or_default();
    let folder_options: String = std::iter::once(format!("<option value=\"\"{}>No folder</option>", if folder.is_empty() { " selected" } else { "" }))
        .chain(folders.iter().filter(|f| f["channel_id"].as_str() == Some(channel)).map(|f| {
            let id = f["id"].as_str().unwrap_or_default();
            format!("<option value=\"{}\"{}>{}</option>", escape(id), if id == folder { " selected" } else { "" }, kit::text(&f["name"]))
        }))
        .collect();
    let on: Vec<&str> = conversation["labels"].as_array().into_iter().flatten().filter_map(|l| l["id"].as_str()).collect();
    let checks: String = labels
        .iter()
        .filter(|l| l["channel_id"].is_null() || l["channel_id"].as_str() == Some(channel))
        .map(|l| {
            let id = l["id"].as_str().unwrap_or_default();
            format!(
                "<label class=\"check\" for=\"label-{0}\"><input id=\"label-{0}\" type=\"checkbox\" name=\"label_{0}\" value=\"on\"{1}>{2}</label>",
                escape(id),
                if on.contains(&id) { " checked" } else { "" },
                kit::text(&l["name"])
            )
        })
        .collect();
    let checks = if checks.is_empty() {
        "<p class=\"muted\">No label yet; add one from the Inbox list.</p>".to_string()
    } else {
        format!("<fieldset><legend>Labels</legend><div class=\"checks\">{checks}</div></fieldset>")
    };
    kit::card(
        "filing",
        "Filing",
        &format!(
            "<form class=\"stack\" method=\"post\" action=\"{base}/file\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"version\" value=\"{}\">\
             <label for=\"c-place\">Place</label><select id=\"c-place\" name=\"place\">{places}</select>\
             <label for=\"c-folder\">Folder</label><select id=\"c-folder\" name=\"folder_id\">{folder_options}</select>{checks}\
             <button type=\"submit\">File</button></form>",
            escape(csrf),
            kit::text(&conversation["version"])
        ),
    )
}

/// The body of `PATCH /inbox/conversations/{id}` a filing form makes.
pub fn filing(form: &Fields) -> Value {
    let labels: Vec<&str> = form.iter().filter_map(|(k, v)| k.strip_prefix("label_").filter(|_| v == "on")).collect();
    json!({
        "place": kit::given(form, "place").unwrap_or("inbox"),
        "folder_id": kit::given(form, "folder_id"),
        "label_ids": labels,
    })
}

/// The search's query.
#[derive(Deserialize, Default)]
pub struct SearchQuery {
    q: Option<String>,
    after: Option<String>,
}

/// A snippet as HTML: escaped, its `<b>` and `</b>` kept.
fn snippet(text: &str) -> String {
    escape(text).replace("&lt;b&gt;", "<b>").replace("&lt;/b&gt;", "</b>")
}

/// `GET /app/inbox/search?q=`.
#[handler]
pub async fn search(req: &Request, api: Data<&Api>, Query(query): Query<SearchQuery>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let q = query.q.as_deref().map(str::trim).unwrap_or_default();
    let mut path = format!("/inbox/search?limit=25&q={}", urlencoding(q));
    if let Some(after) = query.after.as_deref().filter(|a| !a.is_empty()) {
        path.push_str(&format!("&after={}", urlencoding(after)));
    }
    let answer = api.get(req, &path).await?;
    let results = if answer.ok() {
        let rows = kit::rows(&answer);
        let table = kit::table(
            &["Conversation", "Customer", "Match", "Last message"],
            &rows,
            |hit| {
                let c = &hit["conversation"];
                let subject = c["subject"].as_str().filter(|s| !s.is_empty()).unwrap_or("(no subject)");
                vec![
                    kit::link(&format!("/app/inbox/{}", kit::id(&c["id"])), subject),
                    kit::text(&c["customer"]["email"]),
                    snippet(hit["snippet"].as_str().unwrap_or_default()),
                    time(&c["last_message_at"]),
                ]
            },
            "Nothing matches. Search looks at subjects, messages and notes; try fewer words.",
        );
        // Hits page by their conversation's id.
        let last = rows.last().map(|hit| hit["conversation"]["id"].clone());
        let more = match (answer.body["has_more"].as_bool(), last) {
            (Some(true), Some(id)) => format!("<nav class=\"pager\" aria-label=\"Pages\">{}</nav>", kit::link(&format!("/app/inbox/search?q={}&after={}", urlencoding(q), kit::id(&id)), "Next page")),
            _ => String::new(),
        };
        format!("{table}{more}")
    } else {
        kit::note(false, &answer.message())
    };
    let body = format!(
        "<p><a href=\"/app/inbox\">← Inbox</a></p><h1>Search: {}</h1><form class=\"search\" method=\"get\" action=\"/app/inbox/search\" role=\"search\"><label class=\"muted\" for=\"inbox-q\">Search conversations</label>\
         <input id=\"inbox-q\" name=\"q\" type=\"search\" maxlength=\"200\" required value=\"{}\"><button type=\"submit\">Search</button></form>{results}",
        escape(q),
        escape(q)
    );
    Ok(page(if answer.ok() { StatusCode::OK } else { kit::status_of(&answer) }, "Inbox search", Some(&session), &body))
}

/// `POST /app/inbox/folders` and `/labels`: make one, back to the Inbox (the API's refusal on a
/// page of its own).
async fn make(req: &Request, api: &Api, path: &str, body: Value, form: &Fields) -> poem::Result<Response> {
    let Some(session) = api.session(req).await? else {
        return Ok(super::layout::to_sign_in());
    };
    let answer: Answer = kit::write(req, api, Method::POST, path, Some(&body), form).await?;
    if !answer.ok() {
        return Ok(kit::refused_page(&session, &answer));
    }
    let key = if path.ends_with("folders") { "folder_id" } else { "label_id" };
    Ok(kit::see_other(&format!("/app/inbox?{key}={}", kit::id(&answer.body["id"]))))
}

/// `POST /app/inbox/folders`.
#[handler]
pub async fn create_folder(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let body = json!({ "name": form.get("name").cloned().unwrap_or_default(), "channel_id": form.get("channel_id").cloned().unwrap_or_default() });
    make(req, &api, "/inbox/folders", body, &form).await
}

/// `POST /app/inbox/labels`.
#[handler]
pub async fn create_label(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let body = json!({ "name": form.get("name").cloned().unwrap_or_default(), "colour": kit::given(&form, "colour") });
    make(req, &api, "/inbox/labels", body, &form).await
}
