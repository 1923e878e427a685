//! The OAuth 2.1 authorization server for public clients (agents and MCP clients): dynamic
//! registration (RFC 7591) and its management (RFC 7592), authorization with PKCE `S256` through
//! a consent page, the token endpoint (`authorization_code`, `refresh_token` with rotation and
//! reuse detection), revocation (RFC 7009), resource indicators (RFC 8707), discovery (RFC 8414,
//! RFC 9728), and the grants a team has given. Every secret is stored as its SHA-256 only.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Nullable;
use crate::http::form::FormBody;
use crate::http::operations::SCOPES;
use crate::routes::Tag;
use crate::routes::pages::html::{document, escape, not_found_page};
use crate::state::{AppState, Caller};
use chrono::{DateTime, TimeDelta, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Html, Json};
use poem_openapi::{ApiResponse, Object};
use schema::store::{oauth, people};
use serde::Deserialize;
use sha2::{Digest, Sha256};

pub struct OAuthApi;

const CLIENT_PREFIX: &str = "rkoc_";
const REGISTRATION_PREFIX: &str = "rkor_";
const CODE_PREFIX: &str = "rkc_";
const REFRESH_PREFIX: &str = "rkr_";
/// Lifetimes.
const ACCESS_SECONDS: i64 = 3600;
const REFRESH_DAYS: i64 = 30;
const CODE_SECONDS: i64 = 300;
const REQUEST_MINUTES: i64 = 10;
/// Registration limits.
const REGISTRATIONS_PER_IP_HOUR: i64 = 10;
const REGISTRATIONS_PER_DAY: i64 = 1000;
const MAX_REDIRECT_URIS: usize = 10;
const MAX_STATE: usize = 512;

/// The consent page's policy: no scripts; its form posts here, and the answer redirects to the
/// client (so `form-action` is not limited to this origin).
const CONSENT_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; base-uri 'none'; frame-ancestors 'none'";

/// `{ error, error_description }`, the OAuth error shape.
#[derive(Object, Debug)]
pub struct OAuthError {
    /// One of document C's OAuth error values.
    pub error: String,
    pub error_description: String,
}

/// Body of `POST /oauth/register` and `PUT /oauth/register/{client_id}` (RFC 7591).
#[derive(Object, Deserialize, Default)]
pub struct ClientMetadata {
    /// 1 to 10 https URLs, or http URLs on a loopback host; matched exactly at authorize.
    #[oai(validator(max_items = 10))]
    pub redirect_uris: Option<Vec<String>>,
    /// Shown on the consent page; 1 to 200 characters.
    #[oai(validator(max_length = 200))]
    pub client_name: Option<String>,
    /// Space-separated scopes the client asks for when authorize names none.
    #[oai(validator(max_length = 2000))]
    pub scope: Option<String>,
    /// An https link shown on the consent page.
    #[oai(validator(max_length = 2000))]
    pub client_uri: Option<String>,
    /// An https image shown on the consent page.
    #[oai(validator(max_length = 2000))]
    pub logo_uri: Option<String>,
    /// `authorization_code` and `refresh_token` (both by default).
    pub grant_types: Option<Vec<String>>,
    /// Only `["code"]`.
    pub response_types: Option<Vec<String>>,
    /// Only `none`: public clients.
    #[oai(validator(max_length = 100))]
    pub token_endpoint_auth_method: Option<String>,
    #[oai(validator(max_length = 200))]
    pub software_id: Option<String>,
    #[oai(validator(max_length = 200))]
    pub software_version: Option<String>,
}

/// A registered client (RFC 7591).
#[derive(Object)]
pub struct ClientView {
    /// `rkoc_…`.
    pub client_id: String,
    /// Unix seconds.
    pub client_id_issued_at: i64,
    /// Where the client manages its registration with its registration access token.
    pub registration_client_uri: String,
    /// `rkor_…`: answered once, at registration.
    #[oai(skip_serializing_if_is_none)]
    pub registration_access_token: Option<String>,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
    /// Always `none`.
    pub token_endpoint_auth_method: String,
    pub scope: Nullable<String>,
    pub client_uri: Nullable<String>,
    pub logo_uri: Nullable<String>,
    pub software_id: Nullable<String>,
    pub software_version: Nullable<String>,
}

/// A token response (RFC 6749 §5.1).
#[derive(Object)]
pub struct TokenView {
    /// `rko_…`.
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: String,
    /// Seconds the access token lives (3,600).
    pub expires_in: i64,
    /// `rkr_…`: use it once; a refresh answers a new one.
    pub refresh_token: String,
    /// The granted scopes, space-separated.
    pub scope: String,
}

/// Authorization-server metadata (RFC 8414).
#[derive(Object)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: String,
    pub revocation_endpoint: String,
    pub response_types_supported: Vec<String>,
    pub grant_types_supported: Vec<String>,
    pub code_challenge_methods_supported: Vec<String>,
    pub token_endpoint_auth_methods_supported: Vec<String>,
    pub revocation_endpoint_auth_methods_supported: Vec<String>,
    pub scopes_supported: Vec<String>,
}

/// Protected-resource metadata (RFC 9728).
#[derive(Object)]
pub struct ResourceMetadata {
    /// This API's identifier, the `resource` value tokens are for.
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub bearer_methods_supported: Vec<String>,
    pub resource_name: String,
}

/// A grant: what a person allowed a client to do in the team.
#[derive(Object)]
pub struct GrantView {
    /// Always `oauth_grant`.
    pub object: String,
    pub id: String,
    pub client_id: String,
    pub client_name: String,
    /// The person whose access the client's tokens act with.
    pub user_id: String,
    pub user_email: String,
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The team's live grants, newest first (the latest 500).
#[derive(Object)]
pub struct GrantList {
    /// Always `list`.
    pub object: String,
    pub data: Vec<GrantView>,
}

/// `{ object: 'oauth_grant', id, deleted: true }`.
#[derive(Object)]
pub struct GrantDeleted {
    /// Always `oauth_grant`.
    pub object: String,
    pub id: String,
    /// Always true.
    pub deleted: bool,
}

#[derive(ApiResponse)]
pub enum Registered {
    /// The client, with its registration access token (answered this once).
    #[oai(status = 201)]
    Created(Json<ClientView>, #[oai(header = "cache-control")] String),
    /// `invalid_client_metadata` or `invalid_redirect_uri`.
    #[oai(status = 400)]
    BadRequest(Json<OAuthError>),
    /// `invalid_request`: over 10 registrations per address per hour or 1,000 a day.
    #[oai(status = 429)]
    TooMany(Json<OAuthError>),
}

#[derive(ApiResponse)]
pub enum Managed {
    /// The client.
    #[oai(status = 200)]
    Ok(Json<ClientView>, #[oai(header = "cache-control")] String),
    /// Deleted: the client is disabled and every grant and token of it revoked.
    #[oai(status = 204)]
    Deleted,
    /// `invalid_client_metadata` or `invalid_redirect_uri`.
    #[oai(status = 400)]
    BadRequest(Json<OAuthError>),
    /// `invalid_token`: no registration access token, or not this client's.
    #[oai(status = 401)]
    Unauthorized(Json<OAuthError>, #[oai(header = "www-authenticate")] String),
}

#[derive(ApiResponse)]
pub enum TokenAnswer {
    /// Tokens.
    #[oai(status = 200)]
    Ok(Json<TokenView>, #[oai(header = "cache-control")] String, #[oai(header = "pragma")] String),
    /// `invalid_request`, `invalid_grant`, `unauthorized_client`, `unsupported_grant_type`,
    /// `invalid_scope` or `invalid_target`.
    #[oai(status = 400)]
    BadRequest(Json<OAuthError>),
    /// `invalid_client`: unknown or disabled.
    #[oai(status = 401)]
    Unauthorized(Json<OAuthError>, #[oai(header = "www-authenticate")] String),
}

#[derive(ApiResponse)]
pub enum Revoked {
    /// Revoked, or nothing to revoke (RFC 7009 answers both alike).
    #[oai(status = 200)]
    Ok,
    /// `invalid_request`: no `token`.
    #[oai(status = 400)]
    BadRequest(Json<OAuthError>),
}

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

/// An OAuth error on its way to the answer.
struct Failure {
    status: u16,
    error: &'static str,
    description: String,
}

fn fail(error: &'static str, description: impl Into<String>) -> Failure {
    let status = match error {
        "invalid_client" | "invalid_token" => 401,
        _ => 400,
    };
    Failure { status, error, description: description.into() }
}

impl Failure {
    fn body(self) -> Json<OAuthError> {
        Json(OAuthError { error: self.error.into(), error_description: self.description })
    }
}

impl From<Failure> for Registered {
    fn from(f: Failure) -> Self {
        if f.status == 429 { Registered::TooMany(f.body()) } else { Registered::BadRequest(f.body()) }
    }
}

impl From<Failure> for Managed {
    fn from(f: Failure) -> Self {
        if f.status == 401 {
            let header = format!("Bearer error=\"{}\"", f.error);
            Managed::Unauthorized(f.body(), header)
        } else {
            Managed::BadRequest(f.body())
        }
    }
}

impl From<Failure> for TokenAnswer {
    fn from(f: Failure) -> Self {
        if f.status == 401 { TokenAnswer::Unauthorized(f.body(), "Bearer error=\"invalid_client\"".into()) } else { TokenAnswer::BadRequest(f.body()) }
    }
}

impl From<sqlx::Error> for Failure {
    fn from(error: sqlx::Error) -> Self {
        tracing::error!(%error, "an OAuth route's query failed");
        Failure { status: 500, error: "server_error", description: "An unexpected error occurred.".into() }
    }
}

type Answer<T> = Result<T, Failure>;

/// A JSON body documented as `T`, read like [`Body`], whose refusal is the OAuth error shape:
/// `400 invalid_client_metadata` (RFC 7591 §3.2.2) instead of the service's error body.
pub struct MetadataBody<T>(pub T);

impl<T: poem_openapi::types::Type> poem_openapi::payload::Payload for MetadataBody<T> {
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(_content_type: &str) -> bool {
        true
    }

    fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut poem_openapi::registry::Registry) {
        T::register(registry);
    }
}

impl<T: poem_openapi::types::Type + serde::de::DeserializeOwned + Send + 'static> poem_openapi::payload::ParsePayload for MetadataBody<T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &poem::Request, body: &mut poem::RequestBody) -> poem::Result<Self> {
        match <Body<T> as poem_openapi::payload::ParsePayload>::from_request(request, body).await {
            Ok(parsed) => Ok(MetadataBody(parsed.0)),
            Err(error) => {
                let body = serde_json::json!({ "error": "invalid_client_metadata", "error_description": error.to_string() });
                let response = poem::Response::builder().status(poem::http::StatusCode::BAD_REQUEST).content_type("application/json").body(body.to_string());
                Err(poem::Error::from_response(response))
            }
        }
    }
}

impl<'a, T: poem_openapi::types::Type + serde::de::DeserializeOwned + Send + 'static> poem_openapi::ApiExtractor<'a> for MetadataBody<T> {
    const TYPES: &'static [poem_openapi::ApiExtractorType] = &[poem_openapi::ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut poem_openapi::registry::Registry) {
        <Self as poem_openapi::payload::Payload>::register(registry);
    }

    fn request_meta() -> Option<poem_openapi::registry::MetaRequest> {
        <Body<T> as poem_openapi::ApiExtractor>::request_meta()
    }

    async fn from_request(request: &'a poem::Request, body: &mut poem::RequestBody, _options: poem_openapi::ExtractParamOptions<()>) -> poem::Result<Self> {
        <Self as poem_openapi::payload::ParsePayload>::from_request(request, body).await
    }
}

/// Answers a result whose failure is an OAuth error (a 500 for a failed query).
fn finish<T: From<Failure>>(result: Answer<T>) -> ApiResult<T> {
    match result {
        Ok(answer) => Ok(answer),
        Err(failure) if failure.status == 500 => Err(anyhow::anyhow!(failure.description).into()),
        Err(failure) => Ok(T::from(failure)),
    }
}

#[poem_openapi::OpenApi(tag = "Tag::OAuth")]
impl OAuthApi {
    /// Authorization-server metadata (RFC 8414): endpoints, PKCE `S256`, public clients, and
    /// every scope.
    #[oai(path = "/.well-known/oauth-authorization-server", method = "get", operation_id = "get-authorization-server-metadata")]
    async fn server_metadata(&self, state: Data<&AppState>) -> Json<ServerMetadata> {
        let base = base(&state);
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Json(ServerMetadata {
            issuer: base.clone(),
            authorization_endpoint: format!("{base}/oauth/authorize"),
            token_endpoint: format!("{base}/oauth/token"),
            registration_endpoint: format!("{base}/oauth/register"),
            revocation_endpoint: format!("{base}/oauth/revoke"),
            response_types_supported: strings(&["code"]),
            grant_types_supported: strings(&["authorization_code", "refresh_token"]),
            code_challenge_methods_supported: strings(&["S256"]),
            token_endpoint_auth_methods_supported: strings(&["none"]),
            revocation_endpoint_auth_methods_supported: strings(&["none"]),
            scopes_supported: strings(SCOPES),
        })
    }

    /// Protected-resource metadata (RFC 9728): this API as the resource its tokens are for.
    #[oai(path = "/.well-known/oauth-protected-resource", method = "get", operation_id = "get-protected-resource-metadata")]
    async fn resource_metadata(&self, state: Data<&AppState>) -> Json<ResourceMetadata> {
        Json(resource_metadata(&state))
    }

    /// Register a public client (RFC 7591). Refused: an auth method other than `none`, a
    /// response type other than `code`, a grant type other than `authorization_code` and
    /// `refresh_token`, an unknown scope, a non-https link (`400 invalid_client_metadata`); no
    /// redirect URI, more than 10, or one neither https nor loopback http
    /// (`400 invalid_redirect_uri`). More than 10 registrations per address an hour, or 1,000 a
    /// day in all, are `429 invalid_request`.
    #[oai(path = "/oauth/register", method = "post", operation_id = "register-oauth-client")]
    async fn register(&self, state: Data<&AppState>, request: &poem::Request, body: MetadataBody<ClientMetadata>) -> ApiResult<Registered> {
        finish(async {
            let metadata = checked_metadata(body.0)?;
            let ip = crate::routes::pages::html::visitor(request).0;
            let mut tx = state.pool.begin().await?;
            let (from_ip, today) = oauth::recent_registrations(&mut tx, ip.as_deref()).await?;
            if from_ip >= REGISTRATIONS_PER_IP_HOUR || today >= REGISTRATIONS_PER_DAY {
                return Err(Failure { status: 429, error: "invalid_request", description: "Too many registrations; try again later.".into() });
            }
            let client_id = schema::secret::mint(CLIENT_PREFIX).plaintext;
            let token = schema::secret::mint(REGISTRATION_PREFIX);
            let client = oauth::register(&mut tx, &client_id, &token.hash, &metadata, ip.as_deref()).await?;
            tx.commit().await?;
            Ok(Registered::Created(Json(client_view(&state, client, Some(token.plaintext))), "no-store".into()))
        }
        .await)
    }

    /// Read a registration (RFC 7592), with the registration access token as Bearer; an API key
    /// or another client's token is `401 invalid_token`.
    #[oai(path = "/oauth/register/:client_id", method = "get", operation_id = "get-oauth-client")]
    async fn get_client(&self, state: Data<&AppState>, request: &poem::Request, client_id: Path<String>) -> ApiResult<Managed> {
        finish(async {
            let client = registered(&state, request, &client_id.0).await?;
            Ok(Managed::Ok(Json(client_view(&state, client, None)), "no-store".into()))
        }
        .await)
    }

    /// Replace a registration's metadata (RFC 7592), by the rules of registration.
    #[oai(path = "/oauth/register/:client_id", method = "put", operation_id = "update-oauth-client")]
    async fn update_client(&self, state: Data<&AppState>, request: &poem::Request, client_id: Path<String>, body: MetadataBody<ClientMetadata>) -> ApiResult<Managed> {
        finish(async {
            let client = registered(&state, request, &client_id.0).await?;
            let metadata = checked_metadata(body.0)?;
            let mut tx = state.pool.begin().await?;
            let client = oauth::update_client(&mut tx, client.id, &metadata).await?;
            tx.commit().await?;
            Ok(Managed::Ok(Json(client_view(&state, client, None)), "no-store".into()))
        }
        .await)
    }

    /// Delete a registration (RFC 7592): the client is disabled, and its grants and tokens are
    /// revoked.
    #[oai(path = "/oauth/register/:client_id", method = "delete", operation_id = "delete-oauth-client")]
    async fn delete_client(&self, state: Data<&AppState>, request: &poem::Request, client_id: Path<String>) -> ApiResult<Managed> {
        finish(async {
            let client = registered(&state, request, &client_id.0).await?;
            let mut tx = state.pool.begin().await?;
            oauth::disable_client(&mut tx, client.id).await?;
            tx.commit().await?;
            crate::http::key_cache::settle(&state.pool).await?;
            Ok(Managed::Deleted)
        }
        .await)
    }

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
            let email = crate::routes::people::auth::address(form.first("email").map(str::to_string)).ok();
            let ip = crate::routes::pages::html::visitor(request).0;
            let person = match email {
                Some(email) => crate::routes::people::auth::authenticate(&state, &email, form.first("password").unwrap_or_default(), form.first("mfa_code"), ip.as_deref()).await,
                None => Err(ApiError::not_allowed("The email address or the password is wrong.")),
            };
            let person = match person {
                Ok(person) => person,
                Err(error) => return consent_page(&mut conn, &client, &auth, None, Some(&error.message), None).await,
            };
            let mut tx = state.pool.begin().await?;
            let team_id = people::first_team(&mut tx, person.id).await?;
            let (session, cookie) = crate::routes::people::auth::open(&state, &mut tx, person.id, team_id).await?;
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

    /// The token endpoint (`application/x-www-form-urlencoded`, RFC 6749): `grant_type`
    /// `authorization_code` with `code`, `redirect_uri`, `client_id`, `code_verifier` (and
    /// `resource`), or `refresh_token` with `refresh_token`, `client_id` (and a narrower `scope`).
    /// Codes work once for 5 minutes; access tokens live an hour; refresh tokens 30 days, and each
    /// works once: using one again revokes every token descended from the same code.
    #[oai(path = "/oauth/token", method = "post", operation_id = "oauth-token")]
    async fn token(&self, state: Data<&AppState>, form: FormBody) -> ApiResult<TokenAnswer> {
        finish(exchange(&state, &form).await)
    }

    /// Revoke a token (RFC 7009, form-encoded `token`, `token_type_hint`, `client_id`): an access
    /// token, or a refresh token with every token of its family. An unknown token answers 200 too.
    #[oai(path = "/oauth/revoke", method = "post", operation_id = "oauth-revoke")]
    async fn revoke(&self, state: Data<&AppState>, form: FormBody) -> ApiResult<Revoked> {
        let Some(token) = single(&form, "token").ok().flatten() else {
            return Ok(Revoked::BadRequest(fail("invalid_request", "token is required").body()));
        };
        let mut conn = state.pool.acquire().await?;
        let client = match single(&form, "client_id").ok().flatten() {
            Some(id) => oauth::client(&mut conn, &id).await?.map(|c| c.id),
            None => None,
        };
        oauth::revoke_token(&mut conn, &schema::secret::hash(&token), client).await?;
        drop(conn);
        crate::http::key_cache::settle(&state.pool).await?;
        Ok(Revoked::Ok)
    }

    /// The team's live grants (a `full_access` key only; an OAuth token is refused whatever its
    /// scopes).
    #[oai(path = "/oauth/grants", method = "get", operation_id = "list-oauth-grants")]
    async fn grants(&self, state: Data<&AppState>, caller: Data<&Caller>) -> ApiResult<Json<GrantList>> {
        let grants = oauth::grants(&mut *state.pool.acquire().await?, caller.team_id).await?;
        let data = grants
            .into_iter()
            .map(|g| GrantView {
                object: "oauth_grant".into(),
                id: g.id.to_string(),
                client_id: g.client_id,
                client_name: g.client_name,
                user_id: g.person_id.to_string(),
                user_email: g.email,
                scopes: g.scopes,
                created_at: g.created_at,
                updated_at: g.updated_at,
            })
            .collect();
        Ok(Json(GrantList { object: "list".into(), data }))
    }

    /// Revoke a grant: every token under it stops working on its next request.
    #[oai(path = "/oauth/grants/:grant_id", method = "delete", operation_id = "delete-oauth-grant")]
    async fn delete_grant(&self, state: Data<&AppState>, caller: Data<&Caller>, grant_id: Path<String>) -> ApiResult<Json<GrantDeleted>> {
        let id = crate::routes::path_id(&grant_id.0, "Grant")?;
        if !oauth::revoke_grant(&mut *state.pool.acquire().await?, caller.team_id, id).await? {
            return Err(ApiError::not_found("Grant"));
        }
        // Every process has dropped the grant's tokens before this answers.
        crate::http::key_cache::settle(&state.pool).await?;
        Ok(Json(GrantDeleted { object: "oauth_grant".into(), id: id.to_string(), deleted: true }))
    }
}

/// The protected-resource metadata of this API.
pub fn resource_metadata(state: &AppState) -> ResourceMetadata {
    let base = base(state);
    ResourceMetadata {
        resource: base.clone(),
        authorization_servers: vec![base],
        scopes_supported: SCOPES.iter().map(|s| s.to_string()).collect(),
        bearer_methods_supported: vec!["header".into()],
        resource_name: "Herald".into(),
    }
}

fn base(state: &AppState) -> String {
    state.config.public_url.trim_end_matches('/').to_string()
}

/// Whether a `resource` indicator names this API: its base, under `/api/v1`, or the MCP server.
fn names_this_api(state: &AppState, resource: &str) -> bool {
    let base = base(state);
    let resource = resource.trim_end_matches('/');
    [base.clone(), format!("{base}/api/v1"), format!("{base}/mcp")].iter().any(|r| r == resource)
}

/// The scopes an authorization asks for: those named (each known, and among the client's
/// registered scopes when it registered some), else the client's registered scopes, else every
/// scope.
fn requested_scopes(asked: Option<&str>, registered: Option<&str>) -> Result<Vec<String>, String> {
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

/// Checks registration metadata (RFC 7591 with this server's rules).
fn checked_metadata(body: ClientMetadata) -> Answer<oauth::Metadata> {
    let bad = |d: &str| fail("invalid_client_metadata", d);
    if body.token_endpoint_auth_method.as_deref().is_some_and(|m| m != "none") {
        return Err(bad("token_endpoint_auth_method must be none: only public clients register"));
    }
    let response_types = body.response_types.unwrap_or_else(|| vec!["code".into()]);
    if response_types != ["code"] {
        return Err(bad("response_types must be [\"code\"]"));
    }
    let grant_types = body.grant_types.unwrap_or_else(|| vec!["authorization_code".into(), "refresh_token".into()]);
    if grant_types.is_empty() || grant_types.iter().any(|g| g != "authorization_code" && g != "refresh_token") {
        return Err(bad("grant_types may hold authorization_code and refresh_token only"));
    }
    let redirect_uris = body.redirect_uris.unwrap_or_default();
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(fail("invalid_redirect_uri", "redirect_uris must hold 1 to 10 URIs"));
    }
    for uri in &redirect_uris {
        if !redirect_allowed(uri) {
            return Err(fail("invalid_redirect_uri", format!("{uri} is neither an https URL nor an http URL on a loopback address")));
        }
    }
    let client_name = body.client_name.as_deref().and_then(|n| crate::http::input::one_line(n, 200));
    let Some(client_name) = client_name else { return Err(bad("client_name is required: 1 to 200 characters on one line")) };
    if let Some(scope) = &body.scope
        && let Some(unknown) = scope.split_whitespace().find(|s| !SCOPES.contains(s))
    {
        return Err(bad(&format!("{unknown} is not a scope of this API")));
    }
    for (field, link) in [("client_uri", &body.client_uri), ("logo_uri", &body.logo_uri)] {
        if link.as_deref().is_some_and(|l| !l.starts_with("https://") || url::Url::parse(l).is_err()) {
            return Err(bad(&format!("{field} must be an https URL")));
        }
    }
    Ok(oauth::Metadata {
        client_name,
        redirect_uris,
        grant_types,
        response_types,
        scope: body.scope.map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|s| !s.is_empty()),
        client_uri: body.client_uri,
        logo_uri: body.logo_uri,
        software_id: body.software_id,
        software_version: body.software_version,
    })
}

/// https, or http on a loopback host (RFC 8252); no fragment.
fn redirect_allowed(uri: &str) -> bool {
    let Ok(url) = url::Url::parse(uri) else { return false };
    if url.fragment().is_some() {
        return false;
    }
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => matches!(url.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
            || matches!(url.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback())
            || url.host_str() == Some("localhost"),
        _ => false,
    }
}

/// The client of a registration-management request: its token as Bearer must be the client's.
async fn registered(state: &AppState, request: &poem::Request, client_id: &str) -> Answer<oauth::Client> {
    let token = request.header("authorization").and_then(|h| h.strip_prefix("Bearer ")).map(str::trim);
    let Some(token) = token.filter(|t| t.starts_with(REGISTRATION_PREFIX)) else {
        return Err(fail("invalid_token", "send the registration access token (rkor_…) as Bearer; API keys do not manage registrations"));
    };
    let mut conn = state.pool.acquire().await?;
    let client = oauth::client_by_registration(&mut conn, &schema::secret::hash(token)).await?;
    client.filter(|c| c.client_id == client_id).ok_or_else(|| fail("invalid_token", "the registration access token is unknown or not this client's"))
}

fn client_view(state: &AppState, client: oauth::Client, registration_access_token: Option<String>) -> ClientView {
    ClientView {
        registration_client_uri: format!("{}/oauth/register/{}", base(state), client.client_id),
        client_id: client.client_id,
        client_id_issued_at: client.created_at.timestamp(),
        registration_access_token,
        client_name: client.metadata.client_name,
        redirect_uris: client.metadata.redirect_uris,
        grant_types: client.metadata.grant_types,
        response_types: client.metadata.response_types,
        token_endpoint_auth_method: "none".into(),
        scope: Nullable(client.metadata.scope),
        client_uri: Nullable(client.metadata.client_uri),
        logo_uri: Nullable(client.metadata.logo_uri),
        software_id: Nullable(client.metadata.software_id),
        software_version: Nullable(client.metadata.software_version),
    }
}

/// The longest form value the OAuth endpoints read (tokens, ids and URIs are far shorter).
const MAX_FORM_VALUE: usize = 4096;

/// A form field given at most once (`invalid_request` when repeated, longer than 4,096
/// characters, or holding a control character).
fn single(form: &FormBody, name: &str) -> Answer<Option<String>> {
    let mut values = form.all(name);
    let first = values.next().map(str::to_string);
    if values.next().is_some() {
        return Err(fail("invalid_request", format!("{name} is repeated")));
    }
    if first.as_ref().is_some_and(|v| v.len() > MAX_FORM_VALUE || v.chars().any(char::is_control)) {
        return Err(fail("invalid_request", format!("{name} is malformed")));
    }
    Ok(first.filter(|v| !v.is_empty()))
}

fn required(form: &FormBody, name: &str) -> Answer<String> {
    single(form, name)?.ok_or_else(|| fail("invalid_request", format!("{name} is required")))
}

/// The token endpoint's work.
async fn exchange(state: &AppState, form: &FormBody) -> Answer<TokenAnswer> {
    let grant_type = required(form, "grant_type")?;
    if grant_type != "authorization_code" && grant_type != "refresh_token" {
        return Err(fail("unsupported_grant_type", "grant_type must be authorization_code or refresh_token"));
    }
    let client_id = required(form, "client_id")?;
    let mut tx = state.pool.begin().await?;
    let client = oauth::client(&mut tx, &client_id).await?.ok_or_else(|| fail("invalid_client", "the client is unknown or disabled"))?;
    if !client.metadata.grant_types.contains(&grant_type) {
        return Err(fail("unauthorized_client", format!("the client did not register the {grant_type} grant")));
    }
    if let Some(resource) = single(form, "resource")?
        && !names_this_api(state, &resource)
    {
        return Err(fail("invalid_target", "resource must name this API"));
    }
    let (grant_id, family_id, scopes, code_hash) = if grant_type == "authorization_code" {
        let code = required(form, "code")?;
        let redirect_uri = required(form, "redirect_uri")?;
        let verifier = required(form, "code_verifier")?;
        let hash = schema::secret::hash(&code);
        let stored = oauth::code(&mut tx, &hash).await?.ok_or_else(|| fail("invalid_grant", "the code is unknown"))?;
        if stored.used_at.is_some() {
            // A replayed code: what it issued is revoked (RFC 6749 §4.1.2), in this transaction.
            oauth::revoke_issued_for_code(&mut tx, &hash).await?;
            tx.commit().await?;
            crate::http::key_cache::settle(&state.pool).await?;
            return Err(fail("invalid_grant", "the code was already used; the tokens it issued are revoked"));
        }
        if stored.expires_at <= Utc::now() {
            return Err(fail("invalid_grant", "the code has expired"));
        }
        if stored.client_id != client.id {
            return Err(fail("invalid_grant", "the code was issued to another client"));
        }
        if stored.redirect_uri != redirect_uri {
            return Err(fail("invalid_grant", "redirect_uri does not match the authorization's"));
        }
        if !(43..=128).contains(&verifier.len()) || pkce_challenge(&verifier) != stored.code_challenge {
            return Err(fail("invalid_grant", "code_verifier does not match the code_challenge"));
        }
        oauth::use_code(&mut tx, &hash).await?;
        (stored.grant_id, schema::ids::new_id(), stored.scopes, Some(hash))
    } else {
        let token = required(form, "refresh_token")?;
        let stored = oauth::refresh(&mut tx, &schema::secret::hash(&token)).await?.ok_or_else(|| fail("invalid_grant", "the refresh token is unknown"))?;
        if stored.client_id != client.id {
            return Err(fail("invalid_grant", "the refresh token was issued to another client"));
        }
        if stored.used_at.is_some() {
            // Reuse: someone else may hold the rotated token. Revoke the whole family.
            oauth::revoke_family(&mut tx, stored.family_id).await?;
            tx.commit().await?;
            crate::http::key_cache::settle(&state.pool).await?;
            return Err(fail("invalid_grant", "the refresh token was already used; every token of its family is revoked"));
        }
        if stored.revoked_at.is_some() || stored.grant_revoked || stored.expires_at <= Utc::now() {
            return Err(fail("invalid_grant", "the refresh token is revoked or expired"));
        }
        let scopes = match single(form, "scope")? {
            Some(asked) => {
                let asked: Vec<String> = asked.split_whitespace().map(str::to_string).collect();
                if let Some(wider) = asked.iter().find(|s| !stored.scopes.contains(s) || !stored.grant_scopes.contains(s)) {
                    return Err(fail("invalid_scope", format!("{wider} is wider than the grant")));
                }
                asked
            }
            None => stored.scopes.clone(),
        };
        oauth::use_refresh(&mut tx, stored.id).await?;
        (stored.grant_id, stored.family_id, scopes, None)
    };
    let access = schema::secret::mint(crate::http::credentials::ACCESS_PREFIX);
    let refresh = schema::secret::mint(REFRESH_PREFIX);
    let now = Utc::now();
    for (token, kind, expires_at) in [(&access, "access", now + TimeDelta::seconds(ACCESS_SECONDS)), (&refresh, "refresh", now + TimeDelta::days(REFRESH_DAYS))] {
        oauth::insert_token(&mut tx, &oauth::NewToken { token_hash: &token.hash, kind, grant_id, family_id, code_hash: code_hash.as_deref(), scopes: &scopes, expires_at }).await?;
    }
    tx.commit().await?;
    Ok(TokenAnswer::Ok(
        Json(TokenView { access_token: access.plaintext, token_type: "Bearer".into(), expires_in: ACCESS_SECONDS, refresh_token: refresh.plaintext, scope: scopes.join(" ") }),
        "no-store".into(),
        "no-cache".into(),
    ))
}

/// base64url(SHA-256(verifier)), unpadded (RFC 7636 `S256`).
pub fn pkce_challenge(verifier: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A redirect to `uri` with `pairs` added to its query.
fn redirect_to(uri: &str, pairs: &[(&str, String)]) -> BrowserAnswer {
    let location = match url::Url::parse(uri) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
            url.to_string()
        }
        Err(_) => uri.to_string(),
    };
    BrowserAnswer::Redirect(location, "no-store".into())
}

fn error_page(title: &str, text: &str) -> BrowserAnswer {
    let body = format!("<main><h1>{}</h1><p>{}</p></main>", escape(title), escape(text));
    BrowserAnswer::BadRequest(Html(document(title, &body)), "no-store".into())
}

fn gone() -> BrowserAnswer {
    BrowserAnswer::NotFound(Html(not_found_page()), "no-store".into())
}

/// The dashboard session of a page request's cookie, if live.
async fn session_of(conn: &mut sqlx::PgConnection, request: &poem::Request) -> ApiResult<Option<people::Session>> {
    let Some(token) = crate::http::credentials::cookie(request, crate::http::credentials::COOKIE) else { return Ok(None) };
    Ok(people::session(conn, &schema::secret::hash(&token)).await?)
}

/// The consent page: the sign-in form without a session, else the client, its scopes and the
/// person's teams.
async fn consent_page(
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
