//! People and the dashboard session: sign-up, sign-in (throttled per address and per client
//! address), sign-out and the session itself. The session is an HttpOnly, SameSite=Lax cookie
//! (`Secure` when `HERALD_PUBLIC_URL` is https) whose token is stored only as its SHA-256 hash;
//! every write made with it carries the session's CSRF token in `X-CSRF-Token`.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::fields::Required;
use crate::routes::Tag;
use crate::state::{AppState, SessionCaller};
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::people;
use serde::Deserialize;
use crate::routes::people::session::{SessionView, view, open, secure};
use crate::routes::people::login::{authenticate, person_name, address, wrong_credentials, new_password_hash};

pub struct AuthApi;

/// Accounts one client address may create in an hour.
const SIGN_UPS_PER_CLIENT_HOUR: i64 = 10;

/// Body of `POST /auth/signup`.
#[derive(Object, Deserialize)]
pub struct SignUp {
    /// The address to sign in with; one account per address.
    #[oai(validator(max_length = 320))]
    pub email: Required<String>,
    /// 10 to 200 characters.
    #[oai(validator(min_length = 10, max_length = 200))]
    pub password: Required<String>,
    /// How teammates see the person, 1 to 100 characters.
    #[oai(validator(max_length = 100))]
    pub name: Required<String>,
}

/// Body of `POST /auth/login`.
#[derive(Object, Deserialize)]
pub struct SignIn {
    /// The address the person signs in with.
    #[oai(validator(max_length = 320))]
    pub email: Required<String>,
    /// The account's password.
    #[oai(validator(max_length = 200))]
    pub password: Required<String>,
    /// The six-digit code of the person's authenticator app, or one of their recovery codes;
    /// needed when the account has TOTP turned on.
    #[oai(validator(max_length = 40))]
    pub mfa_code: Option<String>,
}

/// `{ object: "session", deleted: true }`.
#[derive(Object)]
pub struct SignedOut {
    /// Always `session`.
    pub object: String,
    /// Always true.
    pub deleted: bool,
}

#[derive(ApiResponse)]
pub enum SignedUp {
    /// The account, its first team and a signed-in session (the cookie is set).
    #[oai(status = 201)]
    Created(Json<SessionView>, #[oai(header = "set-cookie")] String),
}

#[derive(ApiResponse)]
pub enum SignedIn {
    /// Signed in (the cookie is set).
    #[oai(status = 200)]
    Ok(Json<SessionView>, #[oai(header = "set-cookie")] String),
}

#[derive(ApiResponse)]
pub enum SignOutResponse {
    /// Signed out (the cookie is cleared).
    #[oai(status = 200)]
    Ok(Json<SignedOut>, #[oai(header = "set-cookie")] String),
}

#[poem_openapi::OpenApi(tag = "Tag::People")]
impl AuthApi {
    /// Create an account with an email address and a password (stored as an argon2id hash), a
    /// first team with the person as its admin, and a signed-in session; a link that confirms the
    /// address is mailed. An address that has an account, or a password outside 10 to 200
    /// characters, is `422 validation_error`; more than ten sign-ups an hour from one client
    /// address are `429 rate_limit_exceeded`.
    #[oai(path = "/auth/signup", method = "post", operation_id = "sign-up")]
    async fn sign_up(&self, state: Data<&AppState>, request: &poem::Request, body: Body<SignUp>) -> ApiResult<SignedUp> {
        let body = body.0;
        let email = address(body.email.0)?;
        let password = body.password.0.ok_or_else(|| ApiError::missing_field("password"))?;
        let name = body.name.0.ok_or_else(|| ApiError::missing_field("name"))?;
        let name = person_name(&name).ok_or_else(|| ApiError::refused_field("name", "must be 1 to 100 characters on one line"))?;
        let password_hash = new_password_hash(password).await?;
        let person_id = schema::ids::new_id();
        let team_name: String = format!("{name}'s team").chars().take(80).collect();
        let ip = crate::routes::pages::html::visitor(request).0;
        let mut tx = state.pool.begin().await?;
        if let Some(ip) = ip.as_deref()
            && people::recent_sign_ups(&mut tx, ip).await? >= SIGN_UPS_PER_CLIENT_HOUR
        {
            return Err(ApiError::new(ErrorKind::RateLimitExceeded, "Too many sign-ups from this address; try again in an hour."));
        }
        if !people::insert(&mut tx, person_id, &email, &name, &password_hash, ip.as_deref()).await? {
            return Err(ApiError::refused_field("email", "an account with this address exists; sign in instead"));
        }
        let team_id = crate::routes::people::membership::create_for(&mut tx, person_id, &team_name, state.config.is_development()).await?;
        crate::routes::people::links::mail_verification(&mut tx, &state, person_id, &email).await?;
        let (session, cookie) = open(&state, &mut tx, person_id, Some(team_id)).await?;
        tx.commit().await?;
        Ok(SignedUp::Created(Json(view(&session)), cookie))
    }

    /// Sign in. A wrong address or password is `403 validation_error` (the same answer for
    /// both). Five failures for one address, or twenty from one client address, within 15
    /// minutes answer `429 rate_limit_exceeded`, even with the right password, until the window
    /// passes.
    #[oai(path = "/auth/login", method = "post", operation_id = "sign-in")]
    async fn sign_in(&self, state: Data<&AppState>, request: &poem::Request, body: Body<SignIn>) -> ApiResult<SignedIn> {
        let body = body.0;
        let email = address(body.email.0).map_err(|_| wrong_credentials())?;
        let password = body.password.0.ok_or_else(|| ApiError::missing_field("password"))?;
        let ip = crate::routes::pages::html::visitor(request).0;
        let person = authenticate(&state, &email, &password, body.mfa_code.as_deref(), ip.as_deref()).await?;
        let mut tx = state.pool.begin().await?;
        let team_id = people::first_team(&mut tx, person.id).await?;
        let (session, cookie) = open(&state, &mut tx, person.id, team_id).await?;
        tx.commit().await?;
        Ok(SignedIn::Ok(Json(view(&session)), cookie))
    }

    /// The signed-in person, the current team and the CSRF token.
    #[oai(path = "/auth/session", method = "get", operation_id = "get-session")]
    async fn session(&self, session: Data<&SessionCaller>) -> ApiResult<Json<SessionView>> {
        Ok(Json(view(&session.0.session)))
    }

    /// Sign out: the session ends everywhere it was used and the cookie is cleared.
    #[oai(path = "/auth/logout", method = "post", operation_id = "sign-out")]
    async fn sign_out(&self, state: Data<&AppState>, session: Data<&SessionCaller>) -> ApiResult<SignOutResponse> {
        people::close_session(&mut *state.pool.acquire().await?, session.0.session.id).await?;
        let cleared = format!("{}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{}", crate::http::credentials::COOKIE, secure(&state));
        Ok(SignOutResponse::Ok(Json(SignedOut { object: "session".into(), deleted: true }), cleared))
    }
}
