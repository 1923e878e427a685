//! Contacts: upsert by address, list, read with properties, update, erase. Properties are typed
//! per team: a new key is declared by its first value, and every later write is type-checked.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::paging::page_request;
use crate::http::fields::{EmailAddress, IdText, Nullable, Scalar};
use crate::routes::audience::refs::segment_ids;
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Object};
use schema::email::Mailbox;
use schema::model::{MAX_PROPERTY_TEXT, property_kind};
use schema::store::automations::SegmentWatch;
use schema::store::contacts::{self, Contact, ContactFields, Key};
use schema::store::events::{self, NewEvent};
use schema::store::segments;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use uuid::Uuid;
use crate::routes::audience::consent::{OptOuts, Origin, consent};
use crate::routes::audience::refs::{contact_key, MAX_PROPERTIES, valid_key};
use crate::routes::audience::refs::live_audience;
use crate::routes::path_id;

pub struct ContactsApi;

/// Longest first or last name.
const MAX_NAME: usize = 200;

/// Body of `POST /contacts`.
#[derive(Object, Deserialize)]
pub struct CreateContact {
    /// The address; an existing one (matched case-insensitively) is updated instead.
    pub email: EmailAddress,
    /// Up to 200 characters.
    #[oai(validator(max_length = 200))]
    pub first_name: Option<String>,
    /// Up to 200 characters.
    #[oai(validator(max_length = 200))]
    pub last_name: Option<String>,
    /// Global opt-out. A repeat create never sets it back to false.
    pub unsubscribed: Option<bool>,
    /// Property key to string, number or boolean; a new key is declared with its value's type.
    pub properties: Option<BTreeMap<String, Value>>,
    /// `[{ id }]`: segments to add the contact to explicitly.
    pub segments: Option<Vec<Value>>,
    /// `[{ id, subscription }]`: the contact's topic choices (each change writes a consent
    /// record).
    pub topics: Option<Vec<crate::routes::audience::consent::TopicChoice>>,
}

/// `{ object: "contact", id }`.
#[derive(Object)]
pub struct ContactRef {
    /// Always `contact`.
    pub object: String,
    /// The contact's id.
    pub id: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Created, or the existing contact with this address updated.
    #[oai(status = 201)]
    Created(Json<ContactRef>),
}

/// Body of `PATCH /contacts/{contact}`.
#[derive(Object, Deserialize)]
pub struct UpdateContact {
    /// A new address; it must not belong to another contact.
    pub email: Option<EmailAddress>,
    /// Up to 200 characters; `null` clears it.
    #[serde(default)]
    #[oai(validator(max_length = 200))]
    pub first_name: MaybeUndefined<String>,
    /// Up to 200 characters; `null` clears it.
    #[serde(default)]
    #[oai(validator(max_length = 200))]
    pub last_name: MaybeUndefined<String>,
    /// `true` unsubscribes, `false` resubscribes; each change writes a consent record.
    pub unsubscribed: Option<bool>,
    /// Merged by key; `null` removes a key.
    pub properties: Option<BTreeMap<String, Value>>,
}

/// A contact.
#[derive(Object)]
pub struct ContactView {
    /// Always `contact`.
    pub object: String,
    /// The contact's id.
    pub id: String,
    /// The contact's address.
    pub email: String,
    /// The first name, or `null` when unset.
    pub first_name: Nullable<String>,
    /// The last name, or `null` when unset.
    pub last_name: Nullable<String>,
    /// Global opt-out: whether the contact unsubscribed from everything.
    pub unsubscribed: bool,
    /// When the contact was created.
    pub created_at: DateTime<Utc>,
    /// Property values by key (retrieve only).
    #[oai(skip_serializing_if_is_none)]
    pub properties: Option<BTreeMap<String, Scalar>>,
    /// The contact's signed link to its hosted preference page (retrieve only).
    #[oai(skip_serializing_if_is_none)]
    pub preferences_url: Option<String>,
    /// The contact's signed RFC 8058 one-click unsubscribe link (retrieve only): a `POST` with
    /// `List-Unsubscribe=One-Click` unsubscribes; a `GET` shows a page to confirm.
    #[oai(skip_serializing_if_is_none)]
    pub unsubscribe_url: Option<String>,
}

/// A page of contacts. Paging ends with an empty page.
#[derive(Object)]
pub struct ContactList {
    /// Always `list`.
    pub object: String,
    /// The items of this page, newest first.
    pub data: Vec<ContactView>,
}

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl ContactsApi {
    /// Create a contact, or update the one with this address (its id is answered; no 409).
    /// Emits `contact.created` or `contact.updated`.
    #[oai(path = "/contacts", method = "post", operation_id = "create-contact")]
    pub(crate) async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateContact>) -> ApiResult<CreateResponse> {
        let body = body.0;
        let email = address(&body.email)?;
        let first_name = name("first_name", body.first_name)?;
        let last_name = name("last_name", body.last_name)?;
        let mut tx = state.pool.begin().await?;
        let limit = contacts::lock_limit(&mut tx, caller.team_id).await?;
        let segment_ids = segment_ids(&mut tx, caller.team_id, body.segments.as_deref().unwrap_or_default(), "segments").await?;
        let existing = contacts::find(&mut tx, caller.team_id, &Key::Email(email.clone()), true).await?;
        let current = existing.as_ref().map_or_else(Map::new, |c| c.properties.as_object().cloned().unwrap_or_default());
        let properties = typed_properties(&mut tx, caller.team_id, current, body.properties.unwrap_or_default().into_iter().collect()).await?;
        let watch = SegmentWatch::before(&mut tx, caller.team_id, existing.as_ref().map(|c| c.id)).await?;
        let (contact, event_type, newly_unsubscribed) = match existing {
            Some(before) => {
                let unsubscribed = before.unsubscribed || body.unsubscribed == Some(true);
                let fields = ContactFields {
                    email,
                    first_name: first_name.or(before.first_name.clone()),
                    last_name: last_name.or(before.last_name.clone()),
                    unsubscribed,
                    properties,
                };
                let after = contacts::update(&mut tx, before.id, &fields).await?;
                (after, "contact.updated", unsubscribed && !before.unsubscribed)
            }
            None => {
                if let Some(limit) = limit
                    && contacts::count(&mut tx, caller.team_id).await? >= limit as i64
                {
                    return Err(ApiError::refused("Contact limit reached."));
                }
                let unsubscribed = body.unsubscribed == Some(true);
                let fields = ContactFields { email, first_name, last_name, unsubscribed, properties };
                (contacts::insert(&mut tx, caller.team_id, &fields).await?, "contact.created", unsubscribed)
            }
        };
        if newly_unsubscribed {
            consent(&mut tx, &contact, None, "unsubscribed", &Origin::api()).await?;
        }
        let topics = body.topics.as_deref().unwrap_or_default();
        crate::routes::audience::consent::apply_choices(&mut tx, &contact, topics, "topics", &Origin::api(), OptOuts::Kept).await?;
        segments::add_members(&mut tx, &segment_ids, &[contact.id]).await?;
        if let Some(watch) = watch {
            watch.enrol_entered(&mut tx, contact.id).await?;
        }
        emit(&mut tx, &contact, event_type).await?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(ContactRef { object: "contact".into(), id: contact.id.to_string() })))
    }

    /// List the team's contacts, newest first, without their properties. Paging ends with an
    /// empty page.
    #[oai(path = "/contacts", method = "get", operation_id = "list-contacts")]
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
        /// Only the segment's members, evaluated now as a broadcast would resolve them.
        segment_id: Query<Option<IdText>>,
    ) -> ApiResult<Json<ContactList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let mut conn = state.pool.acquire().await?;
        let page = match segment_id.0 {
            Some(raw) => {
                let id = schema::ids::parse_id(&raw).ok_or_else(|| ApiError::invalid_parameter("segment_id", "is not a segment id"))?;
                let segment = segments::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Segment"))?;
                let membership = segments::membership(&mut conn, &segment).await?;
                segments::members(&mut conn, caller.team_id, &membership, &page).await?
            }
            None => contacts::list(&mut conn, caller.team_id, &page).await?,
        };
        Ok(Json(ContactList { object: "list".into(), data: page.data.into_iter().map(|c| view(c, false)).collect() }))
    }

    /// Retrieve a contact, by id or address, with its properties.
    #[oai(path = "/contacts/:contact", method = "get", operation_id = "get-contact")]
    pub(crate) async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, contact: Path<String>) -> ApiResult<Json<ContactView>> {
        let key = contact_key(&contact.0)?;
        let found = contacts::find(&mut *state.pool.acquire().await?, caller.team_id, &key, false).await?;
        let found = found.ok_or_else(|| ApiError::not_found("Contact"))?;
        let link = schema::links::Link { contact_id: found.id, topic_id: None };
        let mut full = view(found, true);
        full.preferences_url = Some(state.link_url("preferences", link));
        full.unsubscribe_url = Some(state.link_url("unsubscribe", link));
        Ok(Json(full))
    }

    /// Update a contact. `unsubscribed` changes write consent records; `properties` merge by
    /// key and `null` removes one. Emits `contact.updated`.
    #[oai(path = "/contacts/:contact", method = "patch", operation_id = "update-contact")]
    pub(crate) async fn update(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        contact: Path<String>,
        body: Body<UpdateContact>,
    ) -> ApiResult<Json<ContactRef>> {
        let key = contact_key(&contact.0)?;
        let body = body.0;
        let email = body.email.as_deref().map(address).transpose()?;
        let first_name = maybe_name("first_name", body.first_name)?;
        let last_name = maybe_name("last_name", body.last_name)?;
        let mut tx = state.pool.begin().await?;
        contacts::lock_limit(&mut tx, caller.team_id).await?;
        let before = contacts::find(&mut tx, caller.team_id, &key, true).await?.ok_or_else(|| ApiError::not_found("Contact"))?;
        if let Some(email) = &email
            && *email != before.email
            && contacts::find(&mut tx, caller.team_id, &Key::Email(email.clone()), false).await?.is_some()
        {
            return Err(ApiError::refused("The address belongs to another contact.").with_error("email", "belongs to another contact"));
        }
        let current = before.properties.as_object().cloned().unwrap_or_default();
        let properties = typed_properties(&mut tx, caller.team_id, current, body.properties.unwrap_or_default().into_iter().collect()).await?;
        let watch = SegmentWatch::before(&mut tx, caller.team_id, Some(before.id)).await?;
        let unsubscribed = body.unsubscribed.unwrap_or(before.unsubscribed);
        let fields = ContactFields {
            email: email.unwrap_or_else(|| before.email.clone()),
            first_name: first_name.unwrap_or(before.first_name.clone()),
            last_name: last_name.unwrap_or(before.last_name.clone()),
            unsubscribed,
            properties,
        };
        let after = contacts::update(&mut tx, before.id, &fields).await?;
        if unsubscribed != before.unsubscribed {
            consent(&mut tx, &after, None, if unsubscribed { "unsubscribed" } else { "subscribed" }, &Origin::api()).await?;
        }
        if let Some(watch) = watch {
            watch.enrol_entered(&mut tx, after.id).await?;
        }
        emit(&mut tx, &after, "contact.updated").await?;
        tx.commit().await?;
        Ok(Json(ContactRef { object: "contact".into(), id: after.id.to_string() }))
    }

    /// Erase a contact: its personal data is gone; consent records stay under a hash of the
    /// address. Emits `contact.deleted` carrying the contact as it was.
    #[oai(path = "/contacts/:contact", method = "delete", operation_id = "delete-contact")]
    pub(crate) async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, contact: Path<String>) -> ApiResult<Json<ContactDeleted>> {
        let key = contact_key(&contact.0)?;
        let mut tx = state.pool.begin().await?;
        let before = contacts::find(&mut tx, caller.team_id, &key, true).await?.ok_or_else(|| ApiError::not_found("Contact"))?;
        emit(&mut tx, &before, "contact.deleted").await?; // first: it names the segments that held the contact
        contacts::delete(&mut tx, before.id).await?;
        tx.commit().await?;
        let id = before.id.to_string();
        Ok(Json(ContactDeleted { object: "contact".into(), contact: id.clone(), id, deleted: true }))
    }
}

/// `{ object: "contact", id, contact, deleted: true }`: the erased contact's id, also as
/// `contact` (the field the Resend SDKs read).
#[derive(Object)]
pub struct ContactDeleted {
    /// Always `contact`.
    pub object: String,
    /// The erased contact's id.
    pub id: String,
    /// The same id, as the Resend SDKs read it.
    pub contact: String,
    /// Always true.
    pub deleted: bool,
}

fn address(raw: &str) -> ApiResult<String> {
    let mailbox = Mailbox::parse(raw.trim()).map_err(|message| ApiError::invalid_field("email", message))?;
    Ok(mailbox.key())
}

fn name(field: &str, value: Option<String>) -> ApiResult<Option<String>> {
    match value {
        Some(value) if value.chars().count() > MAX_NAME => Err(ApiError::invalid_field(field, "must be at most 200 characters")),
        other => Ok(other),
    }
}

/// `Some(new value)` when the field was sent (`Some(None)` clears it).
fn maybe_name(field: &str, value: MaybeUndefined<String>) -> ApiResult<Option<Option<String>>> {
    match value {
        MaybeUndefined::Undefined => Ok(None),
        MaybeUndefined::Null => Ok(Some(None)),
        MaybeUndefined::Value(value) => Ok(Some(name(field, Some(value))?)),
    }
}

/// Merges `incoming` into `current` with every value type-checked against the team's declared
/// properties; new keys are declared (at most 100 per team). `null` removes a key.
async fn typed_properties(
    conn: &mut sqlx::PgConnection,
    team_id: Uuid,
    mut current: Map<String, Value>,
    incoming: Map<String, Value>,
) -> ApiResult<Value> {
    if incoming.is_empty() {
        return Ok(Value::Object(current));
    }
    let declared: HashMap<String, String> = contacts::properties(conn, team_id).await?.into_iter().map(|p| (p.key, p.kind)).collect();
    let mut wrong: Option<ApiError> = None;
    let mut add = |path: String, message: String| {
        let error = wrong.take().unwrap_or_else(|| {
            ApiError::new(ErrorKind::InvalidParameter, format!("Invalid `{path}`: {message}"))
        });
        wrong = Some(error.with_error(path, message));
    };
    let mut new_keys: Vec<(String, &'static str)> = Vec::new();
    for (key, value) in &incoming {
        let path = format!("properties.{key}");
        if value.is_null() {
            continue;
        }
        let Some(kind) = property_kind(value) else {
            add(path, "must be a string, number or boolean".into());
            continue;
        };
        if value.as_str().is_some_and(|s| s.chars().count() > MAX_PROPERTY_TEXT) {
            add(path, format!("must be at most {MAX_PROPERTY_TEXT} characters"));
            continue;
        }
        match declared.get(key) {
            Some(declared_kind) if declared_kind != kind => add(path, format!("must be a {declared_kind}")),
            Some(_) => {}
            None if !valid_key(key) => add(path, "is not a valid key: a letter or _, then letters, digits or _, at most 50".into()),
            None => new_keys.push((key.clone(), kind)),
        }
    }
    if let Some(error) = wrong {
        return Err(error);
    }
    if declared.len() + new_keys.len() > MAX_PROPERTIES {
        let first_refused = new_keys.get(MAX_PROPERTIES.saturating_sub(declared.len())).map(|(k, _)| k.clone()).unwrap_or_default();
        return Err(ApiError::refused(format!("A team has at most {MAX_PROPERTIES} contact properties."))
            .with_error(format!("properties.{first_refused}"), "is past the 100-property limit"));
    }
    contacts::declare(conn, team_id, &new_keys).await?;
    for (key, value) in incoming {
        if value.is_null() {
            current.remove(&key);
        } else {
            current.insert(key, value);
        }
    }
    Ok(Value::Object(current))
}

async fn emit(conn: &mut sqlx::PgConnection, contact: &Contact, event_type: &'static str) -> ApiResult<()> {
    let data = segments::contact_event_data(conn, std::slice::from_ref(contact)).await?.remove(0);
    let event = NewEvent { team_id: contact.team_id, event_type, data, email_id: None };
    events::emit(conn, &[event]).await?;
    Ok(())
}

fn view(contact: Contact, full: bool) -> ContactView {
    ContactView {
        object: "contact".into(),
        id: contact.id.to_string(),
        email: contact.email,
        first_name: contact.first_name.into(),
        last_name: contact.last_name.into(),
        unsubscribed: contact.unsubscribed,
        created_at: contact.created_at,
        properties: full.then(|| match contact.properties {
            Value::Object(values) => values.into_iter().map(|(key, value)| (key, Scalar(value))).collect(),
            _ => BTreeMap::new(),
        }),
        preferences_url: None,
        unsubscribe_url: None,
    }
}

pub struct ContactAliasesApi;

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl ContactAliasesApi {
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

    /// Deprecated: `POST /contacts` with `segments: [{ id: audience_id }]`. An unknown audience
    /// is 404.
    #[oai(path = "/audiences/:audience_id/contacts", method = "post", operation_id = "create-audience-contact", deprecated)]
    async fn create_contact(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        audience_id: Path<String>,
        body: Body<CreateContact>,
    ) -> ApiResult<CreateResponse> {
        let Body(mut contact, raw) = body;
        let id = live_audience(&state, &caller, &audience_id.0).await?;
        contact.segments.get_or_insert_with(Vec::new).push(serde_json::json!({ "id": id.to_string() }));
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
    ) -> ApiResult<Json<ContactDeleted>> {
        live_audience(&state, &caller, &audience_id.0).await?;
        ContactsApi.delete(state, caller, contact).await
    }
}
