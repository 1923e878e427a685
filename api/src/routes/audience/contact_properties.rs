//! Contact properties: a key and a type (`string`, `number`, `boolean`) with an optional
//! fallback value, at most 100 per team. Keys and types are fixed once declared.

use crate::http::fields::IdText;
use crate::http::paging::{page_of, page_request};
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices, Nullable, Scalar};
use crate::routes::audience::refs::{MAX_PROPERTIES, valid_key};
use schema::model::{MAX_PROPERTY_TEXT, property_kind};
use crate::routes::{Deleted, Tag, Updated, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Object};
use schema::store::contacts::{self, Property};
use serde::Deserialize;
use serde_json::Value;

pub struct ContactPropertiesApi;

crate::choices! {
    /// A property's type: `string`, `number` or `boolean`.
    PropertyType = &["string", "number", "boolean"];
}

/// Body of `POST /contact-properties`.
#[derive(Object, Deserialize)]
pub struct CreateProperty {
    /// A letter or `_`, then letters, digits or `_`; at most 50 characters.
    #[oai(validator(max_length = 50, pattern = "^[A-Za-z_][A-Za-z0-9_]*$"))]
    pub key: String,
    /// `string`, `number` or `boolean`; fixed once created.
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub kind: Choice<PropertyType>,
    /// Used where a contact has no value; of the property's type.
    pub fallback_value: Option<Value>,
}

/// Body of `PATCH /contact-properties/{id}`: only the fallback changes.
#[derive(Object, Deserialize)]
pub struct UpdateProperty {
    /// The new fallback; `null` clears it.
    #[serde(default)]
    pub fallback_value: MaybeUndefined<Value>,
    /// Not in the document: fixed at creation, so sending it is `422 invalid_parameter`.
    #[oai(skip)]
    pub key: Option<Value>,
    /// Not in the document: fixed at creation, so sending it is `422 invalid_parameter`.
    #[oai(skip)]
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub kind: Option<Value>,
}

/// `{ object: "contact_property", id }`.
#[derive(Object)]
pub struct PropertyRef {
    /// Always `contact_property`.
    pub object: String,
    /// The property's id.
    pub id: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Declared.
    #[oai(status = 201)]
    Created(Json<PropertyRef>),
}

/// A declared property.
#[derive(Object)]
pub struct PropertyView {
    /// Always `contact_property`.
    pub object: String,
    /// The property's id.
    pub id: String,
    /// The property's key, as contacts' `properties` name it.
    pub key: String,
    /// The values' type.
    #[oai(rename = "type")]
    pub kind: Choice<PropertyType>,
    /// Used where a contact has no value; of the property's type.
    pub fallback_value: Nullable<Scalar>,
    /// When the property was declared.
    pub created_at: DateTime<Utc>,
}

/// The team's properties (at most 100), by key.
#[derive(Object)]
pub struct PropertyList {
    /// Always `list`.
    pub object: String,
    /// Whether more properties follow this page.
    pub has_more: bool,
    /// The properties, by key.
    pub data: Vec<PropertyView>,
}

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl ContactPropertiesApi {
    /// Declare a property.
    #[oai(path = "/contact-properties", method = "post", operation_id = "create-contact-property")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateProperty>) -> ApiResult<CreateResponse> {
        let body = body.0;
        if !valid_key(&body.key) {
            return Err(ApiError::invalid_field("key", "must be a letter or _, then letters, digits or _, at most 50 characters"));
        }
        if !PropertyType::allows(&body.kind) {
            return Err(ApiError::invalid_field("type", "must be string, number or boolean"));
        }
        check_fallback(&body.kind, body.fallback_value.as_ref())?;
        let mut tx = state.pool.begin().await?;
        contacts::lock_limit(&mut tx, caller.team_id).await?;
        if contacts::properties(&mut tx, caller.team_id).await?.len() >= MAX_PROPERTIES {
            return Err(ApiError::refused(format!("A team has at most {MAX_PROPERTIES} contact properties.")));
        }
        let fallback = body.fallback_value.filter(|v| !v.is_null());
        let created = contacts::insert_property(&mut tx, caller.team_id, &body.key, &body.kind, fallback.as_ref()).await?;
        let created = created.ok_or_else(|| {
            ApiError::refused(format!("The property `{}` is already declared.", body.key)).with_error("key", "is already declared")
        })?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(PropertyRef { object: "contact_property".into(), id: created.id.to_string() })))
    }

    /// List the team's properties by key.
    #[oai(path = "/contact-properties", method = "get", operation_id = "list-contact-properties")]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<PropertyList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let all = contacts::properties(&mut *state.pool.acquire().await?, caller.team_id).await?;
        let page = page_of(all, |p| p.id, &page)?;
        Ok(Json(PropertyList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(view).collect() }))
    }

    /// Retrieve a property.
    #[oai(path = "/contact-properties/:property_id", method = "get", operation_id = "get-contact-property")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, property_id: Path<String>) -> ApiResult<Json<PropertyView>> {
        let found = find(&state, &caller, &property_id.0).await?;
        Ok(Json(view(found)))
    }

    /// Change a property's fallback value (its key and type are fixed).
    #[oai(path = "/contact-properties/:property_id", method = "patch", operation_id = "update-contact-property")]
    async fn update(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        property_id: Path<String>,
        body: Body<UpdateProperty>,
    ) -> ApiResult<Json<Updated>> {
        let body = body.0;
        for (field, sent) in [("key", &body.key), ("type", &body.kind)] {
            if sent.is_some() {
                return Err(ApiError::invalid_parameter(field, "is fixed once the property is declared"));
            }
        }
        let found = find(&state, &caller, &property_id.0).await?;
        let fallback = match body.fallback_value {
            MaybeUndefined::Undefined => return Ok(Json(Updated { object: "contact_property".into(), id: found.id.to_string() })),
            MaybeUndefined::Null => None,
            MaybeUndefined::Value(value) => Some(value),
        };
        check_fallback(&found.kind, fallback.as_ref())?;
        contacts::set_fallback(&mut *state.pool.acquire().await?, found.id, fallback.as_ref()).await?;
        Ok(Json(Updated { object: "contact_property".into(), id: found.id.to_string() }))
    }

    /// Delete a property and its value on every contact.
    #[oai(path = "/contact-properties/:property_id", method = "delete", operation_id = "delete-contact-property")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, property_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let found = find(&state, &caller, &property_id.0).await?;
        let mut tx = state.pool.begin().await?;
        contacts::delete_property(&mut tx, caller.team_id, &found).await?;
        tx.commit().await?;
        Ok(Json(Deleted { object: "contact_property".into(), id: found.id.to_string(), deleted: true }))
    }
}

async fn find(state: &AppState, caller: &Caller, raw: &str) -> ApiResult<Property> {
    let id = path_id(raw, "Contact property")?;
    let found = contacts::property(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
    found.ok_or_else(|| ApiError::not_found("Contact property"))
}

/// A fallback must be of the property's type, and text no longer than a property holds.
fn check_fallback(kind: &str, fallback: Option<&Value>) -> ApiResult<()> {
    match fallback {
        Some(value) if !value.is_null() && property_kind(value) != Some(kind) => {
            Err(ApiError::invalid_field("fallback_value", format!("must be a {kind}")))
        }
        Some(Value::String(text)) if text.chars().count() > MAX_PROPERTY_TEXT => {
            Err(ApiError::invalid_field("fallback_value", format!("must be at most {MAX_PROPERTY_TEXT} characters")))
        }
        _ => Ok(()),
    }
}

fn view(property: Property) -> PropertyView {
    PropertyView {
        object: "contact_property".into(),
        id: property.id.to_string(),
        key: property.key,
        kind: property.kind.into(),
        fallback_value: property.fallback_value.map(Scalar).into(),
        created_at: property.created_at,
    }
}
