//! `POST /billing/limit-requests` and `GET /billing/limit-requests`: a team asks for a limit
//! above its plan's; an operator decides with `herald team review`, and an approval becomes
//! the team's own limit.

use super::provider;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices, Nullable};
use crate::http::input::one_line;
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::billing_changes::{self, LimitRequest};
use serde::Deserialize;

pub struct LimitRequestsApi;

crate::choices! {
    /// A limit a team may ask to raise.
    LimitName = &["daily_emails", "monthly_emails", "contacts", "domains", "webhook_endpoints"];
    /// `pending`, `approved` or `declined`.
    LimitRequestStatus = &["pending", "approved", "declined"];
}

/// Longest reason.
const MAX_REASON: usize = 1000;

/// What to ask for.
#[derive(Object, Deserialize)]
pub struct NewLimitRequest {
    /// The limit to raise.
    pub limit: Choice<LimitName>,
    /// The number asked for: above the limit that applies now, at most 100,000,000.
    #[oai(validator(minimum(value = "1"), maximum(value = "100000000")))]
    pub requested: i64,
    /// Why: what the team sends and to whom, 1 to 1,000 characters.
    #[oai(validator(min_length = 1, max_length = 1000, pattern = r"\S"))]
    pub reason: String,
}

/// A limit request.
#[derive(Object)]
pub struct LimitRequestView {
    /// Always `limit_request`.
    pub object: String,
    /// The request's id.
    pub id: String,
    /// The limit asked about.
    pub limit: Choice<LimitName>,
    /// The limit when asked, or `null` when there was none.
    pub current: Nullable<i32>,
    /// The number asked for.
    pub requested: i32,
    /// Why.
    pub reason: String,
    /// Where the review stands.
    pub status: Choice<LimitRequestStatus>,
    /// The operator's note, or `null`.
    pub review_note: Nullable<String>,
    /// When it was filed.
    pub created_at: DateTime<Utc>,
    /// When it was decided, or `null` while pending.
    pub reviewed_at: Nullable<DateTime<Utc>>,
}

/// The team's requests.
#[derive(Object)]
pub struct LimitRequestList {
    /// Always `list`.
    pub object: String,
    /// Always false: the newest 100 are listed.
    pub has_more: bool,
    /// Newest first.
    pub data: Vec<LimitRequestView>,
}

#[derive(ApiResponse)]
pub enum Filed {
    /// Filed; an operator reviews it.
    #[oai(status = 201)]
    Created(Json<LimitRequestView>),
}

pub fn view(r: LimitRequest) -> LimitRequestView {
    LimitRequestView {
        object: "limit_request".into(),
        id: r.id.to_string(),
        limit: Choice::new(r.limit_name),
        current: Nullable(r.current_value),
        requested: r.requested,
        reason: r.reason,
        status: Choice::new(r.status),
        review_note: Nullable(r.review_note),
        created_at: r.created_at,
        reviewed_at: Nullable(r.reviewed_at),
    }
}

#[poem_openapi::OpenApi(tag = "Tag::Billing")]
impl LimitRequestsApi {
    /// Ask for a limit above the plan's (`full_access`). One request per limit may be pending;
    /// a second is `422 validation_error`.
    #[oai(path = "/billing/limit-requests", method = "post", operation_id = "create-limit-request")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<NewLimitRequest>) -> ApiResult<Filed> {
        let body = body.0;
        let limit = body.limit;
        if !LimitName::allows(limit.as_str()) {
            return Err(ApiError::refused_field("limit", format!("must be one of {}", LimitName::VALUES.join(", "))));
        }
        let requested = body.requested;
        if !(1..=100_000_000).contains(&requested) {
            return Err(ApiError::invalid_field("requested", "must be 1 to 100000000"));
        }
        let reason = one_line(&body.reason, MAX_REASON).ok_or_else(|| ApiError::invalid_field("reason", "must be one line of 1 to 1000 characters"))?;
        provider::client(&state)?;
        let mut tx = state.pool.begin().await?;
        let current = billing_changes::current_limit(&mut tx, caller.team_id, limit.as_str()).await?;
        let Some(now) = current else {
            return Err(ApiError::refused_field("limit", "has no cap on this plan"));
        };
        if requested <= i64::from(now) {
            return Err(ApiError::refused_field("requested", format!("must be above the limit that applies now ({now})")));
        }
        let filed = billing_changes::file_request(&mut tx, caller.team_id, limit.as_str(), current, requested as i32, &reason).await?;
        let Some(filed) = filed else {
            return Err(ApiError::refused_field("limit", "has a request pending review already"));
        };
        tx.commit().await?;
        Ok(Filed::Created(Json(view(filed))))
    }

    /// The team's limit requests, newest first (`full_access`).
    #[oai(path = "/billing/limit-requests", method = "get", operation_id = "list-limit-requests")]
    async fn list(&self, state: Data<&AppState>, caller: Data<&Caller>) -> ApiResult<Json<LimitRequestList>> {
        let mut conn = state.pool.acquire().await?;
        let data = billing_changes::requests(&mut conn, caller.team_id).await?.into_iter().map(view).collect();
        Ok(Json(LimitRequestList { object: "list".into(), has_more: false, data }))
    }
}
