//! The person's own account: name and address (with a new confirmation link when it is not
//! confirmed yet), and two-factor sign-in: setting TOTP up (the secret as a QR code drawn here
//! and as text, then a code from the app to turn it on, and the recovery codes shown once) and
//! turning it off, through `/auth/mfa/totp*` as the session.

use super::client::{Answer, Api, Session};
use super::kit::{self, Fields};
use super::layout::page;
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Query};
use poem::{Request, Response, handler};
use qrcodegen::{QrCode, QrCodeEcc};
use serde_json::{Value, json};

/// The page's query: `sent` after a new confirmation link was asked for.
#[derive(serde::Deserialize, Default)]
pub struct Shown {
    sent: Option<String>,
}

/// `GET /app/account`.
#[handler]
pub async fn page_handler(req: &Request, api: Data<&Api>, Query(shown): Query<Shown>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let sent = if shown.sent.is_some() { kit::note(true, "A new confirmation link is on its way to your address.") } else { String::new() };
    account_page(req, &api, &session, &sent, None).await
}

/// `text` as a QR code in SVG (dark modules as one path), for an authenticator app's camera.
fn qr(text: &str) -> String {
    let Ok(code) = QrCode::encode_text(text, QrCodeEcc::Medium) else { return String::new() };
    let size = code.size();
    let mut path = String::new();
    for y in 0..size {
        for x in 0..size {
            if code.get_module(x, y) {
                path.push_str(&format!("M{},{}h1v1h-1z", x + 4, y + 4));
            }
        }
    }
    let side = size + 8;
    format!(
        "<svg class=\"qr\" role=\"img\" aria-label=\"A QR code of the sign-in secret, for an authenticator app\" viewBox=\"0 0 {side} {side}\" width=\"200\" height=\"200\"><rect width=\"{side}\" height=\"{side}\" fill=\"#fff\"/><path d=\"{path}\" fill=\"#000\"/></svg>"
    )
}

/// The page; `shown` is what the last step left to show (a QR code and its form, or the
/// recovery codes), `refused` the API's answer to a write that did not work.
async fn account_page(req: &Request, api: &Api, session: &Session, shown: &str, refused: Option<&Answer>) -> poem::Result<Response> {
    let me = api.get(req, "/auth/session").await?;
    let user = &me.body["user"];
    let csrf = escape(&session.csrf);
    let verify =
        if user["email_verified"] == true { "confirmed".to_string() } else { format!("not confirmed yet {}", kit::button("/app/account/verify", &session.csrf, "Send a new confirmation link")) };
    let facts = kit::facts(&[("Name", kit::text(&user["name"])), ("Address", kit::text(&user["email"])), ("Address confirmed", verify)]);
    let error = refused.and_then(|a| a.field_error("code")).map_or_else(String::new, |e| format!("<span class=\"error\" id=\"totp-code-error\">{}</span>", escape(&e)));
    let code_field = |id: &str, label: &str| {
        format!(
            "<label for=\"{id}\">{label}</label><input id=\"{id}\" name=\"code\" inputmode=\"numeric\" autocomplete=\"one-time-code\" maxlength=\"40\" required{}>{error}",
            if error.is_empty() { "" } else { " aria-invalid=\"true\" aria-describedby=\"totp-code-error\"" }
        )
    };
    let totp = if shown.contains("<form") || shown.contains("<ul") {
        shown.to_string()
    } else if user["mfa_enabled"] == true {
        format!(
            "<p>Sign-in asks for a code from your authenticator app.</p><form class=\"stack\" method=\"post\" action=\"/app/account/totp/disable\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{}\
             <button type=\"submit\">Turn two-factor sign-in off</button></form>",
            code_field("totp-off", "A current code, or a recovery code")
        )
    } else {
        format!(
            "<p>Sign-in asks only for your password.</p><form method=\"post\" action=\"/app/account/totp\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><button type=\"submit\">Set up two-factor sign-in</button></form>"
        )
    };
    let mut alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    if !(shown.contains("<form") || shown.contains("<ul")) {
        alert.push_str(shown);
    }
    let body = format!("<h1>Your account</h1>{alert}{}{}", kit::card("me", "Profile", &facts), kit::card("totp", "Two-factor sign-in", &totp));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Your account", Some(session), &body))
}

/// The set-up step: the secret as a QR code and as text, and the form that confirms a code.
fn enrolment(enrolment: &Value, csrf: &str) -> String {
    let uri = enrolment["otpauth_uri"].as_str().unwrap_or_default();
    format!(
        "<p>Scan this with your authenticator app, or type the secret into it. Then enter the code it shows.</p>{}\
         <p>Secret: <code>{}</code></p><form class=\"stack\" method=\"post\" action=\"/app/account/totp/confirm\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label for=\"totp-on\">The app's six-digit code</label><input id=\"totp-on\" name=\"code\" inputmode=\"numeric\" autocomplete=\"one-time-code\" maxlength=\"40\" required>\
         <button type=\"submit\">Turn two-factor sign-in on</button></form>",
        qr(uri),
        kit::text(&enrolment["secret"]),
        escape(csrf)
    )
}

/// `POST /app/account/totp`: `POST /auth/mfa/totp`; the QR code to scan.
#[handler]
pub async fn start(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::POST, "/auth/mfa/totp", None, &form).await?;
    if !answer.ok() {
        return account_page(req, &api, &session, "", Some(&answer)).await;
    }
    account_page(req, &api, &session, &enrolment(&answer.body, &session.csrf), None).await
}

/// `POST /app/account/totp/confirm`: `POST /auth/mfa/totp/confirm`; the recovery codes, once.
#[handler]
pub async fn confirm(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = json!({ "code": form.get("code").map_or("", |c| c.trim()) });
    let answer = kit::write(req, &api, Method::POST, "/auth/mfa/totp/confirm", Some(&body), &form).await?;
    if !answer.ok() {
        // The enrolment stands until a code confirms it: start again for a fresh secret.
        return account_page(req, &api, &session, "", Some(&answer)).await;
    }
    let codes: String = answer.body["recovery_codes"].as_array().into_iter().flatten().map(|c| format!("<li><code>{}</code></li>", kit::text(c))).collect();
    let shown = format!(
        "<p role=\"status\">Two-factor sign-in is on. Keep these recovery codes somewhere safe: each signs in once without the app, and they are not shown again.</p><ul class=\"columns\">{codes}</ul><p><a href=\"/app/account\">Done</a></p>"
    );
    account_page(req, &api, &session, &shown, None).await
}

/// `POST /app/account/totp/disable`: `POST /auth/mfa/totp/disable` with a code.
#[handler]
pub async fn disable(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = json!({ "code": form.get("code").map_or("", |c| c.trim()) });
    let answer = kit::write(req, &api, Method::POST, "/auth/mfa/totp/disable", Some(&body), &form).await?;
    if !answer.ok() {
        return account_page(req, &api, &session, "", Some(&answer)).await;
    }
    Ok(kit::see_other("/app/account"))
}

/// `POST /app/account/verify`: `POST /auth/verify-email/resend`.
#[handler]
pub async fn resend_verification(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::POST, "/auth/verify-email/resend", None, &form).await?;
    if !answer.ok() {
        return account_page(req, &api, &session, "", Some(&answer)).await;
    }
    Ok(kit::see_other("/app/account?sent=1"))
}
