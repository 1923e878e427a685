//! Sending a broadcast now or at a time, cancelling it, and running its gate or checks alone.

use schema::status::BroadcastStatus;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::Object;
use schema::store::broadcasts::{self};
use serde::Deserialize;
use crate::routes::broadcasts::views::BroadcastRef;
use crate::routes::broadcasts::views::draft_only;
use crate::routes::broadcasts::views::found;
use crate::routes::broadcasts::views::scheduled;
use crate::routes::broadcasts::gate::{GateResult, gate, content_checks, start};
use crate::routes::broadcasts::gate::{GateStep, BroadcastCheck};

pub struct BroadcastSendingApi;

#[poem_openapi::OpenApi(tag = "Tag::Broadcasts")]
impl BroadcastSendingApi {
    /// Send a draft now or at `scheduled_at`: the gate, then the content checks.
    #[oai(path = "/broadcasts/:broadcast_id/send", method = "post", operation_id = "send-broadcast")]
    async fn send(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>, body: Body<Option<SendBroadcastRequest>>) -> ApiResult<Json<BroadcastRef>> {
        let request = body.0.unwrap_or_default();
        let scheduled_at = request.scheduled_at.as_deref().map(scheduled).transpose()?;
        let mut tx = state.pool.begin().await?;
        let current = found(&mut tx, caller.team_id, &broadcast_id.0, true).await?;
        draft_only(&current, "sent")?;
        start(&mut tx, &state, caller.team_id, &current, scheduled_at, request.acknowledge_checks.unwrap_or(false)).await?;
        tx.commit().await?;
        Ok(Json(BroadcastRef { object: "broadcast".into(), id: current.id.to_string() }))
    }

    /// Cancel a scheduled or queued broadcast; a sending one stops at its next page of
    /// recipients (emails already created still go out).
    #[oai(path = "/broadcasts/:broadcast_id/cancel", method = "post", operation_id = "cancel-broadcast")]
    async fn cancel(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<Json<BroadcastRef>> {
        let mut tx = state.pool.begin().await?;
        let current = found(&mut tx, caller.team_id, &broadcast_id.0, true).await?;
        if !current.status.is_in_flight() {
            return Err(ApiError::refused(format!("A {} broadcast cannot be canceled.", current.status)).with_error("status", current.status.as_str()));
        }
        broadcasts::set_status(&mut tx, current.id, BroadcastStatus::Canceled, current.scheduled_at, None).await?;
        tx.commit().await?;
        Ok(Json(BroadcastRef { object: "broadcast".into(), id: current.id.to_string() }))
    }

    /// Run the compliance gate without sending: each step in document A's order.
    #[oai(path = "/broadcasts/:broadcast_id/checklist", method = "get", operation_id = "get-broadcast-checklist")]
    async fn checklist(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<Json<BroadcastChecklist>> {
        let mut conn = state.pool.acquire().await?;
        let broadcast = found(&mut conn, caller.team_id, &broadcast_id.0, false).await?;
        let steps = gate(&mut conn, caller.team_id, &broadcast, state.config.is_development()).await?;
        let ready = steps.iter().all(|s| s.passed);
        Ok(Json(BroadcastChecklist { object: "broadcast_checklist".into(), ready, steps: steps.into_iter().map(GateResult::into_view).collect() }))
    }

    /// Run the content checks (links are read as written, never fetched).
    #[oai(path = "/broadcasts/:broadcast_id/checks", method = "post", operation_id = "check-broadcast")]
    async fn checks(&self, state: Data<&AppState>, caller: Data<&Caller>, broadcast_id: Path<String>) -> ApiResult<Json<BroadcastChecks>> {
        let mut conn = state.pool.acquire().await?;
        let broadcast = found(&mut conn, caller.team_id, &broadcast_id.0, false).await?;
        let checks = content_checks(&mut conn, &state, caller.team_id, &broadcast).await?;
        let has_failures = checks.iter().any(|c| c.status == "fail");
        Ok(Json(BroadcastChecks { object: "broadcast_checks".into(), has_failures, checks }))
    }
}

/// Body of `POST /broadcasts/{id}/send`.
#[derive(Object, Deserialize, Default)]
pub struct SendBroadcastRequest {
    /// An ISO 8601 instant or phrase, 1 minute to 30 days ahead; omitted sends now.
    pub scheduled_at: Option<String>,
    /// Send even when a content check fails.
    pub acknowledge_checks: Option<bool>,
}

/// The gate, run without sending.
#[derive(Object)]
pub struct BroadcastChecklist {
    /// Always `broadcast_checklist`.
    pub object: String,
    /// Whether every step passes.
    pub ready: bool,
    /// The steps in document A's order.
    pub steps: Vec<GateStep>,
}

/// The content checks of a broadcast.
#[derive(Object)]
pub struct BroadcastChecks {
    /// Always `broadcast_checks`.
    pub object: String,
    /// Whether a check fails (a send then needs `acknowledge_checks: true`).
    pub has_failures: bool,
    /// Every check, in a fixed order.
    pub checks: Vec<BroadcastCheck>,
}
