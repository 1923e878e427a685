//! The dashboard's account pages (#28): creating an account (which lands on the overview, signed
//! in) and asking for a password reset, through the API's own routes, with the API's errors
//! beside the fields they name and nothing written by a refused form; and the applications a
//! team has let in with OAuth, on the team page, revoked by an admin.

use reqwest::redirect::Policy;
use tests::TestApp;
use tests::inbox::{person, token};

fn browser() -> reqwest::Client {
    reqwest::Client::builder().user_agent("Mozilla/5.0 (dashboard test)").redirect(Policy::none()).build().unwrap()
}

async fn post(app: &TestApp, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
    browser().post(app.url(path)).header("origin", &app.base).form(form).send().await.unwrap()
}

fn session_of(response: &reqwest::Response) -> Option<String> {
    response.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).find_map(|c| c.strip_prefix("herald_session=")).map(|c| c.split(';').next().unwrap().to_string())
}

#[tokio::test]
async fn a_newcomer_creates_an_account_from_the_sign_up_form_and_lands_on_the_overview_signed_in() {
    let app = TestApp::spawn().await;
    let form = browser().get(app.url("/app/signup")).send().await.unwrap();
    assert_eq!(form.status(), 200);
    let html = form.text().await.unwrap();
    assert!(html.contains("action=\"/app/signup\"") && html.contains("autocomplete=\"new-password\""), "{html}");
    let sign_in = browser().get(app.url("/app/login")).send().await.unwrap().text().await.unwrap();
    assert!(sign_in.contains("href=\"/app/signup\"") && sign_in.contains("href=\"/app/reset\""), "sign-in links to both: {sign_in}");
    let people = app.count("people").await;

    let short = post(&app, "/app/signup", &[("name", "Ada"), ("email", "ada@example.com"), ("password", "short")]).await;
    assert_eq!(short.status(), 422);
    let html = short.text().await.unwrap();
    assert!(html.contains("id=\"password\"") && html.contains("aria-invalid=\"true\" aria-describedby=\"password-error\""), "the error beside the password: {html}");
    assert!(html.contains("value=\"ada@example.com\""), "what was typed stays");
    let forged = browser().post(app.url("/app/signup")).header("origin", "https://evil.example").form(&[("name", "Ada"), ("email", "ada@example.com"), ("password", "correct horse battery")]).send().await.unwrap();
    assert_eq!(forged.status(), 403, "a sign-up posted from another site");
    let nul = post(&app, "/app/signup", &[("name", "A\0da"), ("email", "ada@example.com"), ("password", "correct horse battery")]).await;
    assert!(nul.status().is_client_error(), "a NUL in the name: {}", nul.status());
    assert_eq!(app.count("people").await, people, "no refused form wrote an account");

    let created = post(&app, "/app/signup", &[("name", "Ada <b>"), ("email", "ada@example.com"), ("password", "correct horse battery")]).await;
    assert_eq!((created.status().as_u16(), created.headers()["location"].to_str().unwrap()), (303, "/app"));
    let cookie = session_of(&created).expect("signed in");
    let overview = browser().get(app.url("/app")).header("cookie", format!("herald_session={cookie}")).send().await.unwrap();
    assert_eq!(overview.status(), 200);
    let html = overview.text().await.unwrap();
    assert!(html.contains("Ada &lt;b&gt;") && !html.contains("Ada <b>"), "the name, escaped: {html}");
    assert!(html.contains("Send"), "the next steps start with a first email: {html}");
    assert_eq!(browser().get(app.url("/app/signup")).header("cookie", format!("herald_session={cookie}")).send().await.unwrap().status(), 303, "signed in already");

    let again = post(&app, "/app/signup", &[("name", "Ada"), ("email", "ADA@example.com"), ("password", "another long password")]).await;
    assert_eq!(again.status(), 422);
    assert!(again.text().await.unwrap().contains("aria-describedby=\"email-error\""), "the taken address, beside the email field");
    assert_eq!(app.count("people").await, people + 1);
}

#[tokio::test]
async fn a_reset_asked_from_the_dashboard_says_the_same_for_any_address_and_mints_a_link_only_for_an_account() {
    let app = TestApp::spawn().await;
    let created = post(&app, "/app/signup", &[("name", "Ada"), ("email", "ada@example.com"), ("password", "correct horse battery")]).await;
    assert_eq!(created.status(), 303);
    let form = browser().get(app.url("/app/reset")).send().await.unwrap();
    assert_eq!(form.status(), 200);
    let tokens = app.count("person_tokens").await;

    let unknown = post(&app, "/app/reset", &[("email", "nobody@example.com")]).await;
    assert_eq!(unknown.status(), 200);
    let unknown = unknown.text().await.unwrap().replace("nobody@example.com", "ADDRESS");
    assert_eq!(app.count("person_tokens").await, tokens, "no link for an address without an account");
    let known = post(&app, "/app/reset", &[("email", "ada@example.com")]).await;
    assert_eq!(known.status(), 200);
    let known = known.text().await.unwrap().replace("ada@example.com", "ADDRESS");
    assert_eq!(known, unknown, "the page does not tell who has an account");
    assert_eq!(app.count("person_tokens").await, tokens + 1, "a link for the account");

    let bad = post(&app, "/app/reset", &[("email", "not an address")]).await;
    assert_eq!(bad.status(), 422);
    assert!(bad.text().await.unwrap().contains("aria-describedby=\"email-error\""));
    assert_eq!(app.count("person_tokens").await, tokens + 1);
}

#[tokio::test]
async fn an_admin_sees_the_applications_given_access_and_revokes_one_so_its_token_stops_working() {
    let app = TestApp::spawn().await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let viewer = person(&app, app.team_id, "viewer", "Vi").await;
    let access = token(&app, &admin, app.team_id, &["domains:read"]).await;
    let grant: String = sqlx::query_scalar("SELECT id::text FROM oauth_grants").fetch_one(&app.pool).await.unwrap();
    let read = |bearer: String| {
        let client = app.client.clone();
        let url = app.url("/domains");
        async move { client.get(url).bearer_auth(bearer).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(read(access.clone()).await, 200, "the application's token works");
    let page = |who: &tests::inbox::Person| {
        let request = browser().get(app.url("/app/team")).header("cookie", format!("herald_session={}", who.cookie));
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let html = page(&admin).await;
    let revoke = format!("/app/team/grants/{grant}/revoke");
    assert!(html.contains("Desk agent") && html.contains("domains:read") && html.contains(&revoke), "{html}");
    assert!(!page(&viewer).await.contains(&revoke), "a viewer sees no revoke control");

    let send = |who: &tests::inbox::Person, csrf: &str| {
        let request = browser().post(app.url(&revoke)).header("cookie", format!("herald_session={}", who.cookie)).form(&[("csrf", csrf.to_string())]);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(send(&admin, "stale").await, 403, "a stale CSRF token");
    assert_eq!(send(&viewer, &viewer.csrf).await, 403, "a viewer's post");
    assert_eq!(read(access.clone()).await, 200, "refused posts revoke nothing");
    assert_eq!(send(&admin, &admin.csrf).await, 303);
    assert_eq!(read(access).await, 401, "the revoked grant's token stops working");
    assert!(!page(&admin).await.contains(&revoke));
}

#[tokio::test]
async fn on_a_development_server_a_newcomer_signs_up_and_sends_a_first_email_from_the_overview_then_sees_it_delivered() {
    let mut app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    app.start_workers();
    let created = post(&app, "/app/signup", &[("name", "Nia"), ("email", "nia@example.com"), ("password", "correct horse battery")]).await;
    assert_eq!(created.status(), 303);
    let cookie = session_of(&created).expect("signed in");
    let open = |path: String| {
        let request = browser().get(app.url(&path)).header("cookie", format!("herald_session={cookie}"));
        async move { request.send().await.unwrap() }
    };
    let overview = open("/app".into()).await.text().await.unwrap();
    assert!(overview.contains("Send a test email") && overview.contains("value=\"Herald &lt;hello@dev.herald.localhost&gt;\"") && overview.contains("value=\"nia@example.com\""), "{overview}");
    assert!(overview.contains("Emails this period") && overview.contains("<meter"), "the plan's meters: {overview}");
    let emails = app.count("emails").await;
    let csrf = overview.split("name=\"csrf\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    let send = |fields: Vec<(&'static str, String)>| {
        let request = browser().post(app.url("/app/test-email")).header("cookie", format!("herald_session={cookie}")).form(&fields);
        async move { request.send().await.unwrap() }
    };

    let refused = send(vec![("csrf", csrf.clone()), ("from", "Herald <hello@dev.herald.localhost>".into()), ("to", "not an address".into()), ("subject", "Hi".into())]).await;
    assert_eq!(refused.status(), 400, "the API's validation error");
    let html = refused.text().await.unwrap();
    assert!(html.contains("aria-invalid=\"true\"") && html.contains("value=\"not an address\""), "the error beside the field, what was typed kept: {html}");
    assert_eq!(app.count("emails").await, emails, "a refused form sends nothing");
    let stale = send(vec![("csrf", "stale".into()), ("from", "Herald <hello@dev.herald.localhost>".into()), ("to", "nia@example.com".into()), ("subject", "Hi".into())]).await;
    assert_eq!(stale.status(), 403);
    assert_eq!(app.count("emails").await, emails);

    let sent = send(vec![("csrf", csrf), ("from", "Herald <hello@dev.herald.localhost>".into()), ("to", "nia@example.com".into()), ("subject", "Hello from Herald".into())]).await;
    assert_eq!(sent.status(), 303);
    let location = sent.headers()["location"].to_str().unwrap().to_string();
    let id = location.strip_prefix("/app/emails/").expect("the email's page").to_string();
    let delivered: String = tests::eventually(|| async {
        sqlx::query_scalar("SELECT last_event FROM emails WHERE id = $1::uuid AND last_event = 'delivered'").bind(&id).fetch_optional(&app.pool).await.unwrap()
    })
    .await;
    assert_eq!(delivered, "delivered");
    let page = open(location).await.text().await.unwrap();
    assert!(page.contains("Hello from Herald") && page.contains("delivered"), "its timeline: {page}");
    let outbox: i64 = sqlx::query_scalar("SELECT count(*) FROM dev_outbox WHERE email_id = $1::uuid").bind(&id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(outbox, 1, "into the development outbox");
}

#[tokio::test]
async fn in_chromium_a_newcomer_signs_up_sends_a_test_email_watches_it_delivered_and_verifies_a_domain_with_no_serious_axe_violation() {
    assert!(tests::clients::script("node_modules/playwright-core").exists(), "tests/clients/node_modules is missing: run scripts/test (npm ci)");
    let mut app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    app.start_workers();
    let shots = tests::clients::root().join("target/screenshots/dashboard");
    let mut command = std::process::Command::new("node");
    command
        .arg(tests::clients::script("dashboard_newcomer.mjs"))
        .env("HERALD_BASE_URL", &app.base)
        .env("HERALD_SCREENSHOTS", &shots)
        .env("HERALD_DOMAIN", "nia-shop.test");
    // The newcomer's DNS provider: once the browser has added the domain, its records appear in
    // the test DNS server (read through the API as the newcomer, signed in apart).
    let dns = async {
        let exists = |sql: &'static str| {
            let pool = app.pool.clone();
            async move { sqlx::query_scalar::<_, i32>(sql).fetch_optional(&pool).await.unwrap() }
        };
        tests::eventually(|| exists("SELECT 1 FROM domains WHERE name = 'nia-shop.test'")).await;
        let login = app.client.post(app.url("/auth/login")).json(&serde_json::json!({ "email": "nia@example.com", "password": "correct horse battery" })).send().await.unwrap();
        let cookie = session_of(&login).expect("the newcomer signs in apart");
        let listed: serde_json::Value = app.client.get(app.url("/domains")).header("cookie", format!("herald_session={cookie}")).send().await.unwrap().json().await.unwrap();
        let domain = listed["data"].as_array().unwrap().iter().find(|d| d["name"] == "nia-shop.test").unwrap().clone();
        let full: serde_json::Value = app.client.get(app.url(&format!("/domains/{}", domain["id"].as_str().unwrap()))).header("cookie", format!("herald_session={cookie}")).send().await.unwrap().json().await.unwrap();
        tests::mail::publish_records(&app, &full);
    };
    let (said, ()) = tokio::join!(tests::clients::run_ok(command), dns);
    assert!(said.contains("ok a test email from the overview, then its timeline until it says delivered"), "{said}");
    assert!(said.contains("ok axe-core finds no serious or critical violation on the sign-up form"), "{said}");
    assert!(said.contains("ok a domain added from the dashboard verifies once its records are published"), "{said}");
    assert!(shots.join("first-email.png").exists() && shots.join("domain-verified.png").exists(), "the screenshots are kept");
}

/// The current code of a base32 secret.
fn totp_now(secret: &str) -> String {
    let secret = data_encoding::BASE32_NOPAD.decode(secret.as_bytes()).unwrap();
    api::routes::people::mfa::code(&secret, api::routes::people::mfa::step_at(chrono::Utc::now().timestamp()))
}

#[tokio::test]
async fn two_factor_sign_in_is_set_up_from_a_qr_code_a_wrong_code_turns_nothing_on_and_a_recovery_code_turns_it_off() {
    let app = tests::TestApp::spawn_unthrottled().await;
    let ada = tests::inbox::person(&app, app.team_id, "member", "Ada").await;
    let mfa = || async { sqlx::query_scalar::<_, bool>("SELECT totp_enabled_at IS NOT NULL FROM people WHERE id = $1").bind(ada.id).fetch_one(&app.pool).await.unwrap() };
    let (status, page) = tests::dashboard::get(&app, &ada, "/app/account").await;
    assert_eq!(status, 200);
    assert!(page.contains("Set up two-factor sign-in") && page.contains("href=\"/app/account\""), "{page}");

    let (status, _, page) = tests::dashboard::post(&app, &ada, "/app/account/totp", &[]).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<svg class=\"qr\" role=\"img\""), "a QR code to scan: {page}");
    let secret = page.split("Secret: <code>").nth(1).unwrap().split('<').next().unwrap().to_string();
    let (status, _, page) = tests::dashboard::post(&app, &ada, "/app/account/totp/confirm", &[("code", "000000")]).await;
    assert_eq!(status, 422, "{page}");
    assert!(!mfa().await, "a wrong code turns nothing on");

    let (status, _, page) = tests::dashboard::post(&app, &ada, "/app/account/totp", &[]).await;
    assert_eq!(status, 200);
    let secret_again = page.split("Secret: <code>").nth(1).unwrap().split('<').next().unwrap().to_string();
    assert_ne!(secret, secret_again, "starting again gives a fresh secret");
    let (status, _, page) = tests::dashboard::post(&app, &ada, "/app/account/totp/confirm", &[("code", &totp_now(&secret_again))]).await;
    assert_eq!(status, 200, "{page}");
    assert!(mfa().await);
    let codes: Vec<String> = page.split("<li><code>").skip(1).map(|c| c.split('<').next().unwrap().to_string()).collect();
    assert_eq!(codes.len(), 10, "the recovery codes, shown once: {page}");
    let (_, page) = tests::dashboard::get(&app, &ada, "/app/account").await;
    assert!(page.contains("Turn two-factor sign-in off") && !page.contains(&codes[0]), "{page}");

    let (status, location, _) = tests::dashboard::post(&app, &ada, "/app/account/totp/disable", &[("code", &codes[0])]).await;
    assert_eq!((status, location.as_deref()), (303, Some("/app/account")));
    assert!(!mfa().await, "a recovery code turned it off");
}
