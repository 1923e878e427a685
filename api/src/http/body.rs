//! `Body<T>`: a JSON request body documented with `T`'s schema and parsed with serde, so that
//! every failure names its field. An empty body reads as `{}`; the `Content-Type` is not
//! required (clients in the wild omit it).

use crate::http::error::{ApiError, ErrorKind};
use poem::{Request, RequestBody};
use poem_openapi::payload::{ParsePayload, Payload};
use poem_openapi::registry::{MetaMediaType, MetaRequest, MetaSchemaRef, Registry};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};
use poem_openapi::types::Type;
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use serde::de::DeserializeOwned;

/// Reads the request's body whole, refusing it past `limit` bytes: `413` as soon as
/// `Content-Length` or the stream passes the limit, without reading on. A body that cannot be
/// read (the client went away, a broken chunk) is `400 validation_error`, never an empty body.
pub async fn read_limited(req: &mut Request, limit: usize) -> Result<Vec<u8>, ApiError> {
    use futures::TryStreamExt;
    let declared = req.header(poem::http::header::CONTENT_LENGTH).and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large(limit));
    }
    let mut stream = req.take_body().into_bytes_stream();
    let mut data = Vec::with_capacity(declared.unwrap_or(0) as usize);
    while let Some(chunk) = stream.try_next().await.map_err(|error| {
        ApiError::new(ErrorKind::Invalid, format!("The request body could not be read: {error}."))
    })? {
        if data.len() + chunk.len() > limit {
            return Err(too_large(limit));
        }
        data.extend_from_slice(&chunk);
    }
    Ok(data)
}

/// `413` with the standard error body, naming the limit.
fn too_large(limit: usize) -> ApiError {
    ApiError::new(ErrorKind::TooLarge, format!("The request body is larger than this route takes: at most {limit} bytes."),
    )
}

/// A parsed JSON request body, and its raw bytes (idempotency fingerprints them).
pub struct Body<T>(pub T, pub Vec<u8>);

impl<T: Type> Payload for Body<T> {
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(_content_type: &str) -> bool {
        true
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + DeserializeOwned + Send + 'static> ParsePayload for Body<T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(_request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let bytes = body.take()?.into_bytes().await.map_err(|_| {
            ApiError::new(ErrorKind::Invalid, "The request body could not be read.")
        })?;
        let value = read_value(&bytes)?;
        check_shapes::<T>(&value)?;
        Ok(Body(deserialize(value)?, bytes.to_vec()))
    }
}

impl<'a, T: Type + DeserializeOwned + Send + 'static> ApiExtractor<'a> for Body<T> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        <Self as Payload>::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest {
            description: None,
            content: vec![MetaMediaType { content_type: Self::CONTENT_TYPE, schema: Self::schema_ref() }],
            required: true,
        })
    }

    async fn from_request(
        request: &'a Request,
        body: &mut RequestBody,
        _param_opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        <Self as ParsePayload>::from_request(request, body).await
    }
}

/// Parses a JSON body into `T`: malformed JSON or a field of the wrong shape is
/// `400 validation_error`; a missing or null required field is `422 missing_required_field`.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    deserialize(read_value(bytes)?)
}

/// The body as JSON: an object or an array, with no character the edge refuses.
fn read_value(bytes: &[u8]) -> Result<serde_json::Value, ApiError> {
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { bytes };
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|error| {
        ApiError::new(ErrorKind::Invalid, format!("The request body is not valid JSON: {error}."),
        )
    })?;
    if !value.is_object() && !value.is_array() {
        return Err(ApiError::new(ErrorKind::Invalid, "The request body must be a JSON object.",
        ));
    }
    crate::http::input::check_body(&value)?;
    Ok(value)
}

/// serde's derived structs also read a JSON array, by position (`[null, null]` as
/// `{ sending, receiving }`). This refuses an array wherever `T`'s documented schema wants an
/// object with properties, naming the path, before serde reads the body.
fn check_shapes<T: Type + 'static>(value: &serde_json::Value) -> Result<(), ApiError> {
    // Each body type's schemas are built once and kept (a few dozen types in all).
    static REGISTRIES: OnceLock<RwLock<HashMap<TypeId, &'static Registry>>> = OnceLock::new();
    let registries = REGISTRIES.get_or_init(Default::default);
    let known = registries.read().unwrap_or_else(|e| e.into_inner()).get(&TypeId::of::<T>()).copied();
    let registry = match known {
        Some(registry) => registry,
        None => *registries.write().unwrap_or_else(|e| e.into_inner()).entry(TypeId::of::<T>()).or_insert_with(|| {
            let mut registry = Registry::new();
            T::register(&mut registry);
            Box::leak(Box::new(registry))
        }),
    };
    shape(value, &T::schema_ref(), registry, &mut String::new())
}

fn shape(value: &serde_json::Value, schema: &MetaSchemaRef, registry: &Registry, path: &mut String) -> Result<(), ApiError> {
    use serde_json::Value;
    let schema = match schema {
        MetaSchemaRef::Inline(schema) => &**schema,
        MetaSchemaRef::Reference(name) => match registry.schemas.get(name) {
            Some(schema) => schema,
            None => return Ok(()),
        },
    };
    match value {
        Value::Array(_) if !schema.properties.is_empty() => {
            return Err(ApiError::invalid_field(if path.is_empty() { "body" } else { path }, "must be a JSON object"));
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                for (index, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{index}]"));
                    shape(item, item_schema, registry, path)?;
                    path.truncate(len);
                }
            }
        }
        Value::Object(fields) => {
            for (name, property) in &schema.properties {
                if let Some(inner) = fields.get(*name) {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                    shape(inner, property, registry, path)?;
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
    for inner in &schema.all_of {
        shape(value, inner, registry, path)?;
    }
    Ok(())
}

/// Reads `T` from the JSON: a field of the wrong shape is `400 validation_error`; a missing or
/// null required field is `422 missing_required_field`.
fn deserialize<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner().to_string();
        if let Some(field) = inner.strip_prefix("missing field `").and_then(|rest| rest.split('`').next()) {
            let full = if path == "." { field.to_string() } else { format!("{path}.{field}") };
            ApiError::missing_field(&full)
        } else if inner.starts_with("invalid type: null") {
            ApiError::missing_field(&path)
        } else if inner.starts_with("unknown variant") {
            ApiError::invalid_parameter(&path, inner)
        } else {
            ApiError::invalid_field(&path, inner)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Named {
        name: String,
        size: Option<u8>,
    }

    #[test]
    fn a_missing_field_is_named_in_a_missing_required_field_error() {
        let error = parse_json::<Named>(b"{}").unwrap_err();
        assert_eq!((error.status.as_u16(), error.name), (422, "missing_required_field"));
        assert_eq!(error.errors[0].path, "name");
    }

    #[test]
    fn an_empty_body_reads_as_an_empty_object() {
        let error = parse_json::<Named>(b"").unwrap_err();
        assert_eq!(error.name, "missing_required_field");
    }

    #[test]
    fn a_null_required_field_is_missing() {
        let error = parse_json::<Named>(br#"{"name": null}"#).unwrap_err();
        assert_eq!((error.name, error.errors[0].path.as_str()), ("missing_required_field", "name"));
    }

    #[test]
    fn a_field_of_the_wrong_type_is_a_400_validation_error_naming_it() {
        let error = parse_json::<Named>(br#"{"name": "a", "size": "big"}"#).unwrap_err();
        assert_eq!((error.status.as_u16(), error.name), (400, "validation_error"));
        assert_eq!(error.errors[0].path, "size");
    }

    #[test]
    fn malformed_json_is_a_400_validation_error() {
        let error = parse_json::<Named>(b"{\"name\":").unwrap_err();
        assert_eq!((error.status.as_u16(), error.name), (400, "validation_error"));
    }

    #[derive(Debug, Deserialize, poem_openapi::Object)]
    #[allow(dead_code)]
    struct Outer {
        inner: Option<Named2>,
        list: Option<Vec<Named2>>,
    }

    #[derive(Debug, Deserialize, poem_openapi::Object)]
    #[allow(dead_code)]
    #[oai(rename = "BodyTestNamed")]
    struct Named2 {
        name: String,
    }

    #[test]
    fn an_array_where_the_schema_wants_an_object_is_refused_naming_its_path() {
        let error = check_shapes::<Outer>(&serde_json::json!({ "inner": ["a", null] })).unwrap_err();
        assert_eq!((error.status.as_u16(), error.errors[0].path.as_str()), (400, "inner"));
        let error = check_shapes::<Outer>(&serde_json::json!({ "list": [{ "name": "a" }, ["b"]] })).unwrap_err();
        assert_eq!(error.errors[0].path, "list[1]");
        assert_eq!(check_shapes::<Outer>(&serde_json::json!(["a"])).unwrap_err().errors[0].path, "body");
        assert!(check_shapes::<Vec<Named2>>(&serde_json::json!([{ "name": "a" }])).is_ok());
        assert!(check_shapes::<Outer>(&serde_json::json!({ "inner": { "name": "a" }, "list": [] })).is_ok());
    }

    #[test]
    fn unknown_and_null_extra_fields_are_accepted() {
        let named = parse_json::<Named>(br#"{"name": "a", "id": null, "extra": 1}"#).unwrap();
        assert_eq!(named.name, "a");
    }
}

/// A JSON body kept as the bytes that arrived (a signed webhook is checked over exactly them);
/// documented as an object, never parsed or refused here.
pub struct RawJson(pub Vec<u8>);

impl Payload for RawJson {
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(_content_type: &str) -> bool {
        true
    }

    fn schema_ref() -> MetaSchemaRef {
        serde_json::Value::schema_ref()
    }
}

impl ParsePayload for RawJson {
    const IS_REQUIRED: bool = true;

    async fn from_request(_request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let bytes = body.take()?.into_bytes().await.map_err(|_| ApiError::new(ErrorKind::Invalid, "The request body could not be read."))?;
        Ok(RawJson(bytes.to_vec()))
    }
}

impl<'a> ApiExtractor<'a> for RawJson {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        <Self as Payload>::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest { description: None, content: vec![MetaMediaType { content_type: Self::CONTENT_TYPE, schema: Self::schema_ref() }], required: true })
    }

    async fn from_request(request: &'a Request, body: &mut RequestBody, _param_opts: ExtractParamOptions<Self::ParamType>) -> poem::Result<Self> {
        <Self as ParsePayload>::from_request(request, body).await
    }
}
