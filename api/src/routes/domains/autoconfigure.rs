//! DNS auto-configuration: writing a domain's records through its DNS provider's API
//! (Cloudflare), with the provider token kept sealed when asked.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::routes::{Deleted, Tag, path_id};
use crate::state::{AppState, Caller};
use jobs::dns_provider::{Cloudflare, ProviderError};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Enum, Object};
use schema::domain::RecordKind;
use schema::store::domains::{self};
use serde::Deserialize;
use sqlx::PgConnection;
use uuid::Uuid;
use crate::routes::domains::views::find;

pub struct AutoconfigureApi;

#[poem_openapi::OpenApi(tag = "Tag::Domains")]
impl AutoconfigureApi {
    /// Write the domain's records through a DNS provider (Cloudflare) with an API token scoped
    /// to this domain's zone alone. Only records of enabled capabilities are written; nothing is
    /// deleted or overwritten: records already at the service's names come back in `conflicts`.
    #[oai(path = "/domains/:domain_id/autoconfigure", method = "post", operation_id = "autoconfigure-domain")]
    async fn autoconfigure(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The domain's id.
        domain_id: Path<String>,
        body: Body<Autoconfigure>,
    ) -> ApiResult<Json<AutoconfigureResult>> {
        let body = body.0;
        let provider = body.provider.unwrap_or(Provider::Cloudflare);
        let mut conn = state.pool.acquire().await?;
        let domain = find(&mut conn, caller.team_id, &domain_id.0).await?;
        if body.keep_token && state.config.secret_key.is_none() {
            return Err(ApiError::refused("keep_token needs the operator to set HERALD_SECRET_KEY, which seals kept tokens."));
        }
        let token = match body.api_token.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            Some(token) => token.to_string(),
            None => kept_token(&state, &mut conn, domain.id).await?.ok_or_else(|| ApiError::missing_field("api_token"))?,
        };
        drop(conn);
        let records: Vec<_> = state
            .checker
            .records_of(&domain)
            .into_iter()
            .filter(|record| domain.needs(record.kind))
            .collect();
        let cloudflare = Cloudflare::new(&state.config.cloudflare_api_url, &token).map_err(provider_error)?;
        let outcome = jobs::dns_provider::autoconfigure(&cloudflare, &domain.zone, &records).await.map_err(provider_error)?;
        if body.keep_token {
            let secret = state.config.secret_key.as_deref().unwrap_or_default();
            let sealed = schema::secret::seal(secret, token.as_bytes());
            let mut conn = state.pool.acquire().await?;
            domains::set_credential(&mut conn, domain.id, Some("cloudflare"), Some(&sealed)).await?;
        }
        Ok(Json(AutoconfigureResult {
            object: "domain_autoconfigure".into(),
            provider,
            written: outcome
                .written
                .into_iter()
                .map(|r| WrittenRecord { record: r.kind, record_type: r.kind.record_type().into(), fqdn: r.fqdn, value: r.value })
                .collect(),
            conflicts: outcome
                .conflicts
                .into_iter()
                .map(|(r, existing)| Conflict {
                    record: r.kind,
                    record_type: r.kind.record_type().into(),
                    fqdn: r.fqdn,
                    expected: r.value,
                    existing: existing.into_iter().map(|e| ExistingRecord { record_type: e.record_type, value: e.value }).collect(),
                })
                .collect(),
            token_kept: body.keep_token,
        }))
    }

    /// Forget the DNS provider token kept for this domain.
    #[oai(path = "/domains/:domain_id/autoconfigure/credential", method = "delete", operation_id = "delete-domain-autoconfigure-credential")]
    async fn delete_credential(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The domain's id.
        domain_id: Path<String>,
    ) -> ApiResult<Json<Deleted>> {
        let mut tx = state.pool.begin().await?;
        let id = path_id(&domain_id.0, "Domain")?;
        let domain = domains::lock(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Domain"))?;
        if !domain.has_credential {
            return Err(ApiError::not_found("Kept credential"));
        }
        domains::set_credential(&mut tx, id, None, None).await?;
        tx.commit().await?;
        Ok(Json(Deleted { object: "autoconfigure_credential".into(), id: id.to_string(), deleted: true }))
    }
}

/// A supported DNS provider.
#[derive(Enum, Clone, Copy, Deserialize, Debug)]
#[oai(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    Cloudflare,
}

/// Body of `POST /domains/{domain_id}/autoconfigure`.
#[derive(Object, Deserialize)]
pub struct Autoconfigure {
    /// `cloudflare` (default).
    pub provider: Option<Provider>,
    /// An API token scoped to this domain's zone alone (DNS edit). Optional when one is kept.
    pub api_token: Option<String>,
    /// Keep the token (sealed) for later runs; by default it is forgotten after writing.
    #[serde(default)]
    #[oai(default)]
    pub keep_token: bool,
}

/// One record auto-configuration wrote.
#[derive(Object)]
pub struct WrittenRecord {
    /// Which of the domain's records it is.
    pub record: RecordKind,
    /// `TXT`, `CNAME` or `MX`.
    #[oai(rename = "type")]
    pub record_type: String,
    /// Fully qualified name.
    pub fqdn: String,
    /// The value written.
    pub value: String,
}

/// A record left alone because the name already holds records.
#[derive(Object)]
pub struct Conflict {
    /// Which of the domain's records it is.
    pub record: RecordKind,
    /// `TXT`, `CNAME` or `MX`.
    #[oai(rename = "type")]
    pub record_type: String,
    /// Fully qualified name.
    pub fqdn: String,
    /// What the service would have written.
    pub expected: String,
    /// What the provider already holds at the name.
    pub existing: Vec<ExistingRecord>,
}

#[derive(Object)]
pub struct ExistingRecord {
    /// The record's type, as the provider reports it.
    #[oai(rename = "type")]
    pub record_type: String,
    /// The record's value, as the provider reports it.
    pub value: String,
}

/// What auto-configuration did.
#[derive(Object)]
pub struct AutoconfigureResult {
    /// Always `domain_autoconfigure`.
    pub object: String,
    /// The DNS provider written to.
    pub provider: Provider,
    /// The records written.
    pub written: Vec<WrittenRecord>,
    /// The records left alone because the name already holds records.
    pub conflicts: Vec<Conflict>,
    /// Whether the token is kept (sealed) for later runs.
    pub token_kept: bool,
}

pub async fn kept_token(state: &AppState, conn: &mut PgConnection, id: Uuid) -> ApiResult<Option<String>> {
    let (Some(sealed), Some(secret)) = (domains::credential(conn, id).await?, state.config.secret_key.as_deref()) else {
        return Ok(None);
    };
    Ok(schema::secret::open(secret, &sealed).and_then(|token| String::from_utf8(token).ok()))
}

pub fn provider_error(error: ProviderError) -> ApiError {
    match error {
        ProviderError::Refused(message) => ApiError::refused(message),
        unavailable @ ProviderError::Unavailable(_) => {
            ApiError::new(ErrorKind::ServiceUnavailable, unavailable.to_string())
        }
    }
}
