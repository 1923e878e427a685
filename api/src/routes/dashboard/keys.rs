//! API keys: the list, a new key (its token shown once, with a copy button) and revoking one,
//! each through `/api-keys` as the session.

use super::client::{Answer, Api, Session};
use super::kit::{self, Field, Fields, Input, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path, Query};
use poem::{Request, Response, handler};
use serde_json::json;

const FIELDS: &[Field] = &[Field::text("name", "Name", 255), Field::of("permission", "Permission", Input::Select(&["full_access", "sending_access"]))];

/// `GET /app/api-keys`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    listing(req, &api, &session, &paging, &Fields::new(), None).await
}

async fn listing(req: &Request, api: &Api, session: &Session, paging: &Paging, values: &Fields, refused: Option<&Answer>) -> poem::Result<Response> {
    let answer = api.get(req, &paging.path("/api-keys", 50)).await?;
    let writer = session.can_write();
    let mut headers = vec!["Name", "Permission", "Token starts", "Status", "Last used", "Created"];
    if writer {
        headers.push("Actions");
    }
    let table = kit::table(
        &headers,
        &kit::rows(&answer),
        |k| {
            let mut cells = vec![kit::text(&k["name"]), kit::word(&k["permission"]), format!("<code>{}</code>", kit::text(&k["key_prefix"])), kit::word(&k["status"]), time(&k["last_used_at"]), time(&k["created_at"])];
            if writer {
                cells.push(if k["status"] == "revoked" { String::new() } else { kit::button(&format!("/app/api-keys/{}/revoke", kit::id(&k["id"])), &session.csrf, "Revoke") });
            }
            cells
        },
        "No key yet. Create one here; its token is shown once.",
    );
    let form = if writer { kit::card("new-key", "New key", &kit::form("/app/api-keys", &session.csrf, FIELDS, values, refused, "Create key")) } else { String::new() };
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!("<h1>API keys</h1>{alert}{form}{table}{}", kit::pager("/app/api-keys", &answer));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "API keys", Some(session), &body))
}

/// `POST /app/api-keys`: `POST /api-keys`; the token is shown on this page only.
#[handler]
pub async fn create(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = json!({ "name": form.get("name").cloned().unwrap_or_default(), "permission": kit::given(&form, "permission").unwrap_or("full_access") });
    let answer = kit::write(req, &api, Method::POST, "/api-keys", Some(&body), &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &Paging::default(), &form, Some(&answer)).await;
    }
    let token = answer.body["token"].as_str().unwrap_or_default();
    let shown = format!(
        "<h1>Your new key</h1><section class=\"card\"><p><b>Copy the token now: Herald keeps only its hash and will not show it again.</b></p>\
         <p><code class=\"value\" id=\"token\">{}</code> <button type=\"button\" data-copy=\"{}\" aria-label=\"Copy the token\">Copy</button></p>\
         <p><a href=\"/app/api-keys\">Done</a></p></section>",
        escape(token),
        escape(token)
    );
    Ok(page(StatusCode::CREATED, "Your new key", Some(&session), &shown))
}

/// `POST /app/api-keys/{id}/revoke`: `DELETE /api-keys/{id}`.
#[handler]
pub async fn revoke(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::DELETE, &format!("/api-keys/{}", super::kit::urlencoding(&id)), None, &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &Paging::default(), &Fields::new(), Some(&answer)).await;
    }
    Ok(kit::see_other("/app/api-keys"))
}
