//! The dashboard session on the API's own routes (#28): a member acts on its current team as a
//! `full_access` key would, writes need the session's CSRF token, a viewer reads and cannot
//! write, a removed member's session reaches nothing, and the request log says `dashboard`.

use reqwest::Method;
use serde_json::json;
use tests::inbox::{as_person, person};
use tests::mail::{self, Mail};

#[tokio::test]
async fn a_members_session_sends_and_reads_mail_of_its_team_logged_as_the_dashboard() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let member = person(app, app.team_id, "member", "Mo").await;
    let sent = as_person(app, &member, Method::POST, "/emails", Some(Mail::message("delivered@simulator.herald.test"))).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let id = sent.body["id"].as_str().unwrap().to_string();
    let read = as_person(app, &member, Method::GET, &format!("/emails/{id}"), None).await;
    assert_eq!((read.status, read.body["id"].as_str()), (200, Some(id.as_str())));
    let source: String = tests::eventually(|| async {
        sqlx::query_scalar("SELECT source FROM request_logs WHERE email_id = $1::uuid").bind(&id).fetch_optional(&app.pool).await.unwrap()
    })
    .await;
    assert_eq!(source, "dashboard");

    // Another team's email is not found through the session either.
    let (other, other_key) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let theirs = tests::inbox::as_key(app, &other_key, Method::GET, "/emails", None).await;
    assert_eq!(theirs.status, 200);
    let stranger = person(app, other, "admin", "Stranger").await;
    as_person(app, &stranger, Method::GET, &format!("/emails/{id}"), None).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_viewer_reads_and_cannot_write_and_a_removed_member_reaches_nothing() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let viewer = person(app, app.team_id, "viewer", "Vi").await;
    assert_eq!(as_person(app, &viewer, Method::GET, "/emails", None).await.status, 200);
    let before = app.count("emails").await;
    as_person(app, &viewer, Method::POST, "/emails", Some(Mail::message("delivered@simulator.herald.test"))).await.assert_error(403, "invalid_permission");
    as_person(app, &viewer, Method::POST, "/webhooks", Some(json!({ "endpoint": "https://example.com/hook", "events": ["email.sent"] }))).await.assert_error(403, "invalid_permission");
    assert_eq!((app.count("emails").await, app.count("webhook_endpoints").await), (before, 0), "refused writes change nothing");

    let member = person(app, app.team_id, "member", "Gone").await;
    sqlx::query("DELETE FROM memberships WHERE person_id = $1").bind(member.id).execute(&app.pool).await.unwrap();
    as_person(app, &member, Method::GET, "/emails", None).await.assert_error(403, "invalid_permission");
}
