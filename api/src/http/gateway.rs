//! The gateway every request passes through, in this order: routing (404/405 from the
//! operation table), User-Agent (not for hosted pages), credential, rate limit, permission, the handler; then errors become
//! the public JSON error, the rate-limit headers are set and the call is logged.

use crate::http::credentials::{bearer_token, cookie};
use crate::http::error::{ApiError, ErrorKind, is_unavailable, json_response, with_retry_after};
use crate::http::operations::{self, Access, Operation, Routing};
use crate::http::request_log::{Kept, source_of, stored_body};
use crate::state::{AppState, Caller, RequestContext, SessionCaller};
use poem::http::{HeaderValue, Method, StatusCode, Uri, header};
use poem::{Endpoint, IntoResponse, Request, Response};
use schema::model::{KeyStatus, Permission, RiskState};
use schema::store::{auth, people, request_logs::RequestLog};
use std::time::Instant;
use tracing::Instrument;
use uuid::Uuid;

/// The versioned base every route is also served under.
pub const VERSION_PREFIX: &str = "/api/v1";

/// Wraps the routes.
pub struct Gateway<E> {
    pub inner: E,
    pub state: AppState,
}

/// The bucket after a request.
#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
}

/// What the log needs from an authenticated request.
struct Credential {
    team_id: Uuid,
    /// The API key; `None` for an OAuth access token or the dashboard session.
    key_id: Option<Uuid>,
    /// The dashboard session made the request: its log's `source` is `dashboard`.
    session: bool,
}

struct Handled {
    response: Response,
    bucket: Option<Bucket>,
    credential: Option<Credential>,
    operation: Option<&'static Operation>,
    request_body: Option<serde_json::Value>,
}

impl<E: Endpoint> Endpoint for Gateway<E> {
    type Output = Response;

    async fn call(&self, req: Request) -> poem::Result<Response> {
        let started = Instant::now();
        let log_id = schema::ids::new_id();
        let request_id = log_id.to_string();
        let method = req.method().clone();
        let requested_path = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
        let user_agent = req.header(header::USER_AGENT).unwrap_or_default().to_string();

        // Every log line of the request, a 500's cause included, names the id its answer shows.
        // At the error level, so that the span exists whenever an error line can be written,
        // whatever the filter (`HERALD_LOG=warn` keeps it).
        let span = tracing::error_span!(
            "request",
            request_id = %request_id,
            operation = tracing::field::Empty,
            team_id = tracing::field::Empty,
        );
        let handled = self.handle(req, log_id, &request_id).instrument(span).await;
        let Handled { mut response, bucket, credential, operation, request_body } = handled;
        // The MCP server points clients that cannot reach it at where to get a token (RFC 9728).
        if operation.is_some_and(|o| o.access == Access::TokenOnly) && matches!(response.status().as_u16(), 401 | 403) {
            let metadata = format!("{}/.well-known/oauth-protected-resource", self.state.config.public_url.trim_end_matches('/'));
            if let Ok(value) = HeaderValue::from_str(&format!("Bearer resource_metadata=\"{metadata}\"")) {
                response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
            }
        }
        crate::http::metrics::record(operation, &method, response.status(), started.elapsed());
        self.set_rate_headers(&mut response, bucket);
        if let Ok(value) = HeaderValue::from_str(&request_id) {
            response.headers_mut().insert("x-request-id", value);
        }

        if let Some(credential) = credential {
            let status = response.status();
            // Inbox bodies (customers' mail, replies, notes) are never kept in request logs.
            let inbox = operation.is_some_and(|o| o.access == Access::Inbox);
            let keep_response = !inbox && (method != Method::GET || !status.is_success());
            let response_body = if keep_response {
                let bytes = response.take_body().into_bytes().await.unwrap_or_default();
                // An AI answer is the team's words too: kept as sizes, as its request is.
                let stored = stored_body(&bytes, if operation.is_some_and(|o| o.ai) { Kept::Sizes } else { Kept::Whole });
                response.set_body(bytes);
                stored
            } else {
                None
            };
            let endpoint = operation.map(|o| o.path.to_string()).unwrap_or_else(|| normalize(&requested_path).0);
            let email_id = sent_email_id(operation, status, response_body.as_ref());
            self.state
                .logs
                .write(RequestLog {
                    id: log_id,
                    team_id: credential.team_id,
                    created_at: chrono::Utc::now(),
                    endpoint,
                    path: requested_path,
                    method: method.to_string(),
                    response_status: status.as_u16() as i16,
                    source: if credential.session { "dashboard".into() } else { source_of(&user_agent) },
                    user_agent,
                    request_id,
                    latency_ms: started.elapsed().as_millis().min(i32::MAX as u128) as i32,
                    api_key_id: credential.key_id,
                    email_id,
                    request_body,
                    response_body,
                })
                .await;
        }
        Ok(response)
    }
}

impl<E: Endpoint> Gateway<E> {
    /// Routes, reads the body, authenticates, rate-limits and authorizes a request, then hands
    /// it to its route. Every step that refuses answers the public JSON error.
    async fn handle(&self, mut req: Request, log_id: Uuid, request_id: &str) -> Handled {
        let mut handled =
            Handled { response: Response::default(), bucket: None, credential: None, operation: None, request_body: None };
        let answer = |mut handled: Handled, error: ApiError| {
            handled.response = error.as_response_with_id(request_id);
            handled
        };

        let (path, query) = normalize(req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/"));
        let unlisted = operations::UNLISTED_PUBLIC_PATHS.contains(&path.as_str()) && req.method() == Method::GET;
        // The dashboard's pages authenticate with the session themselves and reach data only
        // through the API's routes, which pass through here as their own requests.
        let routing = if unlisted || crate::routes::dashboard::is_dashboard_path(&path) {
            None
        } else {
            Some(operations::route(req.method(), &path))
        };
        let operation = match routing {
            Some(Routing::Found(operation)) => Some(operation),
            _ => None,
        };
        if let Some(operation) = operation {
            tracing::Span::current().record("operation", operation.id);
        }
        // People's browsers and mail clients reach the hosted pages; only API callers must
        // name themselves.
        let hosted_page = operation.is_some_and(|o| o.access == Access::Page);
        if !hosted_page && req.header(header::USER_AGENT).is_none_or(|ua| ua.trim().is_empty()) {
            let mut error = ApiError::new(ErrorKind::NotAllowed, "The `User-Agent` header is required.");
            error.code = Some(1010);
            return answer(handled, error);
        }
        handled.operation = operation;
        // The body, read with the operation's limit before anything looks up a credential.
        let body = match operation {
            Some(operation) if matches!(*req.method(), Method::POST | Method::PATCH | Method::PUT | Method::DELETE) => {
                match crate::http::body::read_limited(&mut req, operation.body_limit).await {
                    Ok(bytes) => Some(bytes),
                    Err(error) if operation.answers_oauth_errors() => {
                        let body = serde_json::json!({ "error": "invalid_request", "error_description": error.message });
                        handled.response = json_response(error.status, &body);
                        return handled;
                    }
                    Err(error) => return answer(handled, error),
                }
            }
            _ => None,
        };

        // Past the body (a slow client's upload is not held against it), a request that cannot
        // finish, as on a stalled database connection that has no timeout of its own, is
        // answered 503 at the deadline; a send retried with its `Idempotency-Key` answers the
        // first outcome if that did commit.
        let deadline = match operation {
            Some(o) if o.ai => self.state.config.request_timeout.max(jobs::ai::DEFAULT_TIMEOUT + std::time::Duration::from_secs(5)),
            _ => self.state.config.request_timeout,
        };
        match tokio::time::timeout(deadline, self.dispatch(req, handled, routing, path, query, body, log_id, request_id)).await {
            Ok(handled) => handled,
            Err(_) => {
                tracing::warn!(?deadline, "the request did not finish in time; answered 503");
                let response = ApiError::timed_out(deadline).as_response_with_id(request_id);
                Handled { response, bucket: None, credential: None, operation, request_body: None }
            }
        }
    }

    /// Authenticates, rate-limits and authorizes a request whose body was read, then hands it
    /// to its route.
    #[allow(clippy::too_many_arguments)]
    async fn dispatch(
        &self,
        mut req: Request,
        mut handled: Handled,
        routing: Option<Routing>,
        path: String,
        query: Option<String>,
        body: Option<Vec<u8>>,
        log_id: Uuid,
        request_id: &str,
    ) -> Handled {
        let operation = handled.operation;
        let answer = |mut handled: Handled, error: ApiError| {
            handled.response = error.as_response_with_id(request_id);
            handled
        };
        let bearer = bearer_token(&req);
        let needs_key = operation.is_some_and(|o| o.access.needs_credential());
        // An Inbox route reached with the dashboard session instead of a key or token.
        let inbox_session = operation.filter(|o| o.access == Access::Inbox && bearer.is_none() && cookie(&req, crate::http::credentials::COOKIE).is_some());
        if let Some(operation) = inbox_session {
            match self.session_of(&req).await.and_then(|session| inbox_session_caller(session, operation)) {
                Ok((session, caller)) => {
                    record_team(session.team_id);
                    handled.credential = Some(Credential { team_id: caller.team_id, key_id: None, session: true });
                    req.extensions_mut().insert(SessionCaller { session });
                    req.extensions_mut().insert(caller);
                }
                Err(error) => return answer(handled, error),
            }
        } else if let Some(operation) = operation.filter(|o| session_reaches(o) && bearer.is_none() && cookie(&req, crate::http::credentials::COOKIE).is_some()) {
            // The dashboard: a member's session acts on its current team through the API's
            // own routes, with the checks, events and request logs an API key's call has.
            match self.session_of(&req).await.and_then(|session| session_caller(session, operation, req.method())) {
                Ok((session, caller)) => {
                    record_team(session.team_id);
                    let page_call = req.extensions().get::<crate::http::credentials::DashboardCall>().is_some();
                    if !page_call && let Err(response) = self.rate_limit(caller.team_id, request_id, &mut handled).await {
                        handled.response = response;
                        return handled;
                    }
                    handled.credential = Some(Credential { team_id: caller.team_id, key_id: None, session: true });
                    req.extensions_mut().insert(SessionCaller { session });
                    req.extensions_mut().insert(caller);
                }
                Err(error) => return answer(handled, error),
            }
        } else if operation.is_some_and(|o| o.access == Access::Session) {
            // The dashboard session's routes take its cookie only, never a key or token.
            if bearer.is_some() {
                return answer(handled, ApiError::invalid_permission("This route takes the dashboard session cookie; API keys and OAuth tokens do not reach it."));
            }
            match self.session_of(&req).await {
                Ok(session) => {
                    record_team(session.team_id);
                    req.extensions_mut().insert(SessionCaller { session });
                }
                Err(error) => return answer(handled, error),
            }
        } else if needs_key || (routing.is_some() && operation.is_none() && bearer.is_some()) {
            let Some(token) = bearer else {
                return answer(handled, ApiError::new(ErrorKind::MissingApiKey, "Missing API key in the authorization header. Include the following header `Authorization: Bearer rk_xxxxxxxxx` in the request."));
            };
            let (caller, touch) = match self.authenticate(&token, request_id, &mut handled).await {
                Ok(found) => found,
                Err(error) => return answer(handled, error),
            };
            if let Err(response) = self.rate_limit(caller.team_id, request_id, &mut handled).await {
                handled.response = response;
                return handled;
            }
            if let Some(key_id) = touch {
                self.touch(key_id, log_id).await;
            }
            let Some(operation) = operation else {
                handled.response = routing_response(routing, &path, request_id);
                return handled;
            };
            match self.authorize(&req, operation, caller).await {
                Ok(caller) => {
                    req.extensions_mut().insert(caller);
                }
                Err(error) => return answer(handled, error),
            }
        } else if routing.is_some() && operation.is_none() {
            handled.response = routing_response(routing, &path, request_id);
            return handled;
        }
        if let Some(operation) = operation {
            let checked = crate::http::input::check_path(operation.path, &path)
                .and_then(|()| query.as_deref().map_or(Ok(()), crate::http::input::check_query));
            if let Err(error) = checked {
                return answer(handled, error);
            }
        }
        req.extensions_mut().insert(RequestContext { request_id: request_id.to_string(), operation });

        // Hand the route its canonical path (no version prefix, no trailing slash), and a JSON
        // body even when the client sent none.
        let canonical = match query {
            Some(query) => format!("{path}?{query}"),
            None => path.clone(),
        };
        if let Ok(uri) = canonical.parse::<Uri>() {
            *req.uri_mut() = uri;
        }
        if let Some(bytes) = body {
            if handled.credential.is_some() && !operation.is_some_and(|o| o.access == Access::Inbox) {
                handled.request_body = stored_body(&bytes, operation.map_or(Kept::Whole, |o| if o.ai { Kept::Sizes } else if o.carries_send_content { Kept::SendContent } else { Kept::Whole }));
            }
            req.set_body(bytes);
        }

        handled.response = match self.inner.call(req).await {
            Ok(output) => output.into_response(),
            Err(error) => error_response(error, request_id),
        };
        handled
    }

    /// The caller of a bearer token (an API key or an OAuth access token), and the key whose
    /// `last_used_at` is due a refresh. Unknown, revoked and suspended credentials are refused.
    async fn authenticate(&self, token: &str, request_id: &str, handled: &mut Handled) -> Result<(Caller, Option<Uuid>), ApiError> {
        if token.starts_with(crate::http::credentials::ACCESS_PREFIX) {
            let caller = self.token_caller(token, request_id).await?;
            handled.credential = Some(Credential { team_id: caller.team_id, key_id: None, session: false });
            record_team(Some(caller.team_id));
            return Ok((caller, None));
        }
        let lookup = self.state.keys.find(&schema::secret::hash(token)).await.map_err(|error| storage_failed(&error, "authenticating a request", request_id))?;
        let Some(key) = lookup else {
            return Err(ApiError::new(ErrorKind::InvalidApiKey, "API key is invalid."));
        };
        handled.credential = Some(Credential { team_id: key.team_id, key_id: Some(key.key_id), session: false });
        record_team(Some(key.team_id));
        if key.status == KeyStatus::Revoked {
            return Err(ApiError::new(ErrorKind::RevokedKey, "This API key has been revoked."));
        }
        if key.status == KeyStatus::Suspended || key.risk_state == RiskState::Suspended {
            return Err(ApiError::new(ErrorKind::SuspendedApiKey, "This API key is suspended."));
        }
        let touch = key.last_used_at.is_none_or(|at| chrono::Utc::now() - at > chrono::TimeDelta::minutes(1)).then_some(key.key_id);
        let caller = Caller {
            team_id: key.team_id,
            key_id: Some(key.key_id),
            permission: key.permission,
            domain_id: key.domain_id,
            inbox_access: key.inbox_access,
            signed_in_admin: None,
            token: None,
            session_person: None,
        };
        Ok((caller, touch))
    }

    /// Takes a token from the team's bucket; past the limit the answer is `429` with
    /// `retry-after`.
    async fn rate_limit(&self, team_id: Uuid, request_id: &str, handled: &mut Handled) -> Result<(), Response> {
        let verdict = match self.state.buckets.take(team_id).await {
            Ok(verdict) => verdict,
            // PostgreSQL out of reach: the request goes on unmetered rather than failing (the
            // limiter protects the service, and the service is what cannot answer); counted.
            Err(error) if is_unavailable(&error) => {
                tracing::warn!(%error, "rate limiting unavailable; letting the request through");
                crate::http::rate_limit::count_fail_open();
                return Ok(());
            }
            Err(error) => return Err(storage_failed(&error, "taking a rate-limit token", request_id).as_response_with_id(request_id)),
        };
        handled.bucket = Some(Bucket { tokens: verdict.remaining });
        if verdict.allowed {
            return Ok(());
        }
        let mut response = ApiError::new(ErrorKind::RateLimitExceeded, format!(
                "Too many requests. You can only make {} requests per second. Slow down or ask the operator to raise the limit.",
                self.state.config.rate_limit_refill
            ),
        )
        .as_response_with_id(request_id);
        response.headers_mut().insert("retry-after", HeaderValue::from(verdict.retry_after));
        Err(response)
    }

    /// Whether the caller reaches the operation: a token by its scopes and role, a key by its
    /// permission. A key's request that also carries an admin's session notes that admin.
    async fn authorize(&self, req: &Request, operation: &Operation, mut caller: Caller) -> Result<Caller, ApiError> {
        if let Some(token) = &caller.token {
            token.reaches(operation)?;
            return Ok(caller);
        }
        if operation.access == Access::TokenOnly {
            return Err(ApiError::invalid_permission("This route takes an OAuth access token only; API keys do not reach it."));
        }
        if operation.access == Access::Inbox {
            let level = operation.inbox_access.unwrap_or("write");
            if !caller.inbox_access.reaches(level) {
                return Err(ApiError::invalid_permission(format!("This API key's Inbox access does not reach this route, which needs `{level}` access.")));
            }
            return Ok(caller);
        }
        if operation.access == Access::FullAccess && caller.permission == Permission::SendingAccess {
            return Err(ApiError::new(ErrorKind::SendingOnlyKey, "This API key is restricted to only send emails."));
        }
        // Only requests that carry a session cookie pay for looking it up.
        if cookie(req, crate::http::credentials::COOKIE).is_some() {
            caller.signed_in_admin = self
                .session_of(req)
                .await
                .ok()
                .filter(|s| s.team_id == Some(caller.team_id) && s.role.as_deref() == Some("admin"))
                .map(|s| s.person_id);
        }
        Ok(caller)
    }

    /// The caller of an OAuth access token: its member in its team (`401 invalid_api_key` when
    /// the token is unknown, expired or revoked, its grant revoked, or the member gone).
    async fn token_caller(&self, token: &str, request_id: &str) -> Result<Caller, ApiError> {
        let found = self.state.keys.find_token(&schema::secret::hash(token)).await.map_err(|error| storage_failed(&error, "authenticating a token", request_id))?;
        let Some(found) = found else {
            return Err(ApiError::new(ErrorKind::InvalidApiKey, "The access token is invalid, expired or revoked."));
        };
        if found.risk_state == RiskState::Suspended {
            return Err(ApiError::new(ErrorKind::SuspendedApiKey, "The token's team is suspended."));
        }
        Ok(Caller {
            team_id: found.team_id,
            key_id: None,
            permission: Permission::FullAccess,
            domain_id: None,
            inbox_access: schema::model::InboxAccess::None,
            signed_in_admin: None,
            token: Some(crate::state::TokenFacts { grant_id: found.grant_id, person_id: found.person_id, role: found.role, scopes: found.scopes }),
            session_person: None,
        })
    }

    /// The live session of the request's cookie; a write must carry its CSRF token.
    async fn session_of(&self, req: &Request) -> Result<people::Session, ApiError> {
        let Some(token) = cookie(req, crate::http::credentials::COOKIE) else {
            return Err(ApiError::new(ErrorKind::MissingApiKey, "Sign in: this route takes the dashboard session cookie."));
        };
        let found = people::session(&mut *self.state.pool.acquire().await?, &schema::secret::hash(&token)).await?;
        let Some(session) = found else {
            return Err(ApiError::new(ErrorKind::InvalidApiKey, "The session has ended or is unknown; sign in again."));
        };
        let reads = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
        if !reads && req.header("x-csrf-token") != Some(session.csrf_token.as_str()) {
            return Err(ApiError::not_allowed("A write made with the session cookie needs the session's CSRF token in `X-CSRF-Token`."));
        }
        Ok(session)
    }

    /// Refreshes a key's `last_used_at` (about once a minute; a failure only loses the refresh).
    async fn touch(&self, key_id: Uuid, log_id: Uuid) {
        let touched = async { auth::touch(&mut *self.state.relaxed.acquire().await?, key_id, log_id).await };
        if let Err(error) = touched.await {
            tracing::warn!(%error, "refreshing last_used_at failed");
        }
    }

    fn set_rate_headers(&self, response: &mut Response, bucket: Option<Bucket>) {
        let capacity = self.state.config.rate_limit_capacity as f64;
        let tokens = bucket.map_or(capacity, |b| b.tokens.clamp(0.0, capacity));
        let reset = ((capacity - tokens) / self.state.config.rate_limit_refill).ceil() as u64;
        let headers = response.headers_mut();
        headers.insert("ratelimit-limit", HeaderValue::from(capacity as u64));
        headers.insert("ratelimit-remaining", HeaderValue::from(tokens.floor() as u64));
        headers.insert("ratelimit-reset", HeaderValue::from(reset));
    }
}

/// Names the team on the request's span, so that every later log line of the request carries it.
/// The caller of an Inbox route reached with the dashboard session: the person in their current
/// team, with write access (read for a viewer).
fn inbox_session_caller(session: people::Session, operation: &Operation) -> Result<(people::Session, Caller), ApiError> {
    let Some(team_id) = session.team_id else {
        return Err(ApiError::invalid_permission("The session has no current team: switch to one first."));
    };
    let role = session.role.clone().unwrap_or_default();
    let access = if role == "viewer" { schema::model::InboxAccess::Read } else { schema::model::InboxAccess::Write };
    let level = operation.inbox_access.unwrap_or("write");
    if !access.reaches(level) {
        return Err(ApiError::invalid_permission("A viewer of the team reads the Inbox and cannot write to it."));
    }
    let caller = Caller {
        team_id,
        key_id: None,
        permission: Permission::FullAccess,
        domain_id: None,
        inbox_access: access,
        signed_in_admin: (role == "admin").then_some(session.person_id),
        token: None,
        session_person: Some(session.person_id),
    };
    Ok((session, caller))
}

/// Whether the dashboard session reaches an API-key route: every route a `full_access` key
/// reaches (the MCP server's token-only route and the Inbox's own rule aside).
fn session_reaches(operation: &Operation) -> bool {
    matches!(operation.access, Access::FullAccess | Access::SendingAccess)
}

/// The caller a dashboard session acts as on an API-key route: its current team with full
/// access for an admin or a member; a viewer reads (`GET`) and cannot write.
fn session_caller(session: people::Session, operation: &Operation, method: &Method) -> Result<(people::Session, Caller), ApiError> {
    let Some(team_id) = session.team_id else {
        return Err(ApiError::invalid_permission("The session has no current team: switch to one first."));
    };
    let role = session.role.clone().unwrap_or_default();
    if role == "viewer" && !matches!(*method, Method::GET | Method::HEAD) {
        return Err(ApiError::invalid_permission(format!("A viewer of the team reads and cannot write (`{}`).", operation.id)));
    }
    let caller = Caller {
        team_id,
        key_id: None,
        permission: Permission::FullAccess,
        domain_id: None,
        inbox_access: if role == "viewer" { schema::model::InboxAccess::Read } else { schema::model::InboxAccess::Write },
        signed_in_admin: (role == "admin").then_some(session.person_id),
        token: None,
        session_person: Some(session.person_id),
    };
    Ok((session, caller))
}

fn record_team(team_id: Option<Uuid>) {
    if let Some(team_id) = team_id {
        tracing::Span::current().record("team_id", tracing::field::display(team_id));
    }
}

/// The email a successful send created, for its log entry (the first one of a batch).
fn sent_email_id(operation: Option<&Operation>, status: StatusCode, body: Option<&serde_json::Value>) -> Option<Uuid> {
    if !status.is_success() || !operation.is_some_and(|o| o.carries_send_content) {
        return None;
    }
    let body = body?;
    let id = body.get("id").or_else(|| body.pointer("/data/0/id"))?;
    id.as_str()?.parse().ok()
}

fn routing_error(routing: Option<Routing>) -> ApiError {
    match routing {
        Some(Routing::WrongMethod) => {
            ApiError::new(ErrorKind::MethodNotAllowed, "Method is not allowed for the requested path.")
        }
        _ => ApiError::new(ErrorKind::NotFound, "The requested endpoint could not be found."),
    }
}

/// The answer to a request the table does not route: a 405 names the allowed methods in `Allow`
/// (RFC 9110).
fn routing_response(routing: Option<Routing>, path: &str, request_id: &str) -> Response {
    let error = match reserved(path) {
        Some(name) if !matches!(routing, Some(Routing::WrongMethod)) => ApiError::new(
            ErrorKind::NotImplemented,
            format!("`{name}` is reserved for a later release of Herald (the Resend API serves it; Herald does not yet)."),
        ),
        _ => routing_error(routing),
    };
    let mut response = error.as_response_with_id(request_id);
    if matches!(routing, Some(Routing::WrongMethod)) {
        let allowed = operations::allowed_methods(path).iter().map(Method::as_str).collect::<Vec<_>>().join(", ");
        if let Ok(value) = HeaderValue::from_str(&allowed) {
            response.headers_mut().insert(header::ALLOW, value);
        }
    }
    response
}

/// Resend API paths Herald reserves for a later release (document B: `501 not_implemented`
/// rather than `404`): Resend's agent inboxes (Herald's shared support Inbox is `/inbox`) and
/// its usage report (Herald's is `GET /billing`).
const RESERVED_PATHS: &[&str] = &["/inboxes", "/usage"];

/// The reserved path family a path falls in.
fn reserved(path: &str) -> Option<&'static str> {
    RESERVED_PATHS.iter().copied().find(|reserved| path == *reserved || path.strip_prefix(reserved).is_some_and(|rest| rest.starts_with('/')))
}

/// Strips the `/api/v1` base and a trailing slash; returns the path and the query.
fn normalize(path_and_query: &str) -> (String, Option<String>) {
    let (path, query) = match path_and_query.split_once('?') {
        Some((path, query)) => (path, Some(query.to_string())),
        None => (path_and_query, None),
    };
    let path = match path.strip_prefix(VERSION_PREFIX) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => path,
    };
    let path = path.trim_end_matches('/');
    (if path.is_empty() { "/".to_string() } else { path.to_string() }, query)
}

/// Turns any error a route produced into the public JSON error.
pub fn error_response(error: poem::Error, request_id: &str) -> Response {
    use poem_openapi::error::{ContentTypeError, ParseParamError, ParsePathError, ParseRequestPayloadError};
    // An error that is already its answer (the OAuth routes' `{ error, error_description }`).
    if error.is_from_response() {
        return error.into_response();
    }
    let api_error = if let Some(api) = error.downcast_ref::<ApiError>() {
        api.clone()
    } else if let Some(param) = error.downcast_ref::<ParseParamError>() {
        if param.reason.contains("expects an input value") {
            ApiError::new(ErrorKind::MissingRequiredParameter, format!("Missing `{}` parameter.", param.name))
                .with_error(param.name, "is required")
        } else {
            ApiError::invalid_parameter(param.name, param.reason.clone())
        }
    } else if let Some(path) = error.downcast_ref::<ParsePathError>() {
        ApiError::invalid_parameter(path.name, path.reason.clone())
    } else if let Some(payload) = error.downcast_ref::<ParseRequestPayloadError>() {
        ApiError::new(ErrorKind::Invalid, payload.reason.clone())
    } else if error.downcast_ref::<ContentTypeError>().is_some() {
        ApiError::new(ErrorKind::Invalid, error.to_string())
    } else {
        match error.status() {
            StatusCode::NOT_FOUND => routing_error(Some(Routing::NotFound)),
            StatusCode::METHOD_NOT_ALLOWED => routing_error(Some(Routing::WrongMethod)),
            status if status.is_server_error() => {
                tracing::error!(error = %error, "request failed");
                ApiError::internal(request_id)
            }
            // A refusal poem answered itself keeps its status, as a `validation_error`.
            status => {
                let mut refused = ApiError::new(ErrorKind::Invalid, error.to_string());
                refused.status = status;
                refused
            }
        }
    };
    api_error.as_response_with_id(request_id)
}

/// The answer to a storage error outside a handler: `503` when PostgreSQL is out of reach,
/// else `500` naming the request id; logged either way.
fn storage_failed(error: &sqlx::Error, doing: &str, request_id: &str) -> ApiError {
    if is_unavailable(error) {
        tracing::warn!(%error, "{doing} failed: database unavailable");
        ApiError::unavailable()
    } else {
        tracing::error!(%error, "{doing} failed");
        ApiError::internal(request_id)
    }
}

impl ApiError {
    /// The response, with a 500's message naming the request id.
    pub fn as_response_with_id(&self, request_id: &str) -> Response {
        if self.status.is_server_error() && self.name == "application_error" {
            json_response(self.status, &ApiError::internal(request_id).body())
        } else {
            self.waiting(with_retry_after(self.status, json_response(self.status, &self.body())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_base_and_trailing_slashes_are_stripped() {
        assert_eq!(normalize("/api/v1/api-keys/?limit=2"), ("/api-keys".into(), Some("limit=2".into())));
        assert_eq!(normalize("/api/v1"), ("/".into(), None));
        assert_eq!(normalize("/api/v10/x"), ("/api/v10/x".into(), None));
    }
}
