//! Dynamic client registration (RFC 7591) and its management (RFC 7592): public clients
//! only, with their registration access token.

use crate::http::error::ApiResult;
use crate::http::fields::Nullable;
use crate::http::operations::SCOPES;
use crate::routes::Tag;
use crate::state::AppState;
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::oauth;
use serde::Deserialize;
use crate::routes::oauth::answers::Answer;
use crate::routes::oauth::answers::CLIENT_PREFIX;
use crate::routes::oauth::answers::Failure;
use crate::routes::oauth::answers::MetadataBody;
use crate::routes::oauth::answers::OAuthError;
use crate::routes::oauth::answers::REGISTRATION_PREFIX;
use crate::routes::oauth::answers::base;
use crate::routes::oauth::answers::fail;
use crate::routes::oauth::answers::finish;

pub struct RegistrationApi;

#[poem_openapi::OpenApi(tag = "Tag::OAuth")]
impl RegistrationApi {
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
}

/// Registration limits.
pub const REGISTRATIONS_PER_IP_HOUR: i64 = 10;
pub const REGISTRATIONS_PER_DAY: i64 = 1000;
pub const MAX_REDIRECT_URIS: usize = 10;
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
    /// An identifier of the client software, the same in every copy of it (RFC 7591); kept as given.
    #[oai(validator(max_length = 200))]
    pub software_id: Option<String>,
    /// The client software's version (RFC 7591); kept as given.
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
    /// Shown on the consent page.
    pub client_name: String,
    /// The redirect URIs, matched exactly at authorize.
    pub redirect_uris: Vec<String>,
    /// The grant types the client may use.
    pub grant_types: Vec<String>,
    /// Only `code`.
    pub response_types: Vec<String>,
    /// Always `none`.
    pub token_endpoint_auth_method: String,
    /// Space-separated scopes the client asks for when authorize names none, or `null`.
    pub scope: Nullable<String>,
    /// An https link shown on the consent page, or `null`.
    pub client_uri: Nullable<String>,
    /// An https image shown on the consent page, or `null`.
    pub logo_uri: Nullable<String>,
    /// The client software's identifier, as registered, or `null`.
    pub software_id: Nullable<String>,
    /// The client software's version, as registered, or `null`.
    pub software_version: Nullable<String>,
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

/// Checks registration metadata (RFC 7591 with this server's rules).
pub fn checked_metadata(body: ClientMetadata) -> Answer<oauth::Metadata> {
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
pub fn redirect_allowed(uri: &str) -> bool {
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
pub async fn registered(state: &AppState, request: &poem::Request, client_id: &str) -> Answer<oauth::Client> {
    let token = request.header("authorization").and_then(|h| h.strip_prefix("Bearer ")).map(str::trim);
    let Some(token) = token.filter(|t| t.starts_with(REGISTRATION_PREFIX)) else {
        return Err(fail("invalid_token", "send the registration access token (rkor_…) as Bearer; API keys do not manage registrations"));
    };
    let mut conn = state.pool.acquire().await?;
    let client = oauth::client_by_registration(&mut conn, &schema::secret::hash(token)).await?;
    client.filter(|c| c.client_id == client_id).ok_or_else(|| fail("invalid_token", "the registration access token is unknown or not this client's"))
}

pub fn client_view(state: &AppState, client: oauth::Client, registration_access_token: Option<String>) -> ClientView {
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
