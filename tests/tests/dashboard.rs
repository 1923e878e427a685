//! The dashboard at `/app` (#28, first part): signing in and out through the API's own routes,
//! the overview and the emails pages of the session's team, a strict content policy, escaping
//! everywhere, a sandboxed preview that loads no remote image, and another team's email as the
//! not-found page.

use reqwest::redirect::Policy;
use serde_json::json;
use tests::TestApp;
use tests::inbox::person;
use tests::mail::{self, Mail};

/// A browser: no redirects followed, cookies set by hand.
fn browser() -> reqwest::Client {
    reqwest::Client::builder().user_agent("Mozilla/5.0 (dashboard test)").redirect(Policy::none()).build().unwrap()
}

async fn get(app: &TestApp, cookie: Option<&str>, path: &str) -> reqwest::Response {
    let mut request = browser().get(app.url(path));
    if let Some(cookie) = cookie {
        request = request.header("cookie", format!("herald_session={cookie}"));
    }
    request.send().await.unwrap()
}

fn session_of(response: &reqwest::Response) -> Option<String> {
    response.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).find_map(|c| c.strip_prefix("herald_session=")).map(|c| c.split(';').next().unwrap().to_string())
}

#[tokio::test]
async fn a_person_signs_in_through_the_form_sees_the_overview_and_signs_out() {
    let app = TestApp::spawn().await;
    let signup = app.client.post(app.url("/auth/signup")).json(&json!({ "email": "ada@example.com", "password": "correct horse battery", "name": "Ada" })).send().await.unwrap();
    assert_eq!(signup.status(), 201);

    let away = get(&app, None, "/app").await;
    assert_eq!((away.status().as_u16(), away.headers()["location"].to_str().unwrap()), (303, "/app/login"));
    let form = get(&app, None, "/app/login").await;
    assert_eq!(form.status(), 200);
    let policy = form.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'") && !policy.contains("unsafe"), "{policy}");
    assert_eq!(form.headers()["x-frame-options"], "DENY");
    let page = form.text().await.unwrap();
    assert!(!page.contains("<script>") && !page.contains("style=\""), "no inline script or style");

    let wrong = browser().post(app.url("/app/login")).form(&[("email", "ada@example.com"), ("password", "not the password")]).send().await.unwrap();
    assert_eq!(wrong.status(), 403, "the API's answer to a wrong password");
    assert!(session_of(&wrong).is_none());
    assert!(wrong.text().await.unwrap().contains("role=\"alert\""), "the API's message is shown on the form");

    let sessions = app.count("sessions").await;
    let forged = browser().post(app.url("/app/login")).header("origin", "https://evil.example").form(&[("email", "ada@example.com"), ("password", "correct horse battery")]).send().await.unwrap();
    assert_eq!(forged.status(), 403, "a sign-in posted from another site");
    assert_eq!(app.count("sessions").await, sessions, "opens no session");

    let signed_in = browser().post(app.url("/app/login")).header("origin", &app.base).form(&[("email", "ada@example.com"), ("password", "correct horse battery")]).send().await.unwrap();
    assert_eq!((signed_in.status().as_u16(), signed_in.headers()["location"].to_str().unwrap()), (303, "/app"));
    let cookie = session_of(&signed_in).expect("a session cookie");
    let overview = get(&app, Some(&cookie), "/app").await;
    assert_eq!(overview.status(), 200);
    let html = overview.text().await.unwrap();
    assert!(html.contains("<h1>Overview</h1>") && html.contains("<a href=\"/app/account\">Ada</a> · Ada&#39;s team"), "the person and the team: {html}");
    assert!(html.contains("Verify a sending domain"), "what to do next: {html}");
    let source: String = tests::eventually(|| async {
        sqlx::query_scalar("SELECT source FROM request_logs WHERE endpoint = '/emails/metrics'").fetch_optional(&app.pool).await.unwrap()
    })
    .await;
    assert_eq!(source, "dashboard", "the page read the API as the dashboard");

    // Sign out needs the session's CSRF token.
    let stale = browser().post(app.url("/app/logout")).header("cookie", format!("herald_session={cookie}")).form(&[("csrf", "stale")]).send().await.unwrap();
    assert_eq!(stale.status(), 303);
    assert_eq!(get(&app, Some(&cookie), "/app").await.status(), 200, "a stale token signs nothing out");
    let csrf: String = sqlx::query_scalar("SELECT csrf_token FROM sessions WHERE token_hash = $1").bind(schema::secret::hash(&cookie)).fetch_one(&app.pool).await.unwrap();
    let out = browser().post(app.url("/app/logout")).header("cookie", format!("herald_session={cookie}")).form(&[("csrf", csrf.as_str())]).send().await.unwrap();
    assert_eq!((out.status().as_u16(), out.headers()["location"].to_str().unwrap()), (303, "/app/login"));
    assert_eq!(get(&app, Some(&cookie), "/app").await.status(), 303, "signed out");
}

#[tokio::test]
async fn the_emails_pages_escape_what_a_sender_wrote_and_the_preview_runs_no_script_and_loads_no_remote_image() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let admin = person(app, app.team_id, "admin", "<b>Ada</b>").await;
    let mut message = Mail::message("delivered@simulator.herald.test");
    message["subject"] = json!("<script>alert(1)</script> order");
    message["html"] = json!("<p>Hi</p><script>alert(2)</script><img src=\"https://tracker.example/pixel.gif\">");
    let id = mail.send(message).await;

    let list = get(app, Some(&admin.cookie), "/app/emails").await;
    assert_eq!(list.status(), 200);
    let html = list.text().await.unwrap();
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; order") && !html.contains("<script>alert"), "escaped: {html}");
    assert!(html.contains("&lt;b&gt;Ada&lt;/b&gt;"), "the person's name is escaped too");
    let filtered = get(app, Some(&admin.cookie), "/app/emails?search=nothing-like-this").await.text().await.unwrap();
    assert!(filtered.contains("No email matches"), "{filtered}");

    let detail = get(app, Some(&admin.cookie), &format!("/app/emails/{id}")).await;
    assert_eq!(detail.status(), 200);
    let page = detail.text().await.unwrap();
    assert!(page.contains("Timeline") && page.contains(&format!("src=\"/app/emails/{id}/preview\"")) && page.contains("sandbox"), "{page}");
    let preview = get(app, Some(&admin.cookie), &format!("/app/emails/{id}/preview")).await;
    let policy = preview.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(policy.contains("sandbox") && policy.contains("img-src data:") && !policy.contains("script-src"), "{policy}");
    assert!(preview.text().await.unwrap().contains("tracker.example"), "the email as sent; its policy keeps the image from loading");

    // Another team's email, a malformed id and no session.
    let (other, other_key) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let _ = other_key;
    let stranger = person(app, other, "admin", "Stranger").await;
    assert_eq!(get(app, Some(&stranger.cookie), &format!("/app/emails/{id}")).await.status(), 404);
    assert_eq!(get(app, Some(&stranger.cookie), &format!("/app/emails/{id}/preview")).await.status(), 404);
    assert_eq!(get(app, Some(&admin.cookie), "/app/emails/not-an-id").await.status(), 404);
    assert_eq!(get(app, None, &format!("/app/emails/{id}")).await.status(), 303);
}

#[tokio::test]
async fn the_assets_come_from_the_binary() {
    let app = TestApp::spawn().await;
    for (path, kind) in [("/app/assets/htmx.min.js", "text/javascript"), ("/app/assets/app.js", "text/javascript"), ("/app/assets/app.css", "text/css")] {
        let answer = get(&app, None, path).await;
        assert_eq!(answer.status(), 200, "{path}");
        assert!(answer.headers()["content-type"].to_str().unwrap().starts_with(kind), "{path}");
    }
    let htmx = get(&app, None, "/app/assets/htmx.min.js").await.text().await.unwrap();
    assert!(htmx.contains("htmx"), "htmx 2.0.11, vendored");
}

#[tokio::test]
async fn in_chromium_a_person_signs_in_reads_an_emails_timeline_and_axe_core_finds_no_serious_violation() {
    assert!(tests::clients::script("node_modules/playwright-core").exists(), "tests/clients/node_modules is missing: run scripts/test (npm ci)");
    let mail = mail::setup().await;
    let app = &mail.app;
    let signup = app.client.post(app.url("/auth/signup")).json(&json!({ "email": "ada@example.com", "password": "correct horse battery", "name": "Ada" })).send().await.unwrap();
    assert_eq!(signup.status(), 201);
    // Ada joins the test team (whose domain is verified) as its only membership.
    sqlx::query("UPDATE memberships SET team_id = $1 WHERE person_id = (SELECT id FROM people WHERE email = 'ada@example.com')").bind(app.team_id).execute(&app.pool).await.unwrap();
    let mut message = Mail::message("delivered@simulator.herald.test");
    message["html"] = json!("<h1 style=\"color:#333\">Your order</h1><p>Thanks for your order.</p><img src=\"https://tracker.example/p.gif\" alt=\"\">");
    let id = mail.send(message).await;
    mail.wait_for_event(&id, "delivered").await;

    let shots = tests::clients::root().join("target/screenshots/dashboard");
    let mut command = std::process::Command::new("node");
    command
        .arg(tests::clients::script("dashboard_browser.mjs"))
        .env("HERALD_BASE_URL", &app.base)
        .env("HERALD_EMAIL", "ada@example.com")
        .env("HERALD_PASSWORD", "correct horse battery")
        .env("HERALD_EMAIL_ID", &id)
        .env("HERALD_SCREENSHOTS", &shots);
    let said = tests::clients::run_ok(command).await;
    assert!(said.contains("ok axe-core finds no serious or critical violation on an email's page"), "{said}");
    assert!(shots.join("email-timeline.png").exists(), "the screenshot is kept");
}

#[tokio::test]
async fn a_domains_records_show_with_copy_buttons_a_member_verifies_and_a_viewer_gets_no_button_and_is_refused() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let domain = mail.domain["id"].as_str().unwrap().to_string();
    let member = person(app, app.team_id, "member", "Mo").await;
    let viewer = person(app, app.team_id, "viewer", "Vi").await;

    let listed = get(app, Some(&member.cookie), "/app/domains").await.text().await.unwrap();
    assert!(listed.contains(&format!("href=\"/app/domains/{domain}\"")), "{listed}");
    let page = get(app, Some(&member.cookie), &format!("/app/domains/{domain}")).await.text().await.unwrap();
    assert!(page.contains("DKIM") && page.contains("data-copy=\"p=MIIB") && page.contains("Verify now"), "{page}");
    let viewing = get(app, Some(&viewer.cookie), &format!("/app/domains/{domain}")).await.text().await.unwrap();
    assert!(viewing.contains("DKIM") && !viewing.contains("Verify now"), "a viewer sees no write control");

    let post = |cookie: String, csrf: String| {
        let url = app.url(&format!("/app/domains/{domain}/verify"));
        async move { browser().post(url).header("cookie", format!("herald_session={cookie}")).form(&[("csrf", csrf)]).send().await.unwrap() }
    };
    let checked_before: Option<chrono::DateTime<chrono::Utc>> = sqlx::query_scalar("SELECT checked_at FROM domains WHERE id = $1::uuid").bind(&domain).fetch_one(&app.pool).await.unwrap();
    assert_eq!(post(member.cookie.clone(), "stale".into()).await.status(), 403, "a stale CSRF token");
    let refused = post(viewer.cookie.clone(), viewer.csrf.clone()).await;
    assert_eq!(refused.status(), 403);
    assert!(refused.text().await.unwrap().contains("viewer"), "the API's refusal is shown");
    let unchanged: Option<chrono::DateTime<chrono::Utc>> = sqlx::query_scalar("SELECT checked_at FROM domains WHERE id = $1::uuid").bind(&domain).fetch_one(&app.pool).await.unwrap();
    assert_eq!(unchanged, checked_before, "refused posts check nothing");
    let verified = post(member.cookie.clone(), member.csrf.clone()).await;
    assert_eq!(verified.status(), 200);
    assert!(verified.text().await.unwrap().contains("Checked just now"));

    let (other, _) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let stranger = person(app, other, "admin", "Stranger").await;
    assert_eq!(get(app, Some(&stranger.cookie), &format!("/app/domains/{domain}")).await.status(), 404);
    assert_eq!(post(stranger.cookie.clone(), stranger.csrf.clone()).await.status(), 404);
}

#[tokio::test]
async fn a_member_saves_a_domains_tracking_and_rotates_its_dkim_key_and_a_viewer_gets_neither() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let domain = mail.domain["id"].as_str().unwrap().to_string();
    let member = person(app, app.team_id, "member", "Mo").await;
    let viewer = person(app, app.team_id, "viewer", "Vi").await;
    let form = |who: &tests::inbox::Person, path: &str, fields: Vec<(&'static str, String)>| {
        let request = browser().post(app.url(path)).header("cookie", format!("herald_session={}", who.cookie));
        let mut fields = fields;
        fields.push(("csrf", who.csrf.clone()));
        async move { request.form(&fields).send().await.unwrap() }
    };
    let viewing = get(app, Some(&viewer.cookie), &format!("/app/domains/{domain}")).await.text().await.unwrap();
    assert!(!viewing.contains("Save settings") && !viewing.contains("Rotate the DKIM key"), "a viewer sees no control");
    assert_eq!(form(&viewer, &format!("/app/domains/{domain}/settings"), vec![("open_tracking", "true".into())]).await.status(), 403);
    assert_eq!(app.get(&format!("/domains/{domain}")).await.body["open_tracking"], false, "the viewer's post changed nothing");

    let saved = form(&member, &format!("/app/domains/{domain}/settings"), vec![("open_tracking", "true".into()), ("receiving", "disabled".into()), ("tls", "opportunistic".into())]).await;
    assert_eq!(saved.status(), 200);
    assert!(saved.text().await.unwrap().contains("Settings saved."));
    let read = app.get(&format!("/domains/{domain}")).await.body;
    assert_eq!((read["open_tracking"].clone(), read["click_tracking"].clone()), (json!(true), json!(false)), "an unticked box is false: {read}");

    let rotated = form(&member, &format!("/app/domains/{domain}/rotate"), vec![]).await;
    assert_eq!(rotated.status(), 200);
    assert!(rotated.text().await.unwrap().contains("DKIM rotation"), "the page shows the rotation under way");
    assert!(app.get(&format!("/domains/{domain}")).await.body["dkim_rotation"].is_object());

    let (other, _) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let stranger = person(app, other, "admin", "Stranger").await;
    assert_eq!(form(&stranger, &format!("/app/domains/{domain}/settings"), vec![("open_tracking", "false".into())]).await.status(), 404);
    assert_eq!(app.get(&format!("/domains/{domain}")).await.body["open_tracking"], true, "another team changed nothing");
}

#[tokio::test]
async fn a_scheduled_email_is_rescheduled_then_cancelled_from_its_page() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let member = person(app, app.team_id, "member", "Mo").await;
    let mut message = Mail::message("delivered@simulator.herald.test");
    message["scheduled_at"] = json!("in 1 hour");
    let id = mail.send(message).await;
    let page = get(app, Some(&member.cookie), &format!("/app/emails/{id}")).await.text().await.unwrap();
    assert!(page.contains("Reschedule") && page.contains("Cancel this email"), "{page}");
    let post = |path: String, fields: Vec<(&'static str, String)>| {
        let request = browser().post(app.url(&path)).header("cookie", format!("herald_session={}", member.cookie));
        let mut fields = fields;
        fields.push(("csrf", member.csrf.clone()));
        async move { request.form(&fields).send().await.unwrap() }
    };
    let before = app.get(&format!("/emails/{id}")).await.body["scheduled_at"].clone();
    let refused = post(format!("/app/emails/{id}/reschedule"), vec![("scheduled_at", "not a time".into())]).await;
    assert!(refused.status().is_client_error(), "{}", refused.status());
    assert_eq!(app.get(&format!("/emails/{id}")).await.body["scheduled_at"], before, "a refused time changes nothing");
    let moved = post(format!("/app/emails/{id}/reschedule"), vec![("scheduled_at", "in 2 hours".into())]).await;
    assert_eq!(moved.status(), 303);
    assert_ne!(app.get(&format!("/emails/{id}")).await.body["scheduled_at"], before, "rescheduled");
    let cancelled = post(format!("/app/emails/{id}/cancel"), vec![]).await;
    assert_eq!(cancelled.status(), 303);
    assert_eq!(app.get(&format!("/emails/{id}")).await.body["last_event"], "canceled");
}

#[tokio::test]
async fn a_domain_added_from_the_dashboard_opens_its_records_and_a_refused_name_stands_beside_the_field_with_nothing_written() {
    let app = TestApp::spawn().await;
    let member = person(&app, app.team_id, "member", "Mo").await;
    let viewer = person(&app, app.team_id, "viewer", "Vi").await;
    let listed = get(&app, Some(&member.cookie), "/app/domains").await.text().await.unwrap();
    assert!(listed.contains("action=\"/app/domains\"") && listed.contains("maxlength=\"253\""), "{listed}");
    assert!(!get(&app, Some(&viewer.cookie), "/app/domains").await.text().await.unwrap().contains("action=\"/app/domains\""), "a viewer sees no form");
    let add = |who: &tests::inbox::Person, csrf: &str, name: &str| {
        let request = browser().post(app.url("/app/domains")).header("cookie", format!("herald_session={}", who.cookie)).form(&[("csrf", csrf.to_string()), ("name", name.to_string())]);
        async move { request.send().await.unwrap() }
    };
    let domains = app.count("domains").await;
    for name in ["not a domain", "shop.localhost"] {
        let refused = add(&member, &member.csrf, name).await;
        assert!(refused.status().is_client_error(), "{name}: {}", refused.status());
        let page = refused.text().await.unwrap();
        assert!(page.contains("id=\"domains-name-error\"") && page.contains("aria-invalid=\"true\""), "{name}: the error beside the field: {page}");
    }
    assert_eq!(add(&member, "stale", "shop.test").await.status(), 403);
    assert_eq!(add(&viewer, &viewer.csrf, "shop.test").await.status(), 403);
    assert_eq!(app.count("domains").await, domains, "no refused form adds a domain");

    let added = add(&member, &member.csrf, "shop.test").await;
    assert_eq!(added.status(), 303);
    let location = added.headers()["location"].to_str().unwrap().to_string();
    let page = get(&app, Some(&member.cookie), &location).await.text().await.unwrap();
    assert!(page.contains("<h1>shop.test</h1>") && page.contains("data-copy=\"p=MIIB") && page.contains("Verify now"), "{page}");
    assert_eq!(app.count("domains").await, domains + 1);
}
