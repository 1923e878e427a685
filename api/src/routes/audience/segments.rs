//! Segments: a filter (or none) plus contacts added explicitly. Membership is evaluated on every
//! read and at send time, never stored; erased contacts are never members.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::paging::{page_of, page_request};
use crate::routes::audience::refs::contact_key;
use crate::routes::{Deleted, Tag, Updated, path_id};
use crate::state::{AppState, Caller};
use crate::http::fields::IdText;
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::automations::SegmentWatch;
use schema::store::contacts;
use schema::store::segments::{self, Segment};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

pub struct SegmentsApi;

/// Longest segment name.
const MAX_NAME: usize = 200;

/// Body of `POST /segments`.
#[derive(Object, Deserialize)]
pub struct CreateSegment {
    /// Up to 200 characters, unique among the team's live segments.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"\S"))]
    pub name: String,
    /// A group `{ all | any | not: [...] }` over conditions `{ field, op, value }` and
    /// `{ topic, subscription }`, nested at most three deep with at most 20 conditions; `null`
    /// or absent for explicit membership only. Fixed at creation. `created_at` compares with
    /// a date or an age such as `"3 days ago"` (counted when the segment is read; an
    /// automation watching such a segment enrols contacts as they age into it).
    pub filter: Option<Value>,
}

/// Body of `PATCH /segments/{segment}`.
#[derive(Object, Deserialize)]
pub struct UpdateSegment {
    /// The new name, up to 200 characters.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"\S"))]
    pub name: String,
    /// Not in the document: fixed at creation, so sending it is `422 invalid_parameter`.
    #[oai(skip)]
    pub filter: Option<Value>,
}

/// `{ object: "segment", id, name }` (`name` is additive, as the Resend SDKs declare it).
#[derive(Object)]
pub struct SegmentRef {
    /// Always `segment`.
    pub object: String,
    /// The segment's id.
    pub id: String,
    /// The segment's name.
    pub name: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Created.
    #[oai(status = 201)]
    Created(Json<SegmentRef>),
}

/// A segment (lists leave out `filter`).
#[derive(Object)]
pub struct SegmentView {
    /// Always `segment`.
    pub object: String,
    /// The segment's id.
    pub id: String,
    /// The segment's name.
    pub name: String,
    /// The filter; `null` for explicit membership only. Absent in lists.
    #[oai(skip_serializing_if_is_none)]
    pub filter: Option<Value>,
    /// When the segment was created.
    pub created_at: DateTime<Utc>,
}

/// A page of segments.
#[derive(Object)]
pub struct SegmentList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first (a contact's segments: oldest first).
    pub data: Vec<SegmentView>,
}

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl SegmentsApi {
    /// Create a segment. An undeclared property, an unknown topic or an operator unsuited to
    /// its field is `422 validation_error` with one `errors[]` entry per bad condition.
    #[oai(path = "/segments", method = "post", operation_id = "create-segment")]
    pub(crate) async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateSegment>) -> ApiResult<CreateResponse> {
        let body = body.0;
        let name = check_name(&body.name)?;
        let filter = body.filter.filter(|f| !f.is_null());
        let mut conn = state.pool.acquire().await?;
        if let Some(filter) = &filter {
            segments::check_filter(&mut conn, caller.team_id, filter).await?.map_err(filter_refused)?;
        }
        let created = segments::insert(&mut conn, caller.team_id, name, filter.as_ref()).await?.ok_or_else(name_taken)?;
        Ok(CreateResponse::Created(Json(SegmentRef { object: "segment".into(), id: created.id.to_string(), name: created.name.clone() })))
    }

    /// List the team's segments, newest first, without their filters.
    #[oai(path = "/segments", method = "get", operation_id = "list-segments")]
    pub(crate) async fn list(
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
    ) -> ApiResult<Json<SegmentList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let page = segments::list(&mut *state.pool.acquire().await?, caller.team_id, &page).await?;
        Ok(Json(SegmentList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(|s| view(s, false)).collect() }))
    }

    /// Retrieve a segment with its filter (`null` for explicit membership only).
    #[oai(path = "/segments/:segment_id", method = "get", operation_id = "get-segment")]
    pub(crate) async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, segment_id: Path<String>) -> ApiResult<Json<SegmentView>> {
        let id = path_id(&segment_id.0, "Segment")?;
        let found = segments::get(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
        Ok(Json(view(found.ok_or_else(|| ApiError::not_found("Segment"))?, true)))
    }

    /// Rename a segment. Its filter never changes: a `filter` in the body is
    /// `422 invalid_parameter`.
    #[oai(path = "/segments/:segment_id", method = "patch", operation_id = "update-segment")]
    async fn update(&self, state: Data<&AppState>, caller: Data<&Caller>, segment_id: Path<String>, body: Body<UpdateSegment>) -> ApiResult<Json<Updated>> {
        let id = path_id(&segment_id.0, "Segment")?;
        let body = body.0;
        if body.filter.is_some() {
            return Err(ApiError::invalid_parameter("filter", "is fixed at creation; create a new segment instead"));
        }
        let name = check_name(&body.name)?;
        let renamed = match segments::rename(&mut *state.pool.acquire().await?, caller.team_id, id, name).await {
            Err(error) if error.as_database_error().is_some_and(|e| e.is_unique_violation()) => return Err(name_taken()),
            other => other?,
        };
        let renamed = renamed.ok_or_else(|| ApiError::not_found("Segment"))?;
        Ok(Json(Updated { object: "segment".into(), id: renamed.id.to_string() }))
    }

    /// Retire a segment: it answers 404 from then on and its name is free again.
    #[oai(path = "/segments/:segment_id", method = "delete", operation_id = "delete-segment")]
    pub(crate) async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, segment_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let id = path_id(&segment_id.0, "Segment")?;
        if !segments::retire(&mut *state.pool.acquire().await?, caller.team_id, id).await? {
            return Err(ApiError::not_found("Segment"));
        }
        Ok(Json(Deleted { object: "segment".into(), id: id.to_string(), deleted: true }))
    }

    /// Add a contact to a segment explicitly (it stays a member whatever the filter says).
    /// Adding twice changes nothing. Not a `contact.updated` event; a contact new to the segment
    /// starts the `svc:segment.entered` runs that watch it.
    #[oai(path = "/contacts/:contact/segments/:segment_id", method = "post", operation_id = "add-contact-segment")]
    async fn add(&self, state: Data<&AppState>, caller: Data<&Caller>, contact: Path<String>, segment_id: Path<String>) -> ApiResult<Json<Updated>> {
        let mut tx = state.pool.begin().await?;
        let (contact_id, segment_id) = pair(&mut tx, caller.team_id, &contact.0, &segment_id.0).await?;
        let watch = SegmentWatch::before(&mut tx, caller.team_id, Some(contact_id)).await?;
        segments::add_members(&mut tx, &[segment_id], &[contact_id]).await?;
        if let Some(watch) = watch {
            watch.enrol_entered(&mut tx, contact_id).await?;
        }
        tx.commit().await?;
        Ok(Json(Updated { object: "segment".into(), id: segment_id.to_string() }))
    }

    /// Remove a contact's explicit membership. A contact that was not added explicitly is 404;
    /// one the filter matches stays a member.
    #[oai(path = "/contacts/:contact/segments/:segment_id", method = "delete", operation_id = "remove-contact-segment")]
    async fn remove(&self, state: Data<&AppState>, caller: Data<&Caller>, contact: Path<String>, segment_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let mut conn = state.pool.acquire().await?;
        let (contact_id, segment_id) = pair(&mut conn, caller.team_id, &contact.0, &segment_id.0).await?;
        if !segments::remove_member(&mut conn, segment_id, contact_id).await? {
            return Err(ApiError::not_found("Explicit membership"));
        }
        Ok(Json(Deleted { object: "segment".into(), id: segment_id.to_string(), deleted: true }))
    }

    /// The segments a contact belongs to now (by filter or explicitly), oldest first.
    #[oai(path = "/contacts/:contact/segments", method = "get", operation_id = "list-contact-segments")]
    async fn contact_segments(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        contact: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<SegmentList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let mut conn = state.pool.acquire().await?;
        let contact = contacts::find(&mut conn, caller.team_id, &contact_key(&contact.0)?, false).await?;
        let contact = contact.ok_or_else(|| ApiError::not_found("Contact"))?;
        let all = segments::all(&mut conn, caller.team_id).await?;
        let memberships = segments::memberships(&mut conn, &all).await?;
        let held = segments::holding(&mut conn, contact.id, &memberships).await?;
        let page = page_of(all.into_iter().filter(|s| held.contains(&s.id)).collect(), |s| s.id, &page)?;
        Ok(Json(SegmentList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(|s| view(s, false)).collect() }))
    }
}

/// The contact and the live segment a membership route names; either missing is 404.
async fn pair(conn: &mut sqlx::PgConnection, team_id: Uuid, contact: &str, segment: &str) -> ApiResult<(Uuid, Uuid)> {
    let contact = contacts::find(conn, team_id, &contact_key(contact)?, false).await?.ok_or_else(|| ApiError::not_found("Contact"))?;
    let segment_id = path_id(segment, "Segment")?;
    segments::get(conn, team_id, segment_id).await?.ok_or_else(|| ApiError::not_found("Segment"))?;
    Ok((contact.id, segment_id))
}

/// The refusal of a filter with problems: `422 validation_error`, one `errors[]` entry each.
pub(crate) fn filter_refused(problems: Vec<schema::filter::Problem>) -> ApiError {
    let message = format!("The filter has {} problem{}.", problems.len(), if problems.len() == 1 { "" } else { "s" });
    problems.into_iter().fold(ApiError::refused(message), |error, (path, why)| error.with_error(path, why))
}

fn check_name(name: &str) -> ApiResult<&str> {
    let name = name.trim();
    let length = name.chars().count();
    if length == 0 || length > MAX_NAME {
        return Err(ApiError::invalid_field("name", "must be 1 to 200 characters"));
    }
    Ok(name)
}

fn name_taken() -> ApiError {
    ApiError::invalid_parameter("name", "a live segment already has this name")
}

fn view(segment: Segment, with_filter: bool) -> SegmentView {
    SegmentView {
        object: "segment".into(),
        id: segment.id.to_string(),
        name: segment.name,
        filter: with_filter.then(|| segment.filter.unwrap_or(Value::Null)),
        created_at: segment.created_at,
    }
}

pub struct SegmentAliasesApi;

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl SegmentAliasesApi {
    /// Deprecated: `POST /segments`.
    #[oai(path = "/audiences", method = "post", operation_id = "create-audience", deprecated)]
    async fn create(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        body: Body<CreateSegment>,
    ) -> ApiResult<CreateResponse> {
        SegmentsApi.create(state, caller, body).await
    }

    /// Deprecated: `GET /segments`.
    #[oai(path = "/audiences", method = "get", operation_id = "list-audiences", deprecated)]
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
    ) -> ApiResult<Json<SegmentList>> {
        SegmentsApi.list(state, caller, limit, after, before).await
    }

    /// Deprecated: `GET /segments/{segment_id}`.
    #[oai(path = "/audiences/:audience_id", method = "get", operation_id = "get-audience", deprecated)]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, audience_id: Path<String>) -> ApiResult<Json<SegmentView>> {
        SegmentsApi.get(state, caller, audience_id).await
    }

    /// Deprecated: `DELETE /segments/{segment_id}`.
    #[oai(path = "/audiences/:audience_id", method = "delete", operation_id = "delete-audience", deprecated)]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, audience_id: Path<String>) -> ApiResult<Json<Deleted>> {
        SegmentsApi.delete(state, caller, audience_id).await
    }
}
