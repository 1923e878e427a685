//! People and the dashboard session: sign-up, sign-in (throttled per address and per client
//! address), sign-out and the session itself. The session is an HttpOnly, SameSite=Lax cookie
//! (`Secure` when `HERALD_PUBLIC_URL` is https) whose token is stored only as its SHA-256 hash;
//! every write made with it carries the session's CSRF token in `X-CSRF-Token`.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Nullable, Required};
use crate::routes::Tag;
use crate::state::{AppState, SessionCaller};
use chrono::{DateTime, TimeDelta, Utc};
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::people;
use serde::Deserialize;

pub struct AuthApi;

/// How long a session lasts.
const SESSION_DAYS: i64 = 14;
/// Shortest and longest password, in characters.
const PASSWORD_CHARS: std::ops::RangeInclusive<usize> = 10..=200;
/// Failed sign-ins counted, and over how long.
const FAILURES_PER_ADDRESS: i64 = 5;
const FAILURES_PER_CLIENT: i64 = 20;
const FAILURE_WINDOW_MINUTES: i64 = 15;
/// Accounts one client address may create in an hour.
const SIGN_UPS_PER_CLIENT_HOUR: i64 = 10;

crate::choices! {
    /// A member's role: `admin`, `member` (reads and writes) or `viewer` (reads only).
    Role = &["admin", "member", "viewer"];
}

/// A role from a body: required, and one of [`Role`]'s values (`422 validation_error` otherwise).
pub fn role(choice: Option<Choice<Role>>) -> ApiResult<String> {
    use crate::http::fields::Choices;
    let role = choice.ok_or_else(|| ApiError::missing_field("role"))?;
    if !Role::VALUES.contains(&role.as_str()) {
        return Err(ApiError::refused_field("role", format!("must be one of {}", Role::VALUES.join(", "))));
    }
    Ok(role.into_string())
}

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
    #[oai(validator(max_length = 320))]
    pub email: Required<String>,
    #[oai(validator(max_length = 200))]
    pub password: Required<String>,
    /// The six-digit code of the person's authenticator app, or one of their recovery codes;
    /// needed when the account has TOTP turned on.
    #[oai(validator(max_length = 40))]
    pub mfa_code: Option<String>,
}

/// The signed-in person.
#[derive(Object)]
pub struct PersonView {
    pub id: String,
    pub email: String,
    pub name: String,
    /// Whether the address has been confirmed.
    pub email_verified: bool,
    /// Whether sign-in asks for a TOTP code.
    pub mfa_enabled: bool,
}

/// The session's current team and the person's role in it.
#[derive(Object)]
pub struct TeamRole {
    pub id: String,
    pub name: String,
    pub role: Choice<Role>,
}

/// A dashboard session.
#[derive(Object)]
pub struct SessionView {
    /// Always `session`.
    pub object: String,
    pub user: PersonView,
    /// The current team; `null` when the person belongs to none.
    pub team: Nullable<TeamRole>,
    /// Send it as `X-CSRF-Token` with every write made with the session cookie.
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
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
            return Err(ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded", "Too many sign-ups from this address; try again in an hour."));
        }
        if !people::insert(&mut tx, person_id, &email, &name, &password_hash, ip.as_deref()).await? {
            return Err(ApiError::refused_field("email", "an account with this address exists; sign in instead"));
        }
        let team_id = crate::routes::people::teams::create_for(&mut tx, person_id, &team_name, state.config.is_development()).await?;
        crate::routes::people::account::mail_verification(&mut tx, &state, person_id, &email).await?;
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

/// Checks a sign-in: the throttle (five failures per address, twenty per client address, in
/// 15 minutes), the password, and the TOTP or recovery code when the account has TOTP on. A
/// failure is recorded and answers `403 validation_error` (a missing code says so in
/// `details.mfa_required`); over the throttle, `429 rate_limit_exceeded`.
pub async fn authenticate(state: &AppState, email: &str, password: &str, mfa_code: Option<&str>, ip: Option<&str>) -> ApiResult<people::Person> {
    let password = password.chars().take(*PASSWORD_CHARS.end() + 1).collect::<String>();
    let since = Utc::now() - TimeDelta::minutes(FAILURE_WINDOW_MINUTES);
    let mut conn = state.pool.acquire().await?;
    let (by_address, by_client) = people::failures(&mut conn, email, ip, since).await?;
    if by_address >= FAILURES_PER_ADDRESS || by_client >= FAILURES_PER_CLIENT {
        return Err(ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded", "Too many failed sign-ins. Try again in 15 minutes."));
    }
    let person = people::by_email(&mut conn, email).await?;
    // An unknown address is checked against a throwaway hash, so both answers take as long.
    let stored = person.as_ref().map_or_else(|| DUMMY_HASH.clone(), |p| p.password_hash.clone());
    let right = tokio::task::spawn_blocking(move || verify_password(&password, &stored)).await.map_err(anyhow::Error::from)?;
    let Some(person) = person.filter(|_| right) else {
        people::record_failure(&mut conn, email, ip).await?;
        return Err(wrong_credentials());
    };
    drop(conn);
    let mut tx = state.pool.begin().await?;
    if person.totp_enabled_at.is_some() {
        let Some(code) = mfa_code.filter(|c| !c.trim().is_empty()) else {
            return Err(ApiError::not_allowed("This account asks for a second factor: send the authenticator's code (or a recovery code) in `mfa_code`.")
                .with_error("mfa_code", "is required for this account")
                .with_details(serde_json::json!({ "mfa_required": true })));
        };
        if !crate::routes::people::account::second_factor(&mut tx, person.id, code).await? {
            drop(tx);
            people::record_failure(&mut *state.pool.acquire().await?, email, ip).await?;
            return Err(ApiError::not_allowed("The authenticator code is wrong or was already used.")
                .with_error("mfa_code", "is wrong or was already used")
                .with_details(serde_json::json!({ "mfa_required": true })));
        }
    }
    people::clear_failures(&mut tx, email).await?;
    tx.commit().await?;
    Ok(person)
}

/// Opens a session in `tx`; answers it and the `Set-Cookie` value.
pub async fn open(state: &AppState, tx: &mut sqlx::PgConnection, person_id: uuid::Uuid, team_id: Option<uuid::Uuid>) -> ApiResult<(people::Session, String)> {
    let token = schema::secret::mint("hs_");
    let csrf = schema::secret::mint("").plaintext;
    let expires_at = Utc::now() + TimeDelta::days(SESSION_DAYS);
    people::open_session(tx, person_id, team_id, &token.hash, &csrf, expires_at).await?;
    let session = people::session(tx, &token.hash).await?.ok_or_else(|| anyhow::anyhow!("the session just opened is not found"))?;
    let cookie = format!("{}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{}", crate::http::credentials::COOKIE, token.plaintext, SESSION_DAYS * 86_400, secure(state));
    Ok((session, cookie))
}

pub fn secure(state: &AppState) -> &'static str {
    if state.config.public_url.starts_with("https://") { "; Secure" } else { "" }
}

/// A session as answered.
pub fn view(session: &people::Session) -> SessionView {
    let team = match (session.team_id, &session.team_name, &session.role) {
        (Some(id), Some(name), Some(role)) => Some(TeamRole { id: id.to_string(), name: name.clone(), role: Choice::new(role.clone()) }),
        _ => None,
    };
    SessionView {
        object: "session".into(),
        user: PersonView {
            id: session.person_id.to_string(),
            email: session.email.clone(),
            name: session.name.clone(),
            email_verified: session.email_verified_at.is_some(),
            mfa_enabled: session.mfa_enabled,
        },
        team: Nullable(team),
        csrf_token: session.csrf_token.clone(),
        expires_at: session.expires_at,
    }
}

/// A person's name: 1 to 100 characters on one line, trimmed.
pub fn person_name(raw: &str) -> Option<String> {
    crate::http::input::one_line(raw, 100)
}

/// An account's address: bare and lower-case.
pub fn address(raw: Option<String>) -> ApiResult<String> {
    let raw = raw.ok_or_else(|| ApiError::missing_field("email"))?;
    let mailbox = schema::email::Mailbox::parse(raw.trim()).map_err(|e| ApiError::refused_field("email", e))?;
    Ok(mailbox.key())
}


fn wrong_credentials() -> ApiError {
    ApiError::not_allowed("The email address or the password is wrong.")
}

/// An argon2id hash of a password nobody has, checked when the address has no account.
static DUMMY_HASH: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| hash_password(&schema::secret::mint("").plaintext).unwrap_or_default());

/// Checks a new password's length (10 to 200 characters) and hashes it with argon2id off the
/// async threads.
pub async fn new_password_hash(password: String) -> ApiResult<String> {
    if !PASSWORD_CHARS.contains(&password.chars().count()) {
        return Err(ApiError::refused_field("password", "must be 10 to 200 characters"));
    }
    Ok(tokio::task::spawn_blocking(move || hash_password(&password)).await.map_err(anyhow::Error::from)??)
}

fn hash_password(password: &str) -> anyhow::Result<String> {
    use argon2::password_hash::{PasswordHasher, SaltString, rand_core::OsRng};
    let salt = SaltString::generate(&mut OsRng);
    Ok(argon2::Argon2::default().hash_password(password.as_bytes(), &salt).map_err(|e| anyhow::anyhow!("hashing a password failed: {e}"))?.to_string())
}

fn verify_password(password: &str, stored: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    PasswordHash::new(stored).is_ok_and(|hash| argon2::Argon2::default().verify_password(password.as_bytes(), &hash).is_ok())
}
