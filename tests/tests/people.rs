//! People and the dashboard session: sign-up, sign-in with throttling, the cookie, CSRF, and
//! the wall between the session and API keys.

use reqwest::Method;
use serde_json::{Value, json};
use tests::{Answer, TestApp};

/// A call without a key, with the session cookie (and CSRF token) when given.
async fn call(app: &TestApp, method: Method, path: &str, cookie: Option<&str>, csrf: Option<&str>, body: Option<Value>) -> Answer {
    let mut request = app.client.request(method, app.url(path));
    if let Some(cookie) = cookie {
        request = request.header("cookie", format!("herald_session={cookie}"));
    }
    if let Some(csrf) = csrf {
        request = request.header("x-csrf-token", csrf);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    Answer::from(request.send().await.unwrap()).await
}

/// The session token of a `Set-Cookie` answer.
fn session_token(answer: &Answer) -> String {
    let cookie = answer.header("set-cookie").expect("a session cookie is set");
    cookie.strip_prefix("herald_session=").unwrap().split(';').next().unwrap().to_string()
}

async fn sign_up(app: &TestApp, email: &str) -> (String, String) {
    let answer = call(app, Method::POST, "/auth/signup", None, None, Some(json!({ "email": email, "password": "correct horse battery", "name": "Ada" }))).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    (session_token(&answer), answer.body["csrf_token"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn sign_up_opens_an_http_only_lax_session_stored_as_a_hash_with_a_first_team_the_person_administers() {
    let app = TestApp::spawn().await;
    let answer = call(&app, Method::POST, "/auth/signup", None, None, Some(json!({ "email": " Ada@Example.com ", "password": "correct horse battery", "name": "Ada" }))).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let cookie = answer.header("set-cookie").unwrap().to_string();
    assert!(cookie.starts_with("herald_session=hs_"), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie} has {attribute}");
    }
    assert!(!cookie.contains("Secure"), "no Secure over http: {cookie}");
    assert_eq!(answer.body["user"]["email"], "ada@example.com");
    assert_eq!(answer.body["user"]["email_verified"], false);
    assert_eq!((answer.body["team"]["name"].as_str(), answer.body["team"]["role"].as_str()), (Some("Ada's team"), Some("admin")));

    let token = session_token(&answer);
    let stored: Vec<u8> = sqlx::query_scalar("SELECT token_hash FROM sessions").fetch_one(&app.pool).await.unwrap();
    assert_eq!(stored, schema::secret::hash(&token), "only the token's SHA-256 is stored");
    let hash: String = sqlx::query_scalar("SELECT password_hash FROM people").fetch_one(&app.pool).await.unwrap();
    assert!(hash.starts_with("$argon2id$"), "{hash}");

    let session = call(&app, Method::GET, "/auth/session", Some(&token), None, None).await;
    assert_eq!(session.status, 200, "{}", session.body);
    assert_eq!(session.body["team"]["id"], answer.body["team"]["id"]);
    assert_eq!(session.body["csrf_token"], answer.body["csrf_token"]);
}

#[tokio::test]
async fn a_secure_cookie_is_set_when_the_public_url_is_https() {
    let app = TestApp::spawn_with(|c| c.public_url = "https://herald.example".into()).await;
    let answer = call(&app, Method::POST, "/auth/signup", None, None, Some(json!({ "email": "a@example.com", "password": "correct horse battery", "name": "A" }))).await;
    assert!(answer.header("set-cookie").unwrap().contains("; Secure"));
}

#[tokio::test]
async fn refused_sign_ups_answer_422_and_write_nothing() {
    let app = TestApp::spawn().await;
    sign_up(&app, "taken@example.com").await;
    let before = (app.count("people").await, app.count("teams").await, app.count("sessions").await);
    for (body, path) in [
        (json!({ "email": "TAKEN@example.com", "password": "correct horse battery", "name": "B" }), "email"),
        (json!({ "email": "not an address", "password": "correct horse battery", "name": "B" }), "email"),
        (json!({ "email": "b@example.com", "password": "short", "name": "B" }), "password"),
        (json!({ "email": "b@example.com", "password": "correct horse battery", "name": "  " }), "name"),
    ] {
        let answer = call(&app, Method::POST, "/auth/signup", None, None, Some(body)).await;
        answer.assert_error(422, "validation_error");
        assert_eq!(answer.body["errors"][0]["path"], path);
    }
    call(&app, Method::POST, "/auth/signup", None, None, Some(json!({ "password": "correct horse battery", "name": "B" }))).await.assert_error(422, "missing_required_field");
    assert_eq!((app.count("people").await, app.count("teams").await, app.count("sessions").await), before);
}

#[tokio::test]
async fn a_wrong_password_is_403_and_five_failures_for_an_address_hold_even_the_right_password_with_429() {
    let app = TestApp::spawn().await;
    sign_up(&app, "ada@example.com").await;
    let sessions = app.count("sessions").await;
    let login = |password: &'static str| call(&app, Method::POST, "/auth/login", None, None, Some(json!({ "email": "ada@example.com", "password": password })));
    let right = login("correct horse battery").await;
    assert_eq!(right.status, 200, "{}", right.body);
    assert!(right.header("set-cookie").is_some());
    let mut message = Value::Null;
    for _ in 0..5 {
        let wrong = login("wrong horse battery").await;
        wrong.assert_error(403, "validation_error");
        assert!(wrong.header("set-cookie").is_none());
        message = wrong.body["message"].clone();
    }
    let unknown = call(&app, Method::POST, "/auth/login", None, None, Some(json!({ "email": "nobody@example.com", "password": "correct horse battery" }))).await;
    unknown.assert_error(403, "validation_error");
    assert_eq!(unknown.body["message"], message, "an unknown address and a wrong password answer alike");
    login("correct horse battery").await.assert_error(429, "rate_limit_exceeded");
    assert_eq!(app.count("sessions").await, sessions + 1, "only the first, right sign-in opened a session");

    // The window passing lifts the hold.
    sqlx::query("UPDATE sign_in_failures SET created_at = now() - interval '16 minutes'").execute(&app.pool).await.unwrap();
    assert_eq!(login("correct horse battery").await.status, 200);
}

#[tokio::test]
async fn twenty_failures_from_one_client_address_answer_429_for_any_address() {
    let app = TestApp::spawn().await;
    sign_up(&app, "ada@example.com").await;
    for n in 0..20 {
        let answer = call(&app, Method::POST, "/auth/login", None, None, Some(json!({ "email": format!("guess{n}@example.com"), "password": "whatever it is" }))).await;
        answer.assert_error(403, "validation_error");
    }
    let held = call(&app, Method::POST, "/auth/login", None, None, Some(json!({ "email": "ada@example.com", "password": "correct horse battery" }))).await;
    held.assert_error(429, "rate_limit_exceeded");
}

#[tokio::test]
async fn a_write_with_the_cookie_needs_the_csrf_token_and_signing_out_ends_the_session() {
    let app = TestApp::spawn().await;
    let (token, csrf) = sign_up(&app, "ada@example.com").await;
    call(&app, Method::POST, "/auth/logout", Some(&token), None, None).await.assert_error(403, "validation_error");
    call(&app, Method::POST, "/auth/logout", Some(&token), Some("not-the-token"), None).await.assert_error(403, "validation_error");
    assert_eq!(app.count("sessions").await, 1, "a refused write changes nothing");
    assert_eq!(call(&app, Method::GET, "/auth/session", Some(&token), None, None).await.status, 200);

    let out = call(&app, Method::POST, "/auth/logout", Some(&token), Some(&csrf), None).await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(app.count("sessions").await, 0);
    call(&app, Method::GET, "/auth/session", Some(&token), None, None).await.assert_error(401, "invalid_api_key");
    call(&app, Method::GET, "/auth/session", None, None, None).await.assert_error(401, "missing_api_key");
}

#[tokio::test]
async fn an_api_key_on_a_session_route_is_403_and_the_session_reaches_api_routes_as_the_dashboard() {
    let app = TestApp::spawn().await;
    let (token, csrf) = sign_up(&app, "ada@example.com").await;
    app.get("/auth/session").await.assert_error(403, "invalid_permission");
    let with_both = Answer::from(
        app.request(Method::GET, "/auth/session").header("cookie", format!("herald_session={token}")).send().await.unwrap(),
    )
    .await;
    with_both.assert_error(403, "invalid_permission");

    // The dashboard calls the API's own routes with the session: reads need only the cookie,
    // writes its CSRF token too, and the request log says `dashboard`.
    let keys = call(&app, Method::GET, "/api-keys", Some(&token), None, None).await;
    assert_eq!((keys.status, &keys.body["object"]), (200, &json!("list")), "{}", keys.body);
    call(&app, Method::POST, "/domains", Some(&token), None, Some(json!({ "name": "example.com" }))).await.assert_error(403, "validation_error");
    call(&app, Method::POST, "/domains", Some(&token), Some("stale"), Some(json!({ "name": "example.com" }))).await.assert_error(403, "validation_error");
    assert_eq!(app.count("domains").await, 0, "a write without the session's CSRF token changes nothing");
    let created = call(&app, Method::POST, "/domains", Some(&token), Some(&csrf), Some(json!({ "name": "example.com" }))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let team: uuid::Uuid = sqlx::query_scalar("SELECT team_id FROM domains").fetch_one(&app.pool).await.unwrap();
    assert_ne!(team, app.team_id, "the session's own team, not the key's");
    let source: String = tests::eventually(|| async {
        sqlx::query_scalar("SELECT source FROM request_logs WHERE endpoint = '/domains' AND method = 'POST' AND response_status = 201")
            .fetch_optional(&app.pool)
            .await
            .unwrap()
    })
    .await;
    assert_eq!(source, "dashboard");
}

#[tokio::test]
async fn a_nul_or_a_ten_megabyte_string_in_any_field_of_the_session_routes_is_a_4xx_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let (token, csrf) = sign_up(&app, "ada@example.com").await;
    let before = (app.count("people").await, app.count("sessions").await, app.count("sign_in_failures").await);
    let huge = "a".repeat(10 * 1024 * 1024);
    let fields = [("email", "ada@example.com"), ("password", "correct horse battery"), ("name", "Ada")];
    for path in ["/auth/signup", "/auth/login"] {
        for (field, _) in fields.iter().filter(|(f, _)| path == "/auth/signup" || *f != "name") {
            for bad in ["ada\u{0}@example.com".to_string(), huge.clone()] {
                let mut body = serde_json::Map::new();
                for (key, value) in &fields {
                    if path == "/auth/signup" || *key != "name" {
                        body.insert(key.to_string(), json!(if key == field { bad.as_str() } else { value }));
                    }
                }
                let answer = call(&app, Method::POST, path, None, None, Some(Value::Object(body))).await;
                assert!((400..500).contains(&answer.status) && answer.status != 429, "{path} {field}: {} {}", answer.status, answer.body);
                assert!(answer.header("set-cookie").is_none());
            }
        }
    }
    let long = "x".repeat(8_000);
    call(&app, Method::GET, "/auth/session", Some(&long), None, None).await.assert_error(401, "invalid_api_key");
    call(&app, Method::POST, "/auth/logout", Some(&token), Some(&long), None).await.assert_error(403, "validation_error");
    assert_eq!(call(&app, Method::GET, "/auth/session", Some(&token), Some(&csrf), None).await.status, 200);
    assert_eq!((app.count("people").await, app.count("sessions").await), (before.0, before.1));
    assert!(app.count("sign_in_failures").await - before.2 <= 4, "refused inputs are at most counted as failed sign-ins");
}

#[tokio::test]
async fn a_person_creates_teams_administers_them_and_the_session_moves_to_the_new_one() {
    let app = TestApp::spawn().await;
    let (token, csrf) = sign_up(&app, "ada@example.com").await;
    let first = call(&app, Method::GET, "/auth/session", Some(&token), None, None).await.body["team"]["id"].clone();
    call(&app, Method::POST, "/teams", Some(&token), None, Some(json!({ "name": "Second" }))).await.assert_error(403, "validation_error");
    // A line break is refused at the edge (400) like in every one-line field; the rest by the route.
    for (name, status) in [("", 422), ("  ", 422), ("two\nlines", 400), (&*"x".repeat(81), 422)] {
        let refused = call(&app, Method::POST, "/teams", Some(&token), Some(&csrf), Some(json!({ "name": name }))).await;
        refused.assert_error(status, "validation_error");
        assert_eq!(refused.body["errors"][0]["path"], "name");
    }
    assert_eq!(app.count("teams").await, 2, "the app's team and the sign-up's; refusals wrote none");

    let created = call(&app, Method::POST, "/teams", Some(&token), Some(&csrf), Some(json!({ "name": "Second" }))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!((created.body["team"]["name"].as_str(), created.body["team"]["role"].as_str()), (Some("Second"), Some("admin")));
    let second = created.body["team"]["id"].clone();
    assert_ne!(second, first);
    assert_eq!(call(&app, Method::GET, "/auth/session", Some(&token), None, None).await.body["team"]["id"], second);

    let teams = call(&app, Method::GET, "/teams", Some(&token), None, None).await;
    assert_eq!(teams.status, 200, "{}", teams.body);
    let listed: Vec<(Value, bool)> = teams.body["data"].as_array().unwrap().iter().map(|t| (t["id"].clone(), t["current"].as_bool().unwrap())).collect();
    assert_eq!(listed, [(first, false), (second, true)]);
    app.get("/teams").await.assert_error(403, "invalid_permission");
}

#[tokio::test]
async fn team_members_are_read_with_a_full_access_key_or_the_session_of_that_team_only() {
    let app = TestApp::spawn().await;
    let (token, _) = sign_up(&app, "ada@example.com").await;
    sign_up(&app, "grace@example.com").await;
    // Invitations come later in #13: Ada joins the app's team as a member directly.
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) SELECT $1, id, 'member' FROM people WHERE email = 'ada@example.com'")
        .bind(app.team_id)
        .execute(&app.pool)
        .await
        .unwrap();
    let members = app.get("/team/members").await;
    assert_eq!(members.status, 200, "{}", members.body);
    let listed: Vec<(&str, &str, &str)> = members.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["object"].as_str().unwrap(), m["email"].as_str().unwrap(), m["role"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, [("team_member", "ada@example.com", "member")], "Grace is in no team of this key");

    let (_, sending) = app.create_key(json!({ "name": "sender", "permission": "sending_access" })).await;
    Answer::from(app.request_as(&sending, Method::GET, "/team/members").send().await.unwrap()).await.assert_error(401, "restricted_api_key");
    // Ada's session reads the members of its current team (her own first team), not the key's.
    let own = call(&app, Method::GET, "/team/members", Some(&token), None, None).await;
    let listed: Vec<(&str, &str)> = own.body["data"].as_array().unwrap().iter().map(|m| (m["email"].as_str().unwrap(), m["role"].as_str().unwrap())).collect();
    assert_eq!(listed, [("ada@example.com", "admin")], "{}", own.body);
}
