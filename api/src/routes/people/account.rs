//! A person's own account: confirming the address, resetting a forgotten password (both by a
//! single-use link mailed from `HERALD_SYSTEM_FROM`), and the TOTP second factor with recovery
//! codes. The links open plain HTML pages whose forms post back; nothing needs JavaScript.

use crate::routes::people::account_mail::{self, AccountMail};
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::fields::Required;
use crate::http::form::FormBody;
use crate::routes::Tag;
use crate::routes::pages::html::{PageResponse, escape};
use crate::state::{AppState, SessionCaller};
use chrono::{TimeDelta, Utc};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::people;
use serde::Deserialize;
use crate::routes::people::login::{second_factor};
use crate::routes::people::links::{mail_verification, mint_link, VERIFY};

pub struct AccountApi;

const RESET: &str = "reset_password";
/// How long a reset link works.
const RESET_MINUTES: i64 = 60;
/// Links of one kind mailed to one person per hour; more are not sent.
const LINKS_PER_HOUR: i64 = 5;

/// Body of `POST /auth/password-reset`.
#[derive(Object, Deserialize)]
pub struct ResetRequest {
    /// The account's address.
    #[oai(validator(max_length = 320))]
    pub email: Required<String>,
}

/// A request for a mailed link, answered the same whether or not the address has an account.
#[derive(Object)]
pub struct LinkRequested {
    /// `email_verification` or `password_reset`.
    pub object: String,
    /// Always true: the link is mailed when the address has an account (and account mail is
    /// configured).
    pub requested: bool,
}

/// Body of the TOTP routes that take a code.
#[derive(Object, Deserialize)]
pub struct TotpCode {
    /// The authenticator's six-digit code (or, to turn TOTP off, a recovery code).
    #[oai(validator(max_length = 40))]
    pub code: Required<String>,
}

/// A TOTP enrolment waiting for its first code.
#[derive(Object)]
pub struct TotpEnrolment {
    /// Always `totp_enrolment`.
    pub object: String,
    /// The secret in base32, for typing into an authenticator app.
    pub secret: String,
    /// The `otpauth://` URI to show as a QR code.
    pub otpauth_uri: String,
}

/// The person's TOTP state.
#[derive(Object)]
pub struct TotpState {
    /// Always `totp`.
    pub object: String,
    /// Whether sign-in asks for a TOTP code.
    pub enabled: bool,
    /// Ten single-use codes, shown once when TOTP is turned on (empty otherwise).
    pub recovery_codes: Vec<String>,
}

#[derive(ApiResponse)]
pub enum Requested {
    /// Accepted.
    #[oai(status = 202)]
    Accepted(Json<LinkRequested>),
}

#[derive(ApiResponse)]
pub enum Enrolling {
    /// The secret to enrol; confirm it with a first code.
    #[oai(status = 201)]
    Created(Json<TotpEnrolment>),
}

#[poem_openapi::OpenApi(tag = "Tag::People")]
impl AccountApi {
    /// Mail the signed-in person a new link that confirms their address (it works for 7 days).
    /// An address already confirmed is `422 validation_error`; more than five links an hour are
    /// `429 rate_limit_exceeded`.
    #[oai(path = "/auth/verify-email/resend", method = "post", operation_id = "resend-verification")]
    async fn resend(&self, state: Data<&AppState>, session: Data<&SessionCaller>) -> ApiResult<Requested> {
        let session = &session.0.session;
        if session.email_verified_at.is_some() {
            return Err(ApiError::refused("The address is already confirmed."));
        }
        let mut tx = state.pool.begin().await?;
        if people::tokens_since(&mut tx, session.person_id, VERIFY, Utc::now() - TimeDelta::hours(1)).await? >= LINKS_PER_HOUR {
            return Err(ApiError::new(ErrorKind::RateLimitExceeded, "Five links were mailed in the last hour; use one of them or try later."));
        }
        mail_verification(&mut tx, &state, session.person_id, &session.email).await?;
        tx.commit().await?;
        Ok(Requested::Accepted(Json(LinkRequested { object: "email_verification".into(), requested: true })))
    }

    /// The page of an address-confirmation link: one button confirms it (a mail scanner that
    /// only fetches the link confirms nothing). An unknown, used or expired link is the 404 page.
    #[oai(path = "/auth/verify-email/:token", method = "get", operation_id = "view-verify-email")]
    async fn verify_page(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<PageResponse> {
        let mut conn = state.pool.acquire().await?;
        let Some(person) = people::token_owner(&mut conn, VERIFY, &schema::secret::hash(&token.0)).await? else { return Ok(PageResponse::not_found()) };
        let body = format!(
            "<main><h1>Confirm your address</h1><p>Confirm <strong>{}</strong> for your Herald account.</p>\
             <form method=\"post\"><button type=\"submit\">Confirm</button></form></main>",
            escape(&person.email)
        );
        Ok(PageResponse::form_page("Confirm your address", &body))
    }

    /// Confirms the address of the link (once).
    #[oai(path = "/auth/verify-email/:token", method = "post", operation_id = "verify-email")]
    async fn verify(&self, state: Data<&AppState>, token: Path<String>, _form: FormBody) -> ApiResult<PageResponse> {
        let mut tx = state.pool.begin().await?;
        let Some(person_id) = people::use_token(&mut tx, VERIFY, &schema::secret::hash(&token.0)).await? else { return Ok(PageResponse::not_found()) };
        people::confirm_email(&mut tx, person_id).await?;
        tx.commit().await?;
        Ok(PageResponse::form_page("Address confirmed", "<main><h1>Address confirmed</h1><p class=\"notice\">Your address is confirmed. You can close this page.</p></main>"))
    }

    /// Mail a password-reset link (it works for one hour, once) to the address, if it has an
    /// account. The answer is the same either way, so it does not tell who has an account.
    #[oai(path = "/auth/password-reset", method = "post", operation_id = "request-password-reset")]
    async fn request_reset(&self, state: Data<&AppState>, body: Body<ResetRequest>) -> ApiResult<Requested> {
        let email = crate::routes::people::login::address(body.0.email.0)?;
        let mut tx = state.pool.begin().await?;
        if let Some(person) = people::by_email(&mut tx, &email).await?
            && people::tokens_since(&mut tx, person.id, RESET, Utc::now() - TimeDelta::hours(1)).await? < LINKS_PER_HOUR
        {
            let link = mint_link(&mut tx, &state, person.id, RESET, TimeDelta::minutes(RESET_MINUTES), "password-reset").await?;
            let mail = AccountMail {
                subject: "Reset your Herald password",
                intro: "Someone asked to reset the password of your Herald account. If it was you, choose a new password:",
                action: "Choose a new password",
                link: &link,
                outro: "The link works once, for one hour. If you did not ask, ignore this message; your password stays as it is.",
            };
            account_mail::send(&mut tx, &state.config, &person.email, &mail).await?;
        }
        tx.commit().await?;
        Ok(Requested::Accepted(Json(LinkRequested { object: "password_reset".into(), requested: true })))
    }

    /// The page of a password-reset link: a form for the new password.
    #[oai(path = "/auth/password-reset/:token", method = "get", operation_id = "view-password-reset")]
    async fn reset_page(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<PageResponse> {
        let mut conn = state.pool.acquire().await?;
        let Some(person) = people::token_owner(&mut conn, RESET, &schema::secret::hash(&token.0)).await? else { return Ok(PageResponse::not_found()) };
        Ok(reset_form(&person.email, None))
    }

    /// Sets the new password of a reset link (once): every session of the person ends, and the
    /// address counts as confirmed. A password outside 10 to 200 characters shows the form again.
    #[oai(path = "/auth/password-reset/:token", method = "post", operation_id = "reset-password")]
    async fn reset(&self, state: Data<&AppState>, token: Path<String>, form: FormBody) -> ApiResult<PageResponse> {
        let hash = schema::secret::hash(&token.0);
        let password = form.first("password").unwrap_or_default().to_string();
        let password_hash = match crate::routes::people::login::new_password_hash(password).await {
            Ok(hash) => hash,
            Err(error) => {
                let mut conn = state.pool.acquire().await?;
                let Some(person) = people::token_owner(&mut conn, RESET, &hash).await? else { return Ok(PageResponse::not_found()) };
                let problem = error.errors.first().map_or(error.message.clone(), |e| format!("The password {}.", e.message));
                return Ok(reset_form(&person.email, Some(&problem)));
            }
        };
        let mut tx = state.pool.begin().await?;
        let Some(person_id) = people::use_token(&mut tx, RESET, &hash).await? else { return Ok(PageResponse::not_found()) };
        people::set_password(&mut tx, person_id, &password_hash).await?;
        people::confirm_email(&mut tx, person_id).await?;
        if let Some(person) = people::by_id(&mut tx, person_id).await? {
            people::clear_failures(&mut tx, &person.email).await?;
        }
        tx.commit().await?;
        Ok(PageResponse::form_page("Password changed", "<main><h1>Password changed</h1><p class=\"notice\">Sign in with your new password. Every earlier session has ended.</p></main>"))
    }

    /// Start turning on TOTP: a new secret and its `otpauth://` URI. Sign-in asks for a code
    /// only once a first code confirms the enrolment. With TOTP already on, `422 validation_error`.
    #[oai(path = "/auth/mfa/totp", method = "post", operation_id = "enrol-totp")]
    async fn enrol(&self, state: Data<&AppState>, session: Data<&SessionCaller>) -> ApiResult<Enrolling> {
        let session = &session.0.session;
        if session.mfa_enabled {
            return Err(ApiError::refused("TOTP is already on; turn it off first to enrol another authenticator."));
        }
        let secret = crate::routes::people::mfa::new_secret();
        let mut tx = state.pool.begin().await?;
        let sealed = crate::routes::people::mfa::seal(&mut tx, &secret).await?;
        people::begin_totp(&mut tx, session.person_id, &sealed).await?;
        tx.commit().await?;
        Ok(Enrolling::Created(Json(TotpEnrolment {
            object: "totp_enrolment".into(),
            secret: crate::routes::people::mfa::base32(&secret),
            otpauth_uri: crate::routes::people::mfa::otpauth_uri("Herald", &session.email, &secret),
        })))
    }

    /// Confirm the enrolment with the authenticator's current code: TOTP is on from now, and the
    /// answer carries ten recovery codes, shown this once. A wrong code, or no enrolment started,
    /// is `422 validation_error`.
    #[oai(path = "/auth/mfa/totp/confirm", method = "post", operation_id = "confirm-totp")]
    async fn confirm(&self, state: Data<&AppState>, session: Data<&SessionCaller>, body: Body<TotpCode>) -> ApiResult<Json<TotpState>> {
        let code = body.0.code.0.ok_or_else(|| ApiError::missing_field("code"))?;
        let person_id = session.0.session.person_id;
        let mut tx = state.pool.begin().await?;
        let totp = people::totp(&mut tx, person_id).await?;
        let (Some(sealed), None) = (totp.totp_secret, totp.totp_enabled_at) else {
            return Err(ApiError::refused("Start with `POST /auth/mfa/totp`; TOTP is on or no enrolment is waiting."));
        };
        let secret = crate::routes::people::mfa::open(&mut tx, &sealed).await?;
        let Some(step) = crate::routes::people::mfa::check(&secret, &code, Utc::now().timestamp(), None) else {
            return Err(ApiError::refused_field("code", "is not the authenticator's current code"));
        };
        let codes = crate::routes::people::mfa::recovery_codes();
        let hashes: Vec<Vec<u8>> = codes.iter().map(|c| crate::routes::people::mfa::recovery_hash(c)).collect();
        people::enable_totp(&mut tx, person_id, step, &hashes).await?;
        tx.commit().await?;
        Ok(Json(TotpState { object: "totp".into(), enabled: true, recovery_codes: codes }))
    }

    /// Turn TOTP off, with a current code or a recovery code. A wrong code is
    /// `422 validation_error` and changes nothing.
    #[oai(path = "/auth/mfa/totp/disable", method = "post", operation_id = "disable-totp")]
    async fn disable(&self, state: Data<&AppState>, session: Data<&SessionCaller>, body: Body<TotpCode>) -> ApiResult<Json<TotpState>> {
        let code = body.0.code.0.ok_or_else(|| ApiError::missing_field("code"))?;
        let session = &session.0.session;
        if !session.mfa_enabled {
            return Err(ApiError::refused("TOTP is not on."));
        }
        let mut tx = state.pool.begin().await?;
        if !second_factor(&mut tx, session.person_id, &code).await? {
            return Err(ApiError::refused_field("code", "is wrong or was already used"));
        }
        people::disable_totp(&mut tx, session.person_id).await?;
        tx.commit().await?;
        Ok(Json(TotpState { object: "totp".into(), enabled: false, recovery_codes: Vec::new() }))
    }
}

fn reset_form(email: &str, problem: Option<&str>) -> PageResponse {
    let problem = problem.map(|p| format!("<p class=\"notice\">{}</p>", escape(p))).unwrap_or_default();
    let body = format!(
        "<main><h1>Choose a new password</h1><p>For <strong>{}</strong>.</p>{problem}\
         <form method=\"post\"><label>New password (10 to 200 characters) <input type=\"password\" name=\"password\" minlength=\"10\" maxlength=\"200\" required autocomplete=\"new-password\"></label>\
         <button type=\"submit\">Set password</button></form></main>",
        escape(email)
    );
    PageResponse::form_page("Choose a new password", &body)
}
