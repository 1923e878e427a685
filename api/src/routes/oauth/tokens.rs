//! The token endpoint (authorization codes, rotating refresh tokens with reuse detection) and
//! revocation.

use crate::http::error::ApiResult;
use crate::http::form::FormBody;
use crate::routes::Tag;
use crate::state::AppState;
use chrono::{TimeDelta, Utc};
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::oauth;
use sha2::{Digest, Sha256};
use crate::routes::oauth::answers::ACCESS_SECONDS;
use crate::routes::oauth::answers::Answer;
use crate::routes::oauth::answers::Failure;
use crate::routes::oauth::answers::OAuthError;
use crate::routes::oauth::answers::REFRESH_DAYS;
use crate::routes::oauth::answers::REFRESH_PREFIX;
use crate::routes::oauth::answers::fail;
use crate::routes::oauth::answers::finish;
use crate::routes::oauth::answers::names_this_api;
use crate::routes::oauth::answers::required;
use crate::routes::oauth::answers::single;

pub struct TokensApi;

#[poem_openapi::OpenApi(tag = "Tag::OAuth")]
impl TokensApi {
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

impl From<Failure> for TokenAnswer {
    fn from(f: Failure) -> Self {
        if f.status == 401 { TokenAnswer::Unauthorized(f.body(), "Bearer error=\"invalid_client\"".into()) } else { TokenAnswer::BadRequest(f.body()) }
    }
}

/// The token endpoint's work.
pub async fn exchange(state: &AppState, form: &FormBody) -> Answer<TokenAnswer> {
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
