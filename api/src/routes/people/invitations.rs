//! Invitations to a team: an admin invites an address with a role, Herald mails it a link, and
//! the person accepts by the link's page (signing in, or creating their account there) or, when
//! signed in, with `POST /auth/invitations/accept`. Open invitations can be revoked; each one
//! expires after 7 days.

use crate::http::paging::{page_of, page_request};
use crate::routes::people::invite::{Inviter, invite};
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, IdText, Nullable, Required};
use crate::http::form::FormBody;
use crate::routes::Tag;
use crate::routes::people::session::{Role, SessionView};
use crate::routes::pages::html::{FORM_POLICY, document, escape, not_found_page};
use crate::routes::people::membership::admin_team;
use crate::state::{AppState, SessionCaller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Html, Json};
use poem_openapi::{ApiResponse, Object};
use schema::store::people::{self, Invitation};
use serde::Deserialize;
use sqlx::PgConnection;

pub struct InvitationsApi;

crate::choices! {
    /// `pending`, `accepted`, `revoked` or `expired`.
    InvitationStatus = &["pending", "accepted", "revoked", "expired"];
}

/// Body of `POST /team/invitations`.
#[derive(Object, Deserialize)]
pub struct CreateInvitation {
    /// The address to invite.
    #[oai(validator(max_length = 320))]
    pub email: Required<String>,
    /// The role the person gets when they accept.
    pub role: Required<Choice<Role>>,
}

/// Body of `POST /auth/invitations/accept`.
#[derive(Object, Deserialize)]
pub struct AcceptInvitation {
    /// The token at the end of the invitation's link.
    #[oai(validator(max_length = 200))]
    pub token: Required<String>,
}

/// An invitation to the team.
#[derive(Object)]
pub struct InvitationView {
    /// Always `invitation`.
    pub object: String,
    /// The invitation's id.
    pub id: String,
    /// The address invited.
    pub email: String,
    /// The role the invited person gets on accepting.
    pub role: Choice<Role>,
    /// Where the invitation stands.
    pub status: Choice<InvitationStatus>,
    /// Who invited; `null` when that person is gone.
    pub invited_by: Nullable<String>,
    /// When the invitation was sent.
    pub created_at: DateTime<Utc>,
    /// When a pending invitation expires (7 days after it was sent).
    pub expires_at: DateTime<Utc>,
}

/// The team's invitations, newest first (the latest 500).
#[derive(Object)]
pub struct InvitationList {
    /// Always `list`.
    pub object: String,
    /// Whether more invitations follow this page.
    pub has_more: bool,
    /// The invitations, newest first.
    pub data: Vec<InvitationView>,
}

#[derive(ApiResponse)]
pub enum Invited {
    /// The invitation; its link was mailed to the address.
    #[oai(status = 201)]
    Created(Json<InvitationView>),
}

/// The page of an invitation's link.
#[derive(ApiResponse)]
pub enum InvitationPage {
    /// The invitation, with a form to join.
    #[oai(status = 200)]
    Ok(Html<String>, #[oai(header = "content-security-policy")] String, #[oai(header = "cache-control")] String),
    /// Joined: the person is signed in (the session cookie is set).
    #[oai(status = 201)]
    Joined(Html<String>, #[oai(header = "content-security-policy")] String, #[oai(header = "cache-control")] String, #[oai(header = "set-cookie")] String),
    /// An unknown, used, revoked or expired link: one answer for all.
    #[oai(status = 404)]
    NotFound(Html<String>, #[oai(header = "cache-control")] String),
}

#[poem_openapi::OpenApi(tag = "Tag::People")]
impl InvitationsApi {
    /// Invite an address to the session's current team with a role (admins only) and mail it
    /// the link. An open invitation of the same address is replaced. A member already in the
    /// team is `422 validation_error`.
    #[oai(path = "/team/invitations", method = "post", operation_id = "create-invitation")]
    async fn create(&self, state: Data<&AppState>, session: Data<&SessionCaller>, body: Body<CreateInvitation>) -> ApiResult<Invited> {
        let body = body.0;
        let session = &session.0.session;
        let team_id = admin_team(session)?;
        let email = crate::routes::people::login::address(body.email.0)?;
        let role = crate::routes::people::session::role(body.role.0)?;
        let mut tx = state.pool.begin().await?;
        let inviter = Inviter::Person { id: session.person_id, name: &session.name };
        let invitation = invite(&mut tx, &state.config, team_id, &email, &role, inviter).await?.invitation;
        tx.commit().await?;
        Ok(Invited::Created(Json(view(invitation))))
    }

    /// The invitations of the session's current team (admins only), newest first.
    #[oai(path = "/team/invitations", method = "get", operation_id = "list-invitations")]
    async fn list(
        &self,
        state: Data<&AppState>,
        session: Data<&SessionCaller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<InvitationList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let team_id = admin_team(&session.0.session)?;
        let invitations = page_of(people::invitations(&mut *state.pool.acquire().await?, team_id).await?, |i| i.id, &page)?;
        Ok(Json(InvitationList { object: "list".into(), has_more: invitations.has_more, data: invitations.data.into_iter().map(view).collect() }))
    }

    /// Revoke an open invitation (admins only): its link stops working. Revoking one that was
    /// accepted changes nothing; another team's is `404 not_found`.
    #[oai(path = "/team/invitations/:invitation_id", method = "delete", operation_id = "revoke-invitation")]
    async fn revoke(&self, state: Data<&AppState>, session: Data<&SessionCaller>, invitation_id: Path<String>) -> ApiResult<Json<InvitationView>> {
        let team_id = admin_team(&session.0.session)?;
        let id = crate::routes::path_id(&invitation_id.0, "Invitation")?;
        let mut tx = state.pool.begin().await?;
        let invitation = people::revoke_invitation(&mut tx, team_id, id).await?.ok_or_else(|| ApiError::not_found("Invitation"))?;
        tx.commit().await?;
        Ok(Json(view(invitation)))
    }

    /// Accept an invitation as the signed-in person, whose address must be the invited one
    /// (`403 validation_error` otherwise); the team becomes the session's current team. An
    /// unknown, used or revoked invitation is `404 not_found`; an expired one
    /// `422 validation_error`.
    #[oai(path = "/auth/invitations/accept", method = "post", operation_id = "accept-invitation")]
    async fn accept(&self, state: Data<&AppState>, session: Data<&SessionCaller>, body: Body<AcceptInvitation>) -> ApiResult<Json<SessionView>> {
        let token = body.0.token.0.ok_or_else(|| ApiError::missing_field("token"))?;
        let session = &session.0.session;
        let mut tx = state.pool.begin().await?;
        let invitation = open_invitation(&mut tx, &token).await?;
        if invitation.email != session.email {
            return Err(ApiError::not_allowed("This invitation is for another address; sign in with the address it was sent to."));
        }
        people::accept_invitation(&mut tx, &invitation, session.person_id).await?;
        people::confirm_email(&mut tx, session.person_id).await?;
        let now = crate::routes::people::membership::switch(&mut tx, session.id, invitation.team_id).await?;
        tx.commit().await?;
        Ok(Json(now))
    }

    /// The page of an invitation's link: who invited, to which team, with which role, and a
    /// form to join: the password of the invited address's account (and its TOTP code, when it
    /// has one), or a name and a password to create that account.
    #[oai(path = "/invitations/:token", method = "get", operation_id = "view-invitation")]
    async fn page(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<InvitationPage> {
        let mut tx = state.pool.begin().await?;
        let Ok(invitation) = open_invitation(&mut tx, &token.0).await else { return Ok(not_found()) };
        let has_account = people::by_email(&mut tx, &invitation.email).await?.is_some();
        Ok(join_form(&invitation, has_account, None))
    }

    /// Joins by the link's form: signs in to (or creates) the invited address's account,
    /// accepts the invitation and opens a session in the team. A wrong password or code shows
    /// the form again with the reason.
    #[oai(path = "/invitations/:token", method = "post", operation_id = "join-by-invitation")]
    async fn join(&self, state: Data<&AppState>, request: &poem::Request, token: Path<String>, form: FormBody) -> ApiResult<InvitationPage> {
        let password = form.first("password").unwrap_or_default().to_string();
        let mut conn = state.pool.acquire().await?;
        let Ok(invitation) = open_invitation(&mut conn, &token.0).await else { return Ok(not_found()) };
        let existing = people::by_email(&mut conn, &invitation.email).await?;
        drop(conn);
        let has_account = existing.is_some();
        let person_id = match existing {
            Some(_) => {
                let ip = crate::routes::pages::html::visitor(request).0;
                match crate::routes::people::login::authenticate(&state, &invitation.email, &password, form.first("mfa_code"), ip.as_deref()).await {
                    Ok(person) => Some(person.id),
                    Err(error) => return Ok(join_form(&invitation, has_account, Some(&error.message))),
                }
            }
            None => None,
        };
        let mut tx = state.pool.begin().await?;
        let Ok(invitation) = open_invitation(&mut tx, &token.0).await else { return Ok(not_found()) };
        let person_id = match person_id {
            Some(id) => id,
            None => {
                let Some(name) = crate::routes::people::login::person_name(form.first("name").unwrap_or_default()) else {
                    return Ok(join_form(&invitation, has_account, Some("Give your name (1 to 100 characters).")));
                };
                let hash = match crate::routes::people::login::new_password_hash(password).await {
                    Ok(hash) => hash,
                    Err(_) => return Ok(join_form(&invitation, has_account, Some("The password must be 10 to 200 characters."))),
                };
                let id = schema::ids::new_id();
                if !people::insert(&mut tx, id, &invitation.email, &name, &hash, crate::routes::pages::html::visitor(request).0.as_deref()).await? {
                    return Ok(join_form(&invitation, true, Some("An account with this address exists now; sign in with its password.")));
                }
                id
            }
        };
        people::accept_invitation(&mut tx, &invitation, person_id).await?;
        people::confirm_email(&mut tx, person_id).await?;
        let (_, cookie) = crate::routes::people::session::open(&state, &mut tx, person_id, Some(invitation.team_id)).await?;
        tx.commit().await?;
        let body = format!("<main><h1>Welcome to {}</h1><p class=\"notice\">You joined the team as {}. You are signed in.</p></main>", escape(&invitation.team_name), escape(&invitation.role));
        Ok(InvitationPage::Joined(Html(document("Joined", &body)), FORM_POLICY.into(), "no-store".into(), cookie))
    }
}

/// The open invitation of a link, locked: unknown, used and revoked are `404 not_found`,
/// expired is `422 validation_error`.
async fn open_invitation(conn: &mut PgConnection, token: &str) -> ApiResult<Invitation> {
    let invitation = people::invitation_by_token(conn, &schema::secret::hash(token)).await?;
    let invitation = invitation.filter(|i| i.accepted_at.is_none() && i.revoked_at.is_none()).ok_or_else(|| ApiError::not_found("Invitation"))?;
    if invitation.expires_at <= Utc::now() {
        return Err(ApiError::refused("The invitation has expired; ask the team's admin for a new one."));
    }
    Ok(invitation)
}

fn status(invitation: &Invitation) -> &'static str {
    match (invitation.accepted_at, invitation.revoked_at) {
        (Some(_), _) => "accepted",
        (None, Some(_)) => "revoked",
        _ if invitation.expires_at <= Utc::now() => "expired",
        _ => "pending",
    }
}

fn view(invitation: Invitation) -> InvitationView {
    InvitationView {
        object: "invitation".into(),
        id: invitation.id.to_string(),
        status: Choice::new(status(&invitation)),
        email: invitation.email,
        role: Choice::new(invitation.role),
        invited_by: Nullable(invitation.invited_by_name),
        created_at: invitation.created_at,
        expires_at: invitation.expires_at,
    }
}

fn not_found() -> InvitationPage {
    InvitationPage::NotFound(Html(not_found_page()), "no-store".into())
}

fn join_form(invitation: &Invitation, has_account: bool, problem: Option<&str>) -> InvitationPage {
    let inviter = invitation.invited_by_name.as_deref().map(escape).unwrap_or_else(|| "A team admin".into());
    let problem = problem.map(|p| format!("<p class=\"notice\">{}</p>", escape(p))).unwrap_or_default();
    let fields = if has_account {
        "<label>Password <input type=\"password\" name=\"password\" required autocomplete=\"current-password\"></label>\
         <label>Authenticator code, if your account has one <input name=\"mfa_code\" autocomplete=\"one-time-code\"></label>\
         <button type=\"submit\">Sign in and join</button>"
    } else {
        "<label>Your name <input name=\"name\" maxlength=\"100\" required autocomplete=\"name\"></label>\
         <label>Choose a password (10 to 200 characters) <input type=\"password\" name=\"password\" minlength=\"10\" maxlength=\"200\" required autocomplete=\"new-password\"></label>\
         <button type=\"submit\">Create account and join</button>"
    };
    let body = format!(
        "<main><h1>Join {team}</h1><p>{inviter} invited <strong>{email}</strong> to join <strong>{team}</strong> as {role}.</p>{problem}\
         <form method=\"post\">{fields}</form></main>",
        team = escape(&invitation.team_name),
        email = escape(&invitation.email),
        role = escape(&invitation.role),
    );
    InvitationPage::Ok(Html(document(&format!("Join {}", invitation.team_name), &body)), FORM_POLICY.into(), "no-store".into())
}
