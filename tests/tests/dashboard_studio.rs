//! The template studio in the dashboard (#28): a visual template started from the dashboard and
//! edited block by block (add, edit, move, remove, keep as a saved block and insert it), a
//! refused edit shown beside its block with nothing saved, a second tab's stale edit told of the
//! first, the dark preview, the brand kit with its errors beside their fields, and, in Chromium,
//! a template built by dragging blocks, published and sent as a broadcast that reaches every
//! member.

use serde_json::{Value, json};
use std::time::Duration;
use tests::dashboard::{get, post};
use tests::inbox::person;
use tests::mail::{self, RECIPIENT_DOMAIN, SENDING_DOMAIN};

async fn template(app: &tests::TestApp, id: &str) -> Value {
    app.get(&format!("/templates/{id}")).await.body
}

fn blocks(template: &Value) -> Vec<Value> {
    template["document"]["sections"][0]["columns"][0]["blocks"].as_array().unwrap().clone()
}

fn kinds(template: &Value) -> Vec<String> {
    blocks(template).iter().map(|b| b["type"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_visual_template_is_edited_block_by_block_and_a_refused_or_stale_edit_saves_nothing() {
    let app = tests::TestApp::spawn_unthrottled().await;
    let ada = person(&app, app.team_id, "admin", "Ada").await;

    let (status, location, page) = post(&app, &ada, "/app/templates", &[("name", "Spring"), ("starter", "blank")]).await;
    assert_eq!(status, 303, "{page}");
    let id = location.unwrap().strip_prefix("/app/templates/").unwrap().to_string();
    let path = format!("/app/templates/{id}/blocks");
    let stamp = |t: &Value| t["updated_at"].as_str().unwrap().to_string();
    let t = template(&app, &id).await;
    assert_eq!(kinds(&t), ["heading", "text"]);
    let (_, editor) = get(&app, &ada, &format!("/app/templates/{id}")).await;
    assert!(editor.contains("data-path=\"0.0.1\"") && editor.contains("id=\"block-mover\"") && editor.contains("Add block"), "{editor}");

    let (status, location, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&t)), ("op", "add"), ("path", "0.0"), ("type", "button")]).await;
    assert_eq!((status, location.as_deref()), (303, Some(format!("/app/templates/{id}#block-0-0").as_str())), "{page}");
    let t = template(&app, &id).await;
    let (status, _, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&t)), ("op", "edit"), ("path", "0.0.0"), ("f_text", "Spring is here"), ("f_level", "2"), ("f_align", "center")]).await;
    assert_eq!(status, 303, "{page}");
    let t = template(&app, &id).await;
    assert_eq!(blocks(&t)[0], json!({ "type": "heading", "text": "Spring is here", "level": 2, "align": "center" }));
    assert!(t["html"].as_str().unwrap().contains("Spring is here"), "the draft's HTML is compiled from the blocks");
    let (status, _, _) = post(&app, &ada, &path, &[("updated_at", &stamp(&t)), ("op", "move"), ("path", "0.0.2"), ("to", "0.0.0")]).await;
    assert_eq!(status, 303);
    let t = template(&app, &id).await;
    assert_eq!(kinds(&t), ["button", "heading", "text"], "the dragged button takes the heading's place");

    // A placeholder of its own: the variable is declared with the edit, and dropped with its last use.
    let (status, _, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&t)), ("op", "edit"), ("path", "0.0.2"), ("f_text", "Your plan: {{plan}}")]).await;
    assert_eq!(status, 303, "{page}");
    let t = template(&app, &id).await;
    assert_eq!(t["variables"], json!([{ "key": "plan", "type": "string", "fallback_value": null }]), "{}", t["variables"]);
    let (status, _, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&t)), ("op", "edit"), ("path", "0.0.2"), ("f_text", "Write something here.")]).await;
    assert_eq!(status, 303, "{page}");
    let t = template(&app, &id).await;
    assert_eq!(t["variables"], json!([]));

    // A link the API refuses: its message beside the button, nothing saved.
    let before = template(&app, &id).await;
    let (status, _, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&before)), ("op", "edit"), ("path", "0.0.0"), ("f_label", "Go"), ("f_url", "javascript:alert(1)")]).await;
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("id=\"block-0-0-0-error\""), "the error stands in the button's block: {page}");
    assert_eq!(template(&app, &id).await, before, "a refused edit changes nothing");
    // Malformed JSON is refused before the API is asked.
    let (status, _, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&before)), ("op", "json"), ("path", "0.0.1"), ("json", "{\"type\":")]).await;
    assert_eq!(status, 422);
    assert!(page.contains("The block is not valid JSON."), "{page}");
    // A second tab still holding the page from before the move.
    let (status, _, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&t)), ("op", "remove"), ("path", "0.0.0")]).await;
    assert_eq!(status, 303, "{page}");
    let (status, _, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&t)), ("op", "remove"), ("path", "0.0.0")]).await;
    assert_eq!(status, 412, "a stale page's edit is refused: {page}");
    let t = template(&app, &id).await;
    assert_eq!(kinds(&t), ["heading", "text"], "only the first removal happened");

    // Kept as a saved block, listed on the brand page, inserted into the template.
    let (status, _, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&t)), ("op", "keep"), ("path", "0.0.0"), ("name", "Spring header")]).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Kept as the saved block"), "{page}");
    let saved = app.get("/saved-blocks").await.body["data"][0].clone();
    assert_eq!((saved["name"].as_str(), saved["content"]["text"].as_str()), (Some("Spring header"), Some("Spring is here")));
    let (_, brand) = get(&app, &ada, "/app/brand").await;
    assert!(brand.contains("Spring header"), "{brand}");
    let t = template(&app, &id).await;
    let (status, _, page) = post(&app, &ada, &path, &[("updated_at", &stamp(&t)), ("op", "saved"), ("path", "0.0"), ("saved_block_id", saved["id"].as_str().unwrap())]).await;
    assert_eq!(status, 303, "{page}");
    assert_eq!(kinds(&template(&app, &id).await), ["heading", "text", "saved"]);

    // The dark preview inverts the email; the light one is the HTML as sent.
    let (_, dark) = get(&app, &ada, &format!("/app/templates/{id}/preview?theme=dark")).await;
    let (_, light) = get(&app, &ada, &format!("/app/templates/{id}/preview")).await;
    assert!(dark.contains("filter:invert(1)") && !light.contains("filter:invert(1)") && light.contains("Spring is here"));

    // A viewer sees the template without the editor, and the server refuses their edit anyway.
    let viewer = person(&app, app.team_id, "viewer", "Vi").await;
    let (_, page) = get(&app, &viewer, &format!("/app/templates/{id}")).await;
    assert!(!page.contains("Add block") && !page.contains("block-mover"), "{page}");
    let t = template(&app, &id).await;
    let (status, _, _) = post(&app, &viewer, &path, &[("updated_at", &stamp(&t)), ("op", "remove"), ("path", "0.0.0")]).await;
    assert_eq!(status, 403);
    assert_eq!(template(&app, &id).await, t);
}

#[tokio::test]
async fn the_brand_kit_saves_from_the_dashboard_and_a_bad_colour_stands_beside_its_field_with_nothing_saved() {
    let app = tests::TestApp::spawn_unthrottled().await;
    let ada = person(&app, app.team_id, "admin", "Ada").await;
    let (status, _, page) = post(&app, &ada, "/app/brand", &[("company_name", "Acme"), ("primary_color", "#1A73E8"), ("button_style", "pill"), ("font", "")]).await;
    assert_eq!(status, 303, "{page}");
    let kit = app.get("/team").await.body["brand_kit"].clone();
    assert_eq!((kit["company_name"].as_str(), kit["primary_color"].as_str(), kit["button_style"].as_str(), &kit["font"]), (Some("Acme"), Some("#1A73E8"), Some("pill"), &Value::Null));

    let (status, _, page) = post(&app, &ada, "/app/brand", &[("company_name", "Other"), ("primary_color", "blue")]).await;
    assert_eq!(status, 400, "the API's own status: {page}");
    assert!(page.contains("id=\"brand-primary_color-error\""), "the error beside the colour: {page}");
    assert!(page.contains("value=\"Other\""), "the form keeps what was typed");
    assert_eq!(app.get("/team").await.body["brand_kit"], kit, "nothing saved");
}

#[tokio::test]
async fn in_chromium_a_template_built_by_dragging_blocks_is_published_and_sent_as_a_broadcast_to_every_member() {
    assert!(tests::clients::script("node_modules/playwright-core").exists(), "tests/clients/node_modules is missing: run scripts/test (npm ci)");
    let mail = mail::setup().await;
    let app = &mail.app;
    let ada = person(app, app.team_id, "admin", "Ada").await;
    tests::dashboard::readers(app).await;

    let shots = tests::clients::root().join("target/screenshots/dashboard");
    let mut command = std::process::Command::new("node");
    command
        .arg(tests::clients::script("dashboard_studio.mjs"))
        .env("HERALD_BASE_URL", &app.base)
        .env("HERALD_SESSION", &ada.cookie)
        .env("HERALD_FROM", format!("Acme <news@{SENDING_DOMAIN}>"))
        .env("HERALD_SCREENSHOTS", &shots);
    let said = tests::clients::run_ok(command).await;
    assert!(said.contains("ok the broadcast's progress reaches 100%"), "{said}");
    assert!(shots.join("template-editor.png").exists() && shots.join("template-dark.png").exists(), "the screenshots are kept");

    let messages = mail.sink.wait_for(3, Duration::from_secs(60)).await;
    let mut to: Vec<String> = messages.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    to.sort();
    assert_eq!(to, (0..3).map(|i| format!("reader{i}@{RECIPIENT_DOMAIN}")).collect::<Vec<_>>());
    let html = messages[0].html().expect("an HTML part");
    assert!(html.contains("Spring at Acme"), "the heading typed in the editor is in the email: {html}");
    let (button, heading) = (html.find("Read the news").expect("the button added"), html.find("Spring at Acme").unwrap());
    assert!(button < heading, "the button dragged above the heading comes first");
}
