//! Request logs: every call made with a team's credential, what is kept of it, and GET /logs.

use reqwest::Method;
use serde_json::json;
use tests::{Answer, TestApp};

#[tokio::test]
async fn every_call_with_a_credential_is_logged_failures_included() {
    let app = TestApp::spawn().await;
    app.get("/api-keys").await;
    app.post("/api-keys", json!({})).await; // 422
    app.get("/nowhere").await; // 404 with a valid key
    Answer::from(app.request(Method::PUT, "/api-keys").send().await.unwrap()).await; // 405
    app.wait_for_rows("request_logs", 4).await;
    let rows: Vec<(String, String, i16, String, String)> =
        sqlx::query_as("SELECT endpoint, method, response_status, source, user_agent FROM request_logs ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        rows.iter().map(|r| (r.0.as_str(), r.1.as_str(), r.2)).collect::<Vec<_>>(),
        vec![("/api-keys", "GET", 200), ("/api-keys", "POST", 422), ("/nowhere", "GET", 404), ("/api-keys", "PUT", 405)]
    );
    assert!(rows.iter().all(|r| r.3 == "sdk:tests" && r.4 == "herald-tests/1.0"));
}

#[tokio::test]
async fn a_call_with_a_revoked_key_is_logged_for_its_team_but_an_unknown_token_is_not() {
    let app = TestApp::spawn().await;
    let (id, token) = app.create_key(json!({ "name": "gone" })).await;
    app.delete(&format!("/api-keys/{id}")).await;
    Answer::from(app.request_as(&token, Method::GET, "/api-keys").send().await.unwrap()).await;
    Answer::from(app.request_as("rk_unknown", Method::GET, "/api-keys").send().await.unwrap()).await;
    app.wait_for_rows("request_logs", 3).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(app.count("request_logs").await, 3);
    assert_eq!(app.count(&format!("request_logs WHERE api_key_id = '{id}' AND response_status = 403")).await, 1);
}

#[tokio::test]
async fn the_source_is_read_from_the_user_agent() {
    let app = TestApp::spawn().await;
    for agent in ["curl/8.0", "herald-dashboard/2.1", "resend-node:4.0.0"] {
        app.client.get(app.url("/api-keys")).bearer_auth(&app.key).header("user-agent", agent).send().await.unwrap();
    }
    app.wait_for_rows("request_logs", 3).await;
    let sources: Vec<String> = sqlx::query_scalar("SELECT source FROM request_logs ORDER BY id").fetch_all(&app.pool).await.unwrap();
    assert_eq!(sources, vec!["api", "dashboard", "sdk:node"]);
}

#[tokio::test]
async fn a_body_naming_a_token_is_dropped_whole_and_others_are_kept() {
    let app = TestApp::spawn().await;
    let created = app.post("/api-keys", json!({ "name": "kept" })).await;
    app.post("/api-keys", json!({ "name": "n".repeat(300) })).await;
    app.wait_for_rows("request_logs", 2).await;
    let bodies: Vec<(Option<serde_json::Value>, Option<serde_json::Value>)> =
        sqlx::query_as("SELECT request_body, response_body FROM request_logs ORDER BY id").fetch_all(&app.pool).await.unwrap();
    assert_eq!(bodies[0].0, Some(json!({ "name": "kept" })));
    assert_eq!(bodies[0].1, None, "the create response carries the token");
    assert!(!format!("{bodies:?}").contains(created.body["token"].as_str().unwrap()));
    assert_eq!(bodies[1].1.as_ref().unwrap()["name"], "validation_error");
}

#[tokio::test]
async fn get_logs_lists_newest_first_and_reading_logs_is_logged() {
    let app = TestApp::spawn().await;
    app.get("/api-keys").await;
    app.wait_for_rows("request_logs", 1).await;
    let first = app.get("/logs").await;
    assert_eq!(first.status, 200);
    assert_eq!(first.body["object"], "list");
    let item = &first.body["data"][0];
    assert_eq!(item["object"], "log");
    assert_eq!(item["endpoint"], "/api-keys");
    for field in ["id", "created_at", "method", "response_status", "user_agent", "source", "request_id", "latency_ms", "api_key_id"] {
        assert!(!item[field].is_null(), "{field} in {item}");
    }
    app.wait_for_rows("request_logs", 2).await;
    let second = app.get("/logs").await;
    assert_eq!(second.body["data"][0]["endpoint"], "/logs");
}

#[tokio::test]
async fn get_logs_filters_by_status_source_user_agent_search_and_dates() {
    let app = TestApp::spawn().await;
    app.get("/api-keys").await;
    app.post("/api-keys", json!({})).await;
    app.client.get(app.url("/api-keys?limit=5")).bearer_auth(&app.key).header("user-agent", "curl/8").send().await.unwrap();
    app.wait_for_rows("request_logs", 3).await;
    let count = |answer: Answer| answer.body["data"].as_array().map(Vec::len).unwrap_or(usize::MAX);
    assert_eq!(count(app.get("/logs?status=422").await), 1);
    assert_eq!(count(app.get("/logs?source=api").await), 1);
    assert_eq!(count(app.get("/logs?exclude_source=api&search=api-keys").await), 2);
    assert_eq!(count(app.get("/logs?user_agent=curl/8").await), 1);
    assert_eq!(count(app.get("/logs?search=LIMIT%3D5").await), 1);
    let now = chrono::Utc::now();
    let past = (now - chrono::Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let future = (now + chrono::Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert!(count(app.get(&format!("/logs?start_date={past}&end_date={future}")).await) >= 3);
    assert_eq!(count(app.get(&format!("/logs?start_date={future}")).await), 0);
}

#[tokio::test]
async fn a_bare_date_or_an_end_before_the_start_is_422_invalid_parameter() {
    let app = TestApp::spawn().await;
    app.get("/logs?start_date=2026-11-21").await.assert_error(422, "invalid_parameter");
    app.get("/logs?end_date=2026-11-21").await.assert_error(422, "invalid_parameter");
    app.get("/logs?start_date=2026-11-21T10:00:00Z&end_date=2026-11-21T09:00:00Z").await.assert_error(422, "invalid_parameter");
    app.get("/logs?source=cli").await.assert_error(422, "invalid_parameter");
    app.get(&format!("/logs?search={}", "s".repeat(201))).await.assert_error(422, "invalid_parameter");
}

#[tokio::test]
async fn get_log_returns_the_stored_bodies_and_another_teams_log_is_404() {
    let app = TestApp::spawn().await;
    let answer = app.post("/api-keys", json!({ "name": "with body" })).await;
    let request_id = answer.header("x-request-id").unwrap().to_string();
    app.wait_for_rows("request_logs", 1).await;
    let log = app.get(&format!("/logs/{request_id}")).await;
    assert_eq!(log.status, 200, "{}", log.body);
    assert_eq!(log.body["request_body"], json!({ "name": "with body" }));
    assert_eq!(log.body["path"], "/api-keys");
    assert_eq!(log.body["response_status"], 201);

    let (_, other_key) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let foreign = Answer::from(app.request_as(&other_key, Method::GET, &format!("/logs/{request_id}")).send().await.unwrap()).await;
    foreign.assert_error(404, "not_found");
    app.get("/logs/nope").await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_graceful_shutdown_writes_every_queued_log() {
    let app = TestApp::spawn_with(|config| config.rate_limit_capacity = 1000).await;
    let answers = futures::future::join_all((0..200).map(|_| app.get("/api-keys"))).await;
    assert!(answers.iter().all(|a| a.status == 200));
    let pool = app.pool.clone();
    app.shutdown().await;
    let logged: i64 = sqlx::query_scalar("SELECT count(*) FROM request_logs").fetch_one(&pool).await.unwrap();
    assert_eq!(logged, 200);
}

#[tokio::test]
async fn a_stream_of_hostile_requests_loses_no_other_requests_log() {
    let app = TestApp::spawn_unthrottled().await;
    // 1,000 good requests with 50 hostile ones (a NUL in the body, which jsonb cannot hold)
    // among them, 50 at a time so that their logs share insert statements.
    let requests: Vec<(usize, bool)> = (0..1_050).map(|i| (i, i % 21 == 20)).collect();
    let mut hostile_ids = Vec::new();
    let app = &app;
    for chunk in requests.chunks(50) {
        let answers = futures::future::join_all(chunk.iter().map(|&(i, hostile)| async move {
            let body = if hostile { json!({ "name": "a\u{0}b" }) } else { json!({ "name": format!("Segment {i}") }) };
            (hostile, app.post("/segments", body).await)
        }))
        .await;
        for (hostile, answer) in answers {
            assert_eq!(answer.status, if hostile { 400 } else { 201 }, "{}", answer.body);
            if hostile {
                hostile_ids.push(answer.header("x-request-id").unwrap().to_string());
            }
        }
    }
    app.wait_for_rows("request_logs WHERE response_status = 201", 1_000).await;
    app.wait_for_rows("request_logs WHERE response_status = 400", 50).await;
    let log = app.get(&format!("/logs/{}", hostile_ids[0])).await;
    assert_eq!(log.body["request_body"]["name"], "a\u{fffd}b", "the hostile call's log is kept, its NUL replaced");
    assert_eq!(app.get("/health").await.body["request_logs_dropped"], 0);
}

#[tokio::test]
async fn a_log_postgresql_refuses_is_isolated_counted_and_takes_no_other_log_with_it() {
    let app = TestApp::spawn().await;
    let (writer, task) = api::http::request_log::LogWriter::start(app.pool.clone());
    let log = |team_id: uuid::Uuid| schema::store::request_logs::RequestLog {
        id: schema::ids::new_id(),
        team_id,
        created_at: chrono::Utc::now(),
        endpoint: "/segments".into(),
        path: "/segments".into(),
        method: "POST".into(),
        response_status: 201,
        user_agent: "test".into(),
        source: "api".into(),
        request_id: "r".into(),
        latency_ms: 1,
        api_key_id: None,
        email_id: None,
        request_body: Some(json!({ "name": "a\u{0}" })),
        response_body: None,
    };
    // A log naming no team breaks the foreign key: PostgreSQL refuses its whole statement.
    for i in 0..1_050 {
        writer.write(log(if i % 21 == 20 { uuid::Uuid::now_v7() } else { app.team_id })).await;
    }
    task.close().await;
    assert_eq!(app.count("request_logs").await, 1_000, "every good log is written");
    assert_eq!(writer.dropped(), 50, "each refused log is counted");
}
