//! DNS auto-configuration against a local server speaking Cloudflare's endpoints.

use serde_json::{Value, json};
use tests::TestApp;
use tests::cloudflare::FakeCloudflare;

async fn setup(secret: bool) -> (TestApp, FakeCloudflare, String) {
    let cloudflare = FakeCloudflare::start().await;
    let base = cloudflare.base.clone();
    let app = TestApp::spawn_with(move |config| {
        config.cloudflare_api_url = base;
        config.secret_key = secret.then(|| "operator secret".to_string());
    })
    .await;
    let answer = app.post("/domains", json!({ "name": "example.test", "click_tracking": true })).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let id = answer.body["id"].as_str().unwrap().to_string();
    (app, cloudflare, id)
}

fn path(id: &str) -> String {
    format!("/domains/{id}/autoconfigure")
}

fn fqdns(list: &Value) -> Vec<String> {
    list.as_array().unwrap().iter().map(|r| r["fqdn"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_zone_scoped_token_writes_the_records_of_enabled_capabilities_and_keeps_existing_ones() {
    let (app, cloudflare, id) = setup(false).await;
    cloudflare.add_token("scoped", &[("zone-1", "example.test")]);
    cloudflare.seed("zone-1", "CNAME", "links.example.test", "tracker.elsewhere.test");
    let answer = app.post(&path(&id), json!({ "provider": "cloudflare", "api_token": "scoped" })).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    // Receiving is off: no MX. Tracking is on but its name is taken.
    assert_eq!(fqdns(&answer.body["written"]), ["svc._domainkey.example.test", "send.example.test"]);
    assert_eq!(fqdns(&answer.body["conflicts"]), ["links.example.test"]);
    assert_eq!(answer.body["conflicts"][0]["existing"][0], json!({ "type": "CNAME", "value": "tracker.elsewhere.test" }));
    assert_eq!(answer.body["token_kept"], false);

    let records = cloudflare.records();
    assert_eq!(records.len(), 3, "nothing deleted, two added");
    let dkim = records.iter().find(|r| r.name == "svc._domainkey.example.test").unwrap();
    assert!(dkim.content.starts_with("\"p=MIIB") && dkim.content.contains("\" \""), "two quoted strings: {}", dkim.content);
    let mail_from = records.iter().find(|r| r.name == "send.example.test").unwrap();
    assert_eq!((mail_from.record_type.as_str(), &mail_from.body["proxied"]), ("CNAME", &json!(false)));
    let kept: bool = sqlx::query_scalar("SELECT autoconfigure_credential IS NOT NULL FROM domains").fetch_one(&app.pool).await.unwrap();
    assert!(!kept, "the token is forgotten unless kept");
}

#[tokio::test]
async fn tokens_reaching_several_zones_or_global_keys_or_other_zones_are_refused() {
    let (app, cloudflare, id) = setup(false).await;
    cloudflare.add_token("wide", &[("zone-1", "example.test"), ("zone-2", "other.test")]);
    cloudflare.add_token("elsewhere", &[("zone-2", "other.test")]);
    for token in ["wide", "elsewhere", "0123456789abcdef0123456789abcdef01234", "unknown"] {
        let answer = app.post(&path(&id), json!({ "api_token": token })).await;
        answer.assert_error(422, "validation_error");
    }
    app.post(&path(&id), json!({ "provider": "route53", "api_token": "x" })).await.assert_error(422, "invalid_parameter");
    app.post(&path(&id), json!({})).await.assert_error(422, "missing_required_field");
    assert!(cloudflare.records().is_empty());
}

#[tokio::test]
async fn a_kept_token_is_sealed_reused_and_removable() {
    let (app, cloudflare, id) = setup(true).await;
    cloudflare.add_token("scoped-token-value", &[("zone-1", "example.test")]);
    let answer = app.post(&path(&id), json!({ "api_token": "scoped-token-value", "keep_token": true })).await;
    assert_eq!((answer.status, answer.body["token_kept"].as_bool()), (200, Some(true)), "{}", answer.body);
    let sealed: Vec<u8> = sqlx::query_scalar("SELECT autoconfigure_credential FROM domains").fetch_one(&app.pool).await.unwrap();
    assert!(!sealed.windows(18).any(|w| w == b"scoped-token-value"), "stored sealed, not in the clear");
    assert_eq!(app.get(&format!("/domains/{id}")).await.body["autoconfigure_credential"], true);

    // A second run without a token uses the kept one; everything is already there.
    let again = app.post(&path(&id), json!({})).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!((again.body["written"].as_array().unwrap().len(), again.body["conflicts"].as_array().unwrap().len()), (0, 3));

    let removed = app.delete(&format!("{}/credential", path(&id))).await;
    assert_eq!((removed.status, removed.body["deleted"].as_bool()), (200, Some(true)));
    app.delete(&format!("{}/credential", path(&id))).await.assert_error(404, "not_found");
    app.post(&path(&id), json!({})).await.assert_error(422, "missing_required_field");
}

#[tokio::test]
async fn keeping_a_token_needs_the_operator_secret() {
    let (app, cloudflare, id) = setup(false).await;
    cloudflare.add_token("scoped", &[("zone-1", "example.test")]);
    app.post(&path(&id), json!({ "api_token": "scoped", "keep_token": true })).await.assert_error(422, "validation_error");
    assert!(cloudflare.records().is_empty());
}
