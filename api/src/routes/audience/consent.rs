//! Consent: where a choice was made, the consent record each change writes, and topic choices
//! sent with a contact (checked, applied, recorded).

use crate::http::fields::{Choice, Choices};
use schema::store::topics;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::IdText;
use poem_openapi::Object;
use schema::store::contacts::{self, Consent, Contact};
use serde::Deserialize;
use uuid::Uuid;

/// Where a choice was made, for its consent record.
#[derive(Debug, Clone)]
pub struct Origin {
    /// `api`, `import`, `preference_page` or `one_click`.
    pub source: &'static str,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
}

impl Origin {
    /// A call to the API (no address or agent of the person is known).
    pub fn api() -> Origin {
        Origin { source: "api", ip_address: None, user_agent: None }
    }
}

/// Records a choice: `subscribed`/`unsubscribed`, or a topic's `opt_in`/`opt_out`.
pub async fn consent(conn: &mut sqlx::PgConnection, contact: &Contact, topic_id: Option<Uuid>, choice: &'static str, origin: &Origin) -> ApiResult<()> {
    let record = Consent {
        team_id: contact.team_id,
        contact_id: contact.id,
        email: &contact.email,
        topic_id,
        choice,
        source: origin.source,
        ip_address: origin.ip_address.clone(),
        user_agent: origin.user_agent.clone(),
    };
    contacts::record_consent(conn, &record).await?;
    Ok(())
}

/// One choice in `PATCH /contacts/{contact}/topics`.
#[derive(Object, Deserialize, Clone)]
pub struct TopicChoice {
    /// The topic's id.
    pub id: IdText,
    /// `opt_in` or `opt_out`.
    pub subscription: Choice<Subscription>,
}

/// Checks topic choices (`opt_in`/`opt_out` for the team's live topics); `path` names the body
/// field in errors.
pub async fn checked_choices(conn: &mut sqlx::PgConnection, team_id: Uuid, choices: &[TopicChoice], path: &str) -> ApiResult<Vec<(Uuid, String)>> {
    let mut parsed = Vec::with_capacity(choices.len());
    for (i, choice) in choices.iter().enumerate() {
        if !Subscription::allows(&choice.subscription) {
            return Err(ApiError::invalid_parameter(&format!("{path}[{i}].subscription"), "must be opt_in or opt_out"));
        }
        let id = schema::ids::parse_id(&choice.id).ok_or_else(|| ApiError::invalid_parameter(&format!("{path}[{i}].id"), "is not a topic id"))?;
        parsed.push((id, choice.subscription.to_string()));
    }
    let ids: Vec<Uuid> = parsed.iter().map(|(id, _)| *id).collect();
    let live = topics::live_ids(conn, team_id, &ids).await?;
    if let Some(i) = ids.iter().position(|id| !live.contains(id)) {
        return Err(ApiError::invalid_parameter(&format!("{path}[{i}].id"), "is not one of the team's topics"));
    }
    Ok(parsed)
}

/// Whether choices may turn a topic the contact opted out of back on: the contact's own topic
/// routes may; a repeat `POST /contacts` (an upsert that may replay a stale sign-up form) may
/// not, as it never clears `unsubscribed` either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptOuts {
    Changeable,
    Kept,
}

/// Checks and records topic choices for a contact, with a consent record per change. `path`
/// names the body field in errors.
pub async fn apply_choices(conn: &mut sqlx::PgConnection, contact: &Contact, choices: &[TopicChoice], path: &str, origin: &Origin, opt_outs: OptOuts) -> ApiResult<()> {
    let mut parsed = checked_choices(conn, contact.team_id, choices, path).await?;
    if opt_outs == OptOuts::Kept && parsed.iter().any(|(_, s)| s == "opt_in") {
        let out = topics::opted_out(conn, contact.id).await?;
        parsed.retain(|(topic_id, subscription)| subscription != "opt_in" || !out.contains(topic_id));
    }
    for (topic_id, subscription) in topics::choose(conn, contact.id, &parsed).await? {
        consent(conn, contact, Some(topic_id), if subscription == "opt_in" { "opt_in" } else { "opt_out" }, origin).await?;
    }
    Ok(())
}

crate::choices! {
    /// `opt_in` or `opt_out`.
    Subscription = &["opt_in", "opt_out"];
}
