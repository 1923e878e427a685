//! What the OAuth routes share: the `{ error, error_description }` answer and its failures,
//! token prefixes and lifetimes, the issuer's base, resource indicators, and reading single
//! form values. Every secret is stored as its SHA-256 only.
use crate::http::body::Body;
use crate::http::error::ApiResult;
use crate::http::form::FormBody;
use crate::state::AppState;
use poem_openapi::payload::Json;
use poem_openapi::Object;

pub const CLIENT_PREFIX: &str = "rkoc_";
pub const REGISTRATION_PREFIX: &str = "rkor_";
pub const CODE_PREFIX: &str = "rkc_";
pub const REFRESH_PREFIX: &str = "rkr_";
/// Lifetimes.
pub const ACCESS_SECONDS: i64 = 3600;
pub const REFRESH_DAYS: i64 = 30;
pub const CODE_SECONDS: i64 = 300;
/// `{ error, error_description }`, the OAuth error shape.
#[derive(Object, Debug)]
pub struct OAuthError {
    /// One of document C's OAuth error values.
    pub error: String,
    /// What went wrong, for a person.
    pub error_description: String,
}

/// An OAuth error on its way to the answer.
pub struct Failure {
    /// 400, 401 or 429.
    pub status: u16,
    /// The OAuth `error` code.
    pub error: &'static str,
    pub description: String,
}

/// An OAuth error; `invalid_client` and `invalid_token` are 401, the rest 400.
pub fn fail(error: &'static str, description: impl Into<String>) -> Failure {
    let status = match error {
        "invalid_client" | "invalid_token" => 401,
        _ => 400,
    };
    Failure { status, error, description: description.into() }
}

impl Failure {
    pub fn body(self) -> Json<OAuthError> {
        Json(OAuthError { error: self.error.into(), error_description: self.description })
    }
}

impl From<sqlx::Error> for Failure {
    fn from(error: sqlx::Error) -> Self {
        tracing::error!(%error, "an OAuth route's query failed");
        Failure { status: 500, error: "server_error", description: "An unexpected error occurred.".into() }
    }
}

pub type Answer<T> = Result<T, Failure>;

/// A JSON body documented as `T`, read like [`Body`], whose refusal is the OAuth error shape:
/// `400 invalid_client_metadata` (RFC 7591 §3.2.2) instead of the service's error body.
pub struct MetadataBody<T>(pub T);

impl<T: poem_openapi::types::Type> poem_openapi::payload::Payload for MetadataBody<T> {
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(_content_type: &str) -> bool {
        true
    }

    fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut poem_openapi::registry::Registry) {
        T::register(registry);
    }
}

impl<T: poem_openapi::types::Type + serde::de::DeserializeOwned + Send + 'static> poem_openapi::payload::ParsePayload for MetadataBody<T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &poem::Request, body: &mut poem::RequestBody) -> poem::Result<Self> {
        match <Body<T> as poem_openapi::payload::ParsePayload>::from_request(request, body).await {
            Ok(parsed) => Ok(MetadataBody(parsed.0)),
            Err(error) => {
                let body = serde_json::json!({ "error": "invalid_client_metadata", "error_description": error.to_string() });
                let response = poem::Response::builder().status(poem::http::StatusCode::BAD_REQUEST).content_type("application/json").body(body.to_string());
                Err(poem::Error::from_response(response))
            }
        }
    }
}

impl<'a, T: poem_openapi::types::Type + serde::de::DeserializeOwned + Send + 'static> poem_openapi::ApiExtractor<'a> for MetadataBody<T> {
    const TYPES: &'static [poem_openapi::ApiExtractorType] = &[poem_openapi::ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut poem_openapi::registry::Registry) {
        <Self as poem_openapi::payload::Payload>::register(registry);
    }

    fn request_meta() -> Option<poem_openapi::registry::MetaRequest> {
        <Body<T> as poem_openapi::ApiExtractor>::request_meta()
    }

    async fn from_request(request: &'a poem::Request, body: &mut poem::RequestBody, _options: poem_openapi::ExtractParamOptions<()>) -> poem::Result<Self> {
        <Self as poem_openapi::payload::ParsePayload>::from_request(request, body).await
    }
}

/// Answers a result whose failure is an OAuth error (a 500 for a failed query).
pub fn finish<T: From<Failure>>(result: Answer<T>) -> ApiResult<T> {
    match result {
        Ok(answer) => Ok(answer),
        Err(failure) if failure.status == 500 => Err(anyhow::anyhow!(failure.description).into()),
        Err(failure) => Ok(T::from(failure)),
    }
}


pub fn base(state: &AppState) -> String {
    state.config.public_url.trim_end_matches('/').to_string()
}

/// Whether a `resource` indicator names this API: its base, under `/api/v1`, or the MCP server.
pub fn names_this_api(state: &AppState, resource: &str) -> bool {
    let base = base(state);
    let resource = resource.trim_end_matches('/');
    [base.clone(), format!("{base}/api/v1"), format!("{base}/mcp")].iter().any(|r| r == resource)
}

/// The longest form value the OAuth endpoints read (tokens, ids and URIs are far shorter).
pub const MAX_FORM_VALUE: usize = 4096;

/// A form field given at most once (`invalid_request` when repeated, longer than 4,096
/// characters, or holding a control character).
pub fn single(form: &FormBody, name: &str) -> Answer<Option<String>> {
    let mut values = form.all(name);
    let first = values.next().map(str::to_string);
    if values.next().is_some() {
        return Err(fail("invalid_request", format!("{name} is repeated")));
    }
    if first.as_ref().is_some_and(|v| v.len() > MAX_FORM_VALUE || v.chars().any(char::is_control)) {
        return Err(fail("invalid_request", format!("{name} is malformed")));
    }
    Ok(first.filter(|v| !v.is_empty()))
}

pub fn required(form: &FormBody, name: &str) -> Answer<String> {
    single(form, name)?.ok_or_else(|| fail("invalid_request", format!("{name} is required")))
}
