//! The one public error: `{ statusCode, name, message }` plus `errors[]`, `code` and `details`
//! where document C uses them. Internal causes are logged, never shown.

use poem::http::StatusCode;
use poem::{IntoResponse, Response, error::ResponseError};
use serde::Serialize;
use serde_json::{Value, json};

/// One failing field, query parameter or condition.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FieldError {
    pub path: String,
    pub message: String,
}

/// An error answer from the closed list of names in document C.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{status} {name}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub name: &'static str,
    pub message: String,
    pub errors: Vec<FieldError>,
    pub code: Option<u16>,
    pub details: Option<Value>,
    /// On `409 resource_locked` for a domain another team holds: it can be claimed.
    pub claimable: Option<bool>,
}

/// A result whose error is the public error.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, name: &'static str, message: impl Into<String>) -> Self {
        Self { status, name, message: message.into(), errors: Vec::new(), code: None, details: None, claimable: None }
    }

    /// Adds one `errors[]` entry.
    pub fn with_error(mut self, path: impl Into<String>, message: impl Into<String>) -> Self {
        self.errors.push(FieldError { path: path.into(), message: message.into() });
        self
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// `400 validation_error` for a field that failed validation.
    pub fn invalid_field(path: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(StatusCode::BAD_REQUEST, "validation_error", format!("Invalid `{path}`: {message}"))
            .with_error(path, message)
    }

    /// `422 missing_required_field`.
    pub fn missing_field(path: &str) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "missing_required_field", format!("Missing `{path}` field."))
            .with_error(path, "is required")
    }

    /// `422 invalid_parameter` for a malformed query or path parameter.
    pub fn invalid_parameter(path: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter", format!("Invalid `{path}` parameter: {message}"))
            .with_error(path, message)
    }

    /// `422 validation_error`: a well-formed body the resource refuses (plan limits and the like).
    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "validation_error", message)
    }

    /// `422 validation_error` naming the field the resource refuses, in `errors[]` too.
    pub fn refused_field(path: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::refused(format!("Invalid `{path}`: {message}")).with_error(path, message)
    }

    /// `403 validation_error`: well-formed but not allowed (an unverified domain, a policy).
    pub fn not_allowed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "validation_error", message)
    }

    /// `404 not_found`, the same for a missing row and another team's.
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", format!("{what} not found."))
    }

    /// `403 invalid_permission`.
    pub fn invalid_permission(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "invalid_permission", message)
    }

    /// `500 application_error` naming the request id (the cause is logged by the caller).
    pub fn internal(request_id: &str) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "application_error",
            format!("An unexpected error occurred. Request ID: {request_id}."),
        )
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut body = json!({
            "statusCode": self.status.as_u16(),
            "name": self.name,
            "message": self.message,
        });
        if !self.errors.is_empty() {
            body["errors"] = json!(self.errors);
        }
        if let Some(code) = self.code {
            body["code"] = json!(code);
        }
        if let Some(details) = &self.details {
            body["details"] = details.clone();
        }
        if let Some(claimable) = self.claimable {
            body["claimable"] = json!(claimable);
        }
        body
    }
}

impl ResponseError for ApiError {
    fn status(&self) -> StatusCode {
        self.status
    }

    fn as_response(&self) -> Response {
        json_response(self.status, &self.body())
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        tracing::error!(error = %error, "database error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "application_error", "An unexpected error occurred.")
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(error: anyhow::Error) -> Self {
        tracing::error!(error = format!("{error:#}"), "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "application_error", "An unexpected error occurred.")
    }
}

/// A JSON response with the given status.
pub fn json_response(status: StatusCode, body: &Value) -> Response {
    poem::web::Json(body).with_status(status).into_response()
}

/// The error body as documented (`ApiError` builds it).
#[derive(poem_openapi::Object)]
#[oai(rename = "Error")]
pub struct ErrorDoc {
    /// The HTTP status.
    #[oai(rename = "statusCode")]
    pub status_code: u16,
    /// Stable error name from the closed list; branch on it with the status.
    pub name: String,
    /// Human-readable explanation; may be reworded.
    pub message: String,
    /// One entry per failing field, parameter or condition.
    pub errors: Option<Vec<FieldErrorDoc>>,
    /// `1010` for a missing `User-Agent`.
    pub code: Option<u16>,
    /// Extra facts named by the error.
    pub details: Option<serde_json::Value>,
}

/// One failing field.
#[derive(poem_openapi::Object)]
#[oai(rename = "FieldError")]
pub struct FieldErrorDoc {
    /// Where: a field, parameter or condition path.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl poem_openapi::ApiResponse for ApiError {
    fn meta() -> poem_openapi::registry::MetaResponses {
        use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses};
        use poem_openapi::types::Type;
        MetaResponses {
            responses: vec![MetaResponse {
                description: "An error: `{ statusCode, name, message }` with `name` from the closed list.",
                status: None,
                status_range: None,
                content: vec![MetaMediaType { content_type: "application/json", schema: ErrorDoc::schema_ref() }],
                headers: vec![],
            }],
        }
    }

    fn register(registry: &mut poem_openapi::registry::Registry) {
        use poem_openapi::types::Type;
        ErrorDoc::register(registry);
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.as_response()
    }
}
