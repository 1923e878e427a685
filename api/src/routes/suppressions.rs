//! Suppressions: addresses the team will not send to. Added by hand (origin `manual`), by hard
//! bounces and by complaints; removed by hand.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::paging::{date_range, page_request, search_text};
use crate::http::fields::{Choice, Choices, EmailAddress, IdText, InstantOrDate, Nullable, Search};
use crate::routes::{Deleted, Tag};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::email::Mailbox;
use schema::store::events::{self, NewEvent};
use schema::store::suppressions::{self, Key, NewSuppression, Suppression};
use serde::Deserialize;
use sqlx::PgConnection;

pub struct SuppressionsApi;

/// Body of `POST /suppressions`.
#[derive(Object, Deserialize)]
pub struct AddSuppression {
    /// The address to suppress.
    pub email: EmailAddress,
}

/// Body of `POST /suppressions/batch/add`.
#[derive(Object, Deserialize)]
pub struct AddSuppressions {
    /// 1 to 100 addresses.
    #[oai(validator(min_items = 1, max_items = 100))]
    pub emails: Vec<EmailAddress>,
}

/// Body of `POST /suppressions/batch/remove`: addresses, ids, or both; 1 to 100 in all.
#[derive(Object, Deserialize)]
pub struct RemoveSuppressions {
    /// Suppressed addresses to remove.
    #[oai(validator(max_items = 100))]
    pub emails: Option<Vec<EmailAddress>>,
    /// Ids of suppressions to remove.
    #[oai(validator(max_items = 100))]
    pub ids: Option<Vec<IdText>>,
}

/// The suppressions a batch removed.
#[derive(Object)]
pub struct RemovedSuppressions {
    /// Each suppression removed, as `{ object, id, deleted: true }`; a name that matched none
    /// is not listed.
    pub data: Vec<Deleted>,
}

/// `{ object: 'suppression', id }`.
#[derive(Object)]
pub struct SuppressionRef {
    /// Always `suppression`.
    pub object: String,
    /// The suppression's id.
    pub id: String,
}

/// The suppressions of a batch, in request order.
#[derive(Object)]
pub struct SuppressionRefs {
    /// The suppressions, one per address of the request, in request order.
    pub data: Vec<SuppressionRef>,
}

#[derive(ApiResponse)]
pub enum AddResponse {
    /// Suppressed (an address already suppressed keeps its row and id).
    #[oai(status = 201)]
    Created(Json<SuppressionRef>),
}

#[derive(ApiResponse)]
pub enum BatchResponse {
    /// Suppressed.
    #[oai(status = 201)]
    Created(Json<SuppressionRefs>),
}

/// A suppressed address.
#[derive(Object)]
pub struct SuppressionView {
    /// Always `suppression`.
    pub object: String,
    /// The suppression's id.
    pub id: String,
    /// The suppressed address.
    pub email: String,
    /// `bounce`, `complaint`, `manual` or `unsubscribe`.
    pub origin: String,
    /// The email that caused it, when one did.
    pub source_id: Nullable<String>,
    /// When the address was suppressed.
    pub created_at: DateTime<Utc>,
}

/// A page of suppressions.
#[derive(Object)]
pub struct SuppressionList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<SuppressionView>,
}

/// Most addresses in one batch.
const MAX_BATCH: usize = 100;
crate::choices! {
    /// Why an address is suppressed: `bounce`, `complaint`, `manual` or `unsubscribe`.
    Origin = &["bounce", "complaint", "manual", "unsubscribe"];
}

#[poem_openapi::OpenApi(tag = "Tag::Suppressions")]
impl SuppressionsApi {
    /// Suppress an address (origin `manual`); emits `suppression.added`.
    #[oai(path = "/suppressions", method = "post", operation_id = "create-suppression")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<AddSuppression>) -> ApiResult<AddResponse> {
        let email = address("email", &body.0.email)?;
        let mut tx = state.pool.begin().await?;
        let mut added = add(&mut tx, caller.team_id, vec![email]).await?;
        tx.commit().await?;
        Ok(AddResponse::Created(Json(added.remove(0))))
    }

    /// Suppress up to 100 addresses (origin `manual`).
    #[oai(path = "/suppressions/batch/add", method = "post", operation_id = "batch-add-suppressions")]
    async fn batch_add(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<AddSuppressions>) -> ApiResult<BatchResponse> {
        let emails = body.0.emails;
        if emails.is_empty() || emails.len() > MAX_BATCH {
            return Err(ApiError::invalid_field("emails", format!("must hold 1 to {MAX_BATCH} addresses")));
        }
        let mut parsed = Vec::with_capacity(emails.len());
        let mut error: Option<ApiError> = None;
        for (i, raw) in emails.iter().enumerate() {
            match address(&format!("emails[{i}]"), raw) {
                Ok(email) => parsed.push(email),
                Err(bad) => match &mut error {
                    Some(first) => first.errors.extend(bad.errors),
                    None => error = Some(bad),
                },
            }
        }
        if let Some(error) = error {
            return Err(error);
        }
        let mut tx = state.pool.begin().await?;
        let data = add(&mut tx, caller.team_id, parsed).await?;
        tx.commit().await?;
        Ok(BatchResponse::Created(Json(SuppressionRefs { data })))
    }

    /// Remove up to 100 suppressions at once, named by address or by id; emits
    /// `suppression.removed` for each one removed. Names that match none are skipped.
    #[oai(path = "/suppressions/batch/remove", method = "post", operation_id = "batch-remove-suppressions")]
    async fn batch_remove(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<RemoveSuppressions>) -> ApiResult<Json<RemovedSuppressions>> {
        let (emails, ids) = (body.0.emails.unwrap_or_default(), body.0.ids.unwrap_or_default());
        if emails.is_empty() && ids.is_empty() || emails.len() + ids.len() > MAX_BATCH {
            return Err(ApiError::invalid_field("emails", format!("`emails` and `ids` must hold 1 to {MAX_BATCH} entries in all")));
        }
        let mut error: Option<ApiError> = None;
        let mut keep = |bad: ApiError| match &mut error {
            Some(first) => first.errors.extend(bad.errors),
            None => error = Some(bad),
        };
        let addresses: Vec<String> = emails.iter().enumerate().filter_map(|(i, raw)| address(&format!("emails[{i}]"), raw).map_err(&mut keep).ok()).collect();
        let ids: Vec<uuid::Uuid> = ids
            .iter()
            .enumerate()
            .filter_map(|(i, raw)| uuid::Uuid::parse_str(raw).map_err(|_| keep(ApiError::invalid_field(&format!("ids[{i}]"), "must be a suppression id"))).ok())
            .collect();
        if let Some(error) = error {
            return Err(error);
        }
        let mut tx = state.pool.begin().await?;
        let removed = suppressions::delete_many(&mut tx, caller.team_id, &ids, &addresses).await?;
        let events: Vec<NewEvent> = removed
            .iter()
            .map(|row| NewEvent { team_id: caller.team_id, event_type: "suppression.removed", data: row.event_data(), email_id: None })
            .collect();
        events::emit(&mut tx, &events).await?;
        tx.commit().await?;
        let data = removed.into_iter().map(|row| Deleted { object: "suppression".into(), id: row.id.to_string(), deleted: true }).collect();
        Ok(Json(RemovedSuppressions { data }))
    }

    /// List the team's suppressions, newest first.
    #[oai(path = "/suppressions", method = "get", operation_id = "list-suppressions")]
    #[allow(clippy::too_many_arguments)]
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
        /// Only suppressions of this origin.
        origin: Query<Option<Choice<Origin>>>,
        /// 1 to 200 characters, a case-insensitive substring of the address; `%` and `_` are literal.
        search: Query<Option<Search<200>>>,
        /// ISO 8601 instant or calendar date, inclusive.
        start_date: Query<Option<InstantOrDate>>,
        /// ISO 8601 instant or calendar date, inclusive.
        end_date: Query<Option<InstantOrDate>>,
    ) -> ApiResult<Json<SuppressionList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        if let Some(origin) = &origin.0
            && !Origin::allows(origin)
        {
            return Err(ApiError::invalid_parameter("origin", format!("must be one of {}", Origin::VALUES.join(", "))));
        }
        let (start, end) = date_range(start_date.0, end_date.0, true)?;
        let filter = suppressions::ListFilter { origin: origin.0.map(Choice::into_string), search: search_text(search.0)?, start, end };
        let mut conn = state.pool.acquire().await?;
        let page = suppressions::list(&mut conn, caller.team_id, &filter, &page).await?;
        Ok(Json(SuppressionList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(view).collect() }))
    }

    /// Retrieve a suppression by id or by address.
    #[oai(path = "/suppressions/:suppression", method = "get", operation_id = "get-suppression")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, suppression: Path<String>) -> ApiResult<Json<SuppressionView>> {
        let key = key_of(&suppression.0)?;
        let mut conn = state.pool.acquire().await?;
        let found = suppressions::get(&mut conn, caller.team_id, &key).await?.ok_or_else(|| ApiError::not_found("Suppression"))?;
        Ok(Json(view(found)))
    }

    /// Remove a suppression by id or by address; emits `suppression.removed`.
    #[oai(path = "/suppressions/:suppression", method = "delete", operation_id = "delete-suppression")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, suppression: Path<String>) -> ApiResult<Json<Deleted>> {
        let key = key_of(&suppression.0)?;
        let mut tx = state.pool.begin().await?;
        let found = suppressions::get(&mut tx, caller.team_id, &key).await?.ok_or_else(|| ApiError::not_found("Suppression"))?;
        let removed = suppressions::delete(&mut tx, caller.team_id, found.id).await?.ok_or_else(|| ApiError::not_found("Suppression"))?;
        let event = NewEvent {
            team_id: caller.team_id,
            event_type: "suppression.removed",
            data: removed.event_data(),
            email_id: None,
        };
        events::emit(&mut tx, &[event]).await?;
        tx.commit().await?;
        Ok(Json(Deleted { object: "suppression".into(), id: removed.id.to_string(), deleted: true }))
    }
}

/// Adds manual suppressions and their `suppression.added` events; answers in input order.
async fn add(conn: &mut PgConnection, team_id: uuid::Uuid, emails: Vec<String>) -> ApiResult<Vec<SuppressionRef>> {
    let new: Vec<NewSuppression> =
        emails.iter().map(|email| NewSuppression { team_id, email: email.clone(), origin: "manual", source_id: None }).collect();
    let rows = suppressions::add(conn, &new).await?;
    events::emit(conn, &suppressions::added_events(&rows)).await?;
    Ok(emails
        .iter()
        .filter_map(|email| rows.iter().find(|(row, _)| &row.email == email))
        .map(|(row, _)| SuppressionRef { object: "suppression".into(), id: row.id.to_string() })
        .collect())
}

/// A bare, lower-case address from a request field.
fn address(path: &str, raw: &str) -> ApiResult<String> {
    Mailbox::parse(raw).map(|m| m.key()).map_err(|message| ApiError::invalid_field(path, message))
}

/// A path names a suppression by id or by address (percent-decoded by the router).
fn key_of(raw: &str) -> ApiResult<Key> {
    crate::http::input::id_or_address(raw, "Suppression")
}

fn view(suppression: Suppression) -> SuppressionView {
    SuppressionView {
        object: "suppression".into(),
        id: suppression.id.to_string(),
        email: suppression.email,
        origin: suppression.origin,
        source_id: suppression.source_id.map(|id| id.to_string()).into(),
        created_at: suppression.created_at,
    }
}
