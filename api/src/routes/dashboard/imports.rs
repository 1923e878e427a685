//! CSV imports: the list, an upload (the file goes to `POST /contacts/imports` as it came) and
//! one import's progress bar, which htmx refreshes every second until the import ends.

use super::client::{Answer, Api, Session};
use super::kit::urlencoding;
use super::kit::{self, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Multipart, Path, Query};
use poem::{Request, Response, handler};
use serde_json::Value;

/// The largest upload the dashboard passes on (the API's own limit is 50 MB of CSV).
pub const MAX_UPLOAD_BYTES: usize = 51 * 1024 * 1024;

/// `GET /app/contacts/imports`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    listing(req, &api, &session, &paging, None).await
}

async fn listing(req: &Request, api: &Api, session: &Session, paging: &Paging, refused: Option<&Answer>) -> poem::Result<Response> {
    let answer = api.get(req, &paging.unsearched().path("/contacts/imports", 25)).await?;
    let table = kit::table(
        &["Import", "Status", "Rows", "Started"],
        &kit::rows(&answer),
        |i| vec![kit::link(&format!("/app/contacts/imports/{}", kit::id(&i["id"])), "Progress"), kit::status(i), kit::text(&i["counts"]["total"]), time(&i["created_at"])],
        "No import yet. Upload a CSV whose first row names its columns (<code>email</code>, <code>first_name</code>, <code>last_name</code>, <code>unsubscribed</code>).",
    );
    let form = if session.can_write() {
        let error = refused.and_then(|a| a.field_error("file")).map_or_else(String::new, |e| format!("<span class=\"error\" id=\"import-file-error\">{}</span>", escape(&e)));
        kit::card(
            "upload",
            "Upload a CSV",
            &format!(
                "<form class=\"stack\" method=\"post\" action=\"/app/contacts/imports\" enctype=\"multipart/form-data\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
                 <label for=\"import-file\">CSV file (up to 50 MB)</label><input id=\"import-file\" name=\"file\" type=\"file\" accept=\".csv,text/csv\" required>{error}\
                 <label for=\"import-on_conflict\">Addresses already in the audience</label><select id=\"import-on_conflict\" name=\"on_conflict\"><option value=\"skip\">Leave them as they are</option><option value=\"upsert\">Update them</option></select>\
                 <button type=\"submit\">Import</button></form>",
                escape(&session.csrf)
            ),
        )
    } else {
        String::new()
    };
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!("<p><a href=\"/app/contacts\">← Contacts</a></p><h1>Imports</h1>{alert}{form}{table}{}", kit::pager("/app/contacts/imports", &answer));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Imports", Some(session), &body))
}

/// `POST /app/contacts/imports`: the file and its choice go to `POST /contacts/imports`.
#[handler]
pub async fn upload(req: &Request, api: Data<&Api>, multipart: Multipart) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let relayed = super::upload::relay(multipart, &["file", "on_conflict"]).await?;
    let answer = api.send(req, Method::POST, "/contacts/imports", Some(relayed.payload), Some(&relayed.csrf), &[]).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &Paging::default(), Some(&answer)).await;
    }
    Ok(kit::see_other(&format!("/app/contacts/imports/{}", kit::id(&answer.body["id"]))))
}

/// `GET /app/contacts/imports/{id}`: the import with its progress bar and failed rows.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let import = match kit::one(req, &api, &session, &format!("/contacts/imports/{}", urlencoding(&id))).await? {
        Ok(import) => import,
        Err(page) => return Ok(page),
    };
    let failed = kit::table(
        &["Row", "Address", "Why"],
        import["failed_rows"].as_array().map_or(&[][..], Vec::as_slice),
        |r| vec![kit::text(&r["row"]), kit::text(&r["email"]), kit::text(&r["message"])],
        "No row failed.",
    );
    let body = format!(
        "<p><a href=\"/app/contacts/imports\">← Imports</a></p><h1>Import</h1>{}{}",
        kit::card("progress-title", "Progress", &progress(&import)),
        kit::card("failed", "Failed rows", &failed)
    );
    Ok(page(StatusCode::OK, "Import", Some(&session), &body))
}

/// `GET /app/contacts/imports/{id}/progress`: the bar alone, for htmx.
#[handler]
pub async fn progress_fragment(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    kit::fragment(req, &api, &format!("/contacts/imports/{}", urlencoding(&id)), progress).await
}

/// The bar: rows done of all rows; while the import runs, htmx asks for it again every second.
fn progress(import: &Value) -> String {
    let counts = &import["counts"];
    let n = |k: &str| counts[k].as_i64().unwrap_or(0);
    let total = n("total");
    let done = n("created") + n("updated") + n("skipped") + n("failed");
    let status = import["status"].as_str().unwrap_or_default();
    let running = matches!(status, "queued" | "in_progress");
    let percent = if status == "completed" { 100 } else if total > 0 { (done * 100 / total).min(100) } else { 0 };
    let poll = if running { format!(" hx-get=\"/app/contacts/imports/{}/progress\" hx-trigger=\"every 1s\" hx-swap=\"outerHTML\"", kit::id(&import["id"])) } else { String::new() };
    format!(
        "<div id=\"progress\"{poll}><p role=\"status\"><b>{}</b> · {percent}%</p><progress max=\"100\" value=\"{percent}\" aria-label=\"Import progress\">{percent}%</progress>\
         <p class=\"muted\">{} created · {} updated · {} skipped · {} failed · {} rows</p>{}</div>",
        escape(&status.replace('_', " ")),
        n("created"),
        n("updated"),
        n("skipped"),
        n("failed"),
        total,
        import["error"].as_str().map_or_else(String::new, |e| kit::note(false, e))
    )
}
