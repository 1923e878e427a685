//! The OAuth 2.1 server over real HTTP: registration and its management, authorize with every
//! refusal of document C, the consent page, the token endpoint with PKCE, rotation and reuse
//! detection, revocation, discovery, grants, and the scopes the gateway enforces.

use reqwest::Method;
use reqwest::redirect::Policy;
use serde_json::{Value, json};
use tests::{Answer, TestApp};

const PASSWORD: &str = "correct horse battery";
const REDIRECT: &str = "http://127.0.0.1:9/callback";
const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

/// An app whose public URL is where it listens (so the links it hands out work).
async fn app() -> TestApp {
    let port = tests::bench::free_port().unwrap();
    TestApp::spawn_with(|c| {
        c.http_addr = format!("127.0.0.1:{port}").parse().unwrap();
        c.public_url = format!("http://127.0.0.1:{port}");
        c.rate_limit_capacity = 1000;
        c.rate_limit_refill = 1000.0;
    })
    .await
}

/// A client that never follows redirects (the test reads each one).
fn browser() -> reqwest::Client {
    reqwest::Client::builder().redirect(Policy::none()).user_agent("herald-tests/1.0").build().unwrap()
}

async fn post_json(app: &TestApp, path: &str, body: Value) -> Answer {
    Answer::from(app.client.post(app.url(path)).json(&body).send().await.unwrap()).await
}

async fn post_form(app: &TestApp, path: &str, form: &[(&str, &str)]) -> Answer {
    Answer::from(app.client.post(app.url(path)).form(form).send().await.unwrap()).await
}

fn assert_oauth_error(answer: &Answer, status: u16, error: &str) {
    assert_eq!((answer.status, answer.body["error"].as_str()), (status, Some(error)), "{}", answer.body);
    assert!(answer.body["error_description"].is_string(), "{}", answer.body);
}

async fn register(app: &TestApp, scope: Option<&str>) -> Value {
    let answer = post_json(app, "/oauth/register", json!({ "client_name": "Agent Smith", "redirect_uris": [REDIRECT], "scope": scope, "client_uri": "https://agent.example" })).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body
}

/// A person signed up with their own team: (cookie token, CSRF token, team id).
async fn person(app: &TestApp, email: &str) -> (String, String, String) {
    let answer = post_json(app, "/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "Ada" })).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let token = answer.header("set-cookie").unwrap().strip_prefix("herald_session=").unwrap().split(';').next().unwrap().to_string();
    (token, answer.body["csrf_token"].as_str().unwrap().to_string(), answer.body["team"]["id"].as_str().unwrap().to_string())
}

fn authorize_query(client_id: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut query: Vec<(String, String)> = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("code_challenge", &api::routes::oauth::tokens::pkce_challenge(VERIFIER)),
        ("code_challenge_method", "S256"),
        ("state", "xyz"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (key, value) in extra {
        query.retain(|(k, _)| k != key);
        if !value.is_empty() {
            query.push((key.to_string(), value.to_string()));
        }
    }
    query
}

/// GET /oauth/authorize: the status and the `Location` (or the body).
async fn authorize(app: &TestApp, query: &[(String, String)]) -> (u16, String) {
    let response = browser().get(app.url("/oauth/authorize")).query(query).send().await.unwrap();
    let status = response.status().as_u16();
    let location = response.headers().get("location").map(|l| l.to_str().unwrap().to_string());
    (status, location.unwrap_or(response.text().await.unwrap()))
}

fn query_of(location: &str) -> std::collections::HashMap<String, String> {
    url::Url::parse(location).unwrap().query_pairs().into_owned().collect()
}

/// Runs authorize and the consent page as the signed-in person, approving for `team`: the code.
async fn code_for(app: &TestApp, client_id: &str, person: &(String, String, String), team: &str, extra: &[(&str, &str)]) -> String {
    let (status, consent) = authorize(app, &authorize_query(client_id, extra)).await;
    assert_eq!(status, 302, "{consent}");
    let cookie = format!("herald_session={}", person.0);
    let page = browser().get(&consent).header("cookie", &cookie).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Allow Agent Smith?") && page.contains(team), "{page}");
    let answer = browser()
        .post(&consent)
        .header("cookie", &cookie)
        .form(&[("csrf_token", person.1.as_str()), ("team_id", team), ("decision", "approve")])
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 302);
    let location = answer.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with(REDIRECT), "{location}");
    let query = query_of(&location);
    assert_eq!(query["state"], "xyz");
    query["code"].clone()
}

async fn exchange(app: &TestApp, client_id: &str, code: &str, verifier: &str) -> Answer {
    post_form(app, "/oauth/token", &[("grant_type", "authorization_code"), ("code", code), ("redirect_uri", REDIRECT), ("client_id", client_id), ("code_verifier", verifier)]).await
}

async fn with_token(app: &TestApp, token: &str, method: Method, path: &str, body: Option<Value>) -> Answer {
    let mut request = app.request_as(token, method, path);
    if let Some(body) = body {
        request = request.json(&body);
    }
    Answer::from(request.send().await.unwrap()).await
}

#[tokio::test]
async fn discovery_names_the_endpoints_pkce_public_clients_and_every_scope() {
    let app = app().await;
    let server = app.get("/.well-known/oauth-authorization-server").await;
    assert_eq!(server.status, 200);
    assert_eq!(server.body["issuer"], app.base);
    assert_eq!(server.body["token_endpoint"], app.url("/oauth/token"));
    assert_eq!(server.body["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(server.body["token_endpoint_auth_methods_supported"], json!(["none"]));
    let scopes = server.body["scopes_supported"].as_array().unwrap();
    for scope in ["emails:send", "emails:read", "domains:read", "contacts:write", "templates:read", "inbox:write", "ai:use"] {
        assert!(scopes.contains(&json!(scope)), "{scope}");
    }
    let resource = app.get("/.well-known/oauth-protected-resource").await;
    assert_eq!((&resource.body["resource"], &resource.body["authorization_servers"]), (&json!(app.base), &json!([app.base])));
}

#[tokio::test]
async fn registration_refuses_what_document_c_names_and_its_token_alone_manages_it() {
    let app = app().await;
    for (body, status, error) in [
        (json!({ "client_name": "x", "redirect_uris": ["http://agent.example/cb"] }), 400, "invalid_redirect_uri"),
        (json!({ "client_name": "x", "redirect_uris": [] }), 400, "invalid_redirect_uri"),
        (json!({ "client_name": "x", "redirect_uris": ["https://a.example/cb#frag"] }), 400, "invalid_redirect_uri"),
        (json!({ "client_name": "x", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic" }), 400, "invalid_client_metadata"),
        (json!({ "client_name": "x", "redirect_uris": [REDIRECT], "response_types": ["token"] }), 400, "invalid_client_metadata"),
        (json!({ "client_name": "x", "redirect_uris": [REDIRECT], "grant_types": ["client_credentials"] }), 400, "invalid_client_metadata"),
        (json!({ "client_name": "x", "redirect_uris": [REDIRECT], "scope": "emails:send everything" }), 400, "invalid_client_metadata"),
        (json!({ "client_name": "x", "redirect_uris": [REDIRECT], "client_uri": "http://agent.example" }), 400, "invalid_client_metadata"),
        (json!({ "redirect_uris": [REDIRECT] }), 400, "invalid_client_metadata"),
    ] {
        assert_oauth_error(&post_json(&app, "/oauth/register", body).await, status, error);
    }
    assert_eq!(app.count("oauth_clients").await, 0, "refused registrations write nothing");

    let client = register(&app, Some("emails:send emails:read")).await;
    let client_id = client["client_id"].as_str().unwrap();
    assert!(client_id.starts_with("rkoc_"));
    let token = client["registration_access_token"].as_str().unwrap();
    assert!(token.starts_with("rkor_"));
    assert_eq!((client["token_endpoint_auth_method"].as_str(), &client["grant_types"]), (Some("none"), &json!(["authorization_code", "refresh_token"])));
    let stored: Vec<u8> = sqlx::query_scalar("SELECT registration_token_hash FROM oauth_clients").fetch_one(&app.pool).await.unwrap();
    assert_eq!(stored, schema::secret::hash(token));

    let path = format!("/oauth/register/{client_id}");
    let read = Answer::from(app.request_as(token, Method::GET, &path).send().await.unwrap()).await;
    assert_eq!((read.status, read.body["client_name"].as_str()), (200, Some("Agent Smith")));
    assert!(read.body.get("registration_access_token").is_none(), "the token is answered once");
    for bearer in [app.key.as_str(), "rkor_unknown"] {
        let refused = Answer::from(app.request_as(bearer, Method::GET, &path).send().await.unwrap()).await;
        assert_oauth_error(&refused, 401, "invalid_token");
        assert_eq!(refused.header("www-authenticate"), Some("Bearer error=\"invalid_token\""));
    }
    let renamed = Answer::from(app.request_as(token, Method::PUT, &path).json(&json!({ "client_name": "Agent Jones", "redirect_uris": [REDIRECT] })).send().await.unwrap()).await;
    assert_eq!((renamed.status, renamed.body["client_name"].as_str()), (200, Some("Agent Jones")), "{}", renamed.body);
    let deleted = app.request_as(token, Method::DELETE, &path).send().await.unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    assert_oauth_error(&Answer::from(app.request_as(token, Method::GET, &path).send().await.unwrap()).await, 401, "invalid_token");
}

#[tokio::test]
async fn registration_is_limited_to_ten_an_hour_from_one_address() {
    let app = app().await;
    for _ in 0..10 {
        register(&app, None).await;
    }
    let over = post_json(&app, "/oauth/register", json!({ "client_name": "x", "redirect_uris": [REDIRECT] })).await;
    assert_oauth_error(&over, 429, "invalid_request");
    assert_eq!(app.count("oauth_clients").await, 10);
}

#[tokio::test]
async fn authorize_answers_a_page_for_an_unknown_client_or_redirect_and_redirects_every_other_refusal_with_its_state() {
    let app = app().await;
    let client = register(&app, Some("emails:send emails:read domains:read")).await;
    let id = client["client_id"].as_str().unwrap();

    let (status, page) = authorize(&app, &authorize_query("rkoc_unknown", &[])).await;
    assert!(status == 400 && page.contains("not registered"), "{status} {page}");
    let (status, page) = authorize(&app, &authorize_query(id, &[("redirect_uri", "http://127.0.0.1:9/elsewhere")])).await;
    assert!(status == 400 && page.contains("did not register"), "{status} {page}");

    for (extra, error) in [
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("code_challenge", "")], "invalid_request"),
        (vec![("code_challenge", &*format!("{}A", api::routes::oauth::tokens::pkce_challenge(VERIFIER)))], "invalid_request"),
        (vec![("response_type", "token")], "unsupported_response_type"),
        (vec![("scope", "emails:send broadcasts:write")], "invalid_scope"),
        (vec![("scope", "nonsense")], "invalid_scope"),
        (vec![("resource", "https://api.other.example")], "invalid_target"),
    ] {
        let (status, location) = authorize(&app, &authorize_query(id, &extra)).await;
        assert_eq!(status, 302, "{extra:?}: {location}");
        let query = query_of(&location);
        assert!(location.starts_with(REDIRECT), "{location}");
        assert_eq!((query["error"].as_str(), query["state"].as_str()), (error, "xyz"), "{extra:?}");
        assert!(query.contains_key("error_description"));
    }
    let long_state = "s".repeat(513);
    let (status, location) = authorize(&app, &authorize_query(id, &[("state", &long_state)])).await;
    assert_eq!((status, query_of(&location)["error"].as_str()), (302, "invalid_request"));
    assert_eq!(app.count("oauth_requests").await, 0, "no refusal stored a request");

    let (status, location) = authorize(&app, &authorize_query(id, &[("state", &"s".repeat(512)), ("resource", &app.base)])).await;
    assert!(status == 302 && location.starts_with(&app.url("/oauth/consent/")), "{location}");
}

#[tokio::test]
async fn the_consent_page_signs_in_and_a_refusal_redirects_with_access_denied() {
    let app = app().await;
    let client = register(&app, Some("emails:read")).await;
    let (_, consent) = authorize(&app, &authorize_query(client["client_id"].as_str().unwrap(), &[])).await;
    let page = browser().get(&consent).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Sign in to continue") && page.contains("Agent Smith") && page.contains("https://agent.example"), "{page}");
    post_json(&app, "/auth/signup", json!({ "email": "ada@example.com", "password": PASSWORD, "name": "Ada" })).await;

    let wrong = browser().post(&consent).form(&[("action", "sign_in"), ("email", "ada@example.com"), ("password", "wrong password")]).send().await.unwrap();
    assert!(wrong.headers().get("set-cookie").is_none());
    assert!(wrong.text().await.unwrap().contains("wrong"));
    let signed = browser().post(&consent).form(&[("action", "sign_in"), ("email", "ada@example.com"), ("password", PASSWORD)]).send().await.unwrap();
    let cookie = signed.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let page = signed.text().await.unwrap();
    assert!(page.contains("Allow Agent Smith?") && page.contains("emails:read") && page.contains("Ada&#39;s team"), "{page}");
    let csrf = page.split("name=\"csrf_token\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_string();

    let stale = browser().post(&consent).header("cookie", &cookie).form(&[("csrf_token", "wrong"), ("decision", "approve")]).send().await.unwrap();
    assert_eq!(stale.status().as_u16(), 200, "a wrong CSRF token shows the page again");
    let refused = browser().post(&consent).header("cookie", &cookie).form(&[("csrf_token", csrf.as_str()), ("decision", "deny")]).send().await.unwrap();
    let query = query_of(refused.headers()["location"].to_str().unwrap());
    assert_eq!((query["error"].as_str(), query["state"].as_str()), ("access_denied", "xyz"));
    assert_eq!((app.count("oauth_grants").await, app.count("oauth_codes").await), (0, 0));
    assert_eq!(browser().get(&consent).send().await.unwrap().status().as_u16(), 404, "an answered request is gone");
}

#[tokio::test]
async fn a_code_exchanges_once_with_its_verifier_and_a_replay_revokes_what_it_issued() {
    let app = app().await;
    let client = register(&app, None).await;
    let id = client["client_id"].as_str().unwrap();
    let other = register(&app, None).await;
    let ada = person(&app, "ada@example.com").await;
    let code = code_for(&app, id, &ada, &ada.2, &[("scope", "domains:read emails:send")]).await;
    assert!(code.starts_with("rkc_"));

    assert_oauth_error(&exchange(&app, id, &code, "a-different-verifier-of-forty-three-characters-000000").await, 400, "invalid_grant");
    assert_oauth_error(&exchange(&app, other["client_id"].as_str().unwrap(), &code, VERIFIER).await, 400, "invalid_grant");
    assert_oauth_error(&post_form(&app, "/oauth/token", &[("grant_type", "authorization_code"), ("code", &code), ("redirect_uri", "http://127.0.0.1:9/other"), ("client_id", id), ("code_verifier", VERIFIER)]).await, 400, "invalid_grant");
    assert_oauth_error(&post_form(&app, "/oauth/token", &[("grant_type", "password"), ("client_id", id)]).await, 400, "unsupported_grant_type");
    assert_oauth_error(&post_form(&app, "/oauth/token", &[("grant_type", "authorization_code"), ("client_id", "rkoc_nobody")]).await, 401, "invalid_client");
    assert_oauth_error(&post_form(&app, "/oauth/token", &[("grant_type", "authorization_code"), ("client_id", id), ("client_id", id)]).await, 400, "invalid_request");
    assert_oauth_error(&post_form(&app, "/oauth/token", &[("grant_type", "authorization_code"), ("code", &code), ("redirect_uri", REDIRECT), ("client_id", id), ("code_verifier", VERIFIER), ("resource", "https://api.other.example")]).await, 400, "invalid_target");
    assert_eq!(app.count("oauth_tokens").await, 0, "refusals issued nothing");

    let tokens = exchange(&app, id, &code, VERIFIER).await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    assert_eq!(tokens.header("cache-control"), Some("no-store"));
    let access = tokens.body["access_token"].as_str().unwrap();
    assert!(access.starts_with("rko_") && tokens.body["refresh_token"].as_str().unwrap().starts_with("rkr_"));
    assert_eq!((tokens.body["token_type"].as_str(), tokens.body["expires_in"].as_i64(), tokens.body["scope"].as_str()), (Some("Bearer"), Some(3600), Some("domains:read emails:send")));
    let stored: Vec<Vec<u8>> = sqlx::query_scalar("SELECT token_hash FROM oauth_tokens").fetch_all(&app.pool).await.unwrap();
    assert!(stored.contains(&schema::secret::hash(access)), "tokens are stored as hashes");
    assert_eq!(with_token(&app, access, Method::GET, "/domains", None).await.status, 200);

    assert_oauth_error(&exchange(&app, id, &code, VERIFIER).await, 400, "invalid_grant");
    with_token(&app, access, Method::GET, "/domains", None).await.assert_error(401, "invalid_api_key");

    sqlx::query("UPDATE oauth_codes SET used_at = NULL, expires_at = now() - interval '1 second'").execute(&app.pool).await.unwrap();
    assert_oauth_error(&exchange(&app, id, &code, VERIFIER).await, 400, "invalid_grant");
}

#[tokio::test]
async fn a_refresh_token_rotates_and_using_one_twice_revokes_the_family() {
    let app = app().await;
    let client = register(&app, None).await;
    let id = client["client_id"].as_str().unwrap();
    let ada = person(&app, "ada@example.com").await;
    let code = code_for(&app, id, &ada, &ada.2, &[("scope", "domains:read emails:read")]).await;
    let first = exchange(&app, id, &code, VERIFIER).await.body;
    let refresh = |token: String, scope: Option<&'static str>| {
        let mut form = vec![("grant_type", "refresh_token".to_string()), ("refresh_token", token), ("client_id", id.to_string())];
        if let Some(scope) = scope {
            form.push(("scope", scope.to_string()));
        }
        let app = &app;
        async move { Answer::from(app.client.post(app.url("/oauth/token")).form(&form).send().await.unwrap()).await }
    };
    let old_refresh = first["refresh_token"].as_str().unwrap().to_string();
    assert_oauth_error(&refresh(old_refresh.clone(), Some("domains:read domains:write")).await, 400, "invalid_scope");
    let second = refresh(old_refresh.clone(), Some("domains:read")).await;
    assert_eq!((second.status, second.body["scope"].as_str()), (200, Some("domains:read")), "{}", second.body);
    let narrowed = second.body["access_token"].as_str().unwrap();
    assert_eq!(with_token(&app, narrowed, Method::GET, "/domains", None).await.status, 200);
    with_token(&app, narrowed, Method::GET, "/emails", None).await.assert_error(403, "invalid_permission");

    assert_oauth_error(&refresh(old_refresh, None).await, 400, "invalid_grant");
    with_token(&app, narrowed, Method::GET, "/domains", None).await.assert_error(401, "invalid_api_key");
    assert_oauth_error(&refresh(second.body["refresh_token"].as_str().unwrap().to_string(), None).await, 400, "invalid_grant");
}

#[tokio::test]
async fn a_token_reaches_what_its_scopes_reach_as_its_member_and_grants_and_revocation_stop_it() {
    let app = app().await;
    let client = register(&app, None).await;
    let id = client["client_id"].as_str().unwrap();
    let ada = person(&app, "ada@example.com").await;
    // Ada joins the app's team (with its API key) as a viewer, and grants in it.
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) SELECT $1, id, 'viewer' FROM people").bind(app.team_id).execute(&app.pool).await.unwrap();
    let team = app.team_id.to_string();
    let code = code_for(&app, id, &ada, &team, &[("scope", "domains:read domains:write team:read team:write contacts:read")]).await;
    let access = exchange(&app, id, &code, VERIFIER).await.body["access_token"].as_str().unwrap().to_string();

    let domains = with_token(&app, &access, Method::GET, "/domains", None).await;
    assert_eq!(domains.status, 200, "{}", domains.body);
    assert_eq!(with_token(&app, &access, Method::GET, "/team", None).await.body["id"], json!(team), "the token acts in its team");
    for (method, path, body) in [
        (Method::POST, "/domains", Some(json!({ "name": "viewer.example" }))),
        (Method::GET, "/api-keys", None),
        (Method::GET, "/team/members", None),
        (Method::GET, "/oauth/grants", None),
        (Method::GET, "/emails", None),
        (Method::GET, "/auth/session", None),
    ] {
        with_token(&app, &access, method.clone(), path, body).await.assert_error(403, "invalid_permission");
    }
    assert_eq!(app.count("domains").await, 0, "a viewer's token wrote nothing");

    sqlx::query("UPDATE memberships SET role = 'admin' WHERE team_id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();
    let created = with_token(&app, &access, Method::POST, "/domains", Some(json!({ "name": "agent.example" }))).await;
    assert_eq!(created.status, 201, "an admin's token writes: {}", created.body);
    with_token(&app, &access, Method::PATCH, "/team", Some(json!({ "name": "Renamed" }))).await.assert_error(403, "invalid_permission");
    assert_eq!(with_token(&app, &access, Method::PATCH, "/team", Some(json!({ "sender_name": "Agent" }))).await.status, 200);
    let logged: Option<Uuid> = sqlx::query_scalar("SELECT api_key_id FROM request_logs WHERE path = '/domains' AND method = 'POST' AND response_status = 201").fetch_optional(&app.pool).await.unwrap().flatten();
    assert_eq!(logged, None, "a token's calls are logged without a key");

    let grants = app.get("/oauth/grants").await;
    assert_eq!(grants.status, 200, "{}", grants.body);
    let grant = &grants.body["data"][0];
    assert_eq!((grant["client_name"].as_str(), grant["user_email"].as_str()), (Some("Agent Smith"), Some("ada@example.com")));
    let deleted = app.delete(&format!("/oauth/grants/{}", grant["id"].as_str().unwrap())).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    with_token(&app, &access, Method::GET, "/domains", None).await.assert_error(401, "invalid_api_key");
    app.delete(&format!("/oauth/grants/{}", grant["id"].as_str().unwrap())).await.assert_error(404, "not_found");

    let code = code_for(&app, id, &ada, &team, &[("scope", "domains:read")]).await;
    let tokens = exchange(&app, id, &code, VERIFIER).await.body;
    let access = tokens["access_token"].as_str().unwrap();
    let revoked = app.client.post(app.url("/oauth/revoke")).form(&[("token", tokens["refresh_token"].as_str().unwrap()), ("client_id", id)]).send().await.unwrap();
    assert_eq!(revoked.status().as_u16(), 200);
    with_token(&app, access, Method::GET, "/domains", None).await.assert_error(401, "invalid_api_key");
    assert_eq!(app.client.post(app.url("/oauth/revoke")).form(&[("token", "rko_unknown")]).send().await.unwrap().status().as_u16(), 200);

    sqlx::query("DELETE FROM memberships WHERE team_id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    let code = code_for(&app, id, &ada, &ada.2, &[("scope", "domains:read")]).await;
    let access = exchange(&app, id, &code, VERIFIER).await.body["access_token"].as_str().unwrap().to_string();
    assert_eq!(with_token(&app, &access, Method::GET, "/domains", None).await.status, 200);
    sqlx::query("DELETE FROM memberships").execute(&app.pool).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();
    with_token(&app, &access, Method::GET, "/domains", None).await.assert_error(401, "invalid_api_key");
}

use uuid::Uuid;

#[tokio::test]
async fn a_client_without_the_refresh_grant_is_unauthorized_for_it_and_a_thousand_registrations_a_day_close_registration() {
    let app = app().await;
    let answer = post_json(&app, "/oauth/register", json!({ "client_name": "Agent Smith", "redirect_uris": [REDIRECT], "grant_types": ["authorization_code"] })).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let id = answer.body["client_id"].as_str().unwrap();
    let ada = person(&app, "ada@example.com").await;
    let code = code_for(&app, id, &ada, &ada.2, &[("scope", "domains:read")]).await;
    let tokens = exchange(&app, id, &code, VERIFIER).await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let refused = post_form(&app, "/oauth/token", &[("grant_type", "refresh_token"), ("refresh_token", tokens.body["refresh_token"].as_str().unwrap()), ("client_id", id)]).await;
    assert_oauth_error(&refused, 400, "unauthorized_client");

    // A thousand registrations today from other addresses: the next one is refused from anywhere.
    sqlx::query(
        "INSERT INTO oauth_clients (id, client_id, registration_token_hash, client_name, redirect_uris, grant_types, response_types, registered_from)
         SELECT gen_random_uuid(), 'rkoc_day_' || n, decode(md5(n::text), 'hex'), 'x', '{https://x.example/cb}', '{authorization_code}', '{code}', '10.0.' || (n / 200) || '.' || (n % 200)
         FROM generate_series(1, 999) n",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let clients = app.count("oauth_clients").await;
    assert_eq!(clients, 1000);
    assert_oauth_error(&post_json(&app, "/oauth/register", json!({ "client_name": "x", "redirect_uris": [REDIRECT] })).await, 429, "invalid_request");
    assert_eq!(app.count("oauth_clients").await, clients, "a refused registration writes nothing");
}

#[tokio::test]
async fn a_nul_or_a_ten_megabyte_value_in_any_oauth_field_is_a_4xx_and_writes_nothing() {
    let app = app().await;
    let client = register(&app, None).await;
    let id = client["client_id"].as_str().unwrap();
    let huge = "x".repeat(10 * 1024 * 1024);
    let clients = app.count("oauth_clients").await;
    for bad in ["nul\u{0}name", huge.as_str()] {
        let registered = post_json(&app, "/oauth/register", json!({ "client_name": bad, "redirect_uris": [REDIRECT] })).await;
        assert!((400..500).contains(&registered.status), "{}", registered.status);
        for field in ["grant_type", "client_id", "code", "redirect_uri", "code_verifier", "refresh_token", "scope", "resource"] {
            let mut form = vec![("grant_type", "authorization_code"), ("client_id", id), ("code", "rkc_x"), ("redirect_uri", REDIRECT), ("code_verifier", VERIFIER)];
            form.retain(|(k, _)| *k != field);
            form.push((field, bad));
            let answer = post_form(&app, "/oauth/token", &form).await;
            assert!((400..500).contains(&answer.status) && answer.body["error"].is_string(), "{field}: {} {}", answer.status, answer.body);
        }
        let revoked = app.client.post(app.url("/oauth/revoke")).form(&[("token", bad), ("client_id", bad)]).send().await.unwrap();
        // Ten megabytes pass the route's body limit: refused before they are read on (413), in
        // OAuth's error shape like every answer of the route.
        let expected = if bad.len() > 1024 * 1024 { 413 } else { 400 };
        assert_eq!(revoked.status().as_u16(), expected, "revoke");
        assert_eq!(revoked.json::<Value>().await.unwrap()["error"], "invalid_request");
    }
    assert_eq!((app.count("oauth_clients").await, app.count("oauth_tokens").await), (clients, 0));

    let (_, consent) = authorize(&app, &authorize_query(id, &[])).await;
    for bad in ["ada\u{0}@example.com", huge.as_str()] {
        let answer = browser().post(&consent).form(&[("action", "sign_in"), ("email", bad), ("password", bad), ("mfa_code", bad)]).send().await.unwrap();
        let expected = if bad.len() > 1024 * 1024 { 413 } else { 200 };
        assert_eq!(answer.status().as_u16(), expected);
        assert!(answer.headers().get("set-cookie").is_none(), "no session for a hostile sign-in");
    }
    assert_eq!(app.count("sessions").await, 0);
}
