//! `Body<T>`: a JSON request body documented with `T`'s schema and parsed with serde, so that
//! every failure names its field. An empty body reads as `{}`; the `Content-Type` is not
//! required (clients in the wild omit it).

use crate::error::ApiError;
use poem::{Request, RequestBody};
use poem_openapi::payload::{ParsePayload, Payload};
use poem_openapi::registry::{MetaMediaType, MetaRequest, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use serde::de::DeserializeOwned;

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

impl<T: Type + DeserializeOwned + Send> ParsePayload for Body<T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(_request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let bytes = body.take()?.into_bytes().await.map_err(|_| {
            ApiError::new(poem::http::StatusCode::BAD_REQUEST, "validation_error", "The request body could not be read.")
        })?;
        Ok(Body(parse_json(&bytes)?, bytes.to_vec()))
    }
}

impl<'a, T: Type + DeserializeOwned + Send> ApiExtractor<'a> for Body<T> {
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
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { bytes };
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|error| {
        ApiError::new(
            poem::http::StatusCode::BAD_REQUEST,
            "validation_error",
            format!("The request body is not valid JSON: {error}."),
        )
    })?;
    if !value.is_object() && !value.is_array() {
        return Err(ApiError::new(
            poem::http::StatusCode::BAD_REQUEST,
            "validation_error",
            "The request body must be a JSON object.",
        ));
    }
    crate::input::check_body(&value)?;
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

    #[test]
    fn unknown_and_null_extra_fields_are_accepted() {
        let named = parse_json::<Named>(br#"{"name": "a", "id": null, "extra": 1}"#).unwrap();
        assert_eq!(named.name, "a");
    }
}
