//! Templates: create (code, starter, block document), versions and publishing, aliases,
//! variables and placeholders, saved blocks, content checks, and template sends.

use reqwest::Method;
use scraper::{Html, Selector};
use serde_json::{Value, json};
use std::time::Duration;
use tests::mail::{self, RECIPIENT_DOMAIN, SENDING_DOMAIN};
use tests::{Answer, TestApp};

fn code_template(alias: &str) -> Value {
    json!({
        "name": "Receipt",
        "alias": alias,
        "from": format!("Acme <billing@{SENDING_DOMAIN}>"),
        "subject": "Receipt for {{ order }}",
        "html": "<p>Hi {{name}}, order {{ order }} totals {{total}}.</p>",
        "text": "Hi {{name}}, order {{order}} totals {{total}}.",
        "variables": [
            { "key": "name", "type": "string", "fallback_value": "there" },
            { "key": "order", "type": "string" },
            { "key": "total", "type": "number", "fallback_value": 0 }
        ]
    })
}

async fn create(app: &TestApp, body: Value) -> String {
    let created = app.post("/templates", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["object"], "template");
    created.body["id"].as_str().unwrap().to_string()
}

/// Every row a template write could leave.
async fn written(app: &TestApp) -> (i64, i64) {
    (app.count("templates").await, app.count("template_versions").await)
}

fn select<'a>(html: &'a Html, selector: &str) -> Vec<scraper::ElementRef<'a>> {
    html.select(&Selector::parse(selector).unwrap()).collect()
}

#[tokio::test]
async fn a_new_template_is_draft_version_1_found_by_id_or_alias() {
    let app = TestApp::spawn_unthrottled().await;
    let id = create(&app, code_template("receipt")).await;
    for key in [id.as_str(), "receipt"] {
        let template = app.get(&format!("/templates/{key}")).await;
        assert_eq!(template.status, 200, "{}", template.body);
        let t = &template.body;
        assert_eq!(t["id"], id);
        assert_eq!(t["alias"], "receipt");
        assert_eq!(t["status"], "draft");
        assert_eq!(t["current_version"], 1);
        assert_eq!(t["published_version"], Value::Null);
        assert_eq!(t["has_unpublished_versions"], true);
        assert_eq!(t["subject"], "Receipt for {{ order }}");
        assert_eq!(t["variables"][0], json!({ "key": "name", "type": "string", "fallback_value": "there" }));
        assert_eq!(t["variables"][1]["fallback_value"], Value::Null);
        assert_eq!(t["document"], Value::Null);
    }
    let list = app.get("/templates?search=recei").await;
    assert_eq!(list.body["data"].as_array().unwrap().len(), 1, "{}", list.body);
    assert_eq!(list.body["data"][0]["published_at"], Value::Null, "a draft: {}", list.body);
    let none = app.get("/templates?search=nothing%25").await;
    assert_eq!(none.body["data"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn create_refuses_each_bad_body_with_its_status_and_writes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (json!({ "name": "x" }), 422, "missing_required_field", "html"),
        (json!({ "name": "x", "html": "<p>x</p>", "starter": "welcome" }), 422, "invalid_parameter", "html"),
        (json!({ "name": "x", "starter": "no-such-starter" }), 400, "validation_error", "starter"),
        (json!({ "html": "<p>x</p>" }), 422, "missing_required_field", "name"),
        (json!({ "name": "x", "html": "<p>x</p>", "alias": "0b6e2a8c-1c1e-4f4e-9a53-2b5d8d7c9e10" }), 400, "validation_error", "alias"),
        (json!({ "name": "x", "html": "<p>x</p>", "alias": "-starts-with-dash" }), 400, "validation_error", "alias"),
        (json!({ "name": "x", "html": "<p>x</p>", "variables": [{ "key": "n", "type": "number", "fallback_value": "one" }] }), 400, "validation_error", "variables[0].fallback_value"),
        (json!({ "name": "x", "html": "<p>x</p>", "variables": [{ "key": "n", "type": "date" }] }), 400, "validation_error", "variables[0].type"),
        (json!({ "name": "x", "html": "<p>x</p>", "brand_overrides": { "primary_color": "red" } }), 400, "validation_error", "brand_overrides.primary_color"),
        (json!({ "name": "x", "html": "<p>{{ a }} {{b}}</p>", "variables": [{ "key": "a" }, { "key": "c" }] }), 422, "validation_error", "variables.b"),
        (json!({ "name": "x", "html": "<p>{{{event.total|0|currency:usd}}}</p>" }), 422, "validation_error", "html"),
    ];
    for (body, status, name, path) in cases {
        let refused = app.post("/templates", body.clone()).await;
        refused.assert_error(status, name);
        let paths: Vec<&str> = refused.body["errors"].as_array().map(|e| e.iter().filter_map(|e| e["path"].as_str()).collect()).unwrap_or_default();
        assert!(paths.contains(&path) || refused.body["message"].as_str().unwrap().contains(path), "{body}: {}", refused.body);
    }
    // One errors[] entry per key that disagrees: the undeclared one and the unused one.
    let refused = app.post("/templates", json!({ "name": "x", "html": "<p>{{ a }} {{b}}</p>", "variables": [{ "key": "a" }, { "key": "c" }] })).await;
    let paths: Vec<&str> = refused.body["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["variables.b", "variables.c"]);
    let keyed = app.request(Method::POST, "/templates").header("Idempotency-Key", "k1").json(&code_template("a")).send().await.unwrap();
    Answer::from(keyed).await.assert_error(400, "validation_error");
    assert_eq!(written(&app).await, (0, 0));

    create(&app, code_template("taken")).await;
    let again = app.post("/templates", code_template("taken")).await;
    again.assert_error(422, "validation_error");
    assert_eq!(again.body["errors"][0]["path"], "alias");
    assert_eq!(written(&app).await, (1, 1));
}

#[tokio::test]
async fn publishing_and_updating_move_versions_and_a_published_version_never_changes() {
    let app = TestApp::spawn_unthrottled().await;
    let id = create(&app, code_template("receipt")).await;
    let published = app.post(&format!("/templates/{id}/publish"), json!({})).await;
    assert_eq!(published.status, 200, "{}", published.body);
    let t = app.get(&format!("/templates/{id}")).await.body;
    assert_eq!((t["status"].as_str(), t["published_version"].as_i64(), t["has_unpublished_versions"].as_bool()), (Some("published"), Some(1), Some(false)));

    let updated = app.patch(&format!("/templates/{id}"), json!({ "subject": "Your receipt for {{order}}" })).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    let t = app.get(&format!("/templates/{id}")).await.body;
    assert_eq!(t["current_version"], 2);
    assert_eq!(t["published_version"], 1);
    assert_eq!(t["has_unpublished_versions"], true);
    assert_eq!(t["subject"], "Your receipt for {{order}}");
    // A second update edits the same draft.
    app.patch(&format!("/templates/{id}"), json!({ "subject": "Receipt {{order}}" })).await;
    assert_eq!(app.get(&format!("/templates/{id}")).await.body["current_version"], 2);
    let v1 = app.get(&format!("/templates/{id}/versions/1")).await.body;
    assert_eq!(v1["subject"], "Receipt for {{ order }}");
    assert_eq!(v1["status"], "published");
    let versions = app.get(&format!("/templates/{id}/versions")).await.body;
    let listed: Vec<(i64, &str)> = versions["data"].as_array().unwrap().iter().map(|v| (v["version"].as_i64().unwrap(), v["status"].as_str().unwrap())).collect();
    assert_eq!(listed, [(2, "draft"), (1, "published")]);
    let first = app.get(&format!("/templates/{id}/versions?limit=1")).await.body;
    assert_eq!((first["data"][0]["version"].as_i64(), first["has_more"].as_bool()), (Some(2), Some(true)), "{first}");
    let next = app.get(&format!("/templates/{id}/versions?limit=1&after=2")).await.body;
    assert_eq!((next["data"][0]["version"].as_i64(), next["has_more"].as_bool()), (Some(1), Some(false)), "{next}");
    app.get(&format!("/templates/{id}/versions?after=9")).await.assert_error(422, "invalid_parameter");
    app.get(&format!("/templates/{id}/versions/3")).await.assert_error(404, "not_found");

    // A name or alias change is not a new version.
    app.patch(&format!("/templates/{id}"), json!({ "name": "Receipts", "alias": "receipts" })).await;
    assert_eq!(app.get("/templates/receipts").await.body["current_version"], 2);
    app.get("/templates/receipt").await.assert_error(404, "not_found");

    let duplicate = app.post(&format!("/templates/{id}/duplicate"), json!({})).await;
    assert_eq!(duplicate.status, 201, "{}", duplicate.body);
    let copy = app.get(&format!("/templates/{}", duplicate.body["id"].as_str().unwrap())).await.body;
    assert_eq!((copy["name"].as_str(), copy["alias"].clone(), copy["current_version"].as_i64()), (Some("Receipts (copy)"), Value::Null, Some(1)));
    assert_eq!(copy["subject"], "Receipt {{order}}");
}

#[tokio::test]
async fn delete_frees_the_alias_and_other_teams_see_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    let id = create(&app, code_template("receipt")).await;
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    for path in [format!("/templates/{id}"), "/templates/receipt".to_string(), format!("/templates/{id}/versions")] {
        Answer::from(app.request_as(&other, Method::GET, &path).send().await.unwrap()).await.assert_error(404, "not_found");
    }
    let deleted = app.delete(&format!("/templates/{id}")).await;
    assert_eq!(deleted.body, json!({ "object": "template", "id": id, "deleted": true }));
    app.get(&format!("/templates/{id}")).await.assert_error(404, "not_found");
    create(&app, code_template("receipt")).await;
}

#[tokio::test]
async fn a_sending_access_key_reads_templates_but_cannot_write_them() {
    let app = TestApp::spawn_unthrottled().await;
    let id = create(&app, code_template("receipt")).await;
    let (_, sending) = app.create_key(json!({ "name": "send", "permission": "sending_access" })).await;
    let read = Answer::from(app.request_as(&sending, Method::GET, &format!("/templates/{id}")).send().await.unwrap()).await;
    assert_eq!(read.status, 200);
    let write = app.request_as(&sending, Method::POST, "/templates").json(&code_template("x")).send().await.unwrap();
    Answer::from(write).await.assert_error(401, "restricted_api_key");
}

#[tokio::test]
async fn the_starter_library_holds_eight_block_documents_that_become_visual_templates() {
    let app = TestApp::spawn_unthrottled().await;
    let starters = app.get("/starters").await.body;
    let slugs: Vec<&str> = starters["data"].as_array().unwrap().iter().map(|s| s["slug"].as_str().unwrap()).collect();
    for slug in ["welcome", "receipt", "password-reset", "magic-link", "invitation", "newsletter", "announcement", "event"] {
        assert!(slugs.contains(&slug), "{slug} missing from {slugs:?}");
    }
    for slug in slugs {
        let id = create(&app, json!({ "name": slug, "starter": slug })).await;
        let t = app.get(&format!("/templates/{id}")).await.body;
        assert_eq!(t["document"]["kind"], "svc.blocks", "{slug}");
        let html = Html::parse_document(t["html"].as_str().unwrap());
        assert_eq!(select(&html, "html")[0].value().attr("lang"), Some("en"), "{slug}");
        assert!(!t["text"].as_str().unwrap().is_empty(), "{slug}");
        assert!(select(&html, "script").is_empty());
    }
    // Fields sent win over the starter's.
    let id = create(&app, json!({ "name": "w", "starter": "welcome", "subject": "Hello {{first_name}} {{product_name}}" })).await;
    assert_eq!(app.get(&format!("/templates/{id}")).await.body["subject"], "Hello {{first_name}} {{product_name}}");
}

fn document(blocks: Value) -> Value {
    json!({ "kind": "svc.blocks", "version": 1, "lang": "de", "sections": [{ "columns": [{ "blocks": blocks }] }] })
}

#[tokio::test]
async fn a_block_document_compiles_to_parsed_html_with_the_sanitiser_s_removals_and_a_text_version() {
    let app = TestApp::spawn_unthrottled().await;
    let doc = document(json!([
        { "type": "preheader", "text": "Inside: the news" },
        { "type": "heading", "text": "Hello {{name}}" },
        { "type": "image", "src": "https://cdn.example.com/a.png", "alt": "A chart" },
        { "type": "button", "label": "Open", "url": "https://example.com/open" },
        { "type": "html", "html": "<p onclick=\"x()\">Kept<script>alert(1)</script><style>p{}</style><a href=\"javascript:alert(1)\">bad</a><iframe src=\"https://x\"></iframe></p>" }
    ]));
    let id = create(&app, json!({ "name": "v", "document": doc, "subject": "News", "variables": [{ "key": "name" }] })).await;
    let t = app.get(&format!("/templates/{id}")).await.body;
    let html = Html::parse_document(t["html"].as_str().unwrap());
    assert_eq!(select(&html, "html")[0].value().attr("lang"), Some("de"));
    assert!(select(&html, "script").is_empty() && select(&html, "iframe").is_empty() && select(&html, "style").is_empty());
    assert!(select(&html, "[onclick]").is_empty());
    assert!(select(&html, "a").iter().all(|a| !a.value().attr("href").unwrap_or_default().starts_with("javascript:")));
    assert!(select(&html, "a").iter().any(|a| a.value().attr("href") == Some("https://example.com/open")));
    assert_eq!(select(&html, "img").iter().find(|i| i.value().attr("src") == Some("https://cdn.example.com/a.png")).unwrap().value().attr("alt"), Some("A chart"));
    let body_text: String = select(&html, "body")[0].text().collect();
    assert!(body_text.trim_start().starts_with("Inside: the news"), "the preheader comes first: {body_text:?}");
    assert!(t["text"].as_str().unwrap().contains("https://example.com/open"), "{}", t["text"]);
}

#[tokio::test]
async fn a_bad_block_document_is_refused_naming_the_block_and_writes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    let four = json!({ "kind": "svc.blocks", "version": 1, "lang": "en", "sections": [{ "columns": [{ "blocks": [] }, { "blocks": [] }, { "blocks": [] }, { "blocks": [] }] }] });
    let cases = vec![
        document(json!([{ "type": "marquee", "text": "x" }])),
        document(json!([{ "type": "preheader", "text": "a" }, { "type": "preheader", "text": "b" }])),
        document(json!([{ "type": "text", "text": "a" }, { "type": "preheader", "text": "b" }])),
        four,
        document(json!([{ "type": "text", "text": "a", "show_when": { "match": "all", "conditions": [{ "field": "properties.plan", "op": "eq", "value": "pro" }] } }])),
        document(json!([{ "type": "group", "repeat": { "list": "event.items" }, "blocks": [{ "type": "group", "repeat": { "list": "event.more" }, "blocks": [{ "type": "text", "text": "x" }] }] }])),
    ];
    for doc in cases {
        let refused = app.post("/templates", json!({ "name": "v", "document": doc })).await;
        refused.assert_error(422, "validation_error");
        let path = refused.body["errors"][0]["path"].as_str().unwrap_or_default();
        assert!(path.starts_with("document.sections[0]"), "{}", refused.body);
    }
    assert_eq!(written(&app).await, (0, 0));
}

#[tokio::test]
async fn editing_a_saved_block_recompiles_templates_using_it_and_deleting_it_keeps_their_copy() {
    let app = TestApp::spawn_unthrottled().await;
    let saved = app.post("/saved-blocks", json!({ "name": "Footer", "content": { "type": "text", "text": "Sent with care" } })).await;
    assert_eq!(saved.status, 201, "{}", saved.body);
    let block_id = saved.body["id"].as_str().unwrap().to_string();
    let doc = document(json!([{ "type": "text", "text": "Body" }, { "type": "saved", "saved_block_id": block_id }]));
    let id = create(&app, json!({ "name": "v", "document": doc, "subject": "S" })).await;
    app.post(&format!("/templates/{id}/publish"), json!({})).await;
    assert!(app.get(&format!("/templates/{id}")).await.body["html"].as_str().unwrap().contains("Sent with care"));

    let edited = app.patch(&format!("/saved-blocks/{block_id}"), json!({ "content": { "type": "text", "text": "Sent with love" } })).await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(edited.body["recompiled_versions"], 1);
    let html = app.get(&format!("/templates/{id}")).await.body["html"].as_str().unwrap().to_string();
    assert!(html.contains("Sent with love") && !html.contains("Sent with care"));

    app.delete(&format!("/saved-blocks/{block_id}")).await;
    app.get(&format!("/saved-blocks/{block_id}")).await.assert_error(404, "not_found");
    // The copy survives the delete, and a later save still compiles it.
    let updated = app.patch(&format!("/templates/{id}"), json!({ "subject": "S2" })).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert!(app.get(&format!("/templates/{id}")).await.body["html"].as_str().unwrap().contains("Sent with love"));
    let bad = app.post("/saved-blocks", json!({ "name": "Bad", "content": { "type": "marquee" } })).await;
    bad.assert_error(422, "validation_error");
    assert_eq!(app.count("saved_blocks").await, 0);
}

#[tokio::test]
async fn checks_judge_a_version_s_content_each_pass_warn_or_fail() {
    let app = TestApp::spawn_unthrottled().await;
    let id = create(&app, json!({ "name": "c", "subject": "Hi", "html": "<p><a href=\"#\">here</a> <img src=\"https://x.example/a.png\"> {{{NOPE}}}</p>" })).await;
    let checks = app.post(&format!("/templates/{id}/checks"), json!({})).await;
    assert_eq!(checks.status, 200, "{}", checks.body);
    let verdict = |name: &str| checks.body["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()["status"].as_str().unwrap().to_string();
    assert_eq!(checks.body["checks"].as_array().unwrap().len(), 9);
    assert_eq!(verdict("links"), "fail");
    assert_eq!(verdict("variables"), "fail");
    assert_eq!(verdict("alt_text"), "warn");
    assert_eq!(verdict("unsubscribe"), "warn");
    assert_eq!(verdict("subject"), "pass");
    app.post(&format!("/templates/{id}/checks"), json!({ "version": 9 })).await.assert_error(400, "validation_error");
}

#[tokio::test]
async fn a_template_send_arrives_as_multipart_alternative_signed_and_records_its_version() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let doc = document(json!([
        { "type": "heading", "text": "Hello {{name}}" },
        { "type": "button", "label": "Track order {{order}}", "url": "https://example.com/o" }
    ]));
    let body = json!({ "name": "v", "alias": "shipped", "document": doc, "subject": "Order {{order}} shipped",
        "from": format!("Acme <ship@{SENDING_DOMAIN}>"),
        "variables": [{ "key": "name", "fallback_value": "friend" }, { "key": "order", "type": "string" }] });
    let id = create(app, body).await;
    let to = format!("ana@{RECIPIENT_DOMAIN}");

    // A draft-only template is not sendable, and nothing is written.
    let draft = app.post("/emails", json!({ "to": to, "template": { "id": "shipped" } })).await;
    draft.assert_error(422, "invalid_parameter");
    app.post(&format!("/templates/{id}/publish"), json!({})).await;
    let mixed = app.post("/emails", json!({ "to": to, "html": "<p>x</p>", "template": { "id": "shipped" } })).await;
    mixed.assert_error(422, "invalid_parameter");
    let unknown = app.post("/emails", json!({ "to": to, "template": { "id": "shipped", "variables": { "nope": "x" } } })).await;
    unknown.assert_error(400, "validation_error");
    assert_eq!(app.count("emails").await, 0);

    let sent = mail.send(json!({ "to": to, "template": { "id": "shipped", "variables": { "order": "A-17 <b>" } } })).await;
    mail.wait_for_event(&sent, "delivered").await;
    let email = app.get(&format!("/emails/{sent}")).await.body;
    assert_eq!(email["template"], json!({ "id": id, "version": 1 }));
    assert_eq!(email["subject"], "Order A-17 <b> shipped", "raw in the subject");
    assert!(email["html"].as_str().unwrap().contains("A-17 &lt;b&gt;"), "escaped in html");
    assert!(email["html"].as_str().unwrap().contains("Hello friend"), "a missing key takes its fallback");
    assert!(email["text"].as_str().unwrap().contains("A-17 <b>"));

    let messages = mail.sink.wait_for(1, Duration::from_secs(10)).await;
    let raw = messages[0].text();
    assert!(raw.contains("multipart/alternative"), "{raw}");
    assert!(raw.contains("text/plain") && raw.contains("text/html"));
    tests::clients::dkimpy_verify(&messages[0].data, &mail::dkim_public_key(&mail.domain)).expect("the signature verifies");

    // An update opens a draft; sends keep the published version.
    app.patch(&format!("/templates/{id}"), json!({ "subject": "Changed {{order}}" })).await;
    let again = mail.send(json!({ "to": to, "template": { "id": id, "variables": { "order": 18 } } })).await;
    let email = app.get(&format!("/emails/{again}")).await.body;
    assert_eq!(email["subject"], "Order 18 shipped");
    assert_eq!(email["template"]["version"], 1);

    // The template's from and subject are only defaults: without them the send lacks them.
    let code = create(app, json!({ "name": "bare", "html": "<p>hi</p>" })).await;
    app.post(&format!("/templates/{code}/publish"), json!({})).await;
    let lacking = app.post("/emails", json!({ "to": to, "template": { "id": code } })).await;
    lacking.assert_error(422, "missing_required_field");
    assert_eq!(app.count("emails").await, 2);
}

#[tokio::test]
async fn a_refused_update_changes_no_version() {
    let app = TestApp::spawn_unthrottled().await;
    let id = create(&app, code_template("receipt")).await;
    app.post(&format!("/templates/{id}/publish"), json!({})).await;
    let other = create(&app, json!({ "name": "Other", "alias": "other", "html": "<p>x</p>" })).await;
    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({ "html": "<p>{{undeclared}}</p>" }), 422, "validation_error"),
        (json!({ "alias": "other" }), 422, "validation_error"),
        (json!({ "variables": [{ "key": "name", "type": "list", "fallback_value": 3 }] }), 400, "validation_error"),
        (json!({ "document": document(json!([{ "type": "marquee" }])) }), 422, "validation_error"),
        (json!({ "document": document(json!([{ "type": "text", "text": "x" }])), "text": "x" }), 422, "invalid_parameter"),
    ];
    for (body, status, name) in cases {
        app.patch(&format!("/templates/{id}"), body.clone()).await.assert_error(status, name);
    }
    assert_eq!(written(&app).await, (2, 2), "no version was opened");
    let t = app.get(&format!("/templates/{id}")).await.body;
    assert_eq!((t["alias"].as_str(), t["current_version"].as_i64()), (Some("receipt"), Some(1)));
    app.patch(&format!("/templates/{other}"), json!({ "alias": null })).await;
    assert_eq!(app.patch(&format!("/templates/{id}"), json!({ "alias": "other" })).await.status, 200, "a removed alias is free");
}

#[tokio::test]
async fn a_batch_renders_each_template_send_and_names_the_bad_one_by_index() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let id = create(app, code_template("receipt")).await;
    app.post(&format!("/templates/{id}/publish"), json!({})).await;
    let to = format!("bo@{RECIPIENT_DOMAIN}");
    let refused = app
        .post("/emails/batch", json!([
            { "to": to, "template": { "id": "receipt", "variables": { "order": "1" } } },
            { "to": to, "template": { "id": "receipt", "variables": { "order": { "nested": true } } } }
        ]))
        .await;
    refused.assert_error(400, "validation_error");
    assert_eq!(refused.body["errors"][0]["path"], "[1].template.variables.order");
    assert_eq!(app.count("emails").await, 0);

    let sent = app
        .post("/emails/batch", json!([
            { "to": to, "template": { "id": "receipt", "variables": { "order": "1", "total": 9.5 } } },
            { "to": to, "subject": "Own subject", "template": { "id": id, "variables": { "order": "2", "name": "Bo" } } }
        ]))
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let first = app.get(&format!("/emails/{}", sent.body["data"][0]["id"].as_str().unwrap())).await.body;
    assert_eq!(first["subject"], "Receipt for 1");
    assert_eq!(first["text"], "Hi there, order 1 totals 9.5.");
    let second = app.get(&format!("/emails/{}", sent.body["data"][1]["id"].as_str().unwrap())).await.body;
    assert_eq!(second["subject"], "Own subject", "the send's subject wins over the template's");
    assert_eq!(second["text"], "Hi Bo, order 2 totals 0.");
    assert_eq!(second["template"]["version"], 1);
}

#[tokio::test]
async fn a_nul_or_a_ten_megabyte_string_in_any_template_field_is_refused_and_writes_nothing() {
    let app = TestApp::spawn_unthrottled().await;
    let huge = "x".repeat(10 * 1024 * 1024);
    let fields: Vec<(&str, Value)> = vec![
        ("name", json!(huge)),
        ("alias", json!(huge)),
        ("from", json!(format!("{huge} <a@acme.test>"))),
        ("subject", json!(huge)),
        ("html", json!(huge)),
        ("text", json!(huge)),
        ("reply_to", json!([huge])),
        ("variables", json!([{ "key": "n", "type": "object", "fallback_value": { "big": huge } }])),
        ("brand_overrides", json!({ "footer_text": huge })),
        ("name", json!("a\u{0}b")),
        ("subject", json!("a\u{0}b")),
        ("html", json!("<p>a\u{0}b</p>")),
    ];
    for (field, value) in fields {
        let mut body = json!({ "name": "T", "html": "<p>hi</p>" });
        body[field] = value;
        if field == "variables" {
            body["html"] = json!("<p>{{n}}</p>");
        }
        let answer = app.post("/templates", body).await;
        assert!((400..500).contains(&answer.status), "{field}: {} {}", answer.status, answer.body);
    }
    let doc = document(json!([{ "type": "text", "text": huge }]));
    let answer = app.post("/templates", json!({ "name": "T", "document": doc })).await;
    assert!((400..500).contains(&answer.status), "document: {}", answer.status);
    let answer = app.post("/saved-blocks", json!({ "name": "B", "content": { "type": "text", "text": huge } })).await;
    assert!((400..500).contains(&answer.status), "saved block: {}", answer.status);
    assert_eq!(written(&app).await, (0, 0));
    assert_eq!(app.count("saved_blocks").await, 0);
    // A patch is held to the same limits.
    let id = create(&app, json!({ "name": "T", "html": "<p>hi</p>" })).await;
    for field in ["name", "subject", "html", "text"] {
        let answer = app.patch(&format!("/templates/{id}"), json!({ field: huge })).await;
        assert!((400..500).contains(&answer.status), "patch {field}: {}", answer.status);
    }
    assert_eq!(written(&app).await, (1, 1));
}
