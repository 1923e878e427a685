//! Suppression routes: add, batch add, list with filters newest first, get and delete by id or
//! address, events, refusals that write nothing, and team isolation.

use serde_json::json;
use tests::TestApp;

#[tokio::test]
async fn an_address_is_suppressed_read_by_id_or_address_and_removed() {
    let app = TestApp::spawn().await;
    let added = app.post("/suppressions", json!({ "email": "Jo@Inbox.Test" })).await;
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(added.body["object"], "suppression");
    let id = added.body["id"].as_str().unwrap().to_string();
    let again = app.post("/suppressions", json!({ "email": "jo@inbox.test" })).await;
    assert_eq!(again.body["id"], id.as_str(), "an address is suppressed once");

    for path in [format!("/suppressions/{id}"), "/suppressions/jo@inbox.test".into(), "/suppressions/JO%40inbox.test".into()] {
        let found = app.get(&path).await;
        assert_eq!(found.status, 200, "{path}: {}", found.body);
        assert_eq!(found.body["email"], "jo@inbox.test");
        assert_eq!(found.body["origin"], "manual");
        assert!(found.body["source_id"].is_null());
    }
    let removed = app.delete("/suppressions/jo@inbox.test").await;
    assert_eq!(removed.body, json!({ "object": "suppression", "id": id, "deleted": true }));
    app.get(&format!("/suppressions/{id}")).await.assert_error(404, "not_found");
    let types: Vec<String> = sqlx::query_scalar("SELECT type FROM events ORDER BY id").fetch_all(&app.pool).await.unwrap();
    assert_eq!(types, ["suppression.added", "suppression.removed"]);
}

#[tokio::test]
async fn a_batch_adds_up_to_a_hundred_and_the_list_filters_newest_first() {
    let app = TestApp::spawn().await;
    let batch = app.post("/suppressions/batch/add", json!({ "emails": ["a@x.test", "b@x.test", "c@y.test"] })).await;
    assert_eq!(batch.status, 201, "{}", batch.body);
    assert_eq!(batch.body["data"].as_array().unwrap().len(), 3);
    sqlx::query("UPDATE suppressions SET origin = 'bounce' WHERE email = 'c@y.test'").execute(&app.pool).await.unwrap();

    let emails = |answer: tests::Answer| -> Vec<String> {
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body["data"].as_array().unwrap().iter().map(|s| s["email"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(emails(app.get("/suppressions").await), ["c@y.test", "b@x.test", "a@x.test"]);
    assert_eq!(emails(app.get("/suppressions?origin=bounce").await), ["c@y.test"]);
    assert_eq!(emails(app.get("/suppressions?search=X.TEST").await), ["b@x.test", "a@x.test"]);
    assert_eq!(emails(app.get("/suppressions?search=%25").await), Vec::<String>::new());
    assert_eq!(emails(app.get("/suppressions?limit=1").await), ["c@y.test"]);
    assert_eq!(emails(app.get("/suppressions?end_date=2000-01-01").await), Vec::<String>::new());
}

#[tokio::test]
async fn a_batch_removes_suppressions_named_by_address_or_id_and_skips_names_that_match_none() {
    let app = TestApp::spawn().await;
    let added = app.post("/suppressions/batch/add", json!({ "emails": ["a@x.test", "b@x.test", "c@x.test"] })).await.body;
    let b = added["data"][1]["id"].as_str().unwrap().to_string();
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let theirs = tests::Answer::from(app.request_as(&other, reqwest::Method::POST, "/suppressions").json(&json!({ "email": "a@x.test" })).send().await.unwrap()).await;
    assert_eq!(theirs.status, 201);

    let body = json!({ "emails": ["A@X.test", "nobody@x.test"], "ids": [b, uuid::Uuid::now_v7()] });
    let removed = app.post("/suppressions/batch/remove", body).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    let mut ids: Vec<&str> = removed.body["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap()).collect();
    ids.sort();
    let mut expected = vec![added["data"][0]["id"].as_str().unwrap(), b.as_str()];
    expected.sort();
    assert_eq!(ids, expected, "{}", removed.body);
    assert!(removed.body["data"].as_array().unwrap().iter().all(|d| d["deleted"] == true && d["object"] == "suppression"));
    let left: Vec<String> = sqlx::query_scalar("SELECT email FROM suppressions ORDER BY email").fetch_all(&app.pool).await.unwrap();
    assert_eq!(left, ["a@x.test", "c@x.test"], "the other team's a@x.test and this team's c@x.test stay");
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE type = 'suppression.removed'").fetch_one(&app.pool).await.unwrap();
    assert_eq!(events, 2, "one event per suppression removed");

    let too_many: Vec<String> = (0..101).map(|i| format!("r{i}@x.test")).collect();
    let bad_bodies = [
        (json!({}), "emails"),
        (json!({ "emails": [] }), "emails"),
        (json!({ "emails": too_many }), "emails"),
        (json!({ "emails": ["c@x.test", "nope"] }), "emails[1]"),
        (json!({ "ids": ["not-an-id"] }), "ids[0]"),
    ];
    for (bad, path) in bad_bodies {
        let answer = app.post("/suppressions/batch/remove", bad.clone()).await;
        answer.assert_error(400, "validation_error");
        assert_eq!(answer.body["errors"][0]["path"], path, "{bad}: {}", answer.body);
    }
    assert_eq!(app.count("suppressions").await, 2, "a refused batch removes nothing");
}

#[tokio::test]
async fn bad_suppression_input_is_refused_and_writes_nothing() {
    let app = TestApp::spawn().await;
    app.post("/suppressions", json!({})).await.assert_error(422, "missing_required_field");
    app.post("/suppressions", json!({ "email": "nope" })).await.assert_error(400, "validation_error");
    let too_many: Vec<String> = (0..101).map(|i| format!("r{i}@x.test")).collect();
    app.post("/suppressions/batch/add", json!({ "emails": too_many })).await.assert_error(400, "validation_error");
    let one_bad = app.post("/suppressions/batch/add", json!({ "emails": ["ok@x.test", "bad"] })).await;
    one_bad.assert_error(400, "validation_error");
    assert_eq!(one_bad.body["errors"][0]["path"], "emails[1]");
    app.get("/suppressions?origin=spam").await.assert_error(422, "invalid_parameter");
    app.get("/suppressions?search=").await.assert_error(422, "invalid_parameter");
    app.get(&format!("/suppressions?search={}", "s".repeat(201))).await.assert_error(422, "invalid_parameter");
    assert_eq!(app.count("suppressions").await, 0);
    assert_eq!(app.count("events").await, 0);
}

#[tokio::test]
async fn another_teams_suppression_answers_not_found() {
    let app = TestApp::spawn().await;
    let id = app.post("/suppressions", json!({ "email": "jo@inbox.test" })).await.body["id"].as_str().unwrap().to_string();
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    for path in [format!("/suppressions/{id}"), "/suppressions/jo@inbox.test".to_string()] {
        for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
            let answer = tests::Answer::from(app.request_as(&other, method, &path).send().await.unwrap()).await;
            answer.assert_error(404, "not_found");
        }
    }
    let listed = tests::Answer::from(app.request_as(&other, reqwest::Method::GET, "/suppressions").send().await.unwrap()).await;
    assert_eq!(listed.body["data"], json!([]));
    assert_eq!(app.count("suppressions").await, 1);
}
