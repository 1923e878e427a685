//! The dashboard's areas (#28, second part): API keys, webhooks, logs, suppressions, the
//! audience with CSV imports, templates, broadcasts, automations and the team. Every write goes
//! through the API as the session: a refusal is shown beside the field it names and writes
//! nothing, a stale CSRF token or a viewer's post is refused, what people wrote is escaped, and
//! another team's ids answer the not-found page.

use reqwest::redirect::Policy;
use serde_json::json;
use tests::TestApp;
use tests::inbox::{Person, person};

fn browser() -> reqwest::Client {
    reqwest::Client::builder().user_agent("Mozilla/5.0 (dashboard test)").redirect(Policy::none()).build().unwrap()
}

async fn get(app: &TestApp, who: &Person, path: &str) -> (u16, String) {
    let answer = browser().get(app.url(path)).header("cookie", format!("herald_session={}", who.cookie)).send().await.unwrap();
    (answer.status().as_u16(), answer.text().await.unwrap())
}

/// Posts a form as `who`, with `csrf` (the session's own unless a test says otherwise).
async fn post(app: &TestApp, who: &Person, path: &str, csrf: &str, fields: &[(&str, &str)]) -> (u16, String, Option<String>) {
    let mut form: Vec<(&str, &str)> = vec![("csrf", csrf)];
    form.extend_from_slice(fields);
    let answer = browser().post(app.url(path)).header("cookie", format!("herald_session={}", who.cookie)).form(&form).send().await.unwrap();
    let location = answer.headers().get("location").map(|l| l.to_str().unwrap().to_string());
    (answer.status().as_u16(), answer.text().await.unwrap(), location)
}

#[tokio::test]
async fn a_new_api_key_shows_its_token_once_and_a_refused_name_is_shown_beside_the_field_with_nothing_written() {
    let app = TestApp::spawn().await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let viewer = person(&app, app.team_id, "viewer", "Vi").await;
    let keys = app.count("api_keys").await;

    let (status, page) = get(&app, &admin, "/app/api-keys").await;
    assert_eq!(status, 200);
    assert!(page.contains("Create key") && page.contains("maxlength=\"255\""), "{page}");

    let long = "k".repeat(256);
    for (name, why) in [(long.as_str(), "too long"), ("a\0b", "a NUL")] {
        let (status, page, _) = post(&app, &admin, "/app/api-keys", &admin.csrf, &[("name", name), ("permission", "full_access")]).await;
        assert_eq!(status, 400, "a name {why} is a validation error: {page}");
        assert!(page.contains("id=\"api-keys-name-error\"") && page.contains("aria-invalid=\"true\""), "the error stands beside the name field: {page}");
        assert_eq!(app.count("api_keys").await, keys, "a name {why} writes no key");
    }
    let (status, _, _) = post(&app, &admin, "/app/api-keys", "stale", &[("name", "Stale")]).await;
    assert_eq!(status, 403, "a stale CSRF token");
    let (status, page, _) = post(&app, &viewer, "/app/api-keys", &viewer.csrf, &[("name", "Viewer's")]).await;
    assert_eq!(status, 403, "a viewer's post: {page}");
    assert_eq!(app.count("api_keys").await, keys, "refused posts write no key");
    assert!(!get(&app, &viewer, "/app/api-keys").await.1.contains("Create key"), "a viewer sees no form");

    let (status, page, _) = post(&app, &admin, "/app/api-keys", &admin.csrf, &[("name", "Deploys"), ("permission", "full_access")]).await;
    assert_eq!(status, 201, "{page}");
    let token = page.split("data-copy=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    assert!(token.starts_with("rk_"), "{token}");
    let works = app.client.get(app.url("/domains")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(works.status(), 200, "the shown token is a real key: {}", works.text().await.unwrap());
    let (_, list) = get(&app, &admin, "/app/api-keys").await;
    assert!(list.contains("Deploys") && !list.contains(&token), "the token is not shown again");

    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM api_keys WHERE name = 'Deploys'").fetch_one(&app.pool).await.unwrap();
    let (status, _, location) = post(&app, &admin, &format!("/app/api-keys/{id}/revoke"), &admin.csrf, &[]).await;
    assert_eq!((status, location.as_deref()), (303, Some("/app/api-keys")));
    let refused = app.client.get(app.url("/domains")).bearer_auth(&token).send().await.unwrap();
    assert!(matches!(refused.status().as_u16(), 401 | 403), "a revoked key is refused: {}", refused.status());
}

#[tokio::test]
async fn a_webhook_endpoint_shows_its_secret_once_a_bad_url_is_refused_beside_the_field_and_another_team_gets_not_found() {
    let app = TestApp::spawn_with(|c| c.webhook_allow_private = true).await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let hooks = app.count("webhook_endpoints").await;

    let (status, page, _) = post(&app, &admin, "/app/webhooks", &admin.csrf, &[("endpoint", "not a url"), ("events", "email.delivered")]).await;
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("id=\"endpoint-error\"") && page.contains("value=\"not a url\""), "the error beside the field, the value kept: {page}");
    assert!(page.contains("value=\"email.delivered\" checked"), "the chosen events stay chosen");
    assert_eq!(app.count("webhook_endpoints").await, hooks);

    let (status, page, _) = post(&app, &admin, "/app/webhooks", &admin.csrf, &[("endpoint", "http://127.0.0.1:9/herald"), ("events", "email.delivered"), ("events", "email.bounced")]).await;
    assert_eq!(status, 201, "{page}");
    assert!(page.contains("data-copy=\"whsec_"), "the signing secret, once: {page}");
    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM webhook_endpoints WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    let (status, detail) = get(&app, &admin, &format!("/app/webhooks/{id}")).await;
    assert_eq!(status, 200);
    assert!(detail.contains("email.bounced") && detail.contains("Rotate the signing secret") && !detail.contains("whsec_"), "{detail}");
    let (status, rotated, _) = post(&app, &admin, &format!("/app/webhooks/{id}/rotate"), &admin.csrf, &[]).await;
    assert_eq!(status, 200);
    assert!(rotated.contains("data-copy=\"whsec_"), "{rotated}");

    let (other, _) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let stranger = person(&app, other, "admin", "Stranger").await;
    assert_eq!(get(&app, &stranger, &format!("/app/webhooks/{id}")).await.0, 404);
    assert_eq!(post(&app, &stranger, &format!("/app/webhooks/{id}/rotate"), &stranger.csrf, &[]).await.0, 404);
}

#[tokio::test]
async fn a_contact_named_with_a_script_is_escaped_everywhere_and_a_nul_is_refused_beside_the_field() {
    let app = TestApp::spawn().await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let made = app.post("/contacts", json!({ "email": "mallory@example.com", "first_name": "<script>alert(1)</script>" })).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let id = made.body["id"].as_str().unwrap().to_string();

    for path in ["/app/contacts".to_string(), format!("/app/contacts/{id}")] {
        let (status, page) = get(&app, &admin, &path).await;
        assert_eq!(status, 200, "{path}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !page.contains("<script>alert"), "{path}: {page}");
    }

    let contacts = app.count("contacts").await;
    let (status, page, _) = post(&app, &admin, "/app/contacts", &admin.csrf, &[("email", "nul@example.com"), ("first_name", "a\0b")]).await;
    assert_eq!(status, 400, "a NUL is a validation error: {page}");
    assert!(page.contains("id=\"contacts-first_name-error\""), "beside the field: {page}");
    assert_eq!(app.count("contacts").await, contacts, "nothing written");
    let (status, _, location) = post(&app, &admin, "/app/contacts", &admin.csrf, &[("email", "grace@example.com"), ("first_name", "Grace")]).await;
    assert_eq!(status, 303);
    let (status, page) = get(&app, &admin, &location.unwrap()).await;
    assert_eq!(status, 200);
    assert!(page.contains("grace@example.com") && page.contains("Grace"));

    let (other, _) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let stranger = person(&app, other, "admin", "Stranger").await;
    assert_eq!(get(&app, &stranger, &format!("/app/contacts/{id}")).await.0, 404);
    assert_eq!(post(&app, &stranger, &format!("/app/contacts/{id}/delete"), &stranger.csrf, &[]).await.0, 404);
    assert_eq!(app.count("contacts").await, contacts + 1, "another team deletes nothing");
}

#[tokio::test]
async fn a_csv_uploaded_from_the_dashboard_imports_and_its_bar_stops_asking_when_done() {
    let mut app = TestApp::spawn().await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let csv = std::iter::once("email,first_name".to_string()).chain((0..200).map(|i| format!("reader{i}@example.com,Reader {i}"))).collect::<Vec<_>>().join("\n");
    let boundary = "dashboardtestboundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"readers.csv\"\r\nContent-Type: text/csv\r\n\r\n{csv}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"on_conflict\"\r\n\r\nskip\r\n--{boundary}--\r\n",
        admin.csrf
    );
    let upload = |body: String| {
        browser()
            .post(app.url("/app/contacts/imports"))
            .header("cookie", format!("herald_session={}", admin.cookie))
            .header("content-type", format!("multipart/form-data; boundary={boundary}"))
            .body(body)
            .send()
    };
    let stale = upload(body.replace(&admin.csrf, "stale")).await.unwrap();
    assert_eq!(stale.status(), 403, "a stale CSRF token");
    assert_eq!(app.count("contact_imports").await, 0);
    let answer = upload(body).await.unwrap();
    assert_eq!(answer.status(), 303);
    let location = answer.headers()["location"].to_str().unwrap().to_string();
    let (status, page) = get(&app, &admin, &location).await;
    assert_eq!(status, 200);
    assert!(page.contains("<progress") && page.contains("hx-trigger=\"every 1s\""), "queued (no worker yet): the bar asks again every second: {page}");
    app.start_workers();
    let fragment = format!("{location}/progress");
    let done: String = tests::eventually(|| async {
        let (_, html) = get(&app, &admin, &fragment).await;
        html.contains("completed").then_some(html)
    })
    .await;
    assert!(done.contains("value=\"100\"") && done.contains("200 created") && !done.contains("hx-trigger"), "done, and no longer polling: {done}");
    assert_eq!(app.count("contacts").await, 200);
}

#[tokio::test]
async fn two_tabs_editing_one_template_the_second_save_is_told_of_the_first_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let made = app.post("/templates", json!({ "name": "Welcome", "subject": "Hello", "html": "<p>Original</p>" })).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let id = made.body["id"].as_str().unwrap().to_string();
    let path = format!("/app/templates/{id}");
    let (status, page) = get(&app, &admin, &path).await;
    assert_eq!(status, 200);
    assert!(page.contains(&format!("src=\"{path}/preview\"")) && page.contains("sandbox"), "{page}");
    let read_at = page.split("name=\"updated_at\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_string();

    let (status, _, location) = post(&app, &admin, &path, &admin.csrf, &[("updated_at", &read_at), ("subject", "Hello"), ("html", "<p>First tab</p>")]).await;
    assert_eq!((status, location.as_deref()), (303, Some(path.as_str())), "the first tab saves");
    let (status, page, _) = post(&app, &admin, &path, &admin.csrf, &[("updated_at", &read_at), ("subject", "Hello"), ("html", "<p>Second tab</p>")]).await;
    assert_eq!(status, 412, "the second tab is told: {page}");
    assert!(page.contains("changed since") && page.contains("&lt;p&gt;Second tab&lt;/p&gt;"), "the message, and the second tab's edits kept: {page}");
    let now = app.get(&format!("/templates/{id}")).await;
    assert!(now.body["html"].as_str().unwrap().contains("First tab"), "the second save changed nothing: {}", now.body);

    // The API's own check, for any client.
    let stale = app.client.patch(app.url(&format!("/templates/{id}"))).bearer_auth(&app.key).header("if-match", format!("\"{read_at}\"")).json(&json!({ "html": "<p>x</p>" })).send().await.unwrap();
    assert_eq!(stale.status(), 412);
    assert_eq!(stale.json::<serde_json::Value>().await.unwrap()["name"], "precondition_failed");
    let current = now.body["updated_at"].as_str().unwrap();
    let fresh = app.client.patch(app.url(&format!("/templates/{id}"))).bearer_auth(&app.key).header("if-match", current).json(&json!({ "html": "<p>Third</p>" })).send().await.unwrap();
    assert_eq!(fresh.status(), 200, "the current updated_at matches");
    let malformed = app.client.patch(app.url(&format!("/templates/{id}"))).bearer_auth(&app.key).header("if-match", "yesterday").json(&json!({ "html": "<p>x</p>" })).send().await.unwrap();
    assert_eq!(malformed.status(), 422);
}

#[tokio::test]
async fn a_broadcast_missing_its_sender_is_refused_beside_the_field_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let (status, page) = get(&app, &admin, "/app/broadcasts").await;
    assert_eq!(status, 200);
    assert!(page.contains("Save as draft"), "{page}");
    let (status, page, _) = post(&app, &admin, "/app/broadcasts", &admin.csrf, &[("name", "Spring"), ("from", ""), ("subject", "News"), ("html", "<p>Hi</p>")]).await;
    assert!((400..500).contains(&status), "{status}: {page}");
    assert!(page.contains("role=\"alert\"") && page.contains("value=\"Spring\""), "the API's message and the values kept: {page}");
    assert_eq!(app.count("broadcasts").await, 0);
}

#[tokio::test]
async fn every_area_opens_for_a_viewer_with_no_write_control_and_the_logs_say_dashboard() {
    let app = TestApp::spawn().await;
    let viewer = person(&app, app.team_id, "viewer", "Vi").await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let areas = [
        "/app/api-keys", "/app/webhooks", "/app/logs", "/app/suppressions", "/app/contacts", "/app/contacts/imports", "/app/segments", "/app/topics", "/app/templates", "/app/broadcasts",
        "/app/automations", "/app/team", "/app/inbox",
    ];
    for path in areas {
        let (status, page) = get(&app, &viewer, path).await;
        assert_eq!(status, 200, "{path}: {page}");
        assert_eq!(page.matches("method=\"post\"").count(), 1, "{path}: a viewer sees only the sign-out form");
        let (status, page) = get(&app, &admin, path).await;
        assert_eq!(status, 200, "{path}: {page}");
        assert!(matches!(path, "/app/logs" | "/app/api-keys") || page.contains("class=\"empty\""), "{path}: an empty state that says what to do");
    }
    let (status, logs) = get(&app, &admin, "/app/logs").await;
    assert_eq!(status, 200);
    assert!(logs.contains("GET /api-keys") && logs.contains("dashboard"), "the pages' own reads, from the dashboard: {logs}");
    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM request_logs WHERE team_id = $1 AND source = 'dashboard' LIMIT 1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(get(&app, &admin, &format!("/app/logs/{id}")).await.0, 200);
    let (other, _) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let stranger = person(&app, other, "admin", "Stranger").await;
    assert_eq!(get(&app, &stranger, &format!("/app/logs/{id}")).await.0, 404);
}

#[tokio::test]
async fn a_removed_members_session_opens_no_page_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let gone = person(&app, app.team_id, "admin", "Gone").await;
    assert_eq!(get(&app, &gone, "/app/contacts").await.0, 200);
    sqlx::query("DELETE FROM memberships WHERE person_id = $1").bind(gone.id).execute(&app.pool).await.unwrap();
    for path in ["/app", "/app/contacts", "/app/api-keys", "/app/logs"] {
        let answer = browser().get(app.url(path)).header("cookie", format!("herald_session={}", gone.cookie)).send().await.unwrap();
        assert_eq!((answer.status().as_u16(), answer.headers().get("location").map(|l| l.to_str().unwrap().to_string())), (303, Some("/app/login".to_string())), "{path}");
    }
    let keys = app.count("api_keys").await;
    let (status, _, location) = post(&app, &gone, "/app/api-keys", &gone.csrf, &[("name", "After leaving")]).await;
    assert_eq!((status, location.as_deref()), (303, Some("/app/login")));
    assert_eq!(app.count("api_keys").await, keys, "nothing written");
}
