//! Consent: where a choice was made, the consent record each change writes, topic choices sent
//! with a contact (checked, applied, recorded), and a contact's consent history read back.

use crate::http::fields::{Choice, Choices};
use schema::store::topics;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{IdText, Nullable};
use crate::http::paging::page_request;
use crate::routes::Tag;
use crate::routes::audience::refs::contact_key;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
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
    /// What a consent record says: the contact `subscribed` or `unsubscribed` (all mail), or
    /// opted in to or out of one topic (`opt_in`, `opt_out`).
    ConsentChoice = &["subscribed", "unsubscribed", "opt_in", "opt_out"];
}

pub struct ConsentApi;

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl ConsentApi {
    /// A contact's consent history, newest first: every change of `unsubscribed` and every
    /// topic choice, with where it was made. Records outlive the contact (kept three years under
    /// a hash of the address) but are read here only while the contact exists.
    #[oai(path = "/contacts/:contact/consents", method = "get", operation_id = "list-contact-consents")]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The contact's id or email address.
        contact: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<ConsentList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let mut conn = state.pool.acquire().await?;
        let contact = contacts::find(&mut conn, caller.team_id, &contact_key(&contact.0)?, false).await?.ok_or_else(|| ApiError::not_found("Contact"))?;
        let records = contacts::consents(&mut conn, caller.team_id, contact.id, &page).await?;
        let data = records
            .data
            .into_iter()
            .map(|r| ConsentView {
                object: "consent_record".into(),
                id: r.id.to_string(),
                contact_id: contact.id.to_string(),
                topic_id: Nullable::from(r.topic_id.map(|t| t.to_string())),
                choice: Choice::from(r.choice),
                source: r.source,
                ip_address: Nullable::from(r.ip_address),
                user_agent: Nullable::from(r.user_agent),
                created_at: r.created_at,
            })
            .collect();
        Ok(Json(ConsentList { object: "list".into(), has_more: records.has_more, data }))
    }
}

/// A page of consent records.
#[derive(Object)]
pub struct ConsentList {
    /// Always `list`.
    pub object: String,
    /// Whether more records follow this page.
    pub has_more: bool,
    /// The records, newest first.
    pub data: Vec<ConsentView>,
}

/// One change of consent.
#[derive(Object)]
pub struct ConsentView {
    /// Always `consent_record`.
    pub object: String,
    /// The record's id.
    pub id: String,
    /// The contact's id.
    pub contact_id: String,
    /// The topic chosen, or `null` for a change of `unsubscribed` (all mail).
    pub topic_id: Nullable<String>,
    /// What was chosen.
    pub choice: Choice<ConsentChoice>,
    /// Where: `api` (the dashboard's changes too), `import`, `preference_page`, `one_click`,
    /// or `migration:<platform>`.
    pub source: String,
    /// The client's address when the person chose on a hosted page, else `null`.
    pub ip_address: Nullable<String>,
    /// The client's user agent when the person chose on a hosted page, else `null`.
    pub user_agent: Nullable<String>,
    /// When.
    pub created_at: DateTime<Utc>,
}
