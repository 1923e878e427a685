//! The team: its members and their roles, pending invitations, inviting someone (an admin's),
//! and the grants given to OAuth clients with revoking one, through `/team/members`,
//! `/team/invitations` and `/oauth/grants` as the session.

use super::client::{Answer, Api, Session};
use super::kit::{self, Field, Fields, Input};
use super::layout::{page, time};
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path};
use poem::{Request, Response, handler};
use serde_json::json;

const FIELDS: &[Field] = &[
    Field { name: "email", label: "Address", input: Input::Email, required: true, max: Some(320) },
    Field::of("role", "Role", Input::Select(&["member", "viewer", "admin"])),
];

/// `GET /app/team`.
#[handler]
pub async fn page_handler(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    team_page(req, &api, &session, &Fields::new(), None).await
}

async fn team_page(req: &Request, api: &Api, session: &Session, values: &Fields, refused: Option<&Answer>) -> poem::Result<Response> {
    let members = api.get(req, "/team/members?limit=100").await?;
    let members = kit::table(&["Name", "Address", "Role", "Joined"], &kit::rows(&members), |m| vec![kit::text(&m["name"]), kit::text(&m["email"]), kit::word(&m["role"]), time(&m["joined_at"])], "No member.");
    let admin = session.role == "admin";
    let invitations = api.get(req, "/team/invitations?limit=100").await?;
    let invitations = if invitations.ok() {
        kit::table(&["Address", "Role", "Status", "Expires"], &kit::rows(&invitations), |i| vec![kit::text(&i["email"]), kit::word(&i["role"]), kit::status(i), time(&i["expires_at"])], "No invitation pending.")
    } else {
        kit::note(false, &invitations.message())
    };
    let grants = api.get(req, "/oauth/grants?limit=100").await?;
    let grants = if grants.ok() {
        let mut headers = vec!["Application", "Allowed by", "Scopes", "Since"];
        if admin {
            headers.push("Actions");
        }
        kit::table(
            &headers,
            &kit::rows(&grants),
            |g| {
                let scopes = g["scopes"].as_array().map(|s| s.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(" ")).unwrap_or_default();
                let mut cells = vec![kit::text(&g["client_name"]), kit::text(&g["user_email"]), format!("<code>{}</code>", kit::text(&json!(scopes))), time(&g["created_at"])];
                if admin {
                    cells.push(kit::button(&format!("/app/team/grants/{}/revoke", kit::id(&g["id"])), &session.csrf, "Revoke"));
                }
                cells
            },
            "No application has been given access. Applications that sign in with OAuth appear here.",
        )
    } else {
        kit::note(false, &grants.message())
    };
    let form = if admin { kit::card("invite", "Invite someone", &kit::form("/app/team/invitations", &session.csrf, FIELDS, values, refused, "Send invitation")) } else { String::new() };
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!(
        "<h1>{}</h1>{alert}<nav class=\"row\" aria-label=\"Team settings\"><a href=\"/app/billing\">Billing</a> · <a href=\"/app/brand\">Brand kit</a> · <a href=\"/app/migrations\">Migrations and exports</a></nav>{}{form}{}{}",
        kit::text(&serde_json::Value::String(session.team_name.clone())),
        kit::card("members", "Members", &members),
        kit::card("invitations", "Invitations", &invitations),
        kit::card("grants", "Applications", &grants)
    );
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Team", Some(session), &body))
}

/// `POST /app/team/invitations`: `POST /team/invitations` (the API mails the invitation).
#[handler]
pub async fn invite(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = json!({ "email": form.get("email").cloned().unwrap_or_default(), "role": kit::given(&form, "role").unwrap_or("member") });
    let answer = kit::write(req, &api, Method::POST, "/team/invitations", Some(&body), &form).await?;
    if !answer.ok() {
        return team_page(req, &api, &session, &form, Some(&answer)).await;
    }
    Ok(kit::see_other("/app/team"))
}

/// `POST /app/team/grants/{id}/revoke`: `DELETE /oauth/grants/{id}`; the application's tokens
/// stop working on their next request.
#[handler]
pub async fn revoke_grant(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::DELETE, &format!("/oauth/grants/{}", super::kit::urlencoding(&id)), None, &form).await?;
    if !answer.ok() {
        return team_page(req, &api, &session, &Fields::new(), Some(&answer)).await;
    }
    Ok(kit::see_other("/app/team"))
}
