//! Document C's conventions, which every route follows.

use reqwest::Method;
use serde_json::json;
use tests::{Answer, TestApp};

#[tokio::test]
async fn a_request_without_a_user_agent_is_a_403_validation_error_with_code_1010_and_is_not_logged() {
    let app = TestApp::spawn().await;
    let client = reqwest::Client::builder().build().unwrap(); // reqwest sends no User-Agent by default
    let answer = Answer::from(client.get(app.url("/api-keys")).bearer_auth(&app.key).send().await.unwrap()).await;
    answer.assert_error(403, "validation_error");
    assert_eq!(answer.body["code"], 1010);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(app.count("request_logs").await, 0);
}

#[tokio::test]
async fn every_route_is_served_at_the_root_and_under_api_v1() {
    let app = TestApp::spawn().await;
    assert_eq!(app.get("/api-keys").await.status, 200);
    assert_eq!(app.get("/api/v1/api-keys").await.status, 200);
    assert_eq!(app.get("/api/v1/health").await.status, 200);
}

#[tokio::test]
async fn an_unknown_route_is_a_json_404_not_found() {
    let app = TestApp::spawn().await;
    app.get("/no-such-thing").await.assert_error(404, "not_found");
    app.get("/api/v1/api-keys/1/extra").await.assert_error(404, "not_found");
    let anonymous = Answer::from(app.client.get(app.url("/nothing")).send().await.unwrap()).await;
    anonymous.assert_error(404, "not_found");
}

#[tokio::test]
async fn the_resend_routes_herald_reserves_answer_501_not_implemented_and_their_neighbours_404() {
    let app = TestApp::spawn().await;
    for path in ["/usage", "/inboxes", "/inboxes/support@acme.test/threads", "/api/v1/inboxes/x/labels/y"] {
        app.get(path).await.assert_error(501, "not_implemented");
    }
    let created = Answer::from(app.request(Method::POST, "/inboxes").json(&json!({ "email": "a@b.test" })).send().await.unwrap()).await;
    created.assert_error(501, "not_implemented");
    app.get("/inboxesx").await.assert_error(404, "not_found");
    app.get("/usages").await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_known_path_with_a_wrong_method_is_a_json_405_method_not_allowed() {
    let app = TestApp::spawn().await;
    let answer = Answer::from(app.request(Method::PUT, "/api-keys").send().await.unwrap()).await;
    answer.assert_error(405, "method_not_allowed");
    assert_eq!(answer.header("allow"), Some("POST, GET"), "RFC 9110: a 405 names the allowed methods");
    let anonymous = Answer::from(app.client.post(app.url("/api/v1/emails/x")).send().await.unwrap()).await;
    anonymous.assert_error(405, "method_not_allowed");
    assert_eq!(anonymous.header("allow"), Some("GET, PATCH"));
}

#[tokio::test]
async fn no_usable_bearer_header_is_401_missing_api_key() {
    let app = TestApp::spawn().await;
    let none = Answer::from(app.client.get(app.url("/api-keys")).send().await.unwrap()).await;
    none.assert_error(401, "missing_api_key");
    let basic = Answer::from(app.client.get(app.url("/api-keys")).header("authorization", "Basic abc").send().await.unwrap()).await;
    basic.assert_error(401, "missing_api_key");
    let empty = Answer::from(app.client.get(app.url("/api-keys")).header("authorization", "Bearer ").send().await.unwrap()).await;
    empty.assert_error(401, "missing_api_key");
}

#[tokio::test]
async fn an_unknown_token_is_401_invalid_api_key() {
    let app = TestApp::spawn().await;
    let answer = Answer::from(app.request_as("rk_nope", Method::GET, "/api-keys").send().await.unwrap()).await;
    answer.assert_error(401, "invalid_api_key");
}

#[tokio::test]
async fn a_suspended_key_is_403_suspended_api_key() {
    let app = TestApp::spawn().await;
    let (id, token) = app.create_key(json!({ "name": "to suspend" })).await;
    let mut conn = app.pool.acquire().await.unwrap();
    schema::store::api_keys::set_status(&mut conn, id.parse().unwrap(), schema::model::KeyStatus::Suspended).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();
    let answer = Answer::from(app.request_as(&token, Method::GET, "/api-keys").send().await.unwrap()).await;
    answer.assert_error(403, "suspended_api_key");
}

#[tokio::test]
async fn every_key_of_a_suspended_team_is_403_suspended_api_key() {
    let app = TestApp::spawn().await;
    let mut conn = app.pool.acquire().await.unwrap();
    schema::store::teams::set_risk_state(&mut conn, app.team_id, schema::model::RiskState::Suspended).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();
    app.get("/api-keys").await.assert_error(403, "suspended_api_key");
}

#[tokio::test]
async fn a_sending_access_key_on_a_non_sending_route_is_401_restricted_api_key() {
    let app = TestApp::spawn().await;
    let (_, token) = app.create_key(json!({ "name": "sender", "permission": "sending_access" })).await;
    for (method, path) in [(Method::GET, "/api-keys"), (Method::GET, "/logs"), (Method::POST, "/api-keys")] {
        let answer = Answer::from(app.request_as(&token, method, path).json(&json!({"name": "x"})).send().await.unwrap()).await;
        answer.assert_error(401, "restricted_api_key");
    }
    assert_eq!(app.count("api_keys").await, 2);
}

#[tokio::test]
async fn every_response_carries_the_rate_limit_headers() {
    let app = TestApp::spawn().await;
    for answer in [app.get("/api-keys").await, app.get("/health").await, app.get("/nothing").await] {
        assert_eq!(answer.header("ratelimit-limit"), Some("10"), "{}", answer.body);
        assert!(answer.header("ratelimit-remaining").is_some());
        assert!(answer.header("ratelimit-reset").is_some());
        assert!(answer.header("retry-after").is_none());
    }
}

#[tokio::test]
async fn the_eleventh_request_in_a_burst_is_429_with_a_whole_second_retry_after() {
    // A slow refill keeps a slow burst from earning a token back midway.
    let app = TestApp::spawn_with(|config| config.rate_limit_refill = 0.5).await;
    let answers = futures::future::join_all((0..11).map(|_| app.get("/api-keys"))).await;
    let limited: Vec<&Answer> = answers.iter().filter(|a| a.status == 429).collect();
    assert_eq!(limited.len(), 1, "statuses: {:?}", answers.iter().map(|a| a.status).collect::<Vec<_>>());
    limited[0].assert_error(429, "rate_limit_exceeded");
    let retry_after: u64 = limited[0].header("retry-after").unwrap().parse().unwrap();
    assert!(retry_after >= 1);
    assert_eq!(limited[0].header("ratelimit-remaining"), Some("0"));
}

#[tokio::test]
async fn the_bucket_is_shared_by_all_keys_of_a_team_and_every_process() {
    // A slow refill makes the count exact: ten tokens for the whole team.
    let slow = |config: &mut api::config::Config| config.rate_limit_refill = 0.01;
    let app = TestApp::spawn_with(slow).await;
    let (_, second_key) = app.create_key(json!({ "name": "second" })).await;
    // A second process on the same database.
    let other = TestApp::start(&app.database_url, app.pool.clone(), slow).await;
    let mut requests = Vec::new();
    for i in 0..12 {
        let (server, key) = if i % 2 == 0 { (&app, app.key.as_str()) } else { (&other, second_key.as_str()) };
        requests.push(server.request_as(key, Method::GET, "/api-keys").send());
    }
    let statuses: Vec<u16> = futures::future::join_all(requests).await.into_iter().map(|r| r.unwrap().status().as_u16()).collect();
    // One token went to creating the second key, nine to this burst.
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 9, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 3, "{statuses:?}");
}

#[tokio::test]
async fn the_bucket_refills_after_the_retry_after_wait() {
    let app = TestApp::spawn().await;
    let answers = futures::future::join_all((0..30).map(|_| app.get("/api-keys"))).await;
    let limited = answers.iter().find(|a| a.status == 429).expect("the burst is limited");
    let wait: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    assert_eq!(app.get("/api-keys").await.status, 200);
}

#[tokio::test]
async fn the_capacity_is_configurable_by_operators() {
    let app = TestApp::spawn_with(|config| config.rate_limit_capacity = 50).await;
    let answers = futures::future::join_all((0..30).map(|_| app.get("/api-keys"))).await;
    assert!(answers.iter().all(|a| a.status == 200));
    assert_eq!(answers[0].header("ratelimit-limit"), Some("50"));
}

#[tokio::test]
async fn malformed_json_is_a_400_validation_error_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let answer = Answer::from(
        app.request(Method::POST, "/api-keys").header("content-type", "application/json").body("{\"name\":").send().await.unwrap(),
    )
    .await;
    answer.assert_error(400, "validation_error");
    assert_eq!(app.count("api_keys").await, 1);
}

#[tokio::test]
async fn a_malformed_query_parameter_is_a_422_invalid_parameter() {
    let app = TestApp::spawn().await;
    let answer = app.get("/api-keys?limit=many").await;
    answer.assert_error(422, "invalid_parameter");
    assert_eq!(answer.body["errors"][0]["path"], "limit");
}

#[tokio::test]
async fn an_unexpected_failure_is_a_500_application_error_naming_the_request_id() {
    let app = TestApp::spawn().await;
    sqlx::query("ALTER TABLE api_keys RENAME COLUMN name TO renamed").execute(&app.pool).await.unwrap();
    let answer = app.get("/api-keys").await;
    answer.assert_error(500, "application_error");
    let request_id = answer.header("x-request-id").unwrap();
    assert!(answer.body["message"].as_str().unwrap().contains(request_id), "{}", answer.body);
}

#[tokio::test]
async fn clients_may_send_an_empty_body_or_no_content_type() {
    let app = TestApp::spawn().await;
    let no_type = Answer::from(app.request(Method::POST, "/api-keys").body(r#"{"name":"plain"}"#).send().await.unwrap()).await;
    assert_eq!(no_type.status, 201, "{}", no_type.body);
    let empty_delete = Answer::from(
        app.request(Method::DELETE, &format!("/api-keys/{}", no_type.body["id"].as_str().unwrap()))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(empty_delete.status, 200, "{}", empty_delete.body);
    let empty_post = Answer::from(app.request(Method::POST, "/api-keys").send().await.unwrap()).await;
    empty_post.assert_error(422, "missing_required_field");
}

#[tokio::test]
async fn the_x_batch_validation_header_and_unknown_fields_are_accepted() {
    let app = TestApp::spawn().await;
    let answer = Answer::from(
        app.request(Method::POST, "/api-keys")
            .header("x-batch-validation", "strict")
            .json(&json!({ "name": "k", "id": null, "unknown": 1 }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
}
