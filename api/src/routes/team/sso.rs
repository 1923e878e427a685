//! `PUT /team/sso` and `DELETE /team/sso`: a team admin, in the dashboard session, connects the
//! team's OpenID provider for the email domains the team has verified. The provider is checked
//! by discovery before anything is saved; the client secret is sealed and never answered.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Required;
use crate::routes::Tag;
use crate::routes::people::membership::admin_team;
use crate::routes::people::oidc;
use crate::state::{AppState, SessionCaller};
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::payload::Json;
use schema::store::sso::{self, NewSso, Sso};
use serde::Deserialize;
use sqlx::PgConnection;

pub struct SsoApi;

/// Single sign-on, when configured (never a secret or a member list).
#[derive(Object)]
pub struct SsoView {
    /// `active`: people on the domains can sign in through the provider.
    pub status: String,
    /// The identity provider's issuer.
    pub issuer: String,
    /// Herald's client id at the identity provider.
    pub client_id: String,
    /// Whether people on the domains must sign in with single sign-on (the team's admins keep
    /// their password).
    pub enforced: bool,
    /// The email domains the configuration covers.
    pub domains: Vec<String>,
}

/// The summary of a stored configuration.
pub fn sso_view(sso: &Sso) -> SsoView {
    SsoView { status: "active".into(), issuer: sso.issuer.clone(), client_id: sso.client_id.clone(), enforced: sso.enforced, domains: sso.domains.clone() }
}

/// Body of `PUT /team/sso`.
#[derive(Object, Deserialize)]
pub struct SsoConfig {
    /// The provider's issuer: an https URL (http only on a loopback host) whose
    /// `/.well-known/openid-configuration` names this same issuer.
    #[oai(validator(max_length = 500))]
    pub issuer: Required<String>,
    /// Herald's client id at the provider.
    #[oai(validator(min_length = 1, max_length = 500))]
    pub client_id: Required<String>,
    /// Herald's client secret at the provider; sealed at rest and never answered.
    #[oai(validator(min_length = 1, max_length = 2000))]
    pub client_secret: Required<String>,
    /// 1 to 50 email domains, each a domain the team has verified or the registrable domain
    /// holding one, and covered by no other team's single sign-on.
    #[oai(validator(min_items = 1, max_items = 50))]
    pub domains: Required<Vec<String>>,
    /// Refuse password sign-in for people on the domains (default false); the team's admins
    /// keep their password as the way back in.
    pub enforced: Option<bool>,
}

/// `{ object: "sso", deleted: true }`.
#[derive(Object)]
pub struct SsoDeleted {
    /// Always `sso`.
    pub object: String,
    /// Always true.
    pub deleted: bool,
}

#[poem_openapi::OpenApi(tag = "Tag::Team")]
impl SsoApi {
    /// Connect the team's OpenID provider (a team admin's dashboard session only). The issuer
    /// is read by discovery first: one that does not answer, or answers for another issuer,
    /// is `422 validation_error` naming `issuer`, and so is a domain the team has not
    /// verified or that another team's single sign-on covers (naming `domains[i]`). Replaces
    /// any earlier configuration; answers the summary.
    #[oai(path = "/team/sso", method = "put", operation_id = "configure-sso")]
    async fn put(&self, state: Data<&AppState>, session: Data<&SessionCaller>, body: Body<SsoConfig>) -> ApiResult<Json<SsoView>> {
        let team_id = admin_team(&session.0.session)?;
        let body = body.0;
        let issuer = body.issuer.0.ok_or_else(|| ApiError::missing_field("issuer"))?.trim().to_string();
        let client_id = body.client_id.0.ok_or_else(|| ApiError::missing_field("client_id"))?.trim().to_string();
        let client_secret = body.client_secret.0.ok_or_else(|| ApiError::missing_field("client_secret"))?;
        let domains = body.domains.0.ok_or_else(|| ApiError::missing_field("domains"))?;
        check_issuer_url(&issuer)?;
        if client_id.is_empty() {
            return Err(ApiError::invalid_field("client_id", "must not be blank"));
        }
        let mut conn = state.pool.acquire().await?;
        let domains = checked_domains(&mut conn, team_id, &domains).await?;
        drop(conn);
        oidc::check_issuer(&issuer).await.map_err(|why| ApiError::refused_field("issuer", format!("The issuer {why}.")))?;
        let mut tx = state.pool.begin().await?;
        let sealed = schema::secret::seal(&oidc::sealing_key(&mut tx).await?, client_secret.as_bytes());
        let new = NewSso { team_id, issuer: &issuer, client_id: &client_id, client_secret: &sealed, enforced: body.enforced.unwrap_or(false), domains: &domains };
        if let Err(domain) = sso::save(&mut tx, &new).await? {
            let i = domains.iter().position(|d| *d == domain).unwrap_or(0);
            return Err(ApiError::refused_field(&format!("domains[{i}]"), "another team's single sign-on covers this domain"));
        }
        let saved = sso::get(&mut tx, team_id).await?.ok_or_else(|| anyhow::anyhow!("the single sign-on just saved is gone"))?;
        tx.commit().await?;
        Ok(Json(sso_view(&saved)))
    }

    /// Remove the team's single sign-on (a team admin's dashboard session only): people on its
    /// domains sign in with their passwords again. `404 not_found` when there is none.
    #[oai(path = "/team/sso", method = "delete", operation_id = "delete-sso")]
    async fn delete(&self, state: Data<&AppState>, session: Data<&SessionCaller>) -> ApiResult<Json<SsoDeleted>> {
        let team_id = admin_team(&session.0.session)?;
        if !sso::delete(&mut *state.pool.acquire().await?, team_id).await? {
            return Err(ApiError::not_found("Single sign-on"));
        }
        Ok(Json(SsoDeleted { object: "sso".into(), deleted: true }))
    }
}

/// An issuer is an https URL, or http on a loopback host (a provider on the same machine),
/// without a query or fragment.
fn check_issuer_url(issuer: &str) -> ApiResult<()> {
    let url = url::Url::parse(issuer).map_err(|_| ApiError::invalid_field("issuer", "must be an absolute URL"))?;
    let loopback = matches!(url.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
        || matches!(url.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback())
        || url.host_str() == Some("localhost");
    if !(url.scheme() == "https" || (url.scheme() == "http" && loopback)) {
        return Err(ApiError::invalid_field("issuer", "must be an https URL (http only on a loopback host)"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ApiError::invalid_field("issuer", "must not have a query or fragment"));
    }
    Ok(())
}

/// The domains, normalised and unique; each must be one the team may cover.
async fn checked_domains(conn: &mut PgConnection, team_id: uuid::Uuid, raw: &[String]) -> ApiResult<Vec<String>> {
    let coverable = sso::coverable_domains(conn, team_id).await?;
    let mut domains: Vec<String> = Vec::with_capacity(raw.len());
    for (i, name) in raw.iter().enumerate() {
        let path = format!("domains[{i}]");
        let name = schema::domain::DomainName::parse(name).map_err(|why| ApiError::invalid_field(&path, why))?.name().to_string();
        if !coverable.contains(&name) {
            return Err(ApiError::refused_field(&path, "must be a domain the team has verified (or the registrable domain holding one)"));
        }
        if domains.contains(&name) {
            return Err(ApiError::invalid_field(&path, "is listed twice"));
        }
        domains.push(name);
    }
    Ok(domains)
}
