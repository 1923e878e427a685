//! The `herald` binary: the operator's commands.

use std::process::Command;

fn herald(database_url: &str, args: &[&str]) -> std::process::Output {
    let binary = tests::herald_binary();
    assert!(binary.exists(), "{} is built by `cargo nextest run --workspace`", binary.display());
    Command::new(binary).args(args).env("DATABASE_URL", database_url).env("HERALD_LOG", "error").output().unwrap()
}

#[tokio::test]
async fn team_create_prints_the_team_id_and_a_working_key() {
    let url = tests::fresh_database().await;
    let output = herald(&url, &["team", "create", "--name", "Acme"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(printed["api_key"].as_str().unwrap().starts_with("rk_"));
    let team_id: uuid::Uuid = printed["team_id"].as_str().unwrap().parse().unwrap();
    let pool = schema::connect(&url, 2).await.unwrap();
    let name: String = sqlx::query_scalar("SELECT name FROM teams WHERE id = $1").bind(team_id).fetch_one(&pool).await.unwrap();
    assert_eq!(name, "Acme");
    let app = tests::TestApp::start(&url, pool, |_| {}).await;
    let answer = app.request_as(printed["api_key"].as_str().unwrap(), reqwest::Method::GET, "/api-keys").send().await.unwrap();
    assert_eq!(answer.status(), 200);
}

#[tokio::test]
async fn team_create_if_none_creates_only_the_first_team() {
    let url = tests::fresh_database().await;
    assert!(!herald(&url, &["team", "create", "--name", "First", "--if-none"]).stdout.is_empty());
    let second = herald(&url, &["team", "create", "--name", "Second", "--if-none"]);
    assert!(second.status.success());
    assert!(second.stdout.is_empty());
}

#[tokio::test]
async fn a_team_name_outside_1_to_80_characters_is_refused() {
    let url = tests::fresh_database().await;
    let output = herald(&url, &["team", "create", "--name", &"n".repeat(81)]);
    assert!(!output.status.success());
    let pool = schema::connect(&url, 2).await.unwrap();
    let teams: i64 = sqlx::query_scalar("SELECT count(*) FROM teams").fetch_one(&pool).await.unwrap();
    assert_eq!(teams, 0);
}

#[tokio::test]
async fn migrate_can_run_again_on_a_migrated_database() {
    let url = tests::fresh_database().await;
    for _ in 0..2 {
        let output = herald(&url, &["migrate"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
}

#[tokio::test]
async fn jobs_prints_counts_per_queue_and_failed_jobs() {
    let url = tests::fresh_database().await;
    let pool = schema::connect(&url, 2).await.unwrap();
    let mut tx = pool.begin().await.unwrap();
    schema::jobs::enqueue(&mut tx, &schema::jobs::Housekeeping { period: chrono::Utc::now() }).await.unwrap();
    tx.commit().await.unwrap();
    let output = herald(&url, &["jobs"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["queues"][0], serde_json::json!({ "queue": "housekeeping", "status": "Pending", "count": 1 }));
    assert_eq!(printed["failed"], serde_json::json!([]));
}

#[test]
fn openapi_prints_the_committed_document() {
    let output = Command::new(tests::herald_binary()).arg("openapi").output().unwrap();
    let committed = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi/openapi.json")).unwrap();
    assert!(output.stdout == committed, "openapi/openapi.json differs from `herald openapi`");
}

#[tokio::test]
async fn serve_answers_health_and_stops_gracefully_on_sigterm() {
    let url = tests::fresh_database().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(tests::herald_binary())
        .args(["serve"])
        .env("DATABASE_URL", &url)
        .env("HERALD_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .env("HERALD_LOG", "error")
        .spawn()
        .unwrap();
    let client = reqwest::Client::builder().user_agent("t").build().unwrap();
    let body = tests::eventually(|| async {
        let response = client.get(format!("http://127.0.0.1:{port}/ready")).send().await.ok()?;
        (response.status() == 200).then_some(())?;
        response.json::<serde_json::Value>().await.ok()
    })
    .await;
    assert_eq!(body["status"], "ok", "serve runs the API and the workers");
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed().as_secs() < 20, "serve did not stop within 20 seconds");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(status.success(), "exits cleanly: {status:?}");
}

#[tokio::test]
async fn team_update_moves_a_team_out_of_the_sandbox_and_onto_a_plan() {
    let url = tests::fresh_database().await;
    let created: serde_json::Value = serde_json::from_slice(&herald(&url, &["team", "create", "--name", "Acme"]).stdout).unwrap();
    let team = created["team_id"].as_str().unwrap();
    let pool = schema::connect(&url, 2).await.unwrap();
    let state = || async {
        sqlx::query_as::<_, (String, Vec<String>)>("SELECT plan_code, sandbox_regions FROM teams WHERE id = $1::uuid")
            .bind(team)
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let before = state().await;
    assert_eq!(before.1.len(), 4, "a new team starts in every region's sandbox");

    for refused in [
        vec!["--plan", "platinum"],
        vec!["--sandbox", "mars-1"],
        vec!["--sandbox", ""],
    ] {
        let mut args = vec!["team", "update", "--team", team];
        args.extend(refused.iter().copied());
        let output = herald(&url, &args);
        assert!(!output.status.success(), "{refused:?} was accepted");
        assert!(!output.stderr.is_empty());
        assert_eq!(state().await, before, "{refused:?} changed the team");
    }
    let missing = herald(&url, &["team", "update", "--team", &uuid::Uuid::now_v7().to_string(), "--plan", "pro"]);
    assert!(!missing.status.success());

    let output = herald(&url, &["team", "update", "--team", team, "--sandbox", "eu-west-1"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(state().await, ("free".to_string(), vec!["eu-west-1".to_string()]));
    let output = herald(&url, &["team", "update", "--team", team, "--sandbox", "none", "--plan", "pro"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["plan"], "pro");
    assert_eq!(printed["sandbox_regions"], serde_json::json!([]));
    assert_eq!(state().await, ("pro".to_string(), vec![]));
}

#[tokio::test]
async fn the_log_line_of_a_500s_cause_names_the_request_id_its_body_shows_with_operation_team_and_source_line() {
    let url = tests::fresh_database().await;
    let created = herald(&url, &["team", "create", "--name", "Traced"]);
    let printed: serde_json::Value = serde_json::from_slice(&created.stdout).unwrap();
    let (team, key) = (printed["team_id"].as_str().unwrap().to_string(), printed["api_key"].as_str().unwrap().to_string());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log_path = std::env::temp_dir().join(format!("herald-trace-{port}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(tests::herald_binary())
        .args(["serve", "--no-worker"])
        .env("DATABASE_URL", &url)
        .env("HERALD_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .env("HERALD_ENV", "test")
        .env("HERALD_LOG", "warn")
        .env("HERALD_LOG_FORMAT", "json")
        .stderr(log)
        .spawn()
        .unwrap();
    let client = reqwest::Client::builder().user_agent("t").build().unwrap();
    tests::eventually(|| async { client.get(format!("http://127.0.0.1:{port}/health")).send().await.ok().filter(|r| r.status() == 200) }).await;
    // A broken table makes the key list fail inside its handler.
    let pool = schema::connect(&url, 2).await.unwrap();
    sqlx::query("ALTER TABLE api_keys RENAME COLUMN name TO renamed").execute(&pool).await.unwrap();
    let answer = client.get(format!("http://127.0.0.1:{port}/api-keys")).bearer_auth(&key).send().await.unwrap();
    assert_eq!(answer.status(), 500);
    let request_id = answer.headers()["x-request-id"].to_str().unwrap().to_string();
    let body: serde_json::Value = answer.json().await.unwrap();
    assert!(body["message"].as_str().unwrap().contains(&request_id), "{body}");

    let cause = tests::eventually(|| async {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).find(|line| line["level"] == "ERROR")
    })
    .await;
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let _ = child.wait();
    // The request's span rides on the line: its id, its operation and its team.
    let span = &cause["span"];
    assert_eq!(span["request_id"], request_id.as_str(), "{cause}");
    assert_eq!(span["operation"], "list-api-keys", "{cause}");
    assert_eq!(span["team_id"], team.as_str(), "{cause}");
    // And the line names where in the handler the error surfaced.
    let at = cause["fields"]["at"].as_str().unwrap_or_default();
    assert!(at.starts_with("api/src/routes/api_keys.rs:"), "{cause}");
}
