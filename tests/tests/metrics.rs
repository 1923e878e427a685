//! Operator metrics: `GET /metrics` in the Prometheus text format (0.0.4), behind
//! `HERALD_METRICS_TOKEN` on the API listener or open on its own `HERALD_METRICS_ADDR`.

use reqwest::Method;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use tests::{Answer, TestApp};

const TOKEN: &str = "a-long-random-metrics-token";

/// One sample line: metric name, labels, value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: HashMap<String, String>,
    value: f64,
}

/// Parses an exposition line by line, asserting the format as it goes: every family has HELP
/// and TYPE, every sample belongs to a typed family, counters end in `_total`, histograms'
/// samples are `_bucket` (with `le`), `_sum` and `_count`.
fn parse(text: &str) -> Vec<Sample> {
    let mut types: HashMap<String, String> = HashMap::new();
    let mut helped: HashSet<String> = HashSet::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or_else(|| panic!("HELP without text: {line:?}"));
            assert!(!help.trim().is_empty(), "empty HELP: {line:?}");
            assert!(helped.insert(name.to_string()), "HELP repeated: {line:?}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("TYPE without a type: {line:?}"));
            assert!(["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind), "unknown type: {line:?}");
            assert!(helped.contains(name), "TYPE before HELP: {line:?}");
            assert!(types.insert(name.to_string(), kind.to_string()).is_none(), "TYPE repeated: {line:?}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "a counter's name ends in _total: {line:?}");
            }
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment: {line:?}");
        let sample = parse_sample(line);
        let family = match types.get(&sample.name) {
            Some(_) => sample.name.clone(),
            None => {
                let base = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|suffix| sample.name.strip_suffix(suffix))
                    .unwrap_or_else(|| panic!("a sample of no typed family: {line:?}"));
                assert_eq!(types.get(base).map(String::as_str), Some("histogram"), "a sample of no typed family: {line:?}");
                if sample.name.ends_with("_bucket") {
                    assert!(sample.labels.contains_key("le"), "a bucket without le: {line:?}");
                }
                base.to_string()
            }
        };
        assert!(helped.contains(&family));
        samples.push(sample);
    }
    samples
}

/// `name{a="x",b="y"} value`, with `\\`, `\"` and `\n` escapes in label values.
fn parse_sample(line: &str) -> Sample {
    let name_end = line.find(['{', ' ']).unwrap_or_else(|| panic!("no value: {line:?}"));
    let name = &line[..name_end];
    assert!(
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
        "a bad metric name: {line:?}"
    );
    let mut labels = HashMap::new();
    let mut rest = &line[name_end..];
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices();
        let mut key = String::new();
        loop {
            let (i, c) = chars.next().unwrap_or_else(|| panic!("unterminated labels: {line:?}"));
            match c {
                '}' if key.is_empty() => {
                    rest = &inner[i + 1..];
                    break;
                }
                ',' if key.is_empty() => {}
                '=' => {
                    assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "unquoted label value: {line:?}");
                    let mut value = String::new();
                    loop {
                        match chars.next().map(|(_, c)| c) {
                            Some('\\') => match chars.next().map(|(_, c)| c) {
                                Some('\\') => value.push('\\'),
                                Some('"') => value.push('"'),
                                Some('n') => value.push('\n'),
                                other => panic!("a bad escape {other:?}: {line:?}"),
                            },
                            Some('"') => break,
                            Some(c) => value.push(c),
                            None => panic!("unterminated label value: {line:?}"),
                        }
                    }
                    assert!(labels.insert(std::mem::take(&mut key), value).is_none(), "a label repeated: {line:?}");
                }
                c if c.is_ascii_alphanumeric() || c == '_' => key.push(c),
                _ => panic!("a bad label: {line:?}"),
            }
        }
    }
    let value = rest.strip_prefix(' ').unwrap_or_else(|| panic!("no space before the value: {line:?}"));
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        other => other.parse().unwrap_or_else(|_| panic!("a bad value: {line:?}")),
    };
    Sample { name: name.to_string(), labels, value }
}

/// The value of the sample named `name` whose labels include `labels`.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v)))
        .map(|s| s.value)
}

async fn with_token() -> TestApp {
    TestApp::spawn_with(|config| config.metrics_token = Some(TOKEN.into())).await
}

/// Scrapes the API listener with `token` and returns the parsed samples.
async fn scrape(app: &TestApp) -> Vec<Sample> {
    let response = app.request_as(TOKEN, Method::GET, "/metrics").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    parse(&response.text().await.unwrap())
}

#[tokio::test]
async fn a_scrape_without_the_token_or_with_another_token_is_refused() {
    let app = with_token().await;
    let pool = app.pool.clone();
    let bare = app.client.get(app.url("/metrics")).send().await.unwrap();
    Answer::from(bare).await.assert_error(401, "missing_api_key");
    let basic = app.client.get(app.url("/metrics")).header("authorization", format!("Basic {TOKEN}")).send().await.unwrap();
    Answer::from(basic).await.assert_error(401, "missing_api_key");
    let wrong = app.request_as("not-the-token", Method::GET, "/metrics").send().await.unwrap();
    Answer::from(wrong).await.assert_error(401, "invalid_api_key");
    let prefix = app.request_as(&TOKEN[..TOKEN.len() - 1], Method::GET, "/metrics").send().await.unwrap();
    Answer::from(prefix).await.assert_error(401, "invalid_api_key");
    // The team's API key is not the metrics token either, and no scrape is a request log.
    let api_key = app.get("/metrics").await;
    api_key.assert_error(401, "invalid_api_key");
    scrape(&app).await;
    app.shutdown().await;
    let logs: i64 = sqlx::query_scalar("SELECT count(*) FROM request_logs").fetch_one(&pool).await.unwrap();
    assert_eq!(logs, 0, "scrapes are not written to the request log");
}

#[tokio::test]
async fn a_scrape_with_the_token_answers_every_metric_in_the_text_format() {
    let app = with_token().await;
    let samples = scrape(&app).await;
    assert_eq!(value(&samples, "herald_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), Some(1.0));
    assert_eq!(value(&samples, "herald_database_up", &[]), Some(1.0));
    assert_eq!(value(&samples, "herald_request_logs_dropped_total", &[]), Some(0.0));
    assert_eq!(value(&samples, "herald_jobs", &[("queue", "deliver"), ("state", "pending")]), Some(0.0));
    assert_eq!(value(&samples, "herald_emails_last_hour", &[("status", "delivered")]), Some(0.0));
    assert_eq!(value(&samples, "herald_webhook_deliveries_pending", &[]), Some(0.0));
    assert_eq!(value(&samples, "herald_webhook_oldest_pending_seconds", &[]), Some(0.0));
    assert_eq!(value(&samples, "herald_contact_imports", &[("status", "queued")]), Some(0.0));
    // The first scrape went through the gateway before it was answered, so the second counts it.
    let again = scrape(&app).await;
    assert!(value(&again, "herald_http_requests_total", &[("operation", "unmatched"), ("method", "GET"), ("status", "200")]) >= Some(1.0));
}

#[tokio::test]
async fn n_requests_to_an_operation_add_n_to_its_counter_and_its_latency_histogram() {
    let app = with_token().await;
    let labels = [("operation", "list-api-keys"), ("method", "GET"), ("status", "200")];
    let before = scrape(&app).await;
    let count_before = value(&before, "herald_http_requests_total", &labels).unwrap_or(0.0);
    let histogram_before =
        value(&before, "herald_http_request_duration_seconds_count", &[("operation", "list-api-keys")]).unwrap_or(0.0);
    for _ in 0..5 {
        assert_eq!(app.get("/api-keys").await.status, 200);
    }
    app.get("/api-keys/not-an-id/nothing").await.assert_error(404, "not_found");
    let after = scrape(&app).await;
    assert_eq!(value(&after, "herald_http_requests_total", &labels), Some(count_before + 5.0));
    assert_eq!(
        value(&after, "herald_http_request_duration_seconds_count", &[("operation", "list-api-keys")]),
        Some(histogram_before + 5.0)
    );
    assert_eq!(
        value(&after, "herald_http_request_duration_seconds_bucket", &[("operation", "list-api-keys"), ("le", "+Inf")]),
        Some(histogram_before + 5.0)
    );
    assert!(value(&after, "herald_http_request_duration_seconds_sum", &[("operation", "list-api-keys")]).unwrap() > 0.0);
    assert!(value(&after, "herald_http_requests_total", &[("operation", "unmatched"), ("method", "GET"), ("status", "404")]) >= Some(1.0));
    // Buckets are cumulative.
    let buckets: Vec<f64> = after
        .iter()
        .filter(|s| s.name == "herald_http_request_duration_seconds_bucket" && s.labels["operation"] == "list-api-keys")
        .map(|s| s.value)
        .collect();
    assert!(buckets.windows(2).all(|pair| pair[0] <= pair[1]), "{buckets:?}");
}

#[tokio::test]
async fn queue_depths_are_read_from_the_database_at_scrape_time() {
    let app = TestApp::spawn_with(|config| {
        config.metrics_token = Some(TOKEN.into());
        config.webhook_allow_private = true;
    })
    .await;
    let mut tx = app.pool.begin().await.unwrap();
    schema::jobs::enqueue(&mut tx, &schema::jobs::Housekeeping { period: chrono::Utc::now() }).await.unwrap();
    tx.commit().await.unwrap();
    let created = app.post("/webhooks", json!({ "endpoint": "http://127.0.0.1:9/hook", "events": ["email.sent"] })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let endpoint_id: uuid::Uuid = created.body["id"].as_str().unwrap().parse().unwrap();
    for (due_seconds_ago, event) in [(30, uuid::Uuid::now_v7()), (-600, uuid::Uuid::now_v7())] {
        sqlx::query("INSERT INTO events (id, team_id, type, data) VALUES ($1, $2, 'email.sent', '{}')")
            .bind(event)
            .bind(app.team_id)
            .execute(&app.pool)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO webhook_deliveries (id, team_id, endpoint_id, event_id, next_attempt_at)
             VALUES ($1, $2, $3, $4, now() - make_interval(secs => $5))",
        )
        .bind(uuid::Uuid::now_v7())
        .bind(app.team_id)
        .bind(endpoint_id)
        .bind(event)
        .bind(due_seconds_ago as f64)
        .execute(&app.pool)
        .await
        .unwrap();
    }
    sqlx::query(
        "INSERT INTO emails (id, team_id, from_header, from_email, subject, message_id, last_event, size_bytes)
         VALUES ($1, $2, 'a@example.com', 'a@example.com', 'Hi', '<m@example.com>', 'bounced', 10)",
    )
    .bind(uuid::Uuid::now_v7())
    .bind(app.team_id)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO contact_imports (id, team_id, status, on_conflict, column_map, file_size)
         VALUES ($1, $2, 'in_progress', 'skip', '{}', 10)",
    )
    .bind(uuid::Uuid::now_v7())
    .bind(app.team_id)
    .execute(&app.pool)
    .await
    .unwrap();

    let samples = scrape(&app).await;
    assert_eq!(value(&samples, "herald_jobs", &[("queue", "housekeeping"), ("state", "pending")]), Some(1.0));
    assert_eq!(value(&samples, "herald_webhook_deliveries_pending", &[]), Some(2.0));
    assert_eq!(value(&samples, "herald_webhook_deliveries_due", &[]), Some(1.0));
    let lag = value(&samples, "herald_webhook_oldest_pending_seconds", &[]).unwrap();
    assert!((30.0..120.0).contains(&lag), "{lag}");
    assert_eq!(value(&samples, "herald_emails_last_hour", &[("status", "bounced")]), Some(1.0));
    assert_eq!(value(&samples, "herald_contact_imports", &[("status", "in_progress")]), Some(1.0));

    // A disabled endpoint's deliveries wait for it and are not backlog.
    let disabled = app.patch(&format!("/webhooks/{endpoint_id}"), json!({ "status": "disabled" })).await;
    assert_eq!(disabled.status, 200, "{}", disabled.body);
    let samples = scrape(&app).await;
    assert_eq!(value(&samples, "herald_webhook_deliveries_pending", &[]), Some(0.0));
    assert_eq!(value(&samples, "herald_webhook_oldest_pending_seconds", &[]), Some(0.0));
}

#[tokio::test]
async fn metrics_is_an_unknown_path_when_neither_variable_is_set() {
    let app = TestApp::spawn().await;
    let bare = app.client.get(app.url("/metrics")).send().await.unwrap();
    Answer::from(bare).await.assert_error(404, "not_found");
    let with_token = app.request_as(TOKEN, Method::GET, "/metrics").send().await.unwrap();
    Answer::from(with_token).await.assert_error(404, "not_found");
    app.get("/metrics").await.assert_error(404, "not_found");
}

#[tokio::test]
async fn the_metrics_address_serves_the_scrape_without_a_token_and_nothing_else() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let app = TestApp::spawn_with(|config| config.metrics_addr = Some(addr)).await;
    let client = reqwest::Client::new();
    let response = tests::eventually(|| async { client.get(format!("http://{addr}/metrics")).send().await.ok() }).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let samples = parse(&response.text().await.unwrap());
    assert_eq!(value(&samples, "herald_database_up", &[]), Some(1.0));
    let other = client.get(format!("http://{addr}/api-keys")).bearer_auth(&app.key).send().await.unwrap();
    assert_eq!(other.status(), 404, "the metrics address serves nothing else");
    // Without a token the API listener keeps `/metrics` unknown.
    app.get("/metrics").await.assert_error(404, "not_found");
    app.shutdown().await;
    assert!(client.get(format!("http://{addr}/metrics")).send().await.is_err(), "the listener stops with the server");
}
