//! Suppressions: the addresses Herald will not send to (search, paging), adding one and
//! removing one, through `/suppressions` as the session.

use super::client::{Answer, Api, Session};
use super::kit::urlencoding;
use super::kit::{self, Field, Fields, Input, Paging};
use super::layout::{page, time};
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path, Query};
use poem::{Request, Response, handler};
use serde_json::json;

const FIELDS: &[Field] = &[Field { name: "email", label: "Address", input: Input::Email, required: true, max: Some(320) }];

/// `GET /app/suppressions`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    listing(req, &api, &session, &paging, &Fields::new(), None).await
}

async fn listing(req: &Request, api: &Api, session: &Session, paging: &Paging, values: &Fields, refused: Option<&Answer>) -> poem::Result<Response> {
    let answer = api.get(req, &paging.path("/suppressions", 50)).await?;
    let writer = session.can_write();
    let mut headers = vec!["Address", "Origin", "Since"];
    if writer {
        headers.push("Actions");
    }
    let table = kit::table(
        &headers,
        &kit::rows(&answer),
        |s| {
            let mut cells = vec![kit::text(&s["email"]), kit::word(&s["origin"]), time(&s["created_at"])];
            if writer {
                cells.push(kit::button(&format!("/app/suppressions/{}/remove", kit::id(&s["id"])), &session.csrf, "Remove"));
            }
            cells
        },
        "No suppressed address. Hard bounces, complaints and unsubscribes land here by themselves.",
    );
    let form = if writer { kit::card("add", "Suppress an address", &kit::form("/app/suppressions", &session.csrf, FIELDS, values, refused, "Suppress")) } else { String::new() };
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!("<h1>Suppressions</h1>{alert}{form}{}{table}{}", paging.search_form("/app/suppressions", "Address"), kit::pager(&paging.base("/app/suppressions"), &answer));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Suppressions", Some(session), &body))
}

/// `POST /app/suppressions`: `POST /suppressions`.
#[handler]
pub async fn add(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::POST, "/suppressions", Some(&json!({ "email": form.get("email").cloned().unwrap_or_default() })), &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &Paging::default(), &form, Some(&answer)).await;
    }
    Ok(kit::see_other("/app/suppressions"))
}

/// `POST /app/suppressions/{id}/remove`: `DELETE /suppressions/{id}`.
#[handler]
pub async fn remove(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::DELETE, &format!("/suppressions/{}", urlencoding(&id)), None, &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &Paging::default(), &Fields::new(), Some(&answer)).await;
    }
    Ok(kit::see_other("/app/suppressions"))
}
