//! Custom events: definitions (a name and an optional typed schema of payload keys) and event
//! sends, which record the event for one contact and enrol it in every enabled automation the
//! event triggers, in one transaction.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices, IdText, Required, Search};
use crate::http::paging::{page_request, search_text};
use crate::routes::audience::refs::contact_key;
use crate::routes::{Deleted, Tag};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::contacts;
use schema::store::custom_events::{self, Definition, Key};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;

pub struct EventsApi;

/// Longest event name.
pub const MAX_NAME: usize = 100;
/// Most keys in a schema.
pub const MAX_SCHEMA_KEYS: usize = 50;
/// Largest payload, as JSON.
pub const MAX_PAYLOAD_BYTES: usize = 16 * 1024;

crate::choices! {
    /// The type of a payload key: `date` takes an ISO 8601 calendar date or a zoned instant
    /// naming a real day.
    EventFieldType = &["string", "number", "boolean", "date"];
}

/// Body of `POST /events`.
#[derive(Object, Deserialize)]
pub struct CreateEvent {
    /// Lower-case letters, digits, `.`, `_` and `-`, starting with a letter, up to 100
    /// characters; unique among the team's live definitions; never shaped like a UUID; the
    /// `svc:` prefix is reserved.
    #[oai(validator(max_length = 100))]
    pub name: Required<String>,
    /// Payload keys and their types (at most 50), or `null` for no checks.
    pub schema: Option<HashMap<String, Choice<EventFieldType>>>,
}

/// Body of `PATCH /events/{id_or_name}`.
#[derive(Object, Deserialize)]
pub struct UpdateEvent {
    /// The whole new schema (replaces the old one), or `null` for no checks.
    pub schema: Option<HashMap<String, Choice<EventFieldType>>>,
}

/// `{ object: "event", id }`.
#[derive(Object)]
pub struct EventRef {
    /// Always `event`.
    pub object: String,
    /// The definition's id.
    pub id: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Created.
    #[oai(status = 201)]
    Created(Json<EventRef>),
}

/// A custom event definition.
#[derive(Object)]
pub struct EventView {
    /// Always `event`.
    pub object: String,
    /// The definition's id.
    pub id: String,
    /// The event's name, unique among the team's live definitions.
    pub name: String,
    /// Payload keys and their types; `null` when the event has no schema.
    pub schema: crate::http::fields::Nullable<HashMap<String, Choice<EventFieldType>>>,
    /// When the definition was created.
    pub created_at: DateTime<Utc>,
    /// When the definition's schema last changed.
    pub updated_at: DateTime<Utc>,
}

/// A page of definitions.
#[derive(Object)]
pub struct EventList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<EventView>,
}

/// Body of `POST /events/send`.
#[derive(Object, Deserialize)]
pub struct SendEvent {
    /// The definition's name.
    #[oai(validator(max_length = 100))]
    pub event: Required<String>,
    /// The contact, by id; exactly one of `contact_id` and `email`.
    pub contact_id: Option<String>,
    /// The contact, by address; exactly one of `contact_id` and `email`.
    pub email: Option<String>,
    /// Key/value pairs, up to 16 KB of JSON. Keys the schema declares must match their type
    /// when present and not `null`; undeclared keys pass. `{{{event.<key>}}}` in an
    /// automation's templates reads them.
    pub payload: Option<std::collections::BTreeMap<String, Value>>,
}

/// One run an event send started.
#[derive(Object)]
pub struct StartedRun {
    /// The run's id.
    pub id: String,
    /// The automation the run belongs to.
    pub automation_id: String,
}

/// The answer of an event send.
#[derive(Object)]
pub struct EventSent {
    /// Always `event`.
    pub object: String,
    /// The recorded event's id.
    pub id: String,
    /// The event's name.
    pub event: String,
    /// The contact the event was recorded for.
    pub contact_id: String,
    /// One run per enabled automation the event triggers.
    pub runs: Vec<StartedRun>,
}

#[derive(ApiResponse)]
pub enum SendResponse {
    /// Accepted: recorded, and its runs started.
    #[oai(status = 202)]
    Accepted(Json<EventSent>),
}

#[poem_openapi::OpenApi(tag = "Tag::Automations")]
impl EventsApi {
    /// Define a custom event. A name that breaks the rules, starts with `svc:` or is held by a
    /// live definition is `422 validation_error`.
    #[oai(path = "/events", method = "post", operation_id = "create-event")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateEvent>) -> ApiResult<CreateResponse> {
        let body = body.0;
        let name = body.name.0.ok_or_else(|| ApiError::missing_field("name"))?;
        check_name(&name)?;
        let schema = check_schema(body.schema)?;
        let created = custom_events::insert(&mut *state.pool.acquire().await?, caller.team_id, &name, schema.as_ref()).await?;
        let created = created.ok_or_else(|| ApiError::refused_field("name", "a live event definition already has this name"))?;
        Ok(CreateResponse::Created(Json(EventRef { object: "event".into(), id: created.id.to_string() })))
    }

    /// List the team's event definitions, newest first.
    #[oai(path = "/events", method = "get", operation_id = "list-events")]
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
        /// Matches the name (case-insensitive; `%` and `_` literal); blank is `422 invalid_parameter`.
        search: Query<Option<Search<200>>>,
    ) -> ApiResult<Json<EventList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let search = search_text(search.0)?;
        let page = custom_events::list(&mut *state.pool.acquire().await?, caller.team_id, &page, search.as_deref()).await?;
        Ok(Json(EventList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(view).collect() }))
    }

    /// Retrieve a definition by id or by name.
    #[oai(path = "/events/:id_or_name", method = "get", operation_id = "get-event")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, id_or_name: Path<String>) -> ApiResult<Json<EventView>> {
        let found = custom_events::get(&mut *state.pool.acquire().await?, caller.team_id, &key(&id_or_name.0)).await?;
        Ok(Json(view(found.ok_or_else(not_found)?)))
    }

    /// Replace a definition's whole schema. Sends already recorded are not checked again.
    #[oai(path = "/events/:id_or_name", method = "patch", operation_id = "update-event")]
    async fn update(&self, state: Data<&AppState>, caller: Data<&Caller>, id_or_name: Path<String>, body: Body<UpdateEvent>) -> ApiResult<Json<EventView>> {
        let schema = check_schema(body.0.schema)?;
        let updated = custom_events::set_schema(&mut *state.pool.acquire().await?, caller.team_id, &key(&id_or_name.0), schema.as_ref()).await?;
        Ok(Json(view(updated.ok_or_else(not_found)?)))
    }

    /// Delete a definition: it answers 404 from then on, its name is free again, and sending it
    /// is `404 not_found`. Automations it triggers stay, and a new definition of the same name
    /// triggers them again.
    #[oai(path = "/events/:id_or_name", method = "delete", operation_id = "delete-event")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, id_or_name: Path<String>) -> ApiResult<Json<Deleted>> {
        let deleted = custom_events::delete(&mut *state.pool.acquire().await?, caller.team_id, &key(&id_or_name.0)).await?;
        let id = deleted.ok_or_else(not_found)?;
        Ok(Json(Deleted { object: "event".into(), id: id.to_string(), deleted: true }))
    }

    /// Fire an event for one contact: it is recorded, and every enabled automation whose
    /// trigger names it gets exactly one run, in the same transaction. Exactly one of
    /// `contact_id` and `email`; a payload over 16 KB or a declared key of the wrong type is
    /// `422 validation_error` (every bad key in `errors[]`); an unknown event or contact is
    /// `404 not_found`. No idempotency key: each send is a new event.
    #[oai(path = "/events/send", method = "post", operation_id = "send-event")]
    async fn send(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<SendEvent>) -> ApiResult<SendResponse> {
        let body = body.0;
        let name = body.event.0.ok_or_else(|| ApiError::missing_field("event"))?;
        let contact = match (body.contact_id.filter(|s| !s.is_empty()), body.email.filter(|s| !s.is_empty())) {
            (Some(id), None) => contacts::Key::Id(schema::ids::parse_id(&id).ok_or_else(|| ApiError::not_found("Contact"))?),
            (None, Some(email)) => contact_key(&email)?,
            (None, None) => return Err(ApiError::refused_field("contact_id", "give exactly one of `contact_id` and `email`")),
            (Some(_), Some(_)) => return Err(ApiError::refused_field("contact_id", "give exactly one of `contact_id` and `email`, not both")),
        };
        let payload = Value::Object(body.payload.unwrap_or_default().into_iter().collect());
        let size = serde_json::to_vec(&payload).map(|b| b.len()).unwrap_or(usize::MAX);
        if size > MAX_PAYLOAD_BYTES {
            return Err(ApiError::refused_field("payload", format!("is {size} bytes of JSON; at most {MAX_PAYLOAD_BYTES}")));
        }
        let mut tx = state.pool.begin().await?;
        let target = custom_events::target(&mut tx, caller.team_id, &name, &contact).await?;
        let Some(definition_id) = target.definition_id else { return Err(ApiError::not_found("Event")) };
        let Some(contact_id) = target.contact_id else { return Err(ApiError::not_found("Contact")) };
        check_payload(target.schema.as_ref(), &payload)?;
        let fired = custom_events::fire(&mut tx, caller.team_id, definition_id, &name, contact_id, &payload).await?;
        tx.commit().await?;
        Ok(SendResponse::Accepted(Json(EventSent {
            object: "event".into(),
            id: fired.event_id.to_string(),
            event: name,
            contact_id: contact_id.to_string(),
            runs: fired.runs.into_iter().map(|(id, automation_id)| StartedRun { id: id.to_string(), automation_id: automation_id.to_string() }).collect(),
        })))
    }
}


fn not_found() -> ApiError {
    ApiError::not_found("Event")
}

/// A path's definition: by id when it is one, else by name.
fn key(raw: &str) -> Key {
    match schema::ids::parse_id(raw) {
        Some(id) => Key::Id(id),
        None => Key::Name(raw.to_string()),
    }
}

/// Document A's name rules.
pub fn check_name(name: &str) -> ApiResult<()> {
    if name.starts_with("svc:") {
        return Err(ApiError::refused_field("name", "the `svc:` prefix is reserved for built-in events"));
    }
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    if !starts_with_letter || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')) {
        return Err(ApiError::refused_field("name", "must start with a lower-case letter and hold only lower-case letters, digits, `.`, `_` and `-`"));
    }
    if name.chars().count() > MAX_NAME {
        return Err(ApiError::refused_field("name", format!("must be at most {MAX_NAME} characters")));
    }
    if uuid::Uuid::try_parse(name).is_ok() {
        return Err(ApiError::refused_field("name", "must not be shaped like a UUID (paths take ids and names alike)"));
    }
    Ok(())
}

/// A schema as stored: `null`, or a map of at most 50 keys to their types.
fn check_schema(schema: Option<HashMap<String, Choice<EventFieldType>>>) -> ApiResult<Option<Value>> {
    let Some(schema) = schema else { return Ok(None) };
    if schema.len() > MAX_SCHEMA_KEYS {
        return Err(ApiError::refused_field("schema", format!("has {} keys; at most {MAX_SCHEMA_KEYS}", schema.len())));
    }
    let mut error: Option<ApiError> = None;
    let mut map = Map::new();
    let mut keys: Vec<_> = schema.into_iter().collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, kind) in keys {
        let path = format!("schema.{key}");
        let problem = if key.is_empty() || key.chars().count() > 100 {
            Some("a key is 1 to 100 characters")
        } else if !EventFieldType::allows(kind.as_str()) {
            Some("must be string, number, boolean or date")
        } else {
            None
        };
        if let Some(why) = problem {
            error = Some(error.unwrap_or_else(|| ApiError::refused("The schema has bad keys.")).with_error(path, why));
            continue;
        }
        map.insert(key, Value::String(kind.into_string()));
    }
    match error {
        Some(error) => Err(error),
        None => Ok(Some(Value::Object(map))),
    }
}

/// Checks a payload against a schema: every declared key present and not `null` must match its
/// type; each one that does not is an `errors[]` entry.
fn check_payload(schema: Option<&Value>, payload: &Value) -> ApiResult<()> {
    let Some(schema) = schema.and_then(Value::as_object) else { return Ok(()) };
    let mut error: Option<ApiError> = None;
    for (key, kind) in schema {
        let Some(value) = payload.get(key).filter(|v| !v.is_null()) else { continue };
        let fits = match kind.as_str().unwrap_or_default() {
            "string" => value.is_string(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "date" => value.as_str().is_some_and(schema::automation::is_event_date),
            _ => true,
        };
        if !fits {
            let why = match kind.as_str().unwrap_or_default() {
                "date" => "must be an ISO 8601 calendar date or a zoned instant naming a real day".to_string(),
                other => format!("must be a {other}"),
            };
            let base = error.unwrap_or_else(|| ApiError::refused("The payload does not match the event's schema."));
            error = Some(base.with_error(format!("payload.{key}"), why));
        }
    }
    match error {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn view(definition: Definition) -> EventView {
    let schema = definition.schema.as_ref().and_then(Value::as_object).map(|map| {
        map.iter().map(|(k, v)| (k.clone(), Choice::new(v.as_str().unwrap_or_default()))).collect()
    });
    EventView {
        object: "event".into(),
        id: definition.id.to_string(),
        name: definition.name,
        schema: schema.into(),
        created_at: definition.created_at,
        updated_at: definition.updated_at,
    }
}
