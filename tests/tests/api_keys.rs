//! API keys: document B's four routes and every rule.

use reqwest::Method;
use serde_json::json;
use tests::{Answer, TestApp};

#[tokio::test]
async fn creating_a_key_returns_its_token_once_and_stores_only_a_hash() {
    let app = TestApp::spawn().await;
    let answer = app.post("/api-keys", json!({ "name": "Production" })).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let token = answer.body["token"].as_str().unwrap();
    assert!(token.starts_with("rk_"));
    let (hash, prefix, permission): (Vec<u8>, String, String) =
        sqlx::query_as("SELECT token_hash, key_prefix, permission FROM api_keys WHERE id = $1::uuid")
            .bind(answer.body["id"].as_str().unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(hash, schema::secret::hash(token));
    assert!(token.starts_with(&prefix));
    assert_eq!(permission, "full_access");
    let listed = app.get("/api-keys").await;
    assert!(!listed.body.to_string().contains(token), "the token is never shown again");
    // The new key works.
    assert_eq!(Answer::from(app.request_as(token, Method::GET, "/api-keys").send().await.unwrap()).await.status, 200);
}

#[tokio::test]
async fn a_name_over_255_characters_is_refused_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let answer = app.post("/api-keys", json!({ "name": "n".repeat(256) })).await;
    answer.assert_error(400, "validation_error");
    assert_eq!(answer.body["errors"][0]["path"], "name");
    assert_eq!(app.count("api_keys").await, 1);
    assert_eq!(app.post("/api-keys", json!({ "name": "n".repeat(255) })).await.status, 201);
}

#[tokio::test]
async fn a_missing_name_is_422_missing_required_field_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let answer = app.post("/api-keys", json!({ "permission": "full_access" })).await;
    answer.assert_error(422, "missing_required_field");
    assert_eq!(answer.body["errors"][0]["path"], "name");
    app.post("/api-keys", json!({ "name": "   " })).await.assert_error(400, "validation_error");
    assert_eq!(app.count("api_keys").await, 1);
}

#[tokio::test]
async fn an_unknown_permission_is_an_invalid_parameter() {
    let app = TestApp::spawn().await;
    let answer = app.post("/api-keys", json!({ "name": "k", "permission": "admin" })).await;
    answer.assert_error(422, "invalid_parameter");
    assert_eq!(answer.body["errors"][0]["path"], "permission");
    assert_eq!(app.count("api_keys").await, 1);
}

#[tokio::test]
async fn a_full_access_key_carrying_a_domain_id_is_refused() {
    let app = TestApp::spawn().await;
    let domain = schema::ids::new_id().to_string();
    for body in [json!({ "name": "k", "domain_id": domain }), json!({ "name": "k", "permission": "full_access", "domain_id": domain })] {
        let answer = app.post("/api-keys", body).await;
        answer.assert_error(400, "validation_error");
        assert_eq!(answer.body["errors"][0]["path"], "domain_id");
    }
    assert_eq!(app.count("api_keys").await, 1);
}

#[tokio::test]
async fn a_sending_key_pinned_to_a_domain_the_team_does_not_have_is_404() {
    let app = TestApp::spawn().await;
    let body = json!({ "name": "k", "permission": "sending_access", "domain_id": schema::ids::new_id() });
    app.post("/api-keys", body).await.assert_error(404, "not_found");
    assert_eq!(app.count("api_keys").await, 1);
}

#[tokio::test]
async fn inbox_access_above_none_or_channel_ids_need_a_signed_in_admin() {
    let app = TestApp::spawn().await;
    for body in [
        json!({ "name": "k", "inbox_access": "read" }),
        json!({ "name": "k", "inbox_access": "write" }),
        json!({ "name": "k", "inbox_channel_ids": [] }),
    ] {
        app.post("/api-keys", body).await.assert_error(403, "invalid_permission");
    }
    assert_eq!(app.count("api_keys").await, 1);
    assert_eq!(app.post("/api-keys", json!({ "name": "k", "inbox_access": "none" })).await.status, 201);
}

#[tokio::test]
async fn the_list_shows_every_non_revoked_key_by_default_and_filters_by_status() {
    let app = TestApp::spawn().await;
    let (revoked, _) = app.create_key(json!({ "name": "old" })).await;
    let (suspended, _) = app.create_key(json!({ "name": "paused" })).await;
    app.delete(&format!("/api-keys/{revoked}")).await;
    let mut conn = app.pool.acquire().await.unwrap();
    schema::store::api_keys::set_status(&mut conn, suspended.parse().unwrap(), schema::model::KeyStatus::Suspended).await.unwrap();

    let names = |answer: &Answer| -> Vec<String> {
        answer.body["data"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&app.get("/api-keys").await), vec!["paused", "Default"]);
    assert_eq!(names(&app.get("/api-keys?status=active").await), vec!["paused", "Default"]);
    assert_eq!(names(&app.get("/api-keys?status=revoked").await), vec!["old"]);
    assert_eq!(names(&app.get("/api-keys?status=all").await), vec!["paused", "old", "Default"]);
    app.get("/api-keys?status=gone").await.assert_error(422, "invalid_parameter");
}

#[tokio::test]
async fn search_is_a_case_insensitive_substring_with_literal_wildcards() {
    let app = TestApp::spawn().await;
    for name in ["Prod 100%", "prod_eu", "Staging", "prodXeu"] {
        app.create_key(json!({ "name": name })).await;
    }
    let names = |answer: Answer| -> Vec<String> {
        let mut names: Vec<String> = answer.body["data"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap().to_string()).collect();
        names.sort();
        names
    };
    assert_eq!(names(app.get("/api-keys?search=PROD").await), vec!["Prod 100%", "prodXeu", "prod_eu"]);
    assert_eq!(names(app.get("/api-keys?search=d_e").await), vec!["prod_eu"]);
    assert_eq!(names(app.get("/api-keys?search=0%25").await), vec!["Prod 100%"]);
    app.get("/api-keys?search=%20").await.assert_error(422, "invalid_parameter");
    app.get("/api-keys?search=").await.assert_error(422, "invalid_parameter");
}

#[tokio::test]
async fn the_list_filters_by_permission_and_inbox_access() {
    let app = TestApp::spawn().await;
    app.create_key(json!({ "name": "sender", "permission": "sending_access" })).await;
    let senders = app.get("/api-keys?permission=sending_access").await;
    assert_eq!(senders.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(senders.body["data"][0]["name"], "sender");
    assert_eq!(app.get("/api-keys?inbox_access=none").await.body["data"].as_array().unwrap().len(), 2);
    assert_eq!(app.get("/api-keys?inbox_access=write").await.body["data"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn the_list_pages_with_limit_after_and_before() {
    let app = TestApp::spawn_with(|config| config.rate_limit_capacity = 100).await;
    for i in 0..5 {
        app.create_key(json!({ "name": format!("key {i}") })).await;
    }
    let first = app.get("/api-keys?limit=2").await;
    assert_eq!(first.body["object"], "list");
    assert_eq!(first.body["has_more"], true);
    let ids: Vec<&str> = first.body["data"].as_array().unwrap().iter().map(|k| k["id"].as_str().unwrap()).collect();
    assert_eq!(first.body["data"][0]["name"], "key 4");

    let second = app.get(&format!("/api-keys?limit=2&after={}", ids[1])).await;
    assert_eq!(second.body["data"][0]["name"], "key 2");
    assert_eq!(second.body["data"][1]["name"], "key 1");
    assert_eq!(second.body["has_more"], true);

    let last = app.get(&format!("/api-keys?limit=10&after={}", second.body["data"][1]["id"].as_str().unwrap())).await;
    assert_eq!(last.body["has_more"], false);
    assert_eq!(last.body["data"].as_array().unwrap().len(), 2);

    let back = app.get(&format!("/api-keys?limit=2&before={}", second.body["data"][0]["id"].as_str().unwrap())).await;
    assert_eq!(back.body["data"][0]["name"], "key 4");
    assert_eq!(back.body["data"][1]["name"], "key 3");

    app.get(&format!("/api-keys?after={0}&before={0}", ids[0])).await.assert_error(422, "invalid_parameter");
    app.get("/api-keys?limit=101").await.assert_error(422, "invalid_parameter");
    app.get("/api-keys?limit=0").await.assert_error(422, "invalid_parameter");
}

#[tokio::test]
async fn last_used_at_is_refreshed_at_most_once_a_minute_naming_the_request_log() {
    let app = TestApp::spawn().await;
    let (id, token) = app.create_key(json!({ "name": "used" })).await;
    let first = Answer::from(app.request_as(&token, Method::GET, "/api-keys").send().await.unwrap()).await;
    let first_request = first.header("x-request-id").unwrap().to_string();
    Answer::from(app.request_as(&token, Method::GET, "/api-keys").send().await.unwrap()).await;
    let (last_used_at, log_id): (Option<chrono::DateTime<chrono::Utc>>, Option<uuid::Uuid>) =
        sqlx::query_as("SELECT last_used_at, last_used_request_log_id FROM api_keys WHERE id = $1::uuid")
            .bind(&id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(last_used_at.is_some());
    assert_eq!(log_id.unwrap().to_string(), first_request, "the second use within a minute does not refresh it");
    app.wait_for_rows(&format!("request_logs WHERE id = '{first_request}'"), 1).await;
    let log = app.get(&format!("/logs/{first_request}")).await;
    assert_eq!(log.status, 200, "the named log exists: {}", log.body);

    // A minute later it refreshes.
    sqlx::query("UPDATE api_keys SET last_used_at = now() - interval '61 seconds' WHERE id = $1::uuid").bind(&id).execute(&app.pool).await.unwrap();
    api::http::key_cache::settle(&app.pool).await.unwrap();
    let third = Answer::from(app.request_as(&token, Method::GET, "/api-keys").send().await.unwrap()).await;
    let listed = app.get("/api-keys?status=all").await;
    let key = listed.body["data"].as_array().unwrap().iter().find(|k| k["id"] == id.as_str()).unwrap().clone();
    assert_eq!(key["last_used_request_log_id"], third.header("x-request-id").unwrap());
}

#[tokio::test]
async fn patch_renames_a_key_and_answers_object_and_id() {
    let app = TestApp::spawn().await;
    let (id, _) = app.create_key(json!({ "name": "before" })).await;
    let answer = app.patch(&format!("/api-keys/{id}"), json!({ "name": "after", "id": id })).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body, json!({ "object": "api_key", "id": id }));
    assert_eq!(app.get("/api-keys").await.body["data"][0]["name"], "after");
}

#[tokio::test]
async fn patch_refuses_raising_inbox_access_changing_channels_or_the_permission() {
    let app = TestApp::spawn().await;
    let (id, _) = app.create_key(json!({ "name": "fixed" })).await;
    let path = format!("/api-keys/{id}");
    app.patch(&path, json!({ "inbox_access": "read" })).await.assert_error(403, "invalid_permission");
    app.patch(&path, json!({ "inbox_channel_ids": null })).await.assert_error(403, "invalid_permission");
    app.patch(&path, json!({ "permission": "sending_access" })).await.assert_error(400, "validation_error");
    app.patch(&path, json!({ "name": "x".repeat(256) })).await.assert_error(400, "validation_error");
    assert_eq!(app.count("api_keys WHERE name = 'fixed' AND permission = 'full_access' AND inbox_access = 'none'").await, 1);
    // Lowering to none and restating the permission are fine.
    assert_eq!(app.patch(&path, json!({ "inbox_access": "none", "permission": "full_access" })).await.status, 200);
}

#[tokio::test]
async fn delete_revokes_and_keeps_the_row_and_the_key_then_answers_403_restricted() {
    let app = TestApp::spawn().await;
    let (id, token) = app.create_key(json!({ "name": "doomed" })).await;
    let answer = app.delete(&format!("/api-keys/{id}")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, json!({ "object": "api_key", "id": id, "deleted": true }));
    assert_eq!(app.count("api_keys WHERE status = 'revoked' AND revoked_at IS NOT NULL").await, 1);
    let refused = Answer::from(app.request_as(&token, Method::GET, "/api-keys").send().await.unwrap()).await;
    refused.assert_error(403, "restricted_api_key");
    app.patch(&format!("/api-keys/{id}"), json!({ "name": "x" })).await.assert_error(404, "not_found");
    app.delete(&format!("/api-keys/{id}")).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn another_teams_key_answers_404_like_a_missing_one() {
    let app = TestApp::spawn().await;
    let (other_team, other_key) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let other_id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM api_keys WHERE team_id = $1").bind(other_team).fetch_one(&app.pool).await.unwrap();
    app.patch(&format!("/api-keys/{other_id}"), json!({ "name": "stolen" })).await.assert_error(404, "not_found");
    app.delete(&format!("/api-keys/{other_id}")).await.assert_error(404, "not_found");
    app.delete("/api-keys/not-a-uuid").await.assert_error(404, "not_found");
    let listed = app.get("/api-keys?status=all").await;
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 1);
    // The other team's key still works and was not renamed.
    assert_eq!(Answer::from(app.request_as(&other_key, Method::GET, "/api-keys").send().await.unwrap()).await.status, 200);
    assert_eq!(app.count("api_keys WHERE name = 'stolen'").await, 0);
}
