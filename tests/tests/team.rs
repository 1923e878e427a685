//! The team profile: `GET /team` and `PATCH /team` (name, sender identity, brand kit, AI assist).

use reqwest::Method;
use serde_json::{Value, json};
use tests::{Answer, TestApp};

fn brand_kit() -> Value {
    json!({
        "logo_url": "https://cdn.example.com/logo.png",
        "primary_color": "#1a73e8",
        "accent_color": "#FF5500",
        "font": "georgia",
        "button_style": "rounded",
        "company_name": "Acme Inc.",
        "address": "1 Main St, Springfield",
        "footer_text": "You get this because you asked for it.",
    })
}

/// The team row as stored, to show a refusal changed nothing.
async fn stored(app: &TestApp) -> Value {
    sqlx::query_scalar("SELECT to_jsonb(t) FROM teams t WHERE id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap()
}

#[tokio::test]
async fn the_team_answers_its_plan_limits_tier_identity_and_brand() {
    let app = TestApp::spawn().await;
    let team = app.get("/team").await;
    assert_eq!(team.status, 200, "{}", team.body);
    let team = team.body;
    assert_eq!(team["object"], "team");
    assert_eq!(team["id"], app.team_id.to_string());
    assert_eq!(team["name"], "Test team");
    assert_eq!(team["risk_state"], "normal");
    assert_eq!(
        team["plan"],
        json!({ "code": "free", "name": "Free", "limits": { "included_emails": 3000, "daily_cap": 100, "domain_limit": 1, "webhook_endpoint_limit": 1, "retention_days": 30 } })
    );
    assert_eq!(team["sending"]["tier"], 0);
    assert_eq!(team["sending"]["tier_name"], "new");
    assert_eq!(team["sending"]["next_unlock"], "verify_domain");
    assert_eq!(team["sending"]["sandbox_regions"].as_array().unwrap().len(), 4);
    assert_eq!(team["sender_identity"], json!({ "sender_name": null, "postal_address": null }));
    assert!(team["brand_kit"].as_object().unwrap().values().all(Value::is_null), "{}", team["brand_kit"]);
    assert_eq!(team["brand_kit"].as_object().unwrap().len(), 8);
    assert_eq!(team["ai_assist_enabled"], false);
    assert_eq!(team["sso"], Value::Null);
}

#[tokio::test]
async fn patch_changes_only_the_fields_sent_and_answers_the_team() {
    let app = TestApp::spawn().await;
    let address = json!({ "line1": " 1 Main St ", "line2": null, "city": "Springfield", "state": "IL", "postal_code": "62701", "country": "US" });
    let admin = tests::inbox::person(&app, app.team_id, "admin", "Ada").await;
    let body = json!({ "name": "  Acme  ", "sender_name": "Acme Billing", "postal_address": address, "brand_kit": brand_kit(), "ai_assist_enabled": false });
    let patched = as_admin(&app, &admin, body).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["object"], "team");
    assert_eq!(patched.body["name"], "Acme");
    assert_eq!(patched.body["sender_identity"]["sender_name"], "Acme Billing");
    assert_eq!(
        patched.body["sender_identity"]["postal_address"],
        json!({ "line1": "1 Main St", "line2": null, "city": "Springfield", "state": "IL", "postal_code": "62701", "country": "US" })
    );
    let kit = &patched.body["brand_kit"];
    assert_eq!(kit["primary_color"], "#1A73E8");
    assert_eq!(kit["font"], "georgia");
    assert_eq!(kit["logo_url"], "https://cdn.example.com/logo.png");
    assert_eq!(app.get("/team").await.body, patched.body, "GET answers what PATCH answered");

    // A field left out stays; `null` clears; a brand kit sent whole with nulls falls back to defaults.
    let mut plain = brand_kit();
    for field in ["logo_url", "font", "footer_text"] {
        plain[field] = Value::Null;
    }
    let again = app.patch("/team", json!({ "sender_name": null, "brand_kit": plain })).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["name"], "Acme");
    assert_eq!(again.body["sender_identity"]["sender_name"], Value::Null);
    assert_eq!(again.body["sender_identity"]["postal_address"]["city"], "Springfield");
    assert_eq!(again.body["brand_kit"]["logo_url"], Value::Null);
    assert_eq!(again.body["brand_kit"]["company_name"], "Acme Inc.");
    let cleared = app.patch("/team", json!({ "postal_address": null })).await;
    assert_eq!(cleared.body["sender_identity"]["postal_address"], Value::Null);
}

/// A call with the key and, beside it, the admin's dashboard session.
async fn as_admin(app: &TestApp, admin: &tests::inbox::Person, body: Value) -> tests::Answer {
    let request = app.request(reqwest::Method::PATCH, "/team").header("cookie", format!("herald_session={}", admin.cookie)).header("x-csrf-token", &admin.csrf);
    tests::Answer::from(request.json(&body).send().await.unwrap()).await
}

#[tokio::test]
async fn renaming_the_team_needs_a_team_admin_and_a_key_alone_still_changes_the_other_fields() {
    let app = TestApp::spawn().await;
    let before = stored(&app).await;
    app.patch("/team", json!({ "name": "Renamed", "sender_name": "Acme" })).await.assert_error(403, "invalid_permission");
    assert_eq!(stored(&app).await, before, "a refused rename changes nothing");
    let member = tests::inbox::person(&app, app.team_id, "member", "Bo").await;
    as_admin(&app, &member, json!({ "name": "Renamed" })).await.assert_error(403, "invalid_permission");
    assert_eq!(stored(&app).await, before, "a member is not an admin");
    let other = app.patch("/team", json!({ "sender_name": "Acme" })).await;
    assert_eq!((other.status, other.body["sender_identity"]["sender_name"].as_str()), (200, Some("Acme")), "{}", other.body);
    let admin = tests::inbox::person(&app, app.team_id, "admin", "Ada").await;
    let renamed = as_admin(&app, &admin, json!({ "name": "Renamed" })).await;
    assert_eq!((renamed.status, renamed.body["name"].as_str()), (200, Some("Renamed")), "{}", renamed.body);
}

#[tokio::test]
async fn ai_assist_cannot_be_turned_on_until_it_exists_and_nothing_changes() {
    let app = TestApp::spawn().await;
    let before = stored(&app).await;
    app.patch("/team", json!({ "ai_assist_enabled": true, "name": "Renamed" })).await.assert_error(503, "service_unavailable");
    assert_eq!(stored(&app).await, before);
    let off = app.patch("/team", json!({ "ai_assist_enabled": false })).await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(off.body["ai_assist_enabled"], false);
}

#[tokio::test]
async fn a_brand_kit_missing_fields_is_422_naming_each_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let before = stored(&app).await;
    let mut partial = brand_kit();
    partial.as_object_mut().unwrap().remove("font");
    partial.as_object_mut().unwrap().remove("footer_text");
    let refused = app.patch("/team", json!({ "brand_kit": partial, "name": "Renamed" })).await;
    refused.assert_error(422, "missing_required_field");
    let paths: Vec<&str> = refused.body["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, vec!["brand_kit.font", "brand_kit.footer_text"]);
    assert_eq!(stored(&app).await, before);
}

#[tokio::test]
async fn each_bad_field_is_400_validation_error_naming_it_and_changes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    let before = stored(&app).await;
    let address = |country: &str| json!({ "line1": "1 Main St", "city": "Springfield", "country": country });
    let kit = |field: &str, value: Value| {
        let mut kit = brand_kit();
        kit[field] = value;
        json!({ "brand_kit": kit })
    };
    let cases: Vec<(Value, &str)> = vec![
        (json!({ "name": "   " }), "name"),
        (json!({ "name": "n".repeat(81) }), "name"),
        (json!({ "sender_name": "s".repeat(201) }), "sender_name"),
        (json!({ "sender_name": "  " }), "sender_name"),
        (json!({ "postal_address": address("us") }), "postal_address.country"),
        (json!({ "postal_address": address("XX") }), "postal_address.country"),
        (json!({ "postal_address": address("USA") }), "postal_address.country"),
        (json!({ "postal_address": { "line1": " ", "city": "Springfield", "country": "US" } }), "postal_address.line1"),
        (kit("primary_color", json!("1a73e8")), "brand_kit.primary_color"),
        (kit("accent_color", json!("#12345")), "brand_kit.accent_color"),
        (kit("font", json!("comic-sans")), "brand_kit.font"),
        (kit("button_style", json!("blob")), "brand_kit.button_style"),
        (kit("logo_url", json!("http://cdn.example.com/logo.png")), "brand_kit.logo_url"),
        (kit("logo_url", json!("not a url")), "brand_kit.logo_url"),
        (kit("footer_text", json!("f".repeat(501))), "brand_kit.footer_text"),
    ];
    for (body, path) in cases {
        let refused = app.patch("/team", body.clone()).await;
        refused.assert_error(400, "validation_error");
        assert_eq!(refused.body["errors"][0]["path"], path, "{body}: {}", refused.body);
        assert_eq!(stored(&app).await, before, "{body} changed the team");
    }
    // A line break is refused at the edge in one-line fields.
    app.patch("/team", json!({ "name": "two\nlines" })).await.assert_error(400, "validation_error");
    assert_eq!(stored(&app).await, before);
}

#[tokio::test]
async fn a_sending_access_key_reaches_neither_team_route() {
    let app = TestApp::spawn().await;
    let (_, token) = app.create_key(json!({ "name": "sender", "permission": "sending_access" })).await;
    for method in [Method::GET, Method::PATCH] {
        let answer = Answer::from(app.request_as(&token, method, "/team").json(&json!({ "name": "x" })).send().await.unwrap()).await;
        answer.assert_error(401, "restricted_api_key");
    }
    assert_eq!(app.get("/team").await.body["name"], "Test team");
}

#[tokio::test]
async fn a_nul_or_a_ten_megabyte_string_in_any_field_is_refused_and_changes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    let before = stored(&app).await;
    let huge = "x".repeat(10 * 1024 * 1024);
    let kit = |field: &str, value: &str| {
        let mut kit = brand_kit();
        kit[field] = json!(value);
        json!({ "brand_kit": kit })
    };
    let address = |field: &str, value: &str| {
        let mut address = json!({ "line1": "1 Main St", "city": "Springfield", "country": "US" });
        address[field] = json!(value);
        json!({ "postal_address": address })
    };
    for value in ["a\u{0}b", huge.as_str(), &format!("https://cdn.example.com/{huge}")] {
        let mut bodies = vec![json!({ "name": value }), json!({ "sender_name": value })];
        for field in ["line1", "line2", "city", "state", "postal_code", "country"] {
            bodies.push(address(field, value));
        }
        for field in ["logo_url", "primary_color", "accent_color", "font", "button_style", "company_name", "address", "footer_text"] {
            bodies.push(kit(field, value));
        }
        for body in bodies {
            // A NUL is refused by the body's check (400); ten megabytes pass the route's body
            // limit and are refused before they are read on (413).
            let expected = if value.len() > 1024 * 1024 { 413 } else { 400 };
            let answer = app.patch("/team", body).await;
            assert_eq!(answer.status, expected, "{}", answer.body);
            assert_eq!(answer.body["name"], "validation_error");
        }
    }
    assert_eq!(stored(&app).await, before);
}

/// A small real PNG (1×1, one pixel) with some trailing bytes, so byte-for-byte matters.
fn png() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89".to_vec();
    bytes.extend((0u8..=255).cycle().take(5000));
    bytes
}

async fn upload(app: &TestApp, key: Option<&str>, name: &str, bytes: &[u8]) -> tests::Answer {
    let (content_type, body) = tests::multipart(&[(name, Some("logo.png"), bytes)]);
    let request = match key {
        Some(key) => app.request_as(key, Method::POST, "/team/brand-kit/uploads"),
        None => app.request(Method::POST, "/team/brand-kit/uploads"),
    };
    Answer::from(request.header("content-type", content_type).body(body).send().await.unwrap()).await
}

#[tokio::test]
async fn an_uploaded_logo_is_served_back_byte_for_byte_and_can_be_the_brand_logo() {
    let app = TestApp::spawn().await;
    let image = png();
    let uploaded = upload(&app, None, "file", &image).await;
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    assert_eq!(uploaded.body["object"], "brand_asset");
    assert_eq!(uploaded.body["content_type"], "image/png");
    assert_eq!(uploaded.body["size"], image.len());
    let logo_url = uploaded.body["logo_url"].as_str().unwrap().to_string();
    assert!(logo_url.starts_with(&app.state.config.public_url), "{logo_url}");

    // Served without a key, as an image in an email is fetched.
    let path = logo_url.strip_prefix(&app.state.config.public_url).unwrap();
    let served = reqwest::Client::new().get(app.url(path)).send().await.unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(served.headers()["content-type"], "image/png");
    assert_eq!(served.headers()["x-content-type-options"], "nosniff");
    assert_eq!(served.bytes().await.unwrap().to_vec(), image, "the bytes come back unchanged");

    // The public URL of an upload is a valid logo even where the public URL is not https.
    let mut kit = brand_kit();
    kit["logo_url"] = json!(logo_url);
    let patched = app.patch("/team", json!({ "brand_kit": kit })).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["brand_kit"]["logo_url"], logo_url);

    let missing = reqwest::Client::new().get(app.url(&format!("/brand-assets/{}", uuid::Uuid::now_v7()))).send().await.unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn an_upload_that_is_not_an_image_or_too_large_is_refused_and_nothing_is_stored() {
    let app = TestApp::spawn().await;
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>"#;
    let refused = upload(&app, None, "file", svg).await;
    refused.assert_error(400, "validation_error");
    assert_eq!(refused.body["errors"][0]["path"], "file");
    let mut huge = png();
    huge.resize(2 * 1024 * 1024 + 1, 0);
    let refused = upload(&app, None, "file", &huge).await;
    refused.assert_error(400, "validation_error");
    assert_eq!(refused.body["errors"][0]["path"], "file");
    upload(&app, None, "image", &png()).await.assert_error(422, "missing_required_field");
    let (_, sending) = app.create_key(json!({ "name": "send", "permission": "sending_access" })).await;
    upload(&app, Some(&sending), "file", &png()).await.assert_error(401, "restricted_api_key");
    assert_eq!(app.count("brand_assets").await, 0);

    // Any http URL that is not an upload of this Herald is still refused as a logo.
    let mut kit = brand_kit();
    kit["logo_url"] = json!(format!("{}/brand-assets/not-an-id", app.state.config.public_url));
    app.patch("/team", json!({ "brand_kit": kit })).await.assert_error(400, "validation_error");
}
