//! A segment's contacts, and the legacy audience paths the Resend SDKs still call. Audiences
//! became segments: every `/audiences` route is an alias of the segment or contact route it
//! names, marked deprecated in the document.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::routes::audience::contacts::{self, ContactList, ContactRef, ContactView, ContactsApi, CreateContact, UpdateContact};
use crate::routes::audience::segments::{self, SegmentList, SegmentView, SegmentsApi};
use crate::routes::{Deleted, Tag, path_id};
use crate::state::{AppState, Caller};
use crate::http::fields::IdText;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use serde_json::json;

pub struct AudiencesApi;

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl AudiencesApi {
    /// List a segment's contacts (by filter or added explicitly), newest first, as a broadcast
    /// would resolve them now. The same as `GET /contacts?segment_id=`.
    #[oai(path = "/segments/:segment_id/contacts", method = "get", operation_id = "list-segment-contacts")]
    async fn segment_contacts(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        segment_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this id.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<ContactList>> {
        let id = path_id(&segment_id.0, "Segment")?;
        ContactsApi.list(state, caller, limit, after, before, Query(Some(crate::http::fields::IdText(id.to_string())))).await
    }

    /// Deprecated: `POST /segments`.
    #[oai(path = "/audiences", method = "post", operation_id = "create-audience", deprecated)]
    async fn create(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        body: Body<segments::CreateSegment>,
    ) -> ApiResult<segments::CreateResponse> {
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

    /// Deprecated: `POST /contacts` with `segments: [{ id: audience_id }]`. An unknown audience
    /// is 404.
    #[oai(path = "/audiences/:audience_id/contacts", method = "post", operation_id = "create-audience-contact", deprecated)]
    async fn create_contact(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        audience_id: Path<String>,
        body: Body<CreateContact>,
    ) -> ApiResult<contacts::CreateResponse> {
        let Body(mut contact, raw) = body;
        let id = live_audience(&state, &caller, &audience_id.0).await?;
        contact.segments.get_or_insert_with(Vec::new).push(json!({ "id": id.to_string() }));
        ContactsApi.create(state, caller, Body(contact, raw)).await
    }

    /// Deprecated: `GET /segments/{segment_id}/contacts`.
    #[oai(path = "/audiences/:audience_id/contacts", method = "get", operation_id = "list-audience-contacts", deprecated)]
    async fn contacts(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        audience_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this id.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<ContactList>> {
        self.segment_contacts(state, caller, audience_id, limit, after, before).await
    }

    /// Deprecated: `GET /contacts/{contact}` (the audience must exist).
    #[oai(path = "/audiences/:audience_id/contacts/:contact", method = "get", operation_id = "get-audience-contact", deprecated)]
    async fn get_contact(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        audience_id: Path<String>,
        contact: Path<String>,
    ) -> ApiResult<Json<ContactView>> {
        live_audience(&state, &caller, &audience_id.0).await?;
        ContactsApi.get(state, caller, contact).await
    }

    /// Deprecated: `PATCH /contacts/{contact}` (the audience must exist).
    #[oai(path = "/audiences/:audience_id/contacts/:contact", method = "patch", operation_id = "update-audience-contact", deprecated)]
    async fn update_contact(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        audience_id: Path<String>,
        contact: Path<String>,
        body: Body<UpdateContact>,
    ) -> ApiResult<Json<ContactRef>> {
        live_audience(&state, &caller, &audience_id.0).await?;
        ContactsApi.update(state, caller, contact, body).await
    }

    /// Deprecated: `DELETE /contacts/{contact}`: erases the contact, as removing a contact from
    /// an audience did when contacts belonged to one audience.
    #[oai(path = "/audiences/:audience_id/contacts/:contact", method = "delete", operation_id = "delete-audience-contact", deprecated)]
    async fn delete_contact(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        audience_id: Path<String>,
        contact: Path<String>,
    ) -> ApiResult<Json<Deleted>> {
        live_audience(&state, &caller, &audience_id.0).await?;
        ContactsApi.delete(state, caller, contact).await
    }
}

/// The live segment an audience path names; anything else is 404.
async fn live_audience(state: &AppState, caller: &Caller, raw: &str) -> ApiResult<uuid::Uuid> {
    let id = path_id(raw, "Audience")?;
    let found = schema::store::segments::get(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
    found.map(|segment| segment.id).ok_or_else(|| ApiError::not_found("Audience"))
}
