//! Signing in and out of the dashboard, through `POST /auth/login` and `POST /auth/logout`.
//! The sign-in form carries no CSRF token (there is no session yet): a post from another
//! origin is refused by its `Origin`, and the cookie is `SameSite=Lax`.

use super::client::{Answer, Api};
use super::layout::{page, to_sign_in};
use crate::routes::pages::html::escape;
use crate::state::AppState;
use poem::http::{Method, StatusCode, header};
use poem::web::{Data, Form};
use poem::{Request, Response, handler};
use serde::Deserialize;
use serde_json::json;

/// The sign-in form's fields.
#[derive(Deserialize)]
pub struct SignIn {
    email: String,
    password: String,
    mfa_code: Option<String>,
}

/// The sign-out form's field.
#[derive(Deserialize)]
pub struct SignOut {
    csrf: String,
}

/// `GET /app/login`: the form, or the overview for a browser already signed in.
#[handler]
pub async fn form(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    if api.session(req).await?.is_some() {
        return Ok(Response::builder().status(StatusCode::SEE_OTHER).header(header::LOCATION, "/app").finish());
    }
    Ok(sign_in_page(StatusCode::OK, "", None))
}

/// `POST /app/login`: `POST /auth/login` with the form; its session cookie goes to the browser.
#[handler]
pub async fn submit(req: &Request, api: Data<&Api>, state: Data<&AppState>, Form(sign_in): Form<SignIn>) -> poem::Result<Response> {
    if !same_origin(req, &state.config.public_url) {
        return Ok(sign_in_page(StatusCode::FORBIDDEN, &sign_in.email, Some("This form was sent from another site; open the sign-in page here and try again.".into())));
    }
    let mut body = json!({ "email": sign_in.email, "password": sign_in.password });
    if let Some(code) = sign_in.mfa_code.filter(|c| !c.trim().is_empty()) {
        body["mfa_code"] = json!(code.trim());
    }
    let answer = api.call(req, Method::POST, "/auth/login", Some(&body), None).await?;
    if !answer.ok() {
        let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_REQUEST);
        let beside = ["email", "password", "mfa_code"].iter().find_map(|f| answer.field_error(f).map(|m| (*f, m)));
        return Ok(sign_in_page_with(status, &sign_in.email, Some(answer.message()), beside));
    }
    Ok(with_cookies(&answer, "/app"))
}

/// `POST /app/logout`: `POST /auth/logout` with the form's CSRF token.
#[handler]
pub async fn logout(req: &Request, api: Data<&Api>, Form(sign_out): Form<SignOut>) -> poem::Result<Response> {
    let answer = api.call(req, Method::POST, "/auth/logout", None, Some(&sign_out.csrf)).await?;
    Ok(if answer.ok() { with_cookies(&answer, "/app/login") } else { to_sign_in() })
}

/// A `303` to `location` carrying the API's `Set-Cookie` headers.
pub(super) fn with_cookies(answer: &Answer, location: &str) -> Response {
    let mut response = Response::builder().status(StatusCode::SEE_OTHER).header(header::LOCATION, location).header(header::CACHE_CONTROL, "no-store").finish();
    for cookie in &answer.set_cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie.clone());
    }
    response
}

/// A post from a page of this deployment: its `Origin` (or, without one, its `Referer`) is the
/// public URL's or this host's; a post naming neither is allowed (older clients).
pub(super) fn same_origin(req: &Request, public_url: &str) -> bool {
    let public = public_url.trim_end_matches('/');
    let host = req.header(header::HOST).map(|h| h.to_ascii_lowercase());
    let from = req.header(header::ORIGIN).or_else(|| req.header(header::REFERER));
    let Some(from) = from else { return true };
    let origin: String = from.splitn(4, '/').take(3).collect::<Vec<_>>().join("/").to_ascii_lowercase();
    origin == public.to_ascii_lowercase() || host.is_some_and(|host| origin.ends_with(&format!("//{host}")))
}

fn sign_in_page(status: StatusCode, email: &str, error: Option<String>) -> Response {
    sign_in_page_with(status, email, error, None)
}

/// The sign-in form, with the API's message on top and, when it named a field, beside that field.
fn sign_in_page_with(status: StatusCode, email: &str, error: Option<String>, beside: Option<(&str, String)>) -> Response {
    let fields = [
        Field { name: "email", label: "Email", kind: "email", autocomplete: "username", max: 320, value: email, required: true },
        Field { name: "password", label: "Password", kind: "password", autocomplete: "current-password", max: 200, value: "", required: true },
        Field { name: "mfa_code", label: "Authenticator code (when two-factor sign-in is on)", kind: "text", autocomplete: "one-time-code", max: 10, value: "", required: false },
    ];
    let links = "<p><a href=\"/app/signup\">Create an account</a> · <a href=\"/app/reset\">Forgot your password?</a></p>";
    auth_page(status, "Sign in", "Sign in to Herald", "/app/login", &fields, error, beside, links)
}

/// A field of a form shown before sign-in.
pub(super) struct Field<'a> {
    pub name: &'a str,
    pub label: &'a str,
    pub kind: &'a str,
    pub autocomplete: &'a str,
    pub max: usize,
    pub value: &'a str,
    pub required: bool,
}

/// A page with one form for a person not signed in (sign-in, sign-up, a reset): the API's
/// message on top and, when it named a field, beside that field.
#[allow(clippy::too_many_arguments)]
pub(super) fn auth_page(status: StatusCode, title: &str, heading: &str, action: &str, fields: &[Field], error: Option<String>, beside: Option<(&str, String)>, links: &str) -> Response {
    let error = error.map_or_else(String::new, |e| format!("<p class=\"error\" role=\"alert\" id=\"form-error\">{}</p>", escape(&e)));
    let inputs: String = fields
        .iter()
        .map(|f| {
            let (invalid, note) = match &beside {
                Some((named, message)) if *named == f.name => {
                    (format!(" aria-invalid=\"true\" aria-describedby=\"{}-error\"", f.name), format!("<span class=\"error\" id=\"{}-error\">{}</span>", f.name, escape(message)))
                }
                _ => (String::new(), String::new()),
            };
            let numeric = if f.name == "mfa_code" { " inputmode=\"numeric\"" } else { "" };
            format!(
                "<label for=\"{name}\">{label}</label><input id=\"{name}\" name=\"{name}\" type=\"{kind}\" autocomplete=\"{auto}\" maxlength=\"{max}\" value=\"{value}\"{required}{numeric}{invalid}>{note}",
                name = f.name,
                label = escape(f.label),
                kind = f.kind,
                auto = f.autocomplete,
                max = f.max,
                value = escape(f.value),
                required = if f.required { " required" } else { "" },
            )
        })
        .collect();
    let body = format!(
        "<div class=\"login card\"><h1>{}</h1>{error}<form method=\"post\" action=\"{action}\">{inputs}<p><button type=\"submit\">{}</button></p></form>{links}</div>",
        escape(heading),
        escape(title)
    );
    page(status, title, None, &body)
}
