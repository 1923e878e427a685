//! Signing in through a team's single sign-on: `GET /auth/sso/start?email=` finds the team
//! whose single sign-on covers the address's domain and sends the browser to its provider;
//! `GET /auth/sso/callback` takes the provider's answer, checks it (the `state` against the
//! browser's cookie and the started sign-in, once and within ten minutes; the ID token through
//! [`oidc::finish`]), and signs the person in, making the account and the membership on the
//! first sign-in.

use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::routes::Tag;
use crate::routes::pages::html::{FORM_POLICY, document, escape};
use crate::routes::people::oidc::{self, Provider};
use crate::routes::people::session::{open, secure};
use crate::state::AppState;
use chrono::{TimeDelta, Utc};
use poem::web::Data;
use poem_openapi::ApiResponse;
use poem_openapi::param::Query;
use poem_openapi::payload::Html;
use schema::store::sso::{self, Login, Sso};
use schema::store::people;

pub struct SsoSignInApi;

/// The cookie that ties a sign-in to the browser that started it.
const STATE_COOKIE: &str = "herald_sso_state";
/// How long a started sign-in waits for the provider's answer.
const LOGIN_MINUTES: i64 = 10;

#[derive(ApiResponse)]
pub enum SsoStart {
    /// To the provider's authorization endpoint; the cookie ties the answer to this browser.
    #[oai(status = 303)]
    Redirect(#[oai(header = "location")] String, #[oai(header = "set-cookie")] String, #[oai(header = "cache-control")] String),
}

#[derive(ApiResponse)]
pub enum SsoCallback {
    /// Signed in (the session cookie is set).
    #[oai(status = 200)]
    SignedIn(Html<String>, #[oai(header = "content-security-policy")] String, #[oai(header = "cache-control")] String, #[oai(header = "set-cookie")] String),
    /// The sign-in was refused: what went wrong, for the person.
    #[oai(status = 403)]
    Refused(Html<String>, #[oai(header = "content-security-policy")] String, #[oai(header = "cache-control")] String),
}

fn refused(why: &str) -> SsoCallback {
    let body = format!("<main><h1>Single sign-on did not work</h1><p>{}</p><p>Start again from the sign-in page.</p></main>", escape(why));
    SsoCallback::Refused(Html(document("Sign-in refused", &body)), FORM_POLICY.into(), "no-store".into())
}

#[poem_openapi::OpenApi(tag = "Tag::People")]
impl SsoSignInApi {
    /// Start signing in with single sign-on: `303` to the identity provider of the team whose
    /// single sign-on covers the address's domain. An address no single sign-on covers is
    /// `422 validation_error`; a provider that does not answer, `503 service_unavailable`.
    #[oai(path = "/auth/sso/start", method = "get", operation_id = "start-sso")]
    async fn start(
        &self,
        state: Data<&AppState>,
        /// The address the person signs in with.
        #[oai(validator(max_length = 320))]
        email: Query<Option<String>>,
    ) -> ApiResult<SsoStart> {
        let email = crate::routes::people::login::address(email.0)?;
        let domain = email.rsplit_once('@').map(|(_, domain)| domain.to_string()).unwrap_or_default();
        let mut conn = state.pool.acquire().await?;
        let sso = sso::for_domain(&mut conn, &domain).await?.ok_or_else(|| ApiError::refused_field("email", "no single sign-on covers this address's domain; sign in with a password"))?;
        let secret = client_secret(&mut conn, &sso).await?;
        drop(conn);
        let started = oidc::start(&provider(&state, &sso, &secret), &email)
            .await
            .map_err(|why| ApiError::new(ErrorKind::ServiceUnavailable, format!("The team's identity provider {why}.")))?;
        let login = Login { team_id: sso.team_id, nonce: started.nonce, pkce_verifier: started.pkce_verifier };
        let expires_at = Utc::now() + TimeDelta::minutes(LOGIN_MINUTES);
        sso::start_login(&mut *state.pool.acquire().await?, &schema::secret::hash(&started.state), &login, expires_at).await?;
        let cookie = format!("{STATE_COOKIE}={}; Path=/auth/sso; HttpOnly; SameSite=Lax; Max-Age={}{}", started.state, LOGIN_MINUTES * 60, secure(&state));
        Ok(SsoStart::Redirect(started.url, cookie, "no-store".into()))
    }

    /// Where the identity provider sends the person back (`text/html`): the `state` must be
    /// the one this browser started with, unused and under ten minutes old, and the ID token
    /// must pass every check; the address must be on one of the team's domains. A person new
    /// to Herald gets an account, and one new to the team joins it as a `member`.
    #[oai(path = "/auth/sso/callback", method = "get", operation_id = "finish-sso")]
    async fn callback(
        &self,
        state: Data<&AppState>,
        request: &poem::Request,
        /// The authorization code.
        #[oai(validator(max_length = 2000))]
        code: Query<Option<String>>,
        /// The state the sign-in started with.
        #[oai(name = "state", validator(max_length = 200))]
        returned_state: Query<Option<String>>,
        /// The provider's error, when it refused.
        #[oai(validator(max_length = 200))]
        error: Query<Option<String>>,
    ) -> ApiResult<SsoCallback> {
        if let Some(error) = error.0 {
            return Ok(refused(&format!("The identity provider answered `{error}`.")));
        }
        let (Some(code), Some(returned)) = (code.0, returned_state.0) else {
            return Ok(refused("The identity provider's answer has no code or state."));
        };
        if cookie(request, STATE_COOKIE).as_deref() != Some(returned.as_str()) {
            return Ok(refused("This answer is for a sign-in started in another browser (its state does not match)."));
        }
        let mut tx = state.pool.begin().await?;
        let Some(login) = sso::take_login(&mut tx, &schema::secret::hash(&returned)).await? else {
            return Ok(refused("This sign-in was already used or is more than ten minutes old."));
        };
        // The started sign-in is spent even when what follows refuses it.
        tx.commit().await?;
        let mut conn = state.pool.acquire().await?;
        let Some(sso) = sso::get(&mut conn, login.team_id).await? else {
            return Ok(refused("The team no longer uses single sign-on."));
        };
        let secret = client_secret(&mut conn, &sso).await?;
        drop(conn);
        let identity = match oidc::finish(&provider(&state, &sso, &secret), &code, &login.nonce, &login.pkce_verifier).await {
            Ok(identity) => identity,
            Err(why) => return Ok(refused(&format!("The sign-in was refused: {why}."))),
        };
        let domain = identity.email.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
        if !sso.domains.iter().any(|d| d == domain) {
            return Ok(refused(&format!("The identity provider signed in {}, whose domain the team's single sign-on does not cover.", identity.email)));
        }
        if !identity.email_verified {
            return Ok(refused("The identity provider says this address is not verified."));
        }
        let mut tx = state.pool.begin().await?;
        let person_id = match people::by_email(&mut tx, &identity.email).await? {
            Some(person) => person.id,
            None => {
                let local = identity.email.split('@').next().unwrap_or("Teammate").to_string();
                let name = identity.name.as_deref().and_then(crate::routes::people::login::person_name).unwrap_or(local);
                // No password: the account signs in through the provider (a reset sets one).
                let unusable = crate::routes::people::login::new_password_hash(schema::secret::mint("").plaintext).await?;
                let id = schema::ids::new_id();
                let ip = crate::routes::pages::html::visitor(request).0;
                people::insert(&mut tx, id, &identity.email, &name, &unusable, ip.as_deref()).await?;
                people::by_email(&mut tx, &identity.email).await?.map(|p| p.id).unwrap_or(id)
            }
        };
        people::confirm_email(&mut tx, person_id).await?;
        if people::role_in(&mut tx, sso.team_id, person_id).await?.is_none() {
            people::add_member(&mut tx, sso.team_id, person_id, "member").await?;
        }
        let (session, session_cookie) = open(&state, &mut tx, person_id, Some(sso.team_id)).await?;
        tx.commit().await?;
        let team = session.team_name.clone().unwrap_or_default();
        let body = format!("<main><h1>You are signed in</h1><p class=\"notice\">Signed in as <strong>{}</strong> to {}.</p></main>", escape(&identity.email), escape(&team));
        Ok(SsoCallback::SignedIn(Html(document("Signed in", &body)), FORM_POLICY.into(), "no-store".into(), session_cookie))
    }
}

/// The team's provider as Herald's client at it.
fn provider<'a>(state: &AppState, sso: &'a Sso, secret: &'a str) -> Provider<'a> {
    Provider {
        issuer: &sso.issuer,
        client_id: &sso.client_id,
        client_secret: secret,
        redirect_uri: format!("{}/auth/sso/callback", state.config.public_url.trim_end_matches('/')),
    }
}

/// The team's client secret, unsealed.
async fn client_secret(conn: &mut sqlx::PgConnection, sso: &Sso) -> ApiResult<String> {
    let key = oidc::sealing_key(conn).await?;
    let plain = schema::secret::open(&key, &sso.client_secret).ok_or_else(|| anyhow::anyhow!("a single sign-on client secret does not open with the sso key"))?;
    Ok(String::from_utf8(plain).map_err(anyhow::Error::from)?)
}

/// A cookie's value from the request.
fn cookie(request: &poem::Request, name: &str) -> Option<String> {
    request
        .headers()
        .get_all("cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
}
