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

/// Every kind of error answer: a name from document C's closed list with the status it is
/// answered with. The one table of names and statuses is [`ErrorKind::status_and_name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 400 `invalid_idempotency_key`: a key outside 1 to 256 characters.
    InvalidIdempotencyKey,
    /// 400 `validation_error`: a body, query or header that fails validation.
    Invalid,
    /// 401 `missing_api_key`.
    MissingApiKey,
    /// 401 `invalid_api_key`: no live key or token matches.
    InvalidApiKey,
    /// 401 `restricted_api_key`: a `sending_access` key on another route.
    SendingOnlyKey,
    /// 403 `restricted_api_key`: a revoked key.
    RevokedKey,
    /// 403 `email_above_quota`.
    EmailAboveQuota,
    /// 403 `invalid_permission`: a missing scope or access level.
    InvalidPermission,
    /// 403 `suspended_api_key`.
    SuspendedApiKey,
    /// 403 `validation_error`: well-formed but not allowed (an unverified domain, a policy).
    NotAllowed,
    /// 403 `inbox_not_set_up`.
    InboxNotSetUp,
    /// 404 `not_found`.
    NotFound,
    /// 405 `method_not_allowed`.
    MethodNotAllowed,
    /// 409 `concurrent_idempotent_requests`.
    ConcurrentIdempotentRequests,
    /// 409 `invalid_idempotent_request`.
    InvalidIdempotentRequest,
    /// 409 `resource_locked`.
    ResourceLocked,
    /// 409 `receiving_mx_in_use`.
    ReceivingMxInUse,
    /// 409 `conversation_conflict`.
    ConversationConflict,
    /// 412 `precondition_failed`.
    PreconditionFailed,
    /// 413 `validation_error`: a body past its route's limit.
    TooLarge,
    /// 422 `validation_error`: a well-formed body the resource refuses (plan limits and the like).
    Refused,
    /// 422 `invalid_attachment`.
    InvalidAttachment,
    /// 422 `invalid_parameter`.
    InvalidParameter,
    /// 422 `missing_required_field`.
    MissingRequiredField,
    /// 422 `missing_required_parameter`.
    MissingRequiredParameter,
    /// 422 `snooze_needs_a_person`.
    SnoozeNeedsAPerson,
    /// 429 `daily_quota_exceeded`.
    DailyQuotaExceeded,
    /// 429 `monthly_quota_exceeded`.
    MonthlyQuotaExceeded,
    /// 429 `marketing_quota_exceeded`.
    MarketingQuotaExceeded,
    /// 429 `rate_limit_exceeded`.
    RateLimitExceeded,
    /// 500 `application_error`.
    ApplicationError,
    /// 501 `not_implemented`.
    NotImplemented,
    /// 503 `service_unavailable`.
    ServiceUnavailable,
}

impl ErrorKind {
    /// Every kind, in the table's order.
    pub const ALL: [ErrorKind; 33] = [
        ErrorKind::InvalidIdempotencyKey,
        ErrorKind::Invalid,
        ErrorKind::MissingApiKey,
        ErrorKind::InvalidApiKey,
        ErrorKind::SendingOnlyKey,
        ErrorKind::RevokedKey,
        ErrorKind::EmailAboveQuota,
        ErrorKind::InvalidPermission,
        ErrorKind::SuspendedApiKey,
        ErrorKind::NotAllowed,
        ErrorKind::InboxNotSetUp,
        ErrorKind::NotFound,
        ErrorKind::MethodNotAllowed,
        ErrorKind::ConcurrentIdempotentRequests,
        ErrorKind::InvalidIdempotentRequest,
        ErrorKind::ResourceLocked,
        ErrorKind::ReceivingMxInUse,
        ErrorKind::ConversationConflict,
        ErrorKind::PreconditionFailed,
        ErrorKind::TooLarge,
        ErrorKind::Refused,
        ErrorKind::InvalidAttachment,
        ErrorKind::InvalidParameter,
        ErrorKind::MissingRequiredField,
        ErrorKind::MissingRequiredParameter,
        ErrorKind::SnoozeNeedsAPerson,
        ErrorKind::DailyQuotaExceeded,
        ErrorKind::MonthlyQuotaExceeded,
        ErrorKind::MarketingQuotaExceeded,
        ErrorKind::RateLimitExceeded,
        ErrorKind::ApplicationError,
        ErrorKind::NotImplemented,
        ErrorKind::ServiceUnavailable,
    ];

    /// The status and the name each kind is answered with: the one table of them.
    pub const fn status_and_name(self) -> (StatusCode, &'static str) {
        use ErrorKind::*;
        match self {
            InvalidIdempotencyKey => (StatusCode::BAD_REQUEST, "invalid_idempotency_key"),
            Invalid => (StatusCode::BAD_REQUEST, "validation_error"),
            MissingApiKey => (StatusCode::UNAUTHORIZED, "missing_api_key"),
            InvalidApiKey => (StatusCode::UNAUTHORIZED, "invalid_api_key"),
            SendingOnlyKey => (StatusCode::UNAUTHORIZED, "restricted_api_key"),
            RevokedKey => (StatusCode::FORBIDDEN, "restricted_api_key"),
            EmailAboveQuota => (StatusCode::FORBIDDEN, "email_above_quota"),
            InvalidPermission => (StatusCode::FORBIDDEN, "invalid_permission"),
            SuspendedApiKey => (StatusCode::FORBIDDEN, "suspended_api_key"),
            NotAllowed => (StatusCode::FORBIDDEN, "validation_error"),
            InboxNotSetUp => (StatusCode::FORBIDDEN, "inbox_not_set_up"),
            NotFound => (StatusCode::NOT_FOUND, "not_found"),
            MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ConcurrentIdempotentRequests => (StatusCode::CONFLICT, "concurrent_idempotent_requests"),
            InvalidIdempotentRequest => (StatusCode::CONFLICT, "invalid_idempotent_request"),
            ResourceLocked => (StatusCode::CONFLICT, "resource_locked"),
            ReceivingMxInUse => (StatusCode::CONFLICT, "receiving_mx_in_use"),
            ConversationConflict => (StatusCode::CONFLICT, "conversation_conflict"),
            PreconditionFailed => (StatusCode::PRECONDITION_FAILED, "precondition_failed"),
            TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "validation_error"),
            Refused => (StatusCode::UNPROCESSABLE_ENTITY, "validation_error"),
            InvalidAttachment => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_attachment"),
            InvalidParameter => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter"),
            MissingRequiredField => (StatusCode::UNPROCESSABLE_ENTITY, "missing_required_field"),
            MissingRequiredParameter => (StatusCode::UNPROCESSABLE_ENTITY, "missing_required_parameter"),
            SnoozeNeedsAPerson => (StatusCode::UNPROCESSABLE_ENTITY, "snooze_needs_a_person"),
            DailyQuotaExceeded => (StatusCode::TOO_MANY_REQUESTS, "daily_quota_exceeded"),
            MonthlyQuotaExceeded => (StatusCode::TOO_MANY_REQUESTS, "monthly_quota_exceeded"),
            MarketingQuotaExceeded => (StatusCode::TOO_MANY_REQUESTS, "marketing_quota_exceeded"),
            RateLimitExceeded => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded"),
            ApplicationError => (StatusCode::INTERNAL_SERVER_ERROR, "application_error"),
            NotImplemented => (StatusCode::NOT_IMPLEMENTED, "not_implemented"),
            ServiceUnavailable => (StatusCode::SERVICE_UNAVAILABLE, "service_unavailable"),
        }
    }

    /// The kind answered with `status` and `name`, if the table has it (for statuses that reach
    /// the edge from outside it, such as poem's own rejections).
    pub fn of(status: StatusCode, name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|kind| kind.status_and_name() == (status, name))
    }
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
    /// Seconds to wait, sent as `retry-after` (a 429 of a per-route limit).
    pub retry_after: Option<u64>,
}

/// A result whose error is the public error.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// An error of `kind` (its status and name from the table) saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        let (status, name) = kind.status_and_name();
        Self { status, name, message: message.into(), errors: Vec::new(), code: None, details: None, claimable: None, retry_after: None }
    }

    /// Adds one `errors[]` entry.
    pub fn with_error(mut self, path: impl Into<String>, message: impl Into<String>) -> Self {
        self.errors.push(FieldError { path: path.into(), message: message.into() });
        self
    }

    /// Sends `retry-after: seconds` with the answer.
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// `400 validation_error` for a field that failed validation.
    pub fn invalid_field(path: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(ErrorKind::Invalid, format!("Invalid `{path}`: {message}"))
            .with_error(path, message)
    }

    /// `422 missing_required_field`.
    pub fn missing_field(path: &str) -> Self {
        Self::new(ErrorKind::MissingRequiredField, format!("Missing `{path}` field."))
            .with_error(path, "is required")
    }

    /// `422 invalid_parameter` for a malformed query or path parameter.
    pub fn invalid_parameter(path: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(ErrorKind::InvalidParameter, format!("Invalid `{path}` parameter: {message}"))
            .with_error(path, message)
    }

    /// `422 validation_error`: a well-formed body the resource refuses (plan limits and the like).
    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Refused, message)
    }

    /// `422 validation_error` naming the field the resource refuses, in `errors[]` too.
    pub fn refused_field(path: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::refused(format!("Invalid `{path}`: {message}")).with_error(path, message)
    }

    /// `403 validation_error`: well-formed but not allowed (an unverified domain, a policy).
    pub fn not_allowed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotAllowed, message)
    }

    /// `404 not_found`, the same for a missing row and another team's.
    pub fn not_found(what: &str) -> Self {
        Self::new(ErrorKind::NotFound, format!("{what} not found."))
    }

    /// `403 invalid_permission`.
    pub fn invalid_permission(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidPermission, message)
    }

    /// `503 service_unavailable`: PostgreSQL is saturated or unreachable (see [`is_unavailable`]).
    pub fn unavailable() -> Self {
        Self::new(
            ErrorKind::ServiceUnavailable,
            "The service cannot reach its database right now. Retry after the `retry-after` seconds; an `Idempotency-Key` makes a retried send safe.",
        )
    }

    /// `503 service_unavailable`: the request did not finish within the server's deadline.
    pub fn timed_out(deadline: std::time::Duration) -> Self {
        Self::new(
            ErrorKind::ServiceUnavailable,
            format!(
                "The request did not finish within {} s. Retry after the `retry-after` seconds; an `Idempotency-Key` makes a retried send safe.",
                deadline.as_secs()
            ),
        )
    }

    /// `500 application_error` naming the request id (the cause is logged by the caller).
    pub fn internal(request_id: &str) -> Self {
        Self::new(ErrorKind::ApplicationError, format!("An unexpected error occurred. Request ID: {request_id}."),
        )
    }

    /// The JSON body.
    /// `response` with this error's own `retry-after`, if it has one.
    pub fn waiting(&self, mut response: Response) -> Response {
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert("retry-after", poem::http::HeaderValue::from(seconds));
        }
        response
    }

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
        self.waiting(with_retry_after(self.status, json_response(self.status, &self.body())))
    }
}

// `#[track_caller]` on the conversions that `?` calls: the log line of an internal error names
// the handler's own line where it surfaced (`at`), beside the request span's id, operation and
// team, so a 500 leads to the statement that failed without a `.context` on every call.
impl From<sqlx::Error> for ApiError {
    #[track_caller]
    fn from(error: sqlx::Error) -> Self {
        if is_unavailable(&error) {
            tracing::warn!(error = %error, at = %std::panic::Location::caller(), "database unavailable");
            return Self::unavailable();
        }
        tracing::error!(error = %error, at = %std::panic::Location::caller(), "database error");
        Self::new(ErrorKind::ApplicationError, "An unexpected error occurred.")
    }
}

pub use schema::is_unavailable;

/// Seconds a client is told to wait after a `503`.
pub const RETRY_AFTER_SECONDS: u32 = 1;

impl From<anyhow::Error> for ApiError {
    #[track_caller]
    fn from(error: anyhow::Error) -> Self {
        tracing::error!(error = format!("{error:#}"), at = %std::panic::Location::caller(), "internal error");
        Self::new(ErrorKind::ApplicationError, "An unexpected error occurred.")
    }
}

/// A `503` tells the client when to come back.
pub fn with_retry_after(status: StatusCode, mut response: Response) -> Response {
    if status == StatusCode::SERVICE_UNAVAILABLE && !response.headers().contains_key("retry-after") {
        response.headers_mut().insert("retry-after", poem::http::HeaderValue::from(RETRY_AFTER_SECONDS));
    }
    response
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
    /// `true` on adding a domain another team has verified: it can be claimed with
    /// `POST /domains/claim`.
    pub claimable: Option<bool>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Document C's table of error names and statuses (its "Errors" section), with the 413 this
    /// service answers a body past its route's limit with (a `validation_error`, see
    /// docs/decisions.md).
    const DOCUMENT_C: &[(u16, &str)] = &[
        (400, "invalid_idempotency_key"),
        (400, "validation_error"),
        (401, "missing_api_key"),
        (401, "invalid_api_key"),
        (401, "restricted_api_key"),
        (403, "email_above_quota"),
        (403, "invalid_permission"),
        (403, "restricted_api_key"),
        (403, "suspended_api_key"),
        (403, "validation_error"),
        (403, "inbox_not_set_up"),
        (404, "not_found"),
        (405, "method_not_allowed"),
        (409, "concurrent_idempotent_requests"),
        (409, "invalid_idempotent_request"),
        (409, "resource_locked"),
        (409, "receiving_mx_in_use"),
        (409, "conversation_conflict"),
        (412, "precondition_failed"),
        (413, "validation_error"),
        (422, "validation_error"),
        (422, "invalid_attachment"),
        (422, "invalid_parameter"),
        (422, "missing_required_field"),
        (422, "missing_required_parameter"),
        (422, "snooze_needs_a_person"),
        (429, "daily_quota_exceeded"),
        (429, "monthly_quota_exceeded"),
        (429, "marketing_quota_exceeded"),
        (429, "rate_limit_exceeded"),
        (500, "application_error"),
        (501, "not_implemented"),
        (503, "service_unavailable"),
    ];

    #[test]
    fn every_error_kind_is_a_name_and_status_of_document_c() {
        for kind in ErrorKind::ALL {
            let (status, name) = kind.status_and_name();
            assert!(DOCUMENT_C.contains(&(status.as_u16(), name)), "{kind:?} answers {status} {name}, which document C does not list");
        }
        // And every row of the table has its kind: none is answered some other way.
        for (status, name) in DOCUMENT_C {
            assert!(ErrorKind::of(StatusCode::from_u16(*status).unwrap(), name).is_some(), "no kind answers {status} {name}");
        }
    }

    #[test]
    fn no_error_name_is_written_outside_the_table() {
        // Names reach answers only through `ErrorKind`: no source file of the crate passes a
        // name string to the error type itself.
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut stack = vec![std::path::PathBuf::from(root)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    // Built from pieces so that these lines do not match themselves.
                    let patterns = [["ApiError::new(", "StatusCode"].concat(), ["ApiError::new(", "status"].concat(), [".name", " = \""].concat()];
                    for (n, line) in text.lines().enumerate() {
                        let direct = patterns.iter().any(|p| line.contains(p.as_str()));
                        assert!(!direct, "{}:{}: an error name outside ErrorKind: {line}", path.display(), n + 1);
                    }
                }
            }
        }
    }
}
