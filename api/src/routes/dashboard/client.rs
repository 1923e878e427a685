//! The dashboard's way to the API: each page calls the application's own routes as the
//! browser's dashboard session (its cookie, and its CSRF token on writes), so every check,
//! event and request log is the API's (`source: dashboard`).

use crate::app::AppSlot;
use poem::http::{HeaderValue, Method, header};
use poem::web::{LocalAddr, RemoteAddr};
use poem::{Body, Request, RequestParts};
use serde_json::Value;

/// What pages name themselves as in the API's logs (the session marks them `dashboard` too).
const USER_AGENT: &str = "herald-dashboard/1.0";

/// The application itself.
#[derive(Clone)]
pub struct Api(pub AppSlot);

/// A route's answer.
pub struct Answer {
    pub status: u16,
    pub body: Value,
    /// `Set-Cookie` headers (sign-in and sign-out hand the browser its session).
    pub set_cookie: Vec<HeaderValue>,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The API's message, for showing beside the form.
    pub fn message(&self) -> String {
        self.body["message"].as_str().unwrap_or("Something went wrong; try again.").to_string()
    }

    /// The message of the error about `field` (`errors[].path` naming it or a part of it, as
    /// `to[0]`), when the API named it.
    pub fn field_error(&self, field: &str) -> Option<String> {
        let names = |path: &str| path == field || path.strip_prefix(field).is_some_and(|rest| rest.starts_with(['[', '.']));
        self.body["errors"].as_array()?.iter().find(|e| e["path"].as_str().is_some_and(names)).and_then(|e| e["message"].as_str()).map(str::to_string)
    }
}

impl Api {
    /// Calls `method path` with the browser's session cookie (and `csrf` as `X-CSRF-Token`),
    /// from the browser's own address, and reads its JSON answer.
    pub async fn call(&self, browser: &Request, method: Method, path: &str, body: Option<&Value>, csrf: Option<&str>) -> poem::Result<Answer> {
        let payload = body.map(|body| ("application/json".to_string(), serde_json::to_vec(body).unwrap_or_default()));
        self.send(browser, method, path, payload, csrf, &[]).await
    }

    /// Calls `method path` with a body of any type (`(content type, bytes)`) and extra headers.
    pub async fn send(&self, browser: &Request, method: Method, path: &str, payload: Option<(String, Vec<u8>)>, csrf: Option<&str>, headers: &[(&str, &str)]) -> poem::Result<Answer> {
        let app = self.0.get().ok_or_else(|| poem::Error::from_string("the application is not ready", poem::http::StatusCode::SERVICE_UNAVAILABLE))?;
        let mut builder = poem::http::Request::builder().method(method).uri(path);
        if let Some(cookie) = browser.header(header::COOKIE) {
            builder = builder.header(header::COOKIE, cookie);
        }
        if let Some(csrf) = csrf {
            builder = builder.header("x-csrf-token", csrf);
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder = builder.header(header::USER_AGENT, USER_AGENT).extension(crate::http::credentials::DashboardCall);
        let bytes = match payload {
            Some((content_type, bytes)) => {
                builder = builder.header(header::CONTENT_TYPE, content_type);
                bytes
            }
            None => Vec::new(),
        };
        let (parts, ()) = builder.body(()).map_err(|e| poem::Error::from_string(e.to_string(), poem::http::StatusCode::BAD_REQUEST))?.into_parts();
        let parts = RequestParts::from((parts, LocalAddr::default(), RemoteAddr(browser.remote_addr().0.clone()), browser.scheme().clone()));
        let mut response = app.call(Request::from_parts(parts, Body::from(bytes))).await.unwrap_or_else(|error| error.into_response());
        let set_cookie = response.headers().get_all(header::SET_COOKIE).iter().cloned().collect();
        let status = response.status().as_u16();
        let bytes = response.take_body().into_bytes().await.unwrap_or_default();
        Ok(Answer { status, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null), set_cookie })
    }

    /// A read.
    pub async fn get(&self, browser: &Request, path: &str) -> poem::Result<Answer> {
        self.call(browser, Method::GET, path, None, None).await
    }
}

/// The signed-in person and their current team (`GET /auth/session`), when the browser has a
/// live session.
pub struct Session {
    pub person_name: String,
    pub person_email: String,
    pub team_name: String,
    pub role: String,
    pub csrf: String,
}

impl Session {
    /// Whether the person may write in the team (the API refuses a viewer's writes anyway).
    pub fn can_write(&self) -> bool {
        self.role != "viewer"
    }
}

impl Api {
    pub async fn session(&self, browser: &Request) -> poem::Result<Option<Session>> {
        if browser.header(header::COOKIE).is_none() {
            return Ok(None);
        }
        let answer = self.get(browser, "/auth/session").await?;
        if !answer.ok() {
            return Ok(None);
        }
        let b = &answer.body;
        // A person removed from their team has a session but no team: no page is theirs.
        if !b["team"].is_object() {
            return Ok(None);
        }
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Ok(Some(Session {
            person_name: text(&b["user"]["name"]),
            person_email: text(&b["user"]["email"]),
            team_name: text(&b["team"]["name"]),
            role: text(&b["team"]["role"]),
            csrf: text(&b["csrf_token"]),
        }))
    }
}
