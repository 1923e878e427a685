//! A person's account beyond signing in: account mail from `HERALD_SYSTEM_FROM` (address
//! verification, password reset, invitations) delivered to the SMTP sink with links that work,
//! TOTP with recovery codes, switching teams, roles and removing members.

use reqwest::Method;
use serde_json::{Value, json};
use tests::mail::{self, Mail, SENDING_DOMAIN};
use tests::smtp::SmtpSink;
use tests::{Answer, TestApp, eventually};

const PASSWORD: &str = "correct horse battery";

/// A sending setup whose account mail comes from the verified `acme.test`.
async fn setup() -> Mail {
    mail::setup_with(SmtpSink::start().await, |c| c.system_from = Some(format!("Herald <accounts@{SENDING_DOMAIN}>"))).await
}

/// A signed-in person: the cookie's token and the CSRF token.
struct Person {
    token: String,
    csrf: String,
}

/// A call without a key, with the person's session when given.
async fn call(app: &TestApp, method: Method, path: &str, person: Option<&Person>, body: Option<Value>) -> Answer {
    let mut request = app.client.request(method, app.url(path));
    if let Some(person) = person {
        request = request.header("cookie", format!("herald_session={}", person.token)).header("x-csrf-token", &person.csrf);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    Answer::from(request.send().await.unwrap()).await
}

/// A page: status, body and the session token it set, if any.
async fn page(app: &TestApp, method: Method, url: &str, form: &[(&str, &str)]) -> (u16, String, Option<String>) {
    let mut request = app.client.request(method.clone(), url);
    if method == Method::POST {
        request = request.form(form);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let cookie = response.headers().get("set-cookie").map(|c| c.to_str().unwrap().to_string());
    let token = cookie.map(|c| c.strip_prefix("herald_session=").unwrap_or_else(|| panic!("{c}")).split(';').next().unwrap().to_string());
    (status, response.text().await.unwrap(), token)
}

fn signed_in(answer: &Answer) -> Person {
    let cookie = answer.header("set-cookie").expect("a session cookie is set");
    let token = cookie.strip_prefix("herald_session=").unwrap().split(';').next().unwrap().to_string();
    Person { token, csrf: answer.body["csrf_token"].as_str().unwrap().to_string() }
}

async fn sign_up(app: &TestApp, email: &str, name: &str) -> Person {
    let answer = call(app, Method::POST, "/auth/signup", None, Some(json!({ "email": email, "password": PASSWORD, "name": name }))).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    signed_in(&answer)
}

async fn sign_in(app: &TestApp, email: &str, password: &str, mfa_code: Option<&str>) -> Answer {
    call(app, Method::POST, "/auth/login", None, Some(json!({ "email": email, "password": password, "mfa_code": mfa_code }))).await
}

/// The link in the `n`th message the sink got for `to` whose subject starts with `subject`.
async fn mailed_link(mail: &Mail, to: &str, subject: &str, n: usize) -> String {
    let (app, sink) = (&mail.app, &mail.sink);
    let message = eventually(|| async {
        sink.messages()
            .into_iter()
            .filter(|m| m.rcpt_to.iter().any(|r| r == to) && m.header("subject").is_some_and(|s| s.starts_with(subject)))
            .nth(n)
    })
    .await;
    assert_eq!(message.header("from").as_deref(), Some(&*format!("Herald <accounts@{SENDING_DOMAIN}>")));
    let html = message.html().expect("an HTML part");
    let start = html.find("href=\"").expect("the message carries a link") + 6;
    let link = &html[start..start + html[start..].find('"').unwrap()];
    // The test server's public URL is not where this app listens: keep the path.
    let path = link.strip_prefix("http://127.0.0.1:8080").unwrap_or_else(|| panic!("{link}"));
    app.url(path)
}

#[tokio::test]
async fn sign_up_mails_a_verification_link_whose_page_confirms_the_address_once() {
    let mail = setup().await;
    let app = &mail.app;
    let ada = sign_up(app, "ada@inbox.test", "Ada").await;
    let link = mailed_link(&mail, "ada@inbox.test", "Confirm your address", 0).await;
    assert!(link.starts_with(&app.url("/auth/verify-email/")), "{link}");

    let (status, html, _) = page(app, Method::GET, &link, &[]).await;
    assert_eq!(status, 200);
    assert!(html.contains("ada@inbox.test") && html.contains("<form method=\"post\">"), "{html}");
    assert_eq!(call(app, Method::GET, "/auth/session", Some(&ada), None).await.body["user"]["email_verified"], false, "opening the page confirms nothing");

    let (status, html, _) = page(app, Method::POST, &link, &[]).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Address confirmed"));
    assert_eq!(call(app, Method::GET, "/auth/session", Some(&ada), None).await.body["user"]["email_verified"], true);
    assert_eq!(page(app, Method::POST, &link, &[]).await.0, 404, "a used link does not work again");
    assert_eq!(page(app, Method::GET, &link, &[]).await.0, 404);

    call(app, Method::POST, "/auth/verify-email/resend", Some(&ada), None).await.assert_error(422, "validation_error");
}

#[tokio::test]
async fn a_resent_verification_link_replaces_the_earlier_ones_and_the_sixth_in_an_hour_is_429() {
    let mail = setup().await;
    let app = &mail.app;
    let ada = sign_up(app, "ada@inbox.test", "Ada").await;
    let first = mailed_link(&mail, "ada@inbox.test", "Confirm your address", 0).await;
    let resent = call(app, Method::POST, "/auth/verify-email/resend", Some(&ada), None).await;
    assert_eq!((resent.status, resent.body["object"].as_str()), (202, Some("email_verification")), "{}", resent.body);
    let second = mailed_link(&mail, "ada@inbox.test", "Confirm your address", 1).await;
    assert_ne!(first, second);
    assert_eq!(page(app, Method::POST, &second, &[]).await.0, 200);
    assert_eq!(page(app, Method::POST, &first, &[]).await.0, 404, "confirming used up every open link");

    let grace = sign_up(app, "grace@inbox.test", "Grace").await;
    for _ in 0..4 {
        assert_eq!(call(app, Method::POST, "/auth/verify-email/resend", Some(&grace), None).await.status, 202);
    }
    let tokens = app.count("person_tokens").await;
    call(app, Method::POST, "/auth/verify-email/resend", Some(&grace), None).await.assert_error(429, "rate_limit_exceeded");
    assert_eq!(app.count("person_tokens").await, tokens, "a refused resend writes no link");
}

#[tokio::test]
async fn a_password_reset_link_sets_a_new_password_once_and_ends_every_session() {
    let mail = setup().await;
    let app = &mail.app;
    let ada = sign_up(app, "ada@inbox.test", "Ada").await;
    let emails_before = app.count("emails").await;
    let unknown = call(app, Method::POST, "/auth/password-reset", None, Some(json!({ "email": "nobody@inbox.test" }))).await;
    assert_eq!((unknown.status, &unknown.body), (202, &json!({ "object": "password_reset", "requested": true })));
    let asked = call(app, Method::POST, "/auth/password-reset", None, Some(json!({ "email": "ADA@inbox.test" }))).await;
    assert_eq!((asked.status, &asked.body), (202, &unknown.body), "the same answer whether or not the address has an account");
    assert_eq!(app.count("emails").await, emails_before + 1, "only the account's address gets mail");

    let link = mailed_link(&mail, "ada@inbox.test", "Reset your Herald password", 0).await;
    let (status, html, _) = page(app, Method::GET, &link, &[]).await;
    assert!(status == 200 && html.contains("name=\"password\""), "{html}");
    let (status, html, _) = page(app, Method::POST, &link, &[("password", "short")]).await;
    assert!(status == 200 && html.contains("10 to 200 characters"), "a short password shows the form again: {html}");
    sign_in(app, "ada@inbox.test", PASSWORD, None).await;
    assert_eq!(call(app, Method::GET, "/auth/session", Some(&ada), None).await.status, 200, "a refused password changed nothing");

    let (status, html, _) = page(app, Method::POST, &link, &[("password", "a brand new passphrase")]).await;
    assert!(status == 200 && html.contains("Password changed"), "{html}");
    call(app, Method::GET, "/auth/session", Some(&ada), None).await.assert_error(401, "invalid_api_key");
    sign_in(app, "ada@inbox.test", PASSWORD, None).await.assert_error(403, "validation_error");
    let fresh = sign_in(app, "ada@inbox.test", "a brand new passphrase", None).await;
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    assert_eq!(fresh.body["user"]["email_verified"], true, "the reset link proved the address");
    assert_eq!(page(app, Method::POST, &link, &[("password", "yet another passphrase")]).await.0, 404, "a used reset link does not work again");
    sqlx::query("UPDATE person_tokens SET expires_at = now() - interval '1 second', used_at = NULL").execute(&app.pool).await.unwrap();
    assert_eq!(page(app, Method::GET, &link, &[]).await.0, 404, "an expired reset link does not work");
}

/// The current code of a base32 secret.
fn totp_now(secret: &str) -> String {
    let secret = data_encoding::BASE32_NOPAD.decode(secret.as_bytes()).unwrap();
    api::routes::people::mfa::code(&secret, api::routes::people::mfa::step_at(chrono::Utc::now().timestamp()))
}

#[tokio::test]
async fn totp_is_confirmed_by_a_first_code_then_sign_in_asks_for_a_code_each_accepted_once_or_a_recovery_code() {
    let app = TestApp::spawn().await;
    let ada = sign_up(&app, "ada@example.com", "Ada").await;
    let enrolment = call(&app, Method::POST, "/auth/mfa/totp", Some(&ada), None).await;
    assert_eq!(enrolment.status, 201, "{}", enrolment.body);
    let secret = enrolment.body["secret"].as_str().unwrap().to_string();
    let uri = enrolment.body["otpauth_uri"].as_str().unwrap();
    assert!(uri.starts_with("otpauth://totp/Herald%3Aada%40example.com?secret=") && uri.contains(&secret), "{uri}");
    let sealed: Vec<u8> = sqlx::query_scalar("SELECT totp_secret FROM people").fetch_one(&app.pool).await.unwrap();
    assert!(!sealed.windows(10).any(|w| data_encoding::BASE32_NOPAD.decode(secret.as_bytes()).unwrap().windows(10).any(|s| s == w)), "the secret is sealed at rest");

    assert_eq!(sign_in(&app, "ada@example.com", PASSWORD, None).await.status, 200, "an unconfirmed enrolment asks for no code");
    let wrong = call(&app, Method::POST, "/auth/mfa/totp/confirm", Some(&ada), Some(json!({ "code": "000000" }))).await;
    wrong.assert_error(422, "validation_error");
    assert_eq!(call(&app, Method::GET, "/auth/session", Some(&ada), None).await.body["user"]["mfa_enabled"], false);
    let confirming = totp_now(&secret);
    let confirmed = call(&app, Method::POST, "/auth/mfa/totp/confirm", Some(&ada), Some(json!({ "code": confirming }))).await;
    assert_eq!(confirmed.status, 200, "{}", confirmed.body);
    let codes: Vec<String> = confirmed.body["recovery_codes"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect();
    assert_eq!(codes.len(), 10);
    assert_eq!(app.count("recovery_codes").await, 10);
    assert_eq!(call(&app, Method::GET, "/auth/session", Some(&ada), None).await.body["user"]["mfa_enabled"], true);

    let sessions = app.count("sessions").await;
    let asked = sign_in(&app, "ada@example.com", PASSWORD, None).await;
    asked.assert_error(403, "validation_error");
    assert_eq!(asked.body["details"]["mfa_required"], true);
    sign_in(&app, "ada@example.com", PASSWORD, Some("123456")).await.assert_error(403, "validation_error");
    // The code that confirmed the enrolment was spent.
    sign_in(&app, "ada@example.com", PASSWORD, Some(&confirming)).await.assert_error(403, "validation_error");
    assert_eq!(app.count("sessions").await, sessions, "no refused sign-in opened a session");

    let recovered = sign_in(&app, "ada@example.com", PASSWORD, Some(&codes[0].to_uppercase())).await;
    assert_eq!(recovered.status, 200, "{}", recovered.body);
    sqlx::query("DELETE FROM sign_in_failures").execute(&app.pool).await.unwrap();
    sign_in(&app, "ada@example.com", PASSWORD, Some(&codes[0])).await.assert_error(403, "validation_error");

    sqlx::query("DELETE FROM sign_in_failures").execute(&app.pool).await.unwrap();
    sqlx::query("UPDATE people SET totp_last_step = totp_last_step - 2").execute(&app.pool).await.unwrap();
    let code = totp_now(&secret);
    assert_eq!(sign_in(&app, "ada@example.com", PASSWORD, Some(&code)).await.status, 200);
    sign_in(&app, "ada@example.com", PASSWORD, Some(&code)).await.assert_error(403, "validation_error");

    call(&app, Method::POST, "/auth/mfa/totp/disable", Some(&ada), Some(json!({ "code": "999999" }))).await.assert_error(422, "validation_error");
    let off = call(&app, Method::POST, "/auth/mfa/totp/disable", Some(&ada), Some(json!({ "code": codes[1] }))).await;
    assert_eq!((off.status, &off.body["enabled"]), (200, &json!(false)), "{}", off.body);
    assert_eq!(app.count("recovery_codes").await, 0);
    sqlx::query("DELETE FROM sign_in_failures").execute(&app.pool).await.unwrap();
    assert_eq!(sign_in(&app, "ada@example.com", PASSWORD, None).await.status, 200);
}

#[tokio::test]
async fn an_invitation_is_mailed_and_its_page_creates_the_account_joins_the_team_and_signs_in() {
    let mail = setup().await;
    let app = &mail.app;
    let ada = sign_up(app, "ada@inbox.test", "Ada").await;
    let invited = call(app, Method::POST, "/team/invitations", Some(&ada), Some(json!({ "email": "Bob@inbox.test", "role": "member" }))).await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    assert_eq!((invited.body["email"].as_str(), invited.body["role"].as_str(), invited.body["status"].as_str(), invited.body["invited_by"].as_str()), (Some("bob@inbox.test"), Some("member"), Some("pending"), Some("Ada")));
    let link = mailed_link(&mail, "bob@inbox.test", "Join Ada's team", 0).await;

    let (status, html, _) = page(app, Method::GET, &link, &[]).await;
    assert!(status == 200 && html.contains("Ada invited <strong>bob@inbox.test</strong>") && html.contains("name=\"name\""), "{html}");
    let (status, html, token) = page(app, Method::POST, &link, &[("name", "Bob"), ("password", "short")]).await;
    assert!(status == 200 && html.contains("10 to 200 characters") && token.is_none(), "{html}");
    assert_eq!(app.count("people").await, 1, "a refused form writes no account");

    for name in ["Bo\u{0}b", "Bob\nSmith"] {
        let (status, html, token) = page(app, Method::POST, &link, &[("name", name), ("password", PASSWORD)]).await;
        assert!(status == 200 && html.contains("Give your name") && token.is_none(), "{name:?}: {html}");
    }
    assert_eq!(app.count("people").await, 1, "a hostile name writes no account");

    let (status, html, token) = page(app, Method::POST, &link, &[("name", "Bob"), ("password", PASSWORD)]).await;
    assert_eq!(status, 201, "{html}");
    let bob_token = token.expect("joining signs in");
    let session = call(app, Method::GET, "/auth/session", Some(&Person { token: bob_token, csrf: String::new() }), None).await;
    assert_eq!((session.body["team"]["name"].as_str(), session.body["team"]["role"].as_str(), &session.body["user"]["email_verified"]), (Some("Ada's team"), Some("member"), &json!(true)));
    assert_eq!(page(app, Method::GET, &link, &[]).await.0, 404, "an accepted invitation's link does not work again");
    let listed = call(app, Method::GET, "/team/invitations", Some(&ada), None).await;
    assert_eq!(listed.body["data"][0]["status"], "accepted", "{}", listed.body);
}

#[tokio::test]
async fn an_existing_account_joins_by_its_password_or_by_the_accept_route_and_expired_or_revoked_invitations_do_not_work() {
    let mail = setup().await;
    let app = &mail.app;
    let ada = sign_up(app, "ada@inbox.test", "Ada").await;
    let grace = sign_up(app, "grace@inbox.test", "Grace").await;
    let invite = |email: &'static str, role: &'static str| call(app, Method::POST, "/team/invitations", Some(&ada), Some(json!({ "email": email, "role": role })));

    assert_eq!(invite("grace@inbox.test", "viewer").await.status, 201);
    let link = mailed_link(&mail, "grace@inbox.test", "Join", 0).await;
    let (status, html, _) = page(app, Method::GET, &link, &[]).await;
    assert!(status == 200 && !html.contains("name=\"name\"") && html.contains("Sign in and join"), "{html}");
    let (status, html, token) = page(app, Method::POST, &link, &[("password", "wrong password!")]).await;
    assert!(status == 200 && token.is_none() && html.contains("wrong"), "{html}");
    let (status, _, token) = page(app, Method::POST, &link, &[("password", PASSWORD)]).await;
    assert_eq!((status, token.is_some()), (201, true));
    assert_eq!(invite("grace@inbox.test", "admin").await.body["errors"][0]["message"], "is already a member of the team");

    // The accept route, for a signed-in person, with the token of the link.
    let carol = sign_up(app, "carol@inbox.test", "Carol").await;
    assert_eq!(invite("carol@inbox.test", "member").await.status, 201);
    let token = mailed_link(&mail, "carol@inbox.test", "Join", 0).await.rsplit('/').next().unwrap().to_string();
    call(app, Method::POST, "/auth/invitations/accept", Some(&grace), Some(json!({ "token": token }))).await.assert_error(403, "validation_error");
    sqlx::query("UPDATE invitations SET expires_at = now() - interval '1 second' WHERE email = 'carol@inbox.test'").execute(&app.pool).await.unwrap();
    let memberships = app.count("memberships").await;
    call(app, Method::POST, "/auth/invitations/accept", Some(&carol), Some(json!({ "token": token }))).await.assert_error(422, "validation_error");
    assert_eq!(app.count("memberships").await, memberships, "an expired invitation adds no one");
    assert_eq!(call(app, Method::GET, "/team/invitations", Some(&ada), None).await.body["data"][0]["status"], "expired");

    let again = invite("carol@inbox.test", "member").await;
    let token = mailed_link(&mail, "carol@inbox.test", "Join", 1).await.rsplit('/').next().unwrap().to_string();
    let revoked = call(app, Method::DELETE, &format!("/team/invitations/{}", again.body["id"].as_str().unwrap()), Some(&ada), None).await;
    assert_eq!((revoked.status, revoked.body["status"].as_str()), (200, Some("revoked")), "{}", revoked.body);
    call(app, Method::POST, "/auth/invitations/accept", Some(&carol), Some(json!({ "token": token }))).await.assert_error(404, "not_found");

    invite("carol@inbox.test", "member").await;
    let token = mailed_link(&mail, "carol@inbox.test", "Join", 2).await.rsplit('/').next().unwrap().to_string();
    let joined = call(app, Method::POST, "/auth/invitations/accept", Some(&carol), Some(json!({ "token": token }))).await;
    assert_eq!((joined.status, joined.body["team"]["name"].as_str()), (200, Some("Ada's team")), "{}", joined.body);

    let invitations = app.count("invitations").await;
    for (body, status, name) in [
        (json!({ "email": "dan@inbox.test", "role": "owner" }), 422, "validation_error"),
        (json!({ "email": "not an address", "role": "member" }), 422, "validation_error"),
        (json!({ "email": "dan@inbox.test" }), 422, "missing_required_field"),
    ] {
        call(app, Method::POST, "/team/invitations", Some(&ada), Some(body)).await.assert_error(status, name);
    }
    assert_eq!(app.count("invitations").await, invitations, "refused invitations write nothing");

    // Only an admin invites, reads and revokes invitations.
    call(app, Method::POST, "/team/invitations", Some(&carol), Some(json!({ "email": "dan@inbox.test", "role": "member" }))).await.assert_error(403, "invalid_permission");
    call(app, Method::GET, "/team/invitations", Some(&carol), None).await.assert_error(403, "invalid_permission");
}

#[tokio::test]
async fn an_admin_changes_roles_and_removes_members_but_a_team_keeps_its_last_admin() {
    let app = TestApp::spawn().await;
    let ada = sign_up(&app, "ada@example.com", "Ada").await;
    let bob = sign_up(&app, "bob@example.com", "Bob").await;
    let ada_team = call(&app, Method::GET, "/auth/session", Some(&ada), None).await.body["team"]["id"].as_str().unwrap().to_string();
    let pool = &app.pool;
    let id_of = |email: &'static str| async move { sqlx::query_scalar::<_, uuid::Uuid>("SELECT id FROM people WHERE email = $1").bind(email).fetch_one(pool).await.unwrap().to_string() };
    let (ada_id, bob_id) = (id_of("ada@example.com").await, id_of("bob@example.com").await);
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) VALUES ($1::uuid, $2::uuid, 'viewer')").bind(&ada_team).bind(&bob_id).execute(&app.pool).await.unwrap();

    // Switching: to a team of the person's, not to one they are not in.
    let bob_teams = call(&app, Method::GET, "/teams", Some(&bob), None).await;
    assert_eq!(bob_teams.body["data"].as_array().unwrap().len(), 2);
    let switched = call(&app, Method::POST, &format!("/teams/{ada_team}/switch"), Some(&bob), None).await;
    assert_eq!((switched.status, switched.body["team"]["role"].as_str()), (200, Some("viewer")), "{}", switched.body);
    let ada_own = call(&app, Method::POST, "/teams", Some(&ada), Some(json!({ "name": "Ada's second" }))).await.body["team"]["id"].as_str().unwrap().to_string();
    call(&app, Method::POST, &format!("/teams/{ada_own}/switch"), Some(&bob), None).await.assert_error(404, "not_found");
    call(&app, Method::POST, &format!("/teams/{ada_team}/switch"), Some(&ada), None).await;

    // A viewer changes nothing.
    call(&app, Method::PATCH, &format!("/team/members/{ada_id}"), Some(&bob), Some(json!({ "role": "viewer" }))).await.assert_error(403, "invalid_permission");
    let last = call(&app, Method::PATCH, &format!("/team/members/{ada_id}"), Some(&ada), Some(json!({ "role": "member" }))).await;
    last.assert_error(422, "validation_error");
    call(&app, Method::DELETE, &format!("/team/members/{ada_id}"), Some(&ada), None).await.assert_error(422, "validation_error");
    call(&app, Method::PATCH, &format!("/team/members/{bob_id}"), Some(&ada), Some(json!({ "role": "owner" }))).await.assert_error(422, "validation_error");
    let roles = || async { sqlx::query_scalar::<_, String>("SELECT role FROM memberships WHERE team_id = $1::uuid ORDER BY role").bind(&ada_team).fetch_all(&app.pool).await.unwrap() };
    assert_eq!(roles().await, ["admin", "viewer"], "refusals changed no role");

    let promoted = call(&app, Method::PATCH, &format!("/team/members/{bob_id}"), Some(&ada), Some(json!({ "role": "admin" }))).await;
    assert_eq!((promoted.status, promoted.body["role"].as_str()), (200, Some("admin")), "{}", promoted.body);
    let demoted = call(&app, Method::PATCH, &format!("/team/members/{ada_id}"), Some(&ada), Some(json!({ "role": "member" }))).await;
    assert_eq!(demoted.status, 200, "with two admins, one may step down: {}", demoted.body);
    call(&app, Method::PATCH, &format!("/team/members/{bob_id}"), Some(&ada), Some(json!({ "role": "member" }))).await.assert_error(403, "invalid_permission");

    let removed = call(&app, Method::DELETE, &format!("/team/members/{ada_id}"), Some(&bob), None).await;
    assert_eq!((removed.status, &removed.body["deleted"]), (200, &json!(true)), "{}", removed.body);
    assert_eq!(call(&app, Method::GET, "/auth/session", Some(&ada), None).await.body["team"], Value::Null, "a removed member's session loses the team at once");
    call(&app, Method::DELETE, &format!("/team/members/{ada_id}"), Some(&bob), None).await.assert_error(404, "not_found");
    call(&app, Method::DELETE, &format!("/team/members/{bob_id}"), Some(&bob), None).await.assert_error(422, "validation_error");
}

#[tokio::test]
async fn raising_a_keys_inbox_access_or_setting_its_channels_needs_a_signed_in_admin_of_the_keys_team_on_the_same_request() {
    let app = TestApp::spawn_unthrottled().await;
    let ada = sign_up(&app, "ada@example.com", "Ada").await;
    let bob = sign_up(&app, "bob@example.com", "Bob").await;
    let carol = sign_up(&app, "carol@example.com", "Carol").await;
    for (email, role) in [("ada@example.com", "admin"), ("bob@example.com", "member")] {
        sqlx::query("INSERT INTO memberships (team_id, person_id, role) SELECT $1, id, $2 FROM people WHERE email = $3").bind(app.team_id).bind(role).bind(email).execute(&app.pool).await.unwrap();
    }
    for person in [&ada, &bob] {
        call(&app, Method::POST, &format!("/teams/{}/switch", app.team_id), Some(person), None).await;
    }
    let with = |person: Option<&Person>, csrf: bool, method: Method, path: &str, body: Value| {
        let mut request = app.request(method, path).json(&body);
        if let Some(person) = person {
            request = request.header("cookie", format!("herald_session={}", person.token));
            if csrf {
                request = request.header("x-csrf-token", &person.csrf);
            }
        }
        async move { Answer::from(request.send().await.unwrap()).await }
    };
    let raise = json!({ "name": "inbox", "inbox_access": "read", "inbox_channel_ids": [uuid::Uuid::now_v7().to_string()] });

    // Carol administers another team; Bob is a member; Ada's cookie without its CSRF token proves nothing.
    for (person, csrf) in [(None, false), (Some(&carol), true), (Some(&bob), true), (Some(&ada), false)] {
        with(person, csrf, Method::POST, "/api-keys", raise.clone()).await.assert_error(403, "invalid_permission");
    }
    assert_eq!(app.count("api_keys").await, 1, "refusals created no key");
    let created = with(Some(&ada), true, Method::POST, "/api-keys", raise.clone()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let key = app.get(&format!("/api-keys?limit=1")).await;
    assert_eq!((key.body["data"][0]["inbox_access"].as_str(), key.body["data"][0]["inbox_channel_ids"].as_array().map(Vec::len)), (Some("read"), Some(1)), "{}", key.body);

    let path = format!("/api-keys/{id}");
    with(Some(&bob), true, Method::PATCH, &path, json!({ "inbox_access": "write" })).await.assert_error(403, "invalid_permission");
    with(None, false, Method::PATCH, &path, json!({ "inbox_channel_ids": null })).await.assert_error(403, "invalid_permission");
    assert_eq!(with(None, false, Method::PATCH, &path, json!({ "inbox_access": "create" })).await.status, 200, "lowering needs no admin");
    assert_eq!(with(Some(&ada), true, Method::PATCH, &path, json!({ "inbox_access": "write", "inbox_channel_ids": null })).await.status, 200);
    let key = app.get("/api-keys?limit=1").await;
    assert_eq!((key.body["data"][0]["inbox_access"].as_str(), &key.body["data"][0]["inbox_channel_ids"]), (Some("write"), &Value::Null), "{}", key.body);
}

#[tokio::test]
async fn the_eleventh_sign_up_in_an_hour_from_one_client_address_is_429_and_writes_nothing() {
    let app = TestApp::spawn().await;
    for n in 0..10 {
        sign_up(&app, &format!("person{n}@example.com"), "Person").await;
    }
    let people = app.count("people").await;
    let refused = call(&app, Method::POST, "/auth/signup", None, Some(json!({ "email": "eleventh@example.com", "password": PASSWORD, "name": "Eleven" }))).await;
    refused.assert_error(429, "rate_limit_exceeded");
    assert_eq!((app.count("people").await, app.count("sessions").await), (people, 10), "the refused sign-up wrote nothing");
    sqlx::query("UPDATE people SET created_at = now() - interval '61 minutes'").execute(&app.pool).await.unwrap();
    assert_eq!(call(&app, Method::POST, "/auth/signup", None, Some(json!({ "email": "eleventh@example.com", "password": PASSWORD, "name": "Eleven" }))).await.status, 201);
}
