//! Sending domains: add (with a fresh DKIM key), list, read, change settings, delete, verify
//! against DNS, claim from another team, rotate DKIM, and write records through a DNS provider.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::paging::page_request;
use crate::http::fields::{IdText, Nullable};
use crate::routes::{Deleted, Tag, Updated, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use jobs::dns_provider::{Cloudflare, ProviderError};
use jobs::domains::{CLAIM_LIFETIME, VERIFY_THROTTLE, event_for};
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Enum, Object};
use schema::domain::{DomainName, DomainStatus, RecordKind, RecordStatus, Region, Tls, generate_dkim_key, new_mail_from_code, parse_label};
use schema::store::claims::{self, Claim};
use schema::store::domains::{self, Domain, NewDomain, RecordState, Settings};
use schema::store::events;
use serde::Deserialize;
use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

pub struct DomainsApi;

/// Return-path labels suggested when the asked one is taken, in order.
const RETURN_PATH_SUGGESTIONS: &[&str] = &["send", "bounces", "mail-from", "rp"];

/// On or off, for a capability.
#[derive(Enum, Clone, Copy, PartialEq, Eq, Deserialize, Debug)]
#[oai(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    Enabled,
    Disabled,
}

impl Capability {
    fn of(on: bool) -> Capability {
        if on { Capability::Enabled } else { Capability::Disabled }
    }

    fn on(self) -> bool {
        self == Capability::Enabled
    }
}

/// What a domain is used for. Sending is on by default; receiving needs a region with inbound mail.
#[derive(Object, Deserialize, Default)]
pub struct Capabilities {
    /// Sending mail from the domain (default `enabled`).
    pub sending: Option<Capability>,
    /// Receiving mail at the domain's MX (default `disabled`); only in `us-east-1` and `eu-west-1`.
    pub receiving: Option<Capability>,
}

/// Body of `POST /domains` and `POST /domains/claim`.
#[derive(Object, Deserialize)]
pub struct CreateDomain {
    /// The domain or subdomain, such as `example.com` or `mail.example.com`; IDNA names are accepted.
    pub name: String,
    /// `us-east-1` (default), `eu-west-1`, `sa-east-1` or `ap-northeast-1`; fixed once created.
    pub region: Option<Region>,
    /// `opportunistic` (default) or `enforced`.
    pub tls: Option<Tls>,
    /// The label of the return-path (mail-from) record, default `send`; fixed once created.
    pub custom_return_path: Option<String>,
    /// Where the receiving MX goes: `@` (default, the domain itself) or one label; fixed once created.
    pub receiving_host: Option<String>,
    pub capabilities: Option<Capabilities>,
    /// Track opens (default false).
    pub open_tracking: Option<bool>,
    /// Track clicks (default false).
    pub click_tracking: Option<bool>,
    /// Turn receiving on although the receiving name's MX delivers elsewhere today (that mail
    /// moves to Herald once the MX is replaced); without it that is `409 receiving_mx_in_use`.
    pub confirm_replace_mx: Option<bool>,
}

/// Body of `PATCH /domains/{domain_id}`. Region, return path and receiving host are fixed.
#[derive(Object, Deserialize)]
pub struct UpdateDomain {
    pub tls: Option<Tls>,
    pub capabilities: Option<Capabilities>,
    pub open_tracking: Option<bool>,
    pub click_tracking: Option<bool>,
    /// Turn receiving on although the receiving name's MX delivers elsewhere today; without it
    /// that is `409 receiving_mx_in_use`.
    pub confirm_replace_mx: Option<bool>,
    /// Not in the document: refused unless it equals the current value (clients in the wild repeat it).
    #[oai(skip)]
    pub region: Option<Region>,
    /// Not in the document: refused unless it equals the current value (clients in the wild repeat it).
    #[oai(skip)]
    pub custom_return_path: Option<String>,
    /// Not in the document: refused unless it equals the current value (clients in the wild repeat it).
    #[oai(skip)]
    pub receiving_host: Option<String>,
}

/// A DNS record the domain publishes, with what the last check found.
#[derive(Object)]
pub struct DnsRecord {
    /// `dkim`, `mail_from`, `receiving` or `tracking`.
    pub record: RecordKind,
    /// Name relative to the zone (`@` is the zone itself).
    pub name: String,
    /// Fully qualified name.
    pub fqdn: String,
    /// `TXT`, `CNAME` or `MX`.
    #[oai(rename = "type")]
    pub record_type: String,
    /// The value to publish. DKIM is the bare `p=` value; publish it as two quoted strings
    /// when the DNS host does not split long TXT values itself.
    pub value: String,
    /// MX priority.
    pub priority: Nullable<u16>,
    /// Always `Auto`.
    pub ttl: String,
    pub status: RecordStatus,
    /// Whether the domain's capabilities need this record (DKIM and mail-from always).
    pub required: bool,
    /// What the last check found at the name instead, when it did not match.
    pub found: Nullable<String>,
    pub checked_at: Nullable<DateTime<Utc>>,
}

/// A DKIM rotation waiting for its new key to appear in DNS.
#[derive(Object)]
pub struct DkimRotation {
    /// The TXT value to publish at the DKIM name in place of the current one; signing switches
    /// to the new key once a check sees it.
    pub next_value: String,
    pub started_at: DateTime<Utc>,
}

/// A sending domain.
#[derive(Object)]
pub struct DomainView {
    /// Always `domain`.
    pub object: String,
    pub id: String,
    pub name: String,
    pub status: DomainStatus,
    pub region: Region,
    pub tls: Tls,
    pub custom_return_path: String,
    pub receiving_host: String,
    pub capabilities: CapabilitiesView,
    pub open_tracking: bool,
    pub click_tracking: bool,
    pub records: Vec<DnsRecord>,
    pub dkim_rotation: Nullable<DkimRotation>,
    /// Whether a DNS provider token is kept for auto-configuration.
    pub autoconfigure_credential: bool,
    pub checked_at: Nullable<DateTime<Utc>>,
    /// When the domain last became verified.
    pub verified_at: Nullable<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// The domain's capabilities.
#[derive(Object)]
pub struct CapabilitiesView {
    pub sending: Capability,
    pub receiving: Capability,
}

/// A page of domains.
#[derive(Object)]
pub struct DomainList {
    /// Always `list`.
    pub object: String,
    pub has_more: bool,
    pub data: Vec<DomainView>,
}

/// The TXT record a claim waits for.
#[derive(Object)]
pub struct ClaimRecord {
    /// Always `TXT`.
    #[oai(rename = "type")]
    pub record_type: String,
    /// `@`: the domain itself.
    pub name: String,
    pub fqdn: String,
    /// Starts `svc-domain-verification=`.
    pub value: String,
}

/// A claim on a domain another team holds.
#[derive(Object)]
pub struct ClaimView {
    /// Always `domain_claim`.
    pub object: String,
    pub id: String,
    /// This team's copy of the domain, which receives the name when the claim completes.
    pub domain_id: String,
    pub name: String,
    /// `pending`, `completed` or `expired`.
    pub status: String,
    /// Why a pending claim has not transferred: `record_not_found`, `owner_recently_verified`
    /// (within 72 hours), `owner_recently_sent` (within 24 hours) or `owner_has_scheduled_mail`.
    pub blocked_reason: Nullable<String>,
    pub record: ClaimRecord,
    pub checked_at: Nullable<DateTime<Utc>>,
    pub expires_at: DateTime<Utc>,
    pub completed_at: Nullable<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// The domain was added; publish its records, then verify.
    #[oai(status = 201)]
    Created(Json<DomainView>),
}

#[derive(ApiResponse)]
pub enum ClaimResponse {
    /// The claim started; publish its TXT record.
    #[oai(status = 201)]
    Created(Json<ClaimView>),
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
    pub record: RecordKind,
    #[oai(rename = "type")]
    pub record_type: String,
    pub fqdn: String,
    pub value: String,
}

/// A record left alone because the name already holds records.
#[derive(Object)]
pub struct Conflict {
    pub record: RecordKind,
    #[oai(rename = "type")]
    pub record_type: String,
    pub fqdn: String,
    /// What the service would have written.
    pub expected: String,
    /// What the provider already holds at the name.
    pub existing: Vec<ExistingRecord>,
}

#[derive(Object)]
pub struct ExistingRecord {
    #[oai(rename = "type")]
    pub record_type: String,
    pub value: String,
}

/// What auto-configuration did.
#[derive(Object)]
pub struct AutoconfigureResult {
    /// Always `domain_autoconfigure`.
    pub object: String,
    pub provider: Provider,
    pub written: Vec<WrittenRecord>,
    pub conflicts: Vec<Conflict>,
    /// Whether the token is kept (sealed) for later runs.
    pub token_kept: bool,
}

#[poem_openapi::OpenApi(tag = "Tag::Domains")]
impl DomainsApi {
    /// Add a sending domain. Answers with its records; a domain verified by another team is
    /// `409 resource_locked` (claim it with `POST /domains/claim`).
    #[oai(path = "/domains", method = "post", operation_id = "create-domain")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateDomain>) -> ApiResult<CreateResponse> {
        let confirm_replace_mx = body.0.confirm_replace_mx.unwrap_or(false);
        let request = NewRequest::parse(body.0)?;
        return_path_free(&state, &request).await?;
        if request.receiving && !confirm_replace_mx {
            receiving_mx_free(&state, request.region, &receiving_name(&request.receiving_host, &request.name.name)).await?;
        }
        let key = dkim_key().await?;
        let mut tx = state.pool.begin().await?;
        let limit = schema::store::teams::lock_domain_limit(&mut tx, caller.team_id).await?;
        if domains::held_by_other_team(&mut tx, caller.team_id, &request.name.name).await?.is_some() {
            return Err(held_elsewhere(&request.name.name));
        }
        if domains::find_by_name(&mut tx, caller.team_id, &request.name.name).await?.is_some() {
            return Err(already_added(&request.name.name));
        }
        within_limit(&mut tx, caller.team_id, limit).await?;
        let domain = insert(&mut tx, caller.team_id, &request, &key, DomainStatus::NotStarted).await?;
        emit(&mut tx, "domain.created", &domain).await?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(view(&state, domain, &[]))))
    }

    /// List the team's domains, newest first.
    #[oai(path = "/domains", method = "get", operation_id = "list-domains")]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this id.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<DomainList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let mut conn = state.pool.acquire().await?;
        let page = domains::list(&mut conn, caller.team_id, &page).await?;
        let ids: Vec<Uuid> = page.data.iter().map(|d| d.id).collect();
        let records = domains::records(&mut conn, &ids).await?;
        let data = page
            .data
            .into_iter()
            .map(|domain| {
                let own: Vec<RecordState> = records.iter().filter(|r| r.domain_id == domain.id).cloned().collect();
                view(&state, domain, &own)
            })
            .collect();
        Ok(Json(DomainList { object: "list".into(), has_more: page.has_more, data }))
    }

    /// Retrieve a domain with its records and their statuses.
    #[oai(path = "/domains/:domain_id", method = "get", operation_id = "get-domain")]
    async fn get(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The domain's id.
        domain_id: Path<String>,
    ) -> ApiResult<Json<DomainView>> {
        let mut conn = state.pool.acquire().await?;
        let domain = find(&mut conn, caller.team_id, &domain_id.0).await?;
        Ok(Json(full_view(&state, &mut conn, domain).await?))
    }

    /// Change TLS, capabilities and tracking. The region, return path and receiving host are
    /// fixed at creation (`422 invalid_parameter`).
    #[oai(path = "/domains/:domain_id", method = "patch", operation_id = "update-domain")]
    async fn update(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The domain's id.
        domain_id: Path<String>,
        body: Body<UpdateDomain>,
    ) -> ApiResult<Json<Updated>> {
        let body = body.0;
        let id = path_id(&domain_id.0, "Domain")?;
        let mut tx = state.pool.begin().await?;
        let domain = domains::lock(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Domain"))?;
        if body.region.is_some_and(|region| region != domain.region) {
            return Err(ApiError::invalid_parameter("region", "is fixed once the domain is created"));
        }
        fixed_label("custom_return_path", body.custom_return_path.as_deref(), &domain.custom_return_path, false)?;
        fixed_label("receiving_host", body.receiving_host.as_deref(), &domain.receiving_host, true)?;
        let capabilities = body.capabilities.unwrap_or_default();
        let settings = Settings {
            tls: body.tls.unwrap_or(domain.tls),
            sending_enabled: capabilities.sending.map_or(domain.sending_enabled, Capability::on),
            receiving_enabled: capabilities.receiving.map_or(domain.receiving_enabled, Capability::on),
            open_tracking: body.open_tracking.unwrap_or(domain.open_tracking),
            click_tracking: body.click_tracking.unwrap_or(domain.click_tracking),
        };
        receiving_offered(domain.region, settings.receiving_enabled)?;
        if settings.receiving_enabled && !domain.receiving_enabled && !body.confirm_replace_mx.unwrap_or(false) {
            receiving_mx_free(&state, domain.region, &receiving_name(&domain.receiving_host, &domain.name)).await?;
        }
        domains::update_settings(&mut tx, id, &settings).await?;
        let updated = domains::get(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Domain"))?;
        emit(&mut tx, "domain.updated", &updated).await?;
        tx.commit().await?;
        Ok(Json(Updated { object: "domain".into(), id: id.to_string() }))
    }

    /// Delete a domain. Refused with `409 resource_locked` while a live API key is pinned to it.
    #[oai(path = "/domains/:domain_id", method = "delete", operation_id = "delete-domain")]
    async fn delete(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The domain's id.
        domain_id: Path<String>,
    ) -> ApiResult<Json<Deleted>> {
        let id = path_id(&domain_id.0, "Domain")?;
        let mut tx = state.pool.begin().await?;
        let domain = domains::lock(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Domain"))?;
        if schema::store::api_keys::live_pinned_to(&mut tx, caller.team_id, id).await? > 0 {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "resource_locked",
                "Live API keys are pinned to this domain; revoke them before deleting it.",
            ));
        }
        emit(&mut tx, "domain.deleted", &domain).await?;
        domains::delete(&mut tx, caller.team_id, id).await?;
        tx.commit().await?;
        Ok(Json(Deleted { object: "domain".into(), id: id.to_string(), deleted: true }))
    }

    /// Check the domain's records now and answer each record's status. A call within 15
    /// seconds of the last check answers the current state without rechecking. On a domain
    /// being claimed, checks the claim's TXT record instead.
    #[oai(path = "/domains/:domain_id/verify", method = "post", operation_id = "verify-domain")]
    async fn verify(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The domain's id.
        domain_id: Path<String>,
    ) -> ApiResult<Json<DomainView>> {
        let (domain, claim) = {
            let mut conn = state.pool.acquire().await?;
            let domain = find(&mut conn, caller.team_id, &domain_id.0).await?;
            let claim = match domain.status {
                DomainStatus::Claiming => claims::latest_for_domain(&mut conn, caller.team_id, domain.id).await?,
                _ => None,
            };
            (domain, claim)
        };
        // DNS is asked with no connection held.
        let now = Utc::now();
        let recent = |at: Option<DateTime<Utc>>| at.is_some_and(|at| now - at < VERIFY_THROTTLE);
        match domain.status {
            DomainStatus::Claiming => {
                if let Some(claim) = claim.filter(|c| c.status == "pending" && !recent(c.checked_at)) {
                    jobs::domains::check_claims(&state.pool, &state.checker.dns, Some(claim.id)).await?;
                }
            }
            DomainStatus::Disabled | DomainStatus::ClaimExpired => {}
            // The development sender is verified by Herald itself, never by DNS.
            _ if domain.development => {}
            _ if recent(domain.checked_at) => {}
            _ => jobs::domains::verify_now(&state.pool, &state.checker, &domain).await?,
        }
        let mut conn = state.pool.acquire().await?;
        let domain = find(&mut conn, caller.team_id, &domain_id.0).await?;
        Ok(Json(full_view(&state, &mut conn, domain).await?))
    }

    /// Claim a domain another team holds. Answers the TXT record to publish at the domain's
    /// root; once it resolves (checked hourly, or on verify) and the holder has not verified
    /// within 72 hours, sent within 24 hours or scheduled mail from it, the domain moves to
    /// this team with its own DKIM key and the holder's copy is switched off. Expires after 7 days.
    #[oai(path = "/domains/claim", method = "post", operation_id = "claim-domain")]
    async fn claim(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateDomain>) -> ApiResult<ClaimResponse> {
        let request = NewRequest::parse(body.0)?;
        let key = dkim_key().await?;
        let mut tx = state.pool.begin().await?;
        let limit = schema::store::teams::lock_domain_limit(&mut tx, caller.team_id).await?;
        if domains::held_by_other_team(&mut tx, caller.team_id, &request.name.name).await?.is_none() {
            return Err(ApiError::refused(format!("No other team holds {}; add it with POST /domains.", request.name.name)));
        }
        let domain = match domains::find_by_name(&mut tx, caller.team_id, &request.name.name).await? {
            Some(existing) if existing.status == DomainStatus::Claiming => {
                let claim = claims::latest_for_domain(&mut tx, caller.team_id, existing.id).await?;
                if let Some(claim) = claim.filter(|c| c.status == "pending") {
                    return Err(ApiError::new(
                        StatusCode::CONFLICT,
                        "resource_locked",
                        format!("A claim on {} is already pending (claim {}).", existing.name, claim.id),
                    ));
                }
                existing
            }
            Some(existing) => {
                domains::set_status(&mut tx, existing.id, DomainStatus::Claiming).await?;
                let claiming = domains::get(&mut tx, caller.team_id, existing.id)
                    .await?
                    .ok_or_else(|| ApiError::not_found("Domain"))?;
                emit(&mut tx, "domain.updated", &claiming).await?;
                claiming
            }
            None => {
                within_limit(&mut tx, caller.team_id, limit).await?;
                let domain = insert(&mut tx, caller.team_id, &request, &key, DomainStatus::Claiming).await?;
                emit(&mut tx, "domain.created", &domain).await?;
                domain
            }
        };
        let now = Utc::now();
        let claim = Claim {
            id: schema::ids::new_id(),
            team_id: caller.team_id,
            domain_id: domain.id,
            name: domain.name.clone(),
            token: format!("svc-domain-verification={}", schema::secret::mint("").plaintext),
            status: "pending".into(),
            blocked_reason: None,
            checked_at: None,
            expires_at: now + CLAIM_LIFETIME,
            completed_at: None,
            created_at: now,
        };
        claims::insert(&mut tx, &claim).await?;
        tx.commit().await?;
        Ok(ClaimResponse::Created(Json(claim_view(claim))))
    }

    /// The latest claim made through this domain.
    #[oai(path = "/domains/:domain_id/claim", method = "get", operation_id = "get-domain-claim")]
    async fn get_claim(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The domain's id (this team's copy).
        domain_id: Path<String>,
    ) -> ApiResult<Json<ClaimView>> {
        let id = path_id(&domain_id.0, "Domain")?;
        let mut conn = state.pool.acquire().await?;
        let claim = claims::latest_for_domain(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Claim"))?;
        Ok(Json(claim_view(claim)))
    }

    /// Start a DKIM rotation: a new key is made and shown as `dkim_rotation.next_value`.
    /// Signing keeps the current key until a check finds the new one published, then switches.
    #[oai(path = "/domains/:domain_id/dkim/rotate", method = "post", operation_id = "rotate-domain-dkim")]
    async fn rotate_dkim(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The domain's id.
        domain_id: Path<String>,
    ) -> ApiResult<Json<DomainView>> {
        let id = path_id(&domain_id.0, "Domain")?;
        let key = dkim_key().await?;
        let mut tx = state.pool.begin().await?;
        let domain = domains::lock(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Domain"))?;
        if domain.dkim_next_public_key.is_some() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "resource_locked",
                "A DKIM rotation is already waiting for its key to be published.",
            ));
        }
        if matches!(domain.status, DomainStatus::Disabled | DomainStatus::Claiming | DomainStatus::ClaimExpired) {
            return Err(ApiError::refused("A domain switched off or being claimed cannot rotate its DKIM key."));
        }
        domains::start_rotation(&mut tx, id, &key.private_pem, &key.public_base64).await?;
        let domain = domains::get(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Domain"))?;
        emit(&mut tx, "domain.updated", &domain).await?;
        let view = full_view(&state, &mut tx, domain).await?;
        tx.commit().await?;
        Ok(Json(view))
    }

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

/// A create or claim request, validated.
struct NewRequest {
    name: DomainName,
    region: Region,
    tls: Tls,
    custom_return_path: String,
    receiving_host: String,
    sending: bool,
    receiving: bool,
    open_tracking: bool,
    click_tracking: bool,
}

impl NewRequest {
    fn parse(body: CreateDomain) -> ApiResult<NewRequest> {
        let name = DomainName::parse(&body.name).map_err(|message| ApiError::invalid_field("name", message))?;
        // Nothing under `.localhost` resolves publicly, so none could be verified; and it keeps
        // the development sender's name out of reach of DNS.
        if name.name.ends_with(".localhost") {
            return Err(ApiError::invalid_field(
                "name",
                format!("is under .localhost, which no public DNS serves ({} is Herald's development sender)", domains::DEV_SENDER_DOMAIN),
            ));
        }
        let custom_return_path = parse_label(body.custom_return_path.as_deref().unwrap_or("send"), false)
            .map_err(|message| ApiError::invalid_field("custom_return_path", message))?;
        let receiving_host = parse_label(body.receiving_host.as_deref().unwrap_or("@"), true)
            .map_err(|message| ApiError::invalid_field("receiving_host", message))?;
        let capabilities = body.capabilities.unwrap_or_default();
        let region = body.region.unwrap_or(Region::UsEast1);
        let receiving = capabilities.receiving.is_some_and(Capability::on);
        receiving_offered(region, receiving)?;
        Ok(NewRequest {
            name,
            region,
            tls: body.tls.unwrap_or(Tls::Opportunistic),
            custom_return_path,
            receiving_host,
            sending: capabilities.sending.is_none_or(Capability::on),
            receiving,
            open_tracking: body.open_tracking.unwrap_or(false),
            click_tracking: body.click_tracking.unwrap_or(false),
        })
    }
}

fn receiving_offered(region: Region, receiving: bool) -> ApiResult<()> {
    if receiving && !region.offers_receiving() {
        let message = format!("Receiving is offered only in us-east-1 and eu-west-1, not in {}.", region.as_str());
        return Err(ApiError::refused(message).with_error("capabilities.receiving", "not offered in this region"));
    }
    Ok(())
}

fn fixed_label(field: &str, given: Option<&str>, current: &str, allow_apex: bool) -> ApiResult<()> {
    match given.map(|raw| parse_label(raw, allow_apex)) {
        Some(Ok(label)) if label == current => Ok(()),
        Some(_) => Err(ApiError::invalid_parameter(field, "is fixed once the domain is created")),
        None => Ok(()),
    }
}

/// The name the receiving MX is published at.
fn receiving_name(receiving_host: &str, name: &str) -> String {
    if receiving_host == "@" { name.to_string() } else { format!("{receiving_host}.{name}") }
}

/// Refuses to turn receiving on at a name whose MX delivers to another host than the region's
/// inbound host (`409 receiving_mx_in_use`, listing what was found), unless confirmed. When DNS
/// cannot answer, the check is skipped.
async fn receiving_mx_free(state: &AppState, region: Region, name: &str) -> ApiResult<()> {
    let ours = state.checker.hosts.inbound_host(region);
    let jobs::dns::Lookup::Found(found) = state.checker.dns.mx(name).await else { return Ok(()) };
    let elsewhere: Vec<&String> = found.iter().filter(|mx| mx.split_whitespace().last() != Some(ours.as_str())).collect();
    if elsewhere.is_empty() {
        return Ok(());
    }
    let message = format!("The MX of {name} already delivers mail elsewhere; set confirm_replace_mx to true to turn receiving on anyway.");
    Err(ApiError::new(StatusCode::CONFLICT, "receiving_mx_in_use", message).with_details(json!({ "name": name, "found": elsewhere })))
}

/// Refuses a return-path label whose name already holds a record that is not the service's.
/// When DNS cannot answer, the check is skipped (verification will show the record's state).
async fn return_path_free(state: &AppState, request: &NewRequest) -> ApiResult<()> {
    let dns = &state.checker.dns;
    let taken = |found: &Option<(&str, String)>| match found {
        None => false,
        Some(("CNAME", target)) => !state.checker.hosts.is_mail_from_target(target),
        Some(_) => true,
    };
    let label = &request.custom_return_path;
    let Ok(found) = dns.anything_at(&format!("{label}.{}", request.name.name)).await else { return Ok(()) };
    if !taken(&found) {
        return Ok(());
    }
    let (found_type, found_value) = found.unwrap_or_default();
    let mut suggestion = None;
    for candidate in RETURN_PATH_SUGGESTIONS.iter().filter(|c| *c != label) {
        if let Ok(at) = dns.anything_at(&format!("{candidate}.{}", request.name.name)).await
            && !taken(&at)
        {
            suggestion = Some(candidate.to_string());
            break;
        }
    }
    let suggestion = suggestion.unwrap_or_else(|| format!("{label}-{}", &new_mail_from_code()[..4]));
    let name = &request.name.name;
    let message = format!("The return-path name {label}.{name} already holds a {found_type} record; choose another custom_return_path.");
    Err(ApiError::not_allowed(message).with_details(json!({
        "reason": "return_path_in_use",
        "label": label,
        "found": { "type": found_type, "value": found_value },
        "suggestion": suggestion,
    })))
}

async fn dkim_key() -> ApiResult<schema::domain::DkimKey> {
    tokio::task::spawn_blocking(generate_dkim_key)
        .await
        .map_err(|e| anyhow::anyhow!("DKIM key generation stopped: {e}"))?
        .map_err(ApiError::from)
}

async fn insert(
    conn: &mut PgConnection,
    team_id: Uuid,
    request: &NewRequest,
    key: &schema::domain::DkimKey,
    status: DomainStatus,
) -> ApiResult<Domain> {
    let id = schema::ids::new_id();
    let mail_from_code = new_mail_from_code();
    let inserted = domains::insert(
        conn,
        &NewDomain {
            id,
            team_id,
            name: &request.name,
            region: request.region,
            tls: request.tls,
            custom_return_path: &request.custom_return_path,
            receiving_host: &request.receiving_host,
            sending_enabled: request.sending,
            receiving_enabled: request.receiving,
            open_tracking: request.open_tracking,
            click_tracking: request.click_tracking,
            status,
            mail_from_code: &mail_from_code,
            dkim_private_key: &key.private_pem,
            dkim_public_key: &key.public_base64,
        },
    )
    .await;
    if let Err(error) = &inserted
        && schema::store::violated_constraint(error) == Some("domains_team_name_key")
    {
        return Err(already_added(&request.name.name));
    }
    inserted?;
    domains::get(conn, team_id, id).await?.ok_or_else(|| anyhow::anyhow!("inserted domain vanished").into())
}

async fn within_limit(conn: &mut PgConnection, team_id: Uuid, limit: i32) -> ApiResult<()> {
    if domains::count_live(conn, team_id).await? >= i64::from(limit) {
        return Err(ApiError::refused(format!("Domain limit reached: the plan allows {limit} domain(s).")));
    }
    Ok(())
}

fn already_added(name: &str) -> ApiError {
    ApiError::refused(format!("This team already has the domain {name}."))
}

fn held_elsewhere(name: &str) -> ApiError {
    let mut error = ApiError::new(
        StatusCode::CONFLICT,
        "resource_locked",
        format!("The domain {name} is verified by another team. Claim it with POST /domains/claim."),
    );
    error.claimable = Some(true);
    error
}

/// Why the team cannot send from `name`, and what to call about it: `domain` is the team's copy
/// of it (with its records' statuses), when it has one.
pub(crate) fn not_sendable(name: &str, domain: Option<&Domain>) -> String {
    let Some(domain) = domain else {
        return format!(
            "The {name} domain is not on this team. Add it with `POST /domains`, publish its records, then call `POST /domains/{{id}}/verify`."
        );
    };
    let id = domain.id;
    match domain.status {
        DomainStatus::Claiming => format!(
            "The {name} domain is being claimed from another team. Publish the TXT record `GET /domains/{id}/claim` shows, then call `POST /domains/{id}/verify`."
        ),
        DomainStatus::ClaimExpired => {
            format!("The claim on the {name} domain expired before the domain moved to this team. Claim it again with `POST /domains/claim`.")
        }
        _ if !domain.sending_enabled => format!(
            "Sending from the {name} domain is turned off. Turn it on with `PATCH /domains/{id}` and `{{\"capabilities\": {{\"sending\": \"enabled\"}}}}`."
        ),
        status => {
            let missing: Vec<String> = domain
                .record_statuses
                .iter()
                .flatten()
                .filter(|(kind, status)| matches!(kind, RecordKind::Dkim | RecordKind::MailFrom) && *status != RecordStatus::Verified)
                .map(|(kind, status)| format!("its `{}` record is `{}`", kind.as_str(), status.as_str()))
                .collect();
            let why = if missing.is_empty() { format!("its status is `{}`", status.as_str()) } else { missing.join(" and ") };
            format!(
                "The {name} domain is not verified: {why}. Publish the records `GET /domains/{id}` lists, then call `POST /domains/{id}/verify`."
            )
        }
    }
}

async fn emit(conn: &mut PgConnection, event_type: &'static str, domain: &Domain) -> ApiResult<()> {
    let event = event_for(conn, event_type, domain).await?;
    events::emit(conn, &[event]).await?;
    Ok(())
}


async fn find(conn: &mut PgConnection, team_id: Uuid, raw: &str) -> ApiResult<Domain> {
    let id = path_id(raw, "Domain")?;
    domains::get(conn, team_id, id).await?.ok_or_else(|| ApiError::not_found("Domain"))
}

async fn kept_token(state: &AppState, conn: &mut PgConnection, id: Uuid) -> ApiResult<Option<String>> {
    let (Some(sealed), Some(secret)) = (domains::credential(conn, id).await?, state.config.secret_key.as_deref()) else {
        return Ok(None);
    };
    Ok(schema::secret::open(secret, &sealed).and_then(|token| String::from_utf8(token).ok()))
}

fn provider_error(error: ProviderError) -> ApiError {
    match error {
        ProviderError::Refused(message) => ApiError::refused(message),
        unavailable @ ProviderError::Unavailable(_) => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "service_unavailable", unavailable.to_string())
        }
    }
}

async fn full_view(state: &AppState, conn: &mut PgConnection, domain: Domain) -> ApiResult<DomainView> {
    let records = domains::records(conn, &[domain.id]).await?;
    Ok(view(state, domain, &records))
}

fn view(state: &AppState, domain: Domain, states: &[RecordState]) -> DomainView {
    let records = state
        .checker
        .records_of(&domain)
        .into_iter()
        .map(|record| {
            let checked = states.iter().find(|s| s.kind == record.kind);
            DnsRecord {
                record: record.kind,
                record_type: record.kind.record_type().into(),
                required: domain.needs(record.kind),
                name: record.name,
                fqdn: record.fqdn,
                value: record.value,
                priority: record.priority.into(),
                ttl: "Auto".into(),
                status: checked.map_or(RecordStatus::NotStarted, |s| s.status),
                found: checked.and_then(|s| s.found.clone()).into(),
                checked_at: checked.and_then(|s| s.checked_at).into(),
            }
        })
        .collect();
    DomainView {
        object: "domain".into(),
        id: domain.id.to_string(),
        name: domain.name,
        status: domain.status,
        region: domain.region,
        tls: domain.tls,
        custom_return_path: domain.custom_return_path,
        receiving_host: domain.receiving_host,
        capabilities: CapabilitiesView {
            sending: Capability::of(domain.sending_enabled),
            receiving: Capability::of(domain.receiving_enabled),
        },
        open_tracking: domain.open_tracking,
        click_tracking: domain.click_tracking,
        records,
        dkim_rotation: Nullable::from(domain.dkim_next_public_key.zip(domain.dkim_rotation_started_at).map(|(key, started_at)| DkimRotation {
            next_value: schema::domain::dkim_value(&key),
            started_at,
        })),
        autoconfigure_credential: domain.has_credential,
        checked_at: domain.checked_at.into(),
        verified_at: domain.verified_at.into(),
        created_at: domain.created_at,
    }
}

fn claim_view(claim: Claim) -> ClaimView {
    ClaimView {
        object: "domain_claim".into(),
        id: claim.id.to_string(),
        domain_id: claim.domain_id.to_string(),
        record: ClaimRecord { record_type: "TXT".into(), name: "@".into(), fqdn: claim.name.clone(), value: claim.token },
        name: claim.name,
        status: claim.status,
        blocked_reason: claim.blocked_reason.into(),
        checked_at: claim.checked_at.into(),
        expires_at: claim.expires_at,
        completed_at: claim.completed_at.into(),
        created_at: claim.created_at,
    }
}
