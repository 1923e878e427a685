//! Creating an account and asking for a password reset from the dashboard, through
//! `POST /auth/signup` and `POST /auth/password-reset`. Like sign-in, these forms carry no CSRF
//! token (there is no session yet); a post from another origin is refused by its `Origin`. The
//! reset link mailed opens the API's own page (`/auth/password-reset/{token}`), and an
//! invitation's link the API's invitation page, which both end at `/app/login`.

use super::client::Api;
use super::login::{Field, auth_page, same_origin, with_cookies};
use crate::routes::pages::html::escape;
use crate::state::AppState;
use poem::http::{Method, StatusCode, header};
use poem::web::{Data, Form};
use poem::{Request, Response, handler};
use serde::Deserialize;
use serde_json::json;

/// The sign-up form's fields.
#[derive(Deserialize)]
pub struct SignUp {
    name: String,
    email: String,
    password: String,
}

/// The reset form's field.
#[derive(Deserialize)]
pub struct Reset {
    email: String,
}

const FOREIGN: &str = "This form was sent from another site; open this page here and try again.";
const SIGNED_UP_LINKS: &str = "<p>Have an account? <a href=\"/app/login\">Sign in</a></p>";

/// `GET /app/signup`: the form, or the overview for a browser already signed in.
#[handler]
pub async fn sign_up_form(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    if api.session(req).await?.is_some() {
        return Ok(Response::builder().status(StatusCode::SEE_OTHER).header(header::LOCATION, "/app").finish());
    }
    Ok(sign_up_page(StatusCode::OK, "", "", None, None))
}

/// `POST /app/signup`: `POST /auth/signup`; its session cookie goes to the browser, which lands
/// on the overview (whose next steps start with the first email).
#[handler]
pub async fn sign_up(req: &Request, api: Data<&Api>, state: Data<&AppState>, Form(form): Form<SignUp>) -> poem::Result<Response> {
    if !same_origin(req, &state.config.public_url) {
        return Ok(sign_up_page(StatusCode::FORBIDDEN, &form.name, &form.email, Some(FOREIGN.into()), None));
    }
    let body = json!({ "name": form.name, "email": form.email, "password": form.password });
    let answer = api.call(req, Method::POST, "/auth/signup", Some(&body), None).await?;
    if !answer.ok() {
        let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_REQUEST);
        let beside = ["name", "email", "password"].iter().find_map(|f| answer.field_error(f).map(|m| (*f, m)));
        return Ok(sign_up_page(status, &form.name, &form.email, Some(answer.message()), beside));
    }
    Ok(with_cookies(&answer, "/app"))
}

fn sign_up_page(status: StatusCode, name: &str, email: &str, error: Option<String>, beside: Option<(&str, String)>) -> Response {
    let fields = [
        Field { name: "name", label: "Your name", kind: "text", autocomplete: "name", max: 100, value: name, required: true },
        Field { name: "email", label: "Email", kind: "email", autocomplete: "username", max: 320, value: email, required: true },
        Field { name: "password", label: "Password (10 to 200 characters)", kind: "password", autocomplete: "new-password", max: 200, value: "", required: true },
    ];
    auth_page(status, "Create account", "Create a Herald account", "/app/signup", &fields, error, beside, SIGNED_UP_LINKS)
}

/// `GET /app/reset`: the form asking for the account's address.
#[handler]
pub async fn reset_form() -> Response {
    reset_page(StatusCode::OK, "", None, None)
}

/// `POST /app/reset`: `POST /auth/password-reset`. The page says the same whether or not the
/// address has an account, as the API does.
#[handler]
pub async fn reset(req: &Request, api: Data<&Api>, state: Data<&AppState>, Form(form): Form<Reset>) -> poem::Result<Response> {
    if !same_origin(req, &state.config.public_url) {
        return Ok(reset_page(StatusCode::FORBIDDEN, &form.email, Some(FOREIGN.into()), None));
    }
    let answer = api.call(req, Method::POST, "/auth/password-reset", Some(&json!({ "email": form.email })), None).await?;
    if !answer.ok() {
        let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_REQUEST);
        return Ok(reset_page(status, &form.email, Some(answer.message()), answer.field_error("email").map(|m| ("email", m))));
    }
    let body = format!(
        "<div class=\"login card\"><h1>Check your email</h1><p role=\"status\">If <strong>{}</strong> has a Herald account, a link to choose a new password is on its way. It works once, for one hour.</p><p><a href=\"/app/login\">Back to sign-in</a></p></div>",
        escape(form.email.trim())
    );
    Ok(super::layout::page(StatusCode::OK, "Check your email", None, &body))
}

fn reset_page(status: StatusCode, email: &str, error: Option<String>, beside: Option<(&str, String)>) -> Response {
    let fields = [Field { name: "email", label: "Email", kind: "email", autocomplete: "username", max: 320, value: email, required: true }];
    auth_page(status, "Send reset link", "Reset your password", "/app/reset", &fields, error, beside, SIGNED_UP_LINKS)
}
