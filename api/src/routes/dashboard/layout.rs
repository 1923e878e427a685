//! The dashboard's frame: every page's document, navigation and headers (a strict content
//! policy: scripts and styles from the binary only, no framing), its stylesheet and scripts,
//! and the pages that say where to go (not found, sign in).

use super::client::Session;
use crate::routes::pages::html::escape;
use poem::http::{StatusCode, header};
use poem::{IntoResponse, Response, handler};

/// App pages: nothing inline, nothing from elsewhere, frames only of this origin (the email
/// preview), never framed themselves.
const APP_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// A page of the app with its headers.
pub fn page(status: StatusCode, title: &str, session: Option<&Session>, body: &str) -> Response {
    let nav = session.map_or_else(String::new, nav);
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\"><meta name=\"htmx-config\" content='{{\"includeIndicatorStyles\":false,\"allowEval\":false,\"allowScriptTags\":false}}'>\
         <title>{} · Herald</title><link rel=\"stylesheet\" href=\"/app/assets/app.css\">\
         <script src=\"/app/assets/htmx.min.js\" defer></script><script src=\"/app/assets/app.js\" defer></script></head>\
         <body><a class=\"skip\" href=\"#main\">Skip to content</a>{nav}<main id=\"main\">{body}</main></body></html>",
        escape(title)
    );
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(header::CONTENT_SECURITY_POLICY, APP_POLICY)
        .header(header::X_FRAME_OPTIONS, "DENY")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::REFERRER_POLICY, "same-origin")
        .body(html)
}

fn nav(session: &Session) -> String {
    format!(
        "<header class=\"bar\"><nav aria-label=\"Main\"><a class=\"brand\" href=\"/app\">Herald</a>\
         <a href=\"/app\">Overview</a><a href=\"/app/emails\">Emails</a><a href=\"/app/receiving\">Received</a><a href=\"/app/broadcasts\">Broadcasts</a><a href=\"/app/templates\">Templates</a>\
         <a href=\"/app/contacts\">Audience</a><a href=\"/app/inbox\">Inbox</a><a href=\"/app/automations\">Automations</a><a href=\"/app/domains\">Domains</a><a href=\"/app/webhooks\">Webhooks</a>\
         <a href=\"/app/api-keys\">API keys</a><a href=\"/app/logs\">Logs</a><a href=\"/app/suppressions\">Suppressions</a><a href=\"/app/team\">Team</a></nav>\
         <div class=\"who\"><span><a href=\"/app/account\">{}</a> · {}</span><form method=\"post\" action=\"/app/logout\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Sign out</button></form></div></header>",
        escape(&session.person_name),
        escape(&session.team_name),
        escape(&session.csrf)
    )
}

/// Where a browser without a live session goes.
pub fn to_sign_in() -> Response {
    Response::builder().status(StatusCode::SEE_OTHER).header(header::LOCATION, "/app/login").header(header::CACHE_CONTROL, "no-store").finish()
}

/// Another team's id, or nothing at all: one page for both.
pub fn not_found(session: &Session) -> Response {
    page(StatusCode::NOT_FOUND, "Not found", Some(session), "<h1>Not found</h1><p>There is nothing here in this team. <a href=\"/app\">Back to the overview</a>.</p>")
}

/// A time in UTC, shown in the person's own time zone by `app.js`, with UTC on hover.
pub fn time(value: &serde_json::Value) -> String {
    let Some(text) = value.as_str() else { return "—".into() };
    let utc = chrono::DateTime::parse_from_rfc3339(text).map(|t| t.to_utc().format("%Y-%m-%d %H:%M UTC").to_string()).unwrap_or_else(|_| text.to_string());
    format!("<time datetime=\"{}\" title=\"{}\">{}</time>", escape(text), escape(&utc), escape(&utc))
}

/// `GET /app/assets/app.css`.
#[handler]
pub fn stylesheet() -> Response {
    asset("text/css; charset=utf-8", STYLE.as_bytes())
}

/// `GET /app/assets/htmx.min.js`: htmx 2.0.11, vendored (`vendor/htmx`).
#[handler]
pub fn htmx() -> Response {
    asset("text/javascript; charset=utf-8", include_bytes!("../../../../vendor/htmx/htmx.min.js"))
}

/// `GET /app/assets/app.js`: times in the person's own time zone, and copy buttons.
#[handler]
pub fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT.as_bytes())
}

fn asset(content_type: &str, bytes: &'static [u8]) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "public, max-age=3600")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .body(bytes)
        .into_response()
}

const SCRIPT: &str = "document.addEventListener('DOMContentLoaded',function(){\
document.querySelectorAll('time[datetime]').forEach(function(t){var d=new Date(t.getAttribute('datetime'));\
if(!isNaN(d)){t.textContent=d.toLocaleString(undefined,{dateStyle:'medium',timeStyle:'short'});}});\
document.querySelectorAll('button[data-copy]').forEach(function(b){b.addEventListener('click',function(){\
if(navigator.clipboard){navigator.clipboard.writeText(b.getAttribute('data-copy')).then(function(){b.textContent='Copied';});}});});\
var mover=document.getElementById('block-mover');if(mover){document.querySelectorAll('li.block[draggable]').forEach(function(li){\
li.addEventListener('dragstart',function(e){e.dataTransfer.setData('text/plain',li.getAttribute('data-path'));e.dataTransfer.effectAllowed='move';});\
li.addEventListener('dragover',function(e){e.preventDefault();li.classList.add('over');});li.addEventListener('dragleave',function(){li.classList.remove('over');});\
li.addEventListener('drop',function(e){e.preventDefault();var from=e.dataTransfer.getData('text/plain'),to=li.getAttribute('data-path');\
if(from&&from!==to){mover.elements.path.value=from;mover.elements.to.value=to;mover.submit();}});});}});";

const STYLE: &str = ":root{color-scheme:light dark;--bg:#f6f7f9;--fg:#1b1f24;--muted:#57606a;--card:#fff;--line:#d0d7de;--accent:#0a58ca;--bad:#b42318}\
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9da7b3;--card:#161b22;--line:#30363d;--accent:#6cb6ff;--bad:#ff7b72}}\
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,sans-serif;background:var(--bg);color:var(--fg)}\
a{color:var(--accent)}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid var(--accent);outline-offset:2px}\
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:var(--card);padding:.5rem}\
.bar{display:flex;flex-wrap:wrap;gap:1rem;align-items:center;justify-content:space-between;padding:.75rem 1rem;background:var(--card);border-bottom:1px solid var(--line)}\
.bar nav{display:flex;flex-wrap:wrap;gap:1rem;align-items:center}.brand{font-weight:700;text-decoration:none}.who{display:flex;gap:.75rem;align-items:center;color:var(--muted)}\
main{max-width:1100px;margin:0 auto;padding:1rem}h1{font-size:1.5rem}\
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));gap:.75rem;padding:0;list-style:none}\
.tiles li{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.75rem}.tiles b{display:block;font-size:1.6rem}\
table{width:100%;border-collapse:collapse;background:var(--card)}th,td{text-align:left;padding:.5rem;border-bottom:1px solid var(--line);vertical-align:top}\
.scroll{overflow-x:auto}dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}\
form.search{display:flex;flex-wrap:wrap;gap:.5rem;margin:0 0 1rem}input,select,button{font:inherit;padding:.4rem .6rem;border:1px solid var(--line);border-radius:4px;background:var(--card);color:var(--fg)}\
button{cursor:pointer}.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:1rem;margin:0 0 1rem}\
.error{color:var(--bad)}label{display:block;margin:.5rem 0 .25rem}.login{max-width:380px;margin:3rem auto}\
iframe.preview{width:100%;min-height:420px;border:1px solid var(--line);background:#fff}pre{white-space:pre-wrap;overflow-wrap:anywhere}\
.muted{color:var(--muted)}ol.timeline{padding-left:1.25rem}.pager{display:flex;gap:1rem;margin:1rem 0}\
.chart{margin:1rem 0}.chart svg{width:100%;height:auto;display:block}rect.sent,.key.sent{fill:var(--accent);background:var(--accent)}\
rect.delivered,.key.delivered{fill:#2da44e;background:#2da44e}.key{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;vertical-align:middle}\
form.stack{display:flex;flex-direction:column;align-items:flex-start;gap:.25rem;max-width:100%}form.stack input:not([type=checkbox]),form.stack select,form.stack textarea{width:min(100%,36rem)}\
form.inline{display:inline}textarea{font:inherit;padding:.4rem .6rem;border:1px solid var(--line);border-radius:4px;background:var(--card);color:var(--fg)}textarea.code{font-family:ui-monospace,monospace;width:100%}\
fieldset{border:1px solid var(--line);border-radius:4px;margin:.5rem 0}.checks{display:grid;grid-template-columns:repeat(auto-fill,minmax(16rem,1fr));gap:.25rem}label.check{display:flex;gap:.4rem;align-items:center;margin:0}\
progress{width:100%;height:1.25rem}ul.columns{columns:16rem}.empty{background:var(--card);border:1px dashed var(--line);border-radius:6px;padding:1rem}\
iframe.preview.mobile{width:375px;max-width:100%}ol.thread{list-style:none;padding:0}ol.thread li{border-left:3px solid var(--line);padding:.25rem .75rem;margin:0 0 .75rem}ol.thread li.note{border-color:#bf8700}button:disabled{cursor:not-allowed}\
.columns{display:grid;grid-template-columns:repeat(auto-fit,minmax(14rem,1fr));gap:.75rem}ol.blocks{list-style:none;padding:0;margin:0 0 .5rem}\
li.block{border:1px solid var(--line);border-radius:4px;padding:.4rem .6rem;margin:0 0 .4rem;background:var(--card);cursor:grab}li.block.over{outline:2px dashed var(--accent)}\
form.row{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;margin:.25rem 0}form.row label{margin:0}summary{cursor:pointer}\
@media (min-width:1000px){.studio{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem;align-items:start}.studio>.card:last-child{position:sticky;top:1rem}}\
.graph svg{max-width:none;font:12px system-ui,sans-serif}g.step rect{fill:var(--card);stroke:var(--line);stroke-width:1.5}g.step.failing rect{stroke:var(--bad)}\
g.step text{fill:var(--fg)}g.step text.key{font-weight:700}g.step text.kind,g.step text.tally,text.edge-label{fill:var(--muted)}line.edge{stroke:var(--muted);stroke-width:1.5}marker path{fill:var(--muted)}";
