//! The compliance gate and content checks a broadcast passes before it sends, and starting the
//! send (the status and the fan-out job, in the caller's transaction).

use schema::status::BroadcastStatus;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::state::AppState;
use chrono::{DateTime, Utc};
use poem_openapi::Object;
use schema::email::Mailbox;
use schema::jobs::{SendBroadcast, enqueue_at};
use schema::model::RiskState;
use schema::store::broadcasts::{self, Broadcast};
use schema::store::templates::{self, Content, Key};
use schema::store::{domains, segments, teams};
use serde_json::json;
use sqlx::PgConnection;
use std::time::SystemTime;
use uuid::Uuid;

/// One gate step's verdict, with the answer a send gets when it is the first to fail.
pub struct GateResult {
    pub name: &'static str,
    pub passed: bool,
    pub message: String,
    /// What a failure of the step answers.
    pub kind: ErrorKind,
}

impl GateResult {
    pub fn into_view(self) -> GateStep {
        GateStep { name: self.name.into(), passed: self.passed, message: self.message }
    }
}

/// The compliance gate in document A's order: verified sending domain, postal address, live
/// segment, a body, marketing not paused, team in good standing.
pub async fn gate(conn: &mut PgConnection, team_id: Uuid, b: &Broadcast, development: bool) -> ApiResult<Vec<GateResult>> {
    let mut steps = Vec::new();
    let from_domain = Mailbox::parse(&b.from_header).map(|m| m.domain().to_string()).unwrap_or_default();
    let domain = domains::find_by_name(conn, team_id, &from_domain).await?;
    let sendable = domains::can_send(domain.as_ref(), development).map(|_| ()).map_err(|why| why.explain(&from_domain, domain.as_ref().map(|d| d.id)));
    steps.push(GateResult {
        name: "sending_domain",
        passed: sendable.is_ok(),
        message: match sendable {
            Ok(()) => format!("{from_domain} is verified"),
            Err(why) => why.trim_end_matches('.').to_string(),
        },
        kind: ErrorKind::Refused,
    });
    let team = teams::get(conn, team_id).await?.ok_or_else(|| ApiError::not_found("Team"))?;
    let address = team.postal_address.is_some();
    steps.push(GateResult {
        name: "postal_address",
        passed: address,
        message: if address { "the sender identity has a postal address".into() } else { "set the team's postal address with `PATCH /team` (`postal_address`): every marketing email carries it".into() },
        kind: ErrorKind::Refused,
    });
    let segment = match b.segment_id {
        Some(id) => segments::get(conn, team_id, id).await?.is_some(),
        None => false,
    };
    steps.push(GateResult {
        name: "segment",
        passed: segment,
        message: if segment { "the segment is live".into() } else { "`segment_id` must name a live segment of the team".into() },
        kind: ErrorKind::Refused,
    });
    let body = match b.template_id {
        Some(id) => templates::find(conn, team_id, &Key::Id(id), false).await?.is_some_and(|t| t.published_version.is_some()),
        None => b.html.is_some() || b.text.is_some(),
    };
    steps.push(GateResult {
        name: "body",
        passed: body,
        message: if body { "the broadcast has a body".into() } else { "give the broadcast `html`, `text` or a published template".into() },
        kind: ErrorKind::Refused,
    });
    let paused = schema::store::switches::is_off(conn, schema::store::switches::Switch::Marketing).await?;
    steps.push(GateResult {
        name: "marketing_enabled",
        passed: !paused,
        message: if paused { "marketing sends are paused on this Herald by its operator".into() } else { "marketing sends are on".into() },
        kind: ErrorKind::NotAllowed,
    });
    let standing = team.risk_state == RiskState::Normal;
    steps.push(GateResult {
        name: "team_standing",
        passed: standing,
        message: if standing { "the team is in good standing".into() } else { "the team is under review or suspended and cannot send marketing".into() },
        kind: ErrorKind::NotAllowed,
    });
    Ok(steps)
}

/// The content checks over the broadcast's own content or its template's.
pub async fn content_checks(conn: &mut PgConnection, state: &AppState, team_id: Uuid, b: &Broadcast) -> ApiResult<Vec<BroadcastCheck>> {
    let (html, text) = match b.template_id {
        Some(id) => match templates::find(conn, team_id, &Key::Id(id), false).await? {
            Some(t) => (t.content.html, t.content.text),
            None => (None, None),
        },
        None => (b.html.clone(), b.text.clone()),
    };
    let content = Content { subject: Some(b.subject.clone()), html, text, ..Content::default() };
    let checks = crate::routes::templates::content::checks(conn, &state.config.public_url, team_id, &content, b.preview_text.as_deref()).await?;
    Ok(checks.into_iter().map(|c| BroadcastCheck { name: c.name.into(), status: c.status.as_str().into(), message: c.message }).collect())
}

/// Sends a draft: the gate (the first failing step answers), then the content checks (a
/// failure answers `422 validation_error` with `details.checks` unless acknowledged), then the
/// status and the fan-out job, in the caller's transaction.
pub async fn start(conn: &mut PgConnection, state: &AppState, team_id: Uuid, b: &Broadcast, scheduled_at: Option<DateTime<Utc>>, acknowledged: bool) -> ApiResult<()> {
    let steps = gate(conn, team_id, b, state.config.is_development()).await?;
    if let Some(failed) = steps.iter().find(|s| !s.passed) {
        return Err(ApiError::new(failed.kind, format!("The broadcast cannot be sent: {}.", failed.message))
            .with_error(failed.name, failed.message.clone()));
    }
    let checks = content_checks(conn, state, team_id, b).await?;
    if !acknowledged && checks.iter().any(|c| c.status == "fail") {
        let failing: Vec<&str> = checks.iter().filter(|c| c.status == "fail").map(|c| c.name.as_str()).collect();
        let details = json!({ "checks": checks.iter().map(|c| json!({ "name": c.name, "status": c.status, "message": c.message })).collect::<Vec<_>>() });
        return Err(ApiError::refused(format!(
            "Content checks fail ({}); fix them, or send with `acknowledge_checks: true`.",
            failing.join(", ")
        ))
        .with_details(details));
    }
    // The marketing meter: the segment's members now, on top of this month's broadcast emails.
    let (allowance, used) = broadcasts::marketing_meter(conn, team_id).await?;
    if let Some(allowance) = allowance {
        let segment = segments::get(conn, team_id, b.segment_id.unwrap_or_default()).await?.ok_or_else(|| ApiError::not_found("Segment"))?;
        let membership = segments::membership(conn, &segment).await?;
        let members = segments::count_members(conn, team_id, &membership).await?;
        if used + members > i64::from(allowance) {
            return Err(ApiError::new(ErrorKind::MarketingQuotaExceeded, format!(
                    "The team's plan allows {allowance} broadcast emails a month; {used} are used and this segment has {members} contacts. The meter resets at the start of next month or with a plan change."
                ),
            ));
        }
    }
    let status = if scheduled_at.is_some() { BroadcastStatus::Scheduled } else { BroadcastStatus::Queued };
    broadcasts::set_status(conn, b.id, status, scheduled_at, None).await?;
    let at = scheduled_at.map_or_else(SystemTime::now, SystemTime::from);
    enqueue_at(conn, &SendBroadcast { broadcast_id: b.id }, at).await.map_err(anyhow::Error::from)?;
    Ok(())
}

/// One step of the compliance gate.
#[derive(Object)]
pub struct GateStep {
    /// `sending_domain`, `postal_address`, `segment`, `body`, `marketing_enabled` or `team_standing`.
    pub name: String,
    /// Whether the step passes.
    pub passed: bool,
    /// What the step found, or what to do to pass it.
    pub message: String,
}

/// One content check.
#[derive(Object)]
pub struct BroadcastCheck {
    /// The check's name, such as `links`.
    pub name: String,
    /// `pass`, `warn` or `fail`.
    pub status: String,
    /// What the check found, for a person.
    pub message: String,
}
