//! Sending domains: add (with fresh DKIM keys), list, read, change settings, delete, verify
//! against DNS, and rotate DKIM.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::paging::page_request;
use crate::http::fields::IdText;
use crate::routes::{Deleted, Tag, Updated, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use jobs::domains::VERIFY_THROTTLE;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::domain::{DomainStatus, Region, Tls};
use schema::store::claims::{self};
use schema::store::domains::{self, RecordState, Settings};
use serde::Deserialize;
use uuid::Uuid;
use crate::routes::domains::adding::{held_elsewhere};
use crate::routes::domains::views::{DomainView, Capability, Capabilities, view, full_view, find, emit, DomainList};
use crate::routes::domains::adding::{NewRequest, CreateDomain, receiving_offered, fixed_label, receiving_name, receiving_mx_free, return_path_free, dkim_key, insert, within_limit, already_added};

pub struct DomainsApi;

/// Body of `PATCH /domains/{domain_id}`. Region, return path and receiving host are fixed.
#[derive(Object, Deserialize)]
pub struct UpdateDomain {
    /// `opportunistic` or `enforced`.
    pub tls: Option<Tls>,
    /// Capabilities to turn on or off; one left out stays as it is.
    pub capabilities: Option<Capabilities>,
    /// Track opens.
    pub open_tracking: Option<bool>,
    /// Track clicks.
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

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// The domain was added; publish its records, then verify.
    #[oai(status = 201)]
    Created(Json<DomainView>),
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
            receiving_mx_free(&state, request.region, &receiving_name(&request.receiving_host, request.name.name())).await?;
        }
        let key = dkim_key().await?;
        let mut tx = state.pool.begin().await?;
        let limit = schema::store::teams::lock_domain_limit(&mut tx, caller.team_id).await?;
        if domains::held_by_other_team(&mut tx, caller.team_id, request.name.name()).await?.is_some() {
            return Err(held_elsewhere(request.name.name()));
        }
        if domains::find_by_name(&mut tx, caller.team_id, request.name.name()).await?.is_some() {
            return Err(already_added(request.name.name()));
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
            return Err(ApiError::new(ErrorKind::ResourceLocked, "Live API keys are pinned to this domain; revoke them before deleting it.",
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
                if let Some(claim) = claim.filter(|c| c.status == schema::status::ClaimStatus::Pending && !recent(c.checked_at)) {
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
            return Err(ApiError::new(ErrorKind::ResourceLocked, "A DKIM rotation is already waiting for its key to be published.",
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
}
