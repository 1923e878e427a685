//! What the dashboard's tests do as a browser would, without one: read a page and post a form
//! with a person's session cookie (and the session's CSRF token), redirects left unfollowed.

use crate::TestApp;
use crate::inbox::Person;
use reqwest::redirect::Policy;

/// A client that names itself a browser and follows no redirect (tests read `Location`).
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder().user_agent("Mozilla/5.0 (dashboard test)").redirect(Policy::none()).build().unwrap()
}

/// `GET path` as `who`: the status and the page.
pub async fn get(app: &TestApp, who: &Person, path: &str) -> (u16, String) {
    let answer = browser().get(app.url(path)).header("cookie", format!("herald_session={}", who.cookie)).send().await.unwrap();
    (answer.status().as_u16(), answer.text().await.unwrap())
}

/// A form posted to `path` as `who`, with the session's CSRF token: the status, the `Location`
/// and the page.
pub async fn post(app: &TestApp, who: &Person, path: &str, fields: &[(&str, &str)]) -> (u16, Option<String>, String) {
    let mut form: Vec<(&str, &str)> = vec![("csrf", who.csrf.as_str())];
    form.extend_from_slice(fields);
    let answer = browser().post(app.url(path)).header("cookie", format!("herald_session={}", who.cookie)).form(&form).send().await.unwrap();
    let location = answer.headers().get("location").map(|l| l.to_str().unwrap().to_string());
    (answer.status().as_u16(), location, answer.text().await.unwrap())
}

/// A team ready for a broadcast: its postal address set, and a segment "Readers" of three
/// contacts at the sink's domain (`reader0..2@`, first names `Reader0..2`). Answers the
/// segment's id.
pub async fn readers(app: &TestApp) -> String {
    let address = serde_json::json!({ "line1": "1 Main St", "city": "Springfield", "postal_code": "62701", "country": "US" });
    assert_eq!(app.patch("/team", serde_json::json!({ "postal_address": address })).await.status, 200);
    let segment = app.post("/segments", serde_json::json!({ "name": "Readers" })).await.body["id"].as_str().unwrap().to_string();
    for i in 0..3 {
        let contact = serde_json::json!({ "email": format!("reader{i}@{}", crate::mail::RECIPIENT_DOMAIN), "first_name": format!("Reader{i}"), "segments": [{ "id": segment }] });
        let made = app.post("/contacts", contact).await;
        assert_eq!(made.status, 201, "{}", made.body);
    }
    segment
}
