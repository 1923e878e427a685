//! Claims: taking over a domain another team verified, by publishing a TXT record.

use schema::status::ClaimStatus;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::fields::Nullable;
use crate::routes::{Tag, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use jobs::domains::CLAIM_LIFETIME;
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::domain::DomainStatus;
use schema::store::claims::{self, Claim};
use schema::store::domains::{self};
use crate::routes::domains::adding::CreateDomain;
use crate::routes::domains::adding::NewRequest;
use crate::routes::domains::adding::dkim_key;
use crate::routes::domains::adding::insert;
use crate::routes::domains::adding::within_limit;
use crate::routes::domains::views::emit;

pub struct ClaimsApi;

#[poem_openapi::OpenApi(tag = "Tag::Domains")]
impl ClaimsApi {
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
        if domains::held_by_other_team(&mut tx, caller.team_id, request.name.name()).await?.is_none() {
            return Err(ApiError::refused(format!("No other team holds {}; add it with POST /domains.", request.name.name())));
        }
        let domain = match domains::find_by_name(&mut tx, caller.team_id, request.name.name()).await? {
            Some(existing) if existing.status == DomainStatus::Claiming => {
                let claim = claims::latest_for_domain(&mut tx, caller.team_id, existing.id).await?;
                if let Some(claim) = claim.filter(|c| c.status == ClaimStatus::Pending) {
                    return Err(ApiError::new(ErrorKind::ResourceLocked, format!("A claim on {} is already pending (claim {}).", existing.name, claim.id),
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
            status: ClaimStatus::Pending,
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
}

/// The TXT record a claim waits for.
#[derive(Object)]
pub struct ClaimRecord {
    /// Always `TXT`.
    #[oai(rename = "type")]
    pub record_type: String,
    /// `@`: the domain itself.
    pub name: String,
    /// Fully qualified name: the domain.
    pub fqdn: String,
    /// Starts `svc-domain-verification=`.
    pub value: String,
}

/// A claim on a domain another team holds.
#[derive(Object)]
pub struct ClaimView {
    /// Always `domain_claim`.
    pub object: String,
    /// The claim's id.
    pub id: String,
    /// This team's copy of the domain, which receives the name when the claim completes.
    pub domain_id: String,
    /// The domain claimed.
    pub name: String,
    /// `pending`, `completed` or `expired`.
    pub status: String,
    /// Why a pending claim has not transferred: `record_not_found`, `owner_recently_verified`
    /// (within 72 hours), `owner_recently_sent` (within 24 hours) or `owner_has_scheduled_mail`.
    pub blocked_reason: Nullable<String>,
    /// The TXT record to publish.
    pub record: ClaimRecord,
    /// When the claim was last checked, or `null` before the first check.
    pub checked_at: Nullable<DateTime<Utc>>,
    /// When a pending claim expires (7 days after it started).
    pub expires_at: DateTime<Utc>,
    /// When the domain was transferred, or `null` until then.
    pub completed_at: Nullable<DateTime<Utc>>,
    /// When the claim started.
    pub created_at: DateTime<Utc>,
}

#[derive(ApiResponse)]
pub enum ClaimResponse {
    /// The claim started; publish its TXT record.
    #[oai(status = 201)]
    Created(Json<ClaimView>),
}

pub fn claim_view(claim: Claim) -> ClaimView {
    ClaimView {
        object: "domain_claim".into(),
        id: claim.id.to_string(),
        domain_id: claim.domain_id.to_string(),
        record: ClaimRecord { record_type: "TXT".into(), name: "@".into(), fqdn: claim.name.clone(), value: claim.token },
        name: claim.name,
        status: claim.status.as_str().into(),
        blocked_reason: claim.blocked_reason.into(),
        checked_at: claim.checked_at.into(),
        expires_at: claim.expires_at,
        completed_at: claim.completed_at.into(),
        created_at: claim.created_at,
    }
}
