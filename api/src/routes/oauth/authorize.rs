//! The authorization endpoint with PKCE S256 and the consent page a person answers, signed in
//! to the team whose access they grant.

use crate::http::error::{ApiError, ApiResult};
use crate::http::form::FormBody;
use crate::http::operations::SCOPES;
use crate::routes::Tag;
use crate::routes::pages::html::{document, escape, not_found_page};
use crate::state::AppState;
use chrono::{TimeDelta, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Html;
use poem_openapi::ApiResponse;
use schema::store::{oauth, people};
use crate::routes::oauth::answers::CODE_PREFIX;
use crate::routes::oauth::answers::CODE_SECONDS;
use crate::routes::oauth::answers::base;
use crate::routes::oauth::answers::names_this_api;

pub struct AuthorizeApi;

#[poem_openapi::OpenApi(tag = "Tag::OAuth")]
impl AuthorizeApi {
    /// Start an authorization (open it in the person's browser). An unknown or disabled client,
    /// or a `redirect_uri` not registered exactly, answers a 400 page and never redirects. Every
    /// other failure redirects to `redirect_uri` with `error`, `error_description` and `state`:
    /// `unsupported_response_type`; `invalid_request` for a missing or malformed
    /// `code_challenge` (43 base64url characters), a method other than `S256`, a missing
    /// `state` or one over 512 characters; `invalid_scope`; `invalid_target` for a `resource`
    /// that is not this API. Otherwise a 302 to the consent page.
    #[oai(path = "/oauth/authorize", method = "get", operation_id = "authorize")]
    #[allow(clippy::too_many_arguments)]
    async fn authorize(
        &self,
        state: Data<&AppState>,
        response_type: Query<Option<String>>,
        client_id: Query<Option<String>>,
        redirect_uri: Query<Option<String>>,
        code_challenge: Query<Option<String>>,
        code_challenge_method: Query<Option<String>>,
        #[oai(name = "state")] client_state: Query<Option<String>>,
        scope: Query<Option<String>>,
        resource: Query<Option<String>>,
    ) -> ApiResult<BrowserAnswer> {
        let mut conn = state.pool.acquire().await?;
        let client = match client_id.0.as_deref() {
            Some(id) => oauth::client(&mut conn, id).await?,
            None => None,
        };
        let Some(client) = client else {
            return Ok(error_page("This application is not registered", "The link names an application Herald does not know, or one that was removed."));
        };
        let Some(redirect) = redirect_uri.0.filter(|uri| client.metadata.redirect_uris.contains(uri)) else {
            return Ok(error_page("This link cannot be used", "The application asked to return to an address it did not register."));
        };
        let back = |error: &str, description: &str| {
            let mut pairs = vec![("error", error.to_string()), ("error_description", description.to_string())];
            if let Some(given) = client_state.0.as_deref().filter(|s| s.chars().count() <= MAX_STATE) {
                pairs.push(("state", given.to_string()));
            }
            redirect_to(&redirect, &pairs)
        };
        if response_type.0.as_deref() != Some("code") {
            return Ok(back("unsupported_response_type", "response_type must be code"));
        }
        let Some(client_state) = client_state.0.clone() else { return Ok(back("invalid_request", "state is required")) };
        if client_state.chars().count() > MAX_STATE {
            return Ok(back("invalid_request", "state must be at most 512 characters"));
        }
        let Some(challenge) = code_challenge.0.filter(|c| c.len() == 43 && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')) else {
            return Ok(back("invalid_request", "code_challenge must be 43 base64url characters (the SHA-256 of the verifier)"));
        };
        if code_challenge_method.0.as_deref() != Some("S256") {
            return Ok(back("invalid_request", "code_challenge_method must be S256"));
        }
        let scopes = match requested_scopes(scope.0.as_deref(), client.metadata.scope.as_deref()) {
            Ok(scopes) => scopes,
            Err(description) => return Ok(back("invalid_scope", &description)),
        };
        if let Some(resource) = resource.0.as_deref()
            && !names_this_api(&state, resource)
        {
            return Ok(back("invalid_target", "resource must name this API"));
        }
        let token = schema::secret::mint("");
        oauth::insert_request(&mut conn, &token.hash, client.id, &redirect, &challenge, &scopes, &client_state, resource.0.as_deref(), Utc::now() + TimeDelta::minutes(REQUEST_MINUTES)).await?;
        Ok(BrowserAnswer::Redirect(format!("{}/oauth/consent/{}", base(&state), token.plaintext), "no-store".into()))
    }

    /// The consent page: sign in if needed, pick one of the person's teams, see the client's
    /// name, links and the scopes it asks for, and approve or refuse. A plain form; no
    /// JavaScript.
    #[oai(path = "/oauth/consent/:token", method = "get", operation_id = "view-consent")]
    async fn consent(&self, state: Data<&AppState>, request: &poem::Request, token: Path<String>) -> ApiResult<BrowserAnswer> {
        let mut conn = state.pool.acquire().await?;
        let Some(auth) = oauth::request(&mut conn, &schema::secret::hash(&token.0)).await? else { return Ok(gone()) };
        let Some(client) = oauth::client_by_id(&mut conn, auth.client_id).await? else { return Ok(gone()) };
        let session = session_of(&mut conn, request).await?;
        consent_page(&mut conn, &client, &auth, session.as_ref(), None, None).await
    }

    /// The consent page's answers: `action=sign_in` (`email`, `password`, `mfa_code`) signs in
    /// through the same throttled check as `POST /auth/login`; `decision=approve` (with `team_id`
    /// and the session's `csrf_token`) redirects to the client with `code` and `state`;
    /// `decision=deny` redirects with `error=access_denied`.
    #[oai(path = "/oauth/consent/:token", method = "post", operation_id = "answer-consent")]
    async fn answer(&self, state: Data<&AppState>, request: &poem::Request, token: Path<String>, form: FormBody) -> ApiResult<BrowserAnswer> {
        let mut conn = state.pool.acquire().await?;
        let Some(auth) = oauth::request(&mut conn, &schema::secret::hash(&token.0)).await? else { return Ok(gone()) };
        let Some(client) = oauth::client_by_id(&mut conn, auth.client_id).await? else { return Ok(gone()) };
        if form.first("action") == Some("sign_in") {
            let email = crate::routes::people::login::address(form.first("email").map(str::to_string)).ok();
            let ip = crate::routes::pages::html::visitor(request).0;
            let person = match email {
                Some(email) => crate::routes::people::login::authenticate(&state, &email, form.first("password").unwrap_or_default(), form.first("mfa_code"), ip.as_deref()).await,
                None => Err(ApiError::not_allowed("The email address or the password is wrong.")),
            };
            let person = match person {
                Ok(person) => person,
                Err(error) => return consent_page(&mut conn, &client, &auth, None, Some(&error.message), None).await,
            };
            let mut tx = state.pool.begin().await?;
            let team_id = people::first_team(&mut tx, person.id).await?;
            let (session, cookie) = crate::routes::people::session::open(&state, &mut tx, person.id, team_id).await?;
            tx.commit().await?;
            return consent_page(&mut conn, &client, &auth, Some(&session), None, Some(cookie)).await;
        }
        let Some(session) = session_of(&mut conn, request).await? else {
            return consent_page(&mut conn, &client, &auth, None, Some("Sign in first."), None).await;
        };
        if form.first("csrf_token") != Some(session.csrf_token.as_str()) {
            return consent_page(&mut conn, &client, &auth, Some(&session), Some("The form expired; answer again."), None).await;
        }
        let with_state = |mut pairs: Vec<(&'static str, String)>| {
            pairs.push(("state", auth.state.clone()));
            redirect_to(&auth.redirect_uri, &pairs)
        };
        let mut tx = state.pool.begin().await?;
        if !oauth::finish_request(&mut tx, auth.id).await? {
            return Ok(gone());
        }
        if form.first("decision") != Some("approve") {
            tx.commit().await?;
            return Ok(with_state(vec![("error", "access_denied".into()), ("error_description", "the person refused".into())]));
        }
        let team_id = form.first("team_id").and_then(schema::ids::parse_id);
        let role = match team_id {
            Some(team_id) => people::role_in(&mut tx, team_id, session.person_id).await?,
            None => None,
        };
        let (Some(team_id), Some(_)) = (team_id, role) else {
            drop(tx);
            return consent_page(&mut conn, &client, &auth, Some(&session), Some("Pick one of your teams."), None).await;
        };
        let grant_id = oauth::upsert_grant(&mut tx, team_id, session.person_id, client.id, &auth.scopes).await?;
        let code = schema::secret::mint(CODE_PREFIX);
        oauth::insert_code(
            &mut tx,
            &oauth::Code {
                code_hash: code.hash,
                grant_id,
                client_id: client.id,
                redirect_uri: auth.redirect_uri.clone(),
                code_challenge: auth.code_challenge.clone(),
                scopes: auth.scopes.clone(),
                resource: auth.resource.clone(),
                expires_at: Utc::now() + TimeDelta::seconds(CODE_SECONDS),
                used_at: None,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(with_state(vec![("code", code.plaintext), ("iss", base(&state))]))
    }
}

pub const REQUEST_MINUTES: i64 = 10;
pub const MAX_STATE: usize = 512;

/// The consent page's policy: no scripts; its form posts here, and the answer redirects to the
/// client (so `form-action` is not limited to this origin).
pub const CONSENT_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; base-uri 'none'; frame-ancestors 'none'";

/// A browser's answer: a page, a redirect, or the error page.
#[derive(ApiResponse)]
pub enum BrowserAnswer {
    /// A page (the consent page, or its sign-in form).
    #[oai(status = 200)]
    Ok(
        Html<String>,
        #[oai(header = "content-security-policy")] String,
        #[oai(header = "cache-control")] String,
        #[oai(header = "set-cookie")] Option<String>,
    ),
    /// To the consent page, or back to the client with `code` or `error`, and `state`.
    #[oai(status = 302)]
    Redirect(#[oai(header = "location")] String, #[oai(header = "cache-control")] String),
    /// An unknown or disabled client, or an unregistered redirect URI: never redirected.
    #[oai(status = 400)]
    BadRequest(Html<String>, #[oai(header = "cache-control")] String),
    /// An unknown or expired authorization request.
    #[oai(status = 404)]
    NotFound(Html<String>, #[oai(header = "cache-control")] String),
}

/// The scopes an authorization asks for: those named (each known, and among the client's
/// registered scopes when it registered some), else the client's registered scopes, else every
/// scope.
pub fn requested_scopes(asked: Option<&str>, registered: Option<&str>) -> Result<Vec<String>, String> {
    let registered: Option<Vec<&str>> = registered.map(|s| s.split_whitespace().collect());
    let asked: Vec<&str> = asked.map(|s| s.split_whitespace().collect()).unwrap_or_default();
    let mut scopes: Vec<String> = if asked.is_empty() {
        registered.clone().unwrap_or_else(|| SCOPES.to_vec()).into_iter().map(str::to_string).collect()
    } else {
        for scope in &asked {
            if !SCOPES.contains(scope) {
                return Err(format!("{scope} is not a scope of this API"));
            }
            if registered.as_ref().is_some_and(|r| !r.contains(scope)) {
                return Err(format!("{scope} is not among the client's registered scopes"));
            }
        }
        asked.into_iter().map(str::to_string).collect()
    };
    scopes.sort();
    scopes.dedup();
    Ok(scopes)
}

/// A redirect to `uri` with `pairs` added to its query.
pub fn redirect_to(uri: &str, pairs: &[(&str, String)]) -> BrowserAnswer {
    let location = match url::Url::parse(uri) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
            url.to_string()
        }
        Err(_) => uri.to_string(),
    };
    BrowserAnswer::Redirect(location, "no-store".into())
}

pub fn error_page(title: &str, text: &str) -> BrowserAnswer {
    let body = format!("<main><h1>{}</h1><p>{}</p></main>", escape(title), escape(text));
    BrowserAnswer::BadRequest(Html(document(title, &body)), "no-store".into())
}

pub fn gone() -> BrowserAnswer {
    BrowserAnswer::NotFound(Html(not_found_page()), "no-store".into())
}

/// The dashboard session of a page request's cookie, if live.
pub async fn session_of(conn: &mut sqlx::PgConnection, request: &poem::Request) -> ApiResult<Option<people::Session>> {
    let Some(token) = crate::http::credentials::cookie(request, crate::http::credentials::COOKIE) else { return Ok(None) };
    Ok(people::session(conn, &schema::secret::hash(&token)).await?)
}

/// The consent page: the sign-in form without a session, else the client, its scopes and the
/// person's teams.
pub async fn consent_page(
    conn: &mut sqlx::PgConnection,
    client: &oauth::Client,
    auth: &oauth::AuthRequest,
    session: Option<&people::Session>,
    problem: Option<&str>,
    cookie: Option<String>,
) -> ApiResult<BrowserAnswer> {
    let problem = problem.map(|p| format!("<p class=\"notice\">{}</p>", escape(p))).unwrap_or_default();
    let name = escape(&client.metadata.client_name);
    let links: String = [("Website", &client.metadata.client_uri), ("Logo", &client.metadata.logo_uri)]
        .iter()
        .filter_map(|(label, link)| link.as_ref().map(|l| format!(" <a href=\"{}\" rel=\"noopener noreferrer\">{label}</a>", escape(l))))
        .collect();
    let body = match session {
        None => format!(
            "<main><h1>Sign in to continue</h1><p><strong>{name}</strong> asks to use Herald on your behalf.{links}</p>{problem}\
             <form method=\"post\"><input type=\"hidden\" name=\"action\" value=\"sign_in\">\
             <label>Email <input type=\"email\" name=\"email\" required autocomplete=\"username\"></label>\
             <label>Password <input type=\"password\" name=\"password\" required autocomplete=\"current-password\"></label>\
             <label>Authenticator code, if your account has one <input name=\"mfa_code\" autocomplete=\"one-time-code\"></label>\
             <button type=\"submit\">Sign in</button></form></main>"
        ),
        Some(session) => {
            let teams = people::memberships(conn, session.person_id).await?;
            let scopes: String = auth.scopes.iter().map(|s| format!("<li><code>{}</code></li>", escape(s))).collect();
            let choices: String = teams
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let checked = if Some(t.team_id) == session.team_id || (session.team_id.is_none() && i == 0) { " checked" } else { "" };
                    format!("<label><input type=\"radio\" name=\"team_id\" value=\"{}\"{checked}> {} ({})</label>", t.team_id, escape(&t.team_name), escape(&t.role))
                })
                .collect();
            format!(
                "<main><h1>Allow {name}?</h1><p><strong>{name}</strong> asks to act as <strong>{}</strong> in one of your teams.{links}</p>{problem}\
                 <p>It will be able to use:</p><ul>{scopes}</ul>\
                 <form method=\"post\"><input type=\"hidden\" name=\"csrf_token\" value=\"{}\"><fieldset><legend>Team</legend>{choices}</fieldset>\
                 <button type=\"submit\" name=\"decision\" value=\"approve\">Allow</button> \
                 <button type=\"submit\" name=\"decision\" value=\"deny\">Refuse</button></form></main>",
                escape(&session.email),
                escape(&session.csrf_token),
            )
        }
    };
    Ok(BrowserAnswer::Ok(Html(document(&format!("Allow {}", client.metadata.client_name), &body)), CONSENT_POLICY.into(), "no-store".into(), cookie))
}
