//! AI assist in the dashboard's template editor (#28 with #25), against the tests crate's
//! OpenAI-compatible server: subject lines suggested and one saved with a button, a heading
//! rewritten in place, a template drafted from a brief; with AI assist off, no control shows
//! and a forced post is the API's refusal with nothing written.

use serde_json::json;
use std::time::Duration;
use tests::dashboard::{get, post};
use tests::inbox::person;
use tests::openai::{API_KEY, OpenAiStandIn};

#[tokio::test]
async fn subject_lines_are_suggested_and_saved_a_heading_is_rewritten_and_a_template_is_drafted_from_a_brief() {
    let provider = OpenAiStandIn::start().await;
    let base = provider.base.clone();
    let app = tests::TestApp::spawn_with(move |config| {
        config.rate_limit_capacity = 1000;
        config.rate_limit_refill = 1000.0;
        config.ai = Some(api::config::AiSettings { base_url: base, api_key: Some(API_KEY.into()), model: "gpt-test".into(), timeout: Duration::from_secs(2) });
    })
    .await;
    let ada = person(&app, app.team_id, "admin", "Ada").await;
    let (status, location, _) = post(&app, &ada, "/app/templates", &[("name", "Launch"), ("starter", "blank")]).await;
    assert_eq!(status, 303);
    let page_path = location.unwrap();
    let id = page_path.strip_prefix("/app/templates/").unwrap().to_string();

    // Off: no control, and the API refuses a forced post; nothing is written.
    let (_, page) = get(&app, &ada, &page_path).await;
    assert!(!page.contains("Suggest subject lines") && !page.contains("value=\"ai_rewrite\""), "{page}");
    let before = app.get(&format!("/templates/{id}")).await.body;
    let (status, _, _) = post(&app, &ada, &format!("{page_path}/ai/subjects"), &[]).await;
    assert!(status >= 400, "AI assist off is refused: {status}");
    assert_eq!(app.get(&format!("/templates/{id}")).await.body, before);
    assert!(provider.requests().is_empty(), "the model was never asked");

    assert_eq!(app.patch("/team", json!({ "ai_assist_enabled": true })).await.status, 200);
    let (_, page) = get(&app, &ada, &page_path).await;
    assert!(page.contains("Suggest subject lines (AI)") && page.contains("value=\"ai_rewrite\""), "{page}");
    let (status, _, page) = post(&app, &ada, &format!("{page_path}/ai/subjects"), &[]).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Your order is on its way") && page.matches(">Use</button>").count() == 5, "five suggestions, each with its button: {page}");
    let stamp = app.get(&format!("/templates/{id}")).await.body["updated_at"].as_str().unwrap().to_string();
    let (status, _, _) = post(&app, &ada, &page_path, &[("updated_at", &stamp), ("subject", "Your order is on its way")]).await;
    assert_eq!(status, 303);
    assert_eq!(app.get(&format!("/templates/{id}")).await.body["subject"], "Your order is on its way");

    let stamp = app.get(&format!("/templates/{id}")).await.body["updated_at"].as_str().unwrap().to_string();
    let (status, _, page) = post(&app, &ada, &format!("{page_path}/blocks"), &[("updated_at", &stamp), ("op", "ai_rewrite"), ("path", "0.0.0"), ("preset", "shorter")]).await;
    assert_eq!(status, 303, "{page}");
    let heading = app.get(&format!("/templates/{id}")).await.body["document"]["sections"][0]["columns"][0]["blocks"][0].clone();
    assert_eq!((heading["type"].as_str(), heading["text"].as_str()), (Some("heading"), Some("A heading (rewritten)")), "{heading}");
    let (status, _, page) = post(&app, &ada, &format!("{page_path}/blocks"), &[("updated_at", &stamp), ("op", "ai_rewrite"), ("path", "0.0.9")]).await;
    assert_eq!(status, 422, "a block no longer there: {page}");

    let (status, location, page) = post(&app, &ada, "/app/templates/draft", &[("name", "Spring sale"), ("brief", "Announce the spring sale, 20% off")]).await;
    assert_eq!(status, 303, "{page}");
    let drafted = app.get(&format!("/templates/{}", location.unwrap().strip_prefix("/app/templates/").unwrap())).await.body;
    assert_eq!(drafted["name"], "Spring sale");
    assert!(drafted["html"].as_str().unwrap().contains("The spring sale is here") && drafted["published_version"].is_null(), "a visual draft: {drafted}");
}
