//! Single sign-on with OpenID Connect: a team admin connects the team's provider in the
//! dashboard session; a person on a covered domain signs in through panva's `oidc-provider` in
//! a headless browser and joins the team; `enforced` refuses password sign-in (admins keep
//! theirs); and every wrong answer a provider can give (no discovery, another issuer, a bad
//! signature, the wrong audience, an expired token, a replayed nonce, a state from elsewhere)
//! signs nobody in.

use reqwest::Method;
use serde_json::{Value, json};
use tests::browser::Browser;
use tests::inbox::{Person, as_person, person};
use tests::mail::{self, SENDING_DOMAIN};
use tests::oidc::{CertifiedProvider, Flaw, FlawedProvider};
use tests::{Answer, TestApp};

const CLIENT_ID: &str = "herald-client";
const CLIENT_SECRET: &str = "a-long-client-secret-kept-sealed";

/// The callback the provider is told about: at Herald's public URL.
fn callback(app: &TestApp) -> String {
    format!("{}/auth/sso/callback", app.config.public_url)
}

/// A team with a verified domain, whose public URL is where it listens (the browser and the
/// provider follow Herald's redirects to it).
async fn setup() -> mail::Mail {
    let port = tests::bench::free_port().unwrap();
    mail::setup_with(tests::smtp::SmtpSink::start().await, |c| {
        c.http_addr = format!("127.0.0.1:{port}").parse().unwrap();
        c.public_url = format!("http://127.0.0.1:{port}");
    })
    .await
}

fn config(issuer: &str, enforced: bool) -> Value {
    json!({ "issuer": issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "domains": [SENDING_DOMAIN], "enforced": enforced })
}

async fn configure(app: &TestApp, admin: &Person, body: Value) -> Answer {
    as_person(app, admin, Method::PUT, "/team/sso", Some(body)).await
}

async fn sso_rows(app: &TestApp) -> (i64, i64) {
    (app.count("team_sso").await, app.count("sso_domains").await)
}

/// A password account made through sign-up (it gets a team of its own).
async fn sign_up(app: &TestApp, email: &str) {
    let body = json!({ "email": email, "password": "correct horse battery", "name": "Pat" });
    let answer = app.client.post(app.url("/auth/signup")).header("user-agent", "tests").json(&body).send().await.unwrap();
    assert_eq!(answer.status(), 201);
}

async fn sign_in(app: &TestApp, email: &str) -> Answer {
    let body = json!({ "email": email, "password": "correct horse battery" });
    Answer::from(app.client.post(app.url("/auth/login")).header("user-agent", "tests").json(&body).send().await.unwrap()).await
}

#[tokio::test]
async fn a_person_on_a_covered_domain_signs_in_through_the_provider_in_a_browser_and_joins_the_team() {
    let mail = setup().await;
    let app = &mail.app;
    let admin = person(app, app.team_id, "admin", "Ada").await;
    let provider = CertifiedProvider::start(CLIENT_ID, CLIENT_SECRET, &callback(app));

    let saved = configure(app, &admin, config(&provider.issuer, false)).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    let summary = json!({ "status": "active", "issuer": provider.issuer, "client_id": CLIENT_ID, "enforced": false, "domains": [SENDING_DOMAIN] });
    assert_eq!(saved.body, summary);
    let team = app.get("/team").await.body;
    assert_eq!(team["sso"], summary, "the team shows the summary, never the secret");
    let stored: Vec<u8> = sqlx::query_scalar("SELECT client_secret FROM team_sso").fetch_one(&app.pool).await.unwrap();
    assert!(!stored.windows(CLIENT_SECRET.len()).any(|w| w == CLIENT_SECRET.as_bytes()), "the client secret is sealed at rest");

    let email = format!("sam@{SENDING_DOMAIN}");
    let mut browser = Browser::launch().await.unwrap().expect("chromium is installed (scripts/test installs it)");
    browser.goto(&app.url(&format!("/auth/sso/start?email={email}"))).await.unwrap();
    let at = browser.eval("location.href").await.unwrap();
    assert!(at.as_str().unwrap().starts_with(&provider.issuer), "the browser is at the provider: {at}");
    browser.eval(&format!("document.querySelector('input[name=login]').value = '{email}'")).await.unwrap();
    browser.eval("document.querySelector('input[name=password]').value = 'anything'").await.unwrap();
    browser.click("button[type=submit]", true).await.unwrap();
    let text = browser.text().await.unwrap();
    assert!(text.contains("You are signed in") && text.contains(&email), "{text}");

    // The new account is a member of the team, and the browser holds its session.
    let role: String = sqlx::query_scalar("SELECT m.role FROM memberships m JOIN people p ON p.id = m.person_id WHERE p.email = $1 AND m.team_id = $2")
        .bind(&email)
        .bind(app.team_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(role, "member");
    browser.goto(&app.url("/auth/session")).await.unwrap();
    let session: Value = serde_json::from_str(&browser.text().await.unwrap()).unwrap();
    assert_eq!(session["user"]["email"], email.as_str());
    assert_eq!(session["user"]["email_verified"], true);
    assert_eq!(session["team"]["id"], app.team_id.to_string());

    // A second sign-in finds the same account and membership.
    browser.goto(&app.url(&format!("/auth/sso/start?email={email}"))).await.unwrap();
    let text = browser.text().await.unwrap();
    let text = if text.contains("You are signed in") {
        text
    } else {
        browser.eval(&format!("document.querySelector('input[name=login]').value = '{email}'")).await.unwrap();
        browser.eval("document.querySelector('input[name=password]').value = 'anything'").await.unwrap();
        browser.click("button[type=submit]", true).await.unwrap();
        browser.text().await.unwrap()
    };
    assert!(text.contains("You are signed in"), "{text}");
    assert_eq!(app.count(&format!("people WHERE email = '{email}'")).await, 1);
    assert_eq!(app.count(&format!("memberships m JOIN people p ON p.id = m.person_id WHERE p.email = '{email}'")).await, 1);
}

#[tokio::test]
async fn enforced_single_sign_on_refuses_passwords_on_its_domains_but_not_the_team_s_admins() {
    let mail = setup().await;
    let app = &mail.app;
    let admin = person(app, app.team_id, "admin", "Ada").await;
    let provider = FlawedProvider::start(CLIENT_ID, CLIENT_SECRET, &format!("sam@{SENDING_DOMAIN}")).await;
    let member = format!("pat@{SENDING_DOMAIN}");
    let boss = format!("boss@{SENDING_DOMAIN}");
    sign_up(app, &member).await;
    sign_up(app, &boss).await;
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) SELECT $1, id, 'admin' FROM people WHERE email = $2")
        .bind(app.team_id)
        .bind(&boss)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(sign_in(app, &member).await.status, 200, "before single sign-on, the password works");

    assert_eq!(configure(app, &admin, config(&provider.issuer, true)).await.status, 200);
    let refused = sign_in(app, &member).await;
    refused.assert_error(403, "validation_error");
    assert!(refused.body["details"]["sso_start"].as_str().unwrap().starts_with("/auth/sso/start?email="), "{}", refused.body);
    assert_eq!(sign_in(app, &boss).await.status, 200, "an admin of the team keeps the password as the way back in");
    assert_eq!(sign_in(app, &format!("{}@people.example", admin.id.simple())).await.status, 403, "(an address off the domains is just a wrong password)");

    // Removing single sign-on gives the password back.
    let removed = as_person(app, &admin, Method::DELETE, "/team/sso", None).await;
    assert_eq!((removed.status, &removed.body), (200, &json!({ "object": "sso", "deleted": true })));
    assert_eq!(sso_rows(app).await, (0, 0));
    assert_eq!(sign_in(app, &member).await.status, 200);
    as_person(app, &admin, Method::DELETE, "/team/sso", None).await.assert_error(404, "not_found");
    assert_eq!(app.get("/team").await.body["sso"], Value::Null);
}

#[tokio::test]
async fn a_configuration_is_refused_and_nothing_kept_for_a_silent_or_foreign_issuer_or_a_domain_not_the_team_s() {
    let mail = setup().await;
    let app = &mail.app;
    let admin = person(app, app.team_id, "admin", "Ada").await;
    let member = person(app, app.team_id, "member", "Mo").await;
    let provider = FlawedProvider::start(CLIENT_ID, CLIENT_SECRET, &format!("sam@{SENDING_DOMAIN}")).await;

    configure(app, &member, config(&provider.issuer, false)).await.assert_error(403, "invalid_permission");
    let with_key = app.request(Method::PUT, "/team/sso").json(&config(&provider.issuer, false)).send().await.unwrap();
    assert_eq!(Answer::from(with_key).await.status, 403, "a key alone cannot configure single sign-on");

    let silent = configure(app, &admin, config("http://127.0.0.1:9", false)).await;
    silent.assert_error(422, "validation_error");
    assert!(silent.body["message"].as_str().unwrap().contains("did not answer"), "{}", silent.body);
    // The provider's own document names 127.0.0.1, not localhost: another issuer.
    let foreign = configure(app, &admin, config(&provider.issuer.replace("127.0.0.1", "localhost"), false)).await;
    foreign.assert_error(422, "validation_error");
    assert!(foreign.body["message"].as_str().unwrap().contains("another issuer"), "{}", foreign.body);
    configure(app, &admin, config("ftp://idp.example", false)).await.assert_error(400, "validation_error");
    configure(app, &admin, config("http://idp.example", false)).await.assert_error(400, "validation_error");

    let mut other = config(&provider.issuer, false);
    other["domains"] = json!(["gmail.com"]);
    configure(app, &admin, other).await.assert_error(422, "validation_error");
    let mut missing = config(&provider.issuer, false);
    missing.as_object_mut().unwrap().remove("client_secret");
    configure(app, &admin, missing).await.assert_error(422, "missing_required_field");
    assert_eq!(sso_rows(app).await, (0, 0));

    // A domain another team's single sign-on covers is refused.
    let rival = uuid::Uuid::now_v7();
    sqlx::query("INSERT INTO teams (id, name, slug) VALUES ($1, 'Rival', $2)").bind(rival).bind(format!("rival-{}", rival.simple())).execute(&app.pool).await.unwrap();
    sqlx::query("INSERT INTO team_sso (team_id, issuer, client_id, client_secret) VALUES ($1, 'https://idp.rival.example', 'x', '\\x00')").bind(rival).execute(&app.pool).await.unwrap();
    sqlx::query("INSERT INTO sso_domains (domain, team_id) VALUES ($1, $2)").bind(SENDING_DOMAIN).bind(rival).execute(&app.pool).await.unwrap();
    let taken = configure(app, &admin, config(&provider.issuer, false)).await;
    taken.assert_error(422, "validation_error");
    assert_eq!(taken.body["errors"][0]["path"], "domains[0]", "{}", taken.body);
    assert_eq!(app.count(&format!("team_sso WHERE team_id = '{}'", app.team_id)).await, 0);
}

/// Walks a sign-in without a browser: start, the provider's redirect, then the callback with
/// (or without) the state cookie. Answers the callback's status and page.
async fn walk(app: &TestApp, email: &str, send_cookie: bool) -> (u16, String) {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let started = client.get(app.url(&format!("/auth/sso/start?email={email}"))).send().await.unwrap();
    assert_eq!(started.status(), 303);
    let cookie = started.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let to_provider = started.headers()["location"].to_str().unwrap().to_string();
    let back = client.get(&to_provider).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let to_callback = back.headers()["location"].to_str().unwrap().to_string();
    let mut request = client.get(&to_callback);
    if send_cookie {
        request = request.header("cookie", &cookie);
    }
    let answer = request.send().await.unwrap();
    let status = answer.status().as_u16();
    let page = answer.text().await.unwrap();
    if status == 200 {
        // The same answer again: the sign-in was spent.
        let again = client.get(&to_callback).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(again.status(), 403, "a state is used once");
    }
    (status, page)
}

#[tokio::test]
async fn an_id_token_with_a_bad_signature_audience_expiry_nonce_or_issuer_or_a_foreign_state_signs_nobody_in() {
    let mail = setup().await;
    let app = &mail.app;
    let admin = person(app, app.team_id, "admin", "Ada").await;
    let email = format!("sam@{SENDING_DOMAIN}");
    let provider = FlawedProvider::start(CLIENT_ID, CLIENT_SECRET, &email).await;
    assert_eq!(configure(app, &admin, config(&provider.issuer, false)).await.status, 200);
    let sessions = || app.count("sessions");
    let before = sessions().await;

    for (flaw, why) in [
        (Flaw::BadSignature, "signature"),
        (Flaw::WrongAudience, "audience"),
        (Flaw::Expired, "expired"),
        (Flaw::OtherIssuer, "issuer"),
    ] {
        provider.set_flaw(flaw);
        let (status, page) = walk(app, &email, true).await;
        assert_eq!(status, 403, "{flaw:?}: {page}");
        assert!(page.to_lowercase().contains(why), "{flaw:?} is named: {page}");
    }
    assert_eq!(sessions().await, before, "no session was opened");
    assert_eq!(app.count(&format!("people WHERE email = '{email}'")).await, 0, "no account was made");

    // A good sign-in, then one whose token carries that earlier nonce.
    provider.set_flaw(Flaw::None);
    let (status, page) = walk(app, &email, true).await;
    assert_eq!(status, 200, "{page}");
    provider.set_flaw(Flaw::ReplayedNonce);
    let (status, page) = walk(app, &email, true).await;
    assert_eq!(status, 403, "{page}");
    assert!(page.to_lowercase().contains("nonce"), "{page}");

    // An answer brought to another browser (no state cookie) is refused.
    provider.set_flaw(Flaw::None);
    let (status, page) = walk(app, &email, false).await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("state does not match"), "{page}");

    // The provider signs in an address off the team's domains: refused.
    provider.set_email("eve@elsewhere.example");
    let (status, page) = walk(app, &email, true).await;
    assert_eq!(status, 403, "{page}");
    assert_eq!(app.count("people WHERE email = 'eve@elsewhere.example'").await, 0);
    assert_eq!(sessions().await, before + 1, "only the one good sign-in opened a session");

    // An address no single sign-on covers cannot start.
    let start = app.client.get(app.url("/auth/sso/start?email=someone@elsewhere.example")).header("user-agent", "tests").send().await.unwrap();
    Answer::from(start).await.assert_error(422, "validation_error");
}
