//! Lists that answered everything at once now page like every other list (#27): `limit`,
//! `after` and `before` in the list's own order, `has_more`, and a cursor that is not an item
//! of the list refused.

use serde_json::{Value, json};
use tests::TestApp;

/// The items' ids (`user_id` for members).
fn ids(answer: &Value) -> Vec<String> {
    let id = |item: &Value| item.get("id").or_else(|| item.get("user_id")).and_then(Value::as_str).unwrap().to_string();
    answer["data"].as_array().unwrap().iter().map(id).collect()
}

/// Pages `path` (a list of `all` items, in order) two at a time both ways and checks a foreign cursor.
async fn pages_through(app: &TestApp, path: &str, all: &[String], foreign: &str) {
    let join = if path.contains('?') { '&' } else { '?' };
    let whole = app.get(path).await;
    assert_eq!((whole.status, ids(&whole.body)), (200, all.to_vec()), "{path}: {}", whole.body);
    assert_eq!(whole.body["has_more"], false, "{path}");
    let first = app.get(&format!("{path}{join}limit=2")).await;
    assert_eq!((ids(&first.body), &first.body["has_more"]), (all[..2].to_vec(), &json!(true)), "{path}: {}", first.body);
    let rest = app.get(&format!("{path}{join}limit=2&after={}", all[1])).await;
    assert_eq!((ids(&rest.body), &rest.body["has_more"]), (all[2..].to_vec(), &json!(false)), "{path}: {}", rest.body);
    let back = app.get(&format!("{path}{join}limit=1&before={}", all[2])).await;
    assert_eq!((ids(&back.body), &back.body["has_more"]), (vec![all[1].clone()], &json!(true)), "{path}: {}", back.body);
    app.get(&format!("{path}{join}after={foreign}")).await.assert_error(422, "invalid_parameter");
    app.get(&format!("{path}{join}limit=0")).await.assert_error(422, "invalid_parameter");
    app.get(&format!("{path}{join}limit=101")).await.assert_error(422, "invalid_parameter");
}

#[tokio::test]
async fn properties_a_contacts_topics_and_segments_and_the_teams_members_page_and_refuse_a_cursor_from_another_list() {
    let app = TestApp::spawn_unthrottled().await;
    for key in ["alpha", "beta", "gamma"] {
        let declared = app.post("/contact-properties", json!({ "key": key, "type": "string" })).await;
        assert_eq!(declared.status, 201, "{}", declared.body);
    }
    let properties = ids(&app.get("/contact-properties").await.body);
    assert_eq!(properties.len(), 3);

    let mut topics = Vec::new();
    let mut segments = Vec::new();
    for name in ["One", "Two", "Three"] {
        let topic = app.post("/topics", json!({ "name": name, "default_subscription": "opt_in" })).await;
        assert_eq!(topic.status, 201, "{}", topic.body);
        topics.push(topic.body["id"].as_str().unwrap().to_string());
        let segment = app.post("/segments", json!({ "name": name })).await;
        assert_eq!(segment.status, 201, "{}", segment.body);
        segments.push(segment.body["id"].as_str().unwrap().to_string());
    }
    let contact = app.post("/contacts", json!({ "email": "a@example.com", "segments": segments.iter().map(|id| json!({ "id": id })).collect::<Vec<_>>() })).await;
    assert_eq!(contact.status, 201, "{}", contact.body);
    let contact = contact.body["id"].as_str().unwrap().to_string();

    // A topic's id is no place in the properties' list, nor a property's in the topics'.
    pages_through(&app, "/contact-properties", &properties, &topics[0]).await;
    let topic_order = ids(&app.get(&format!("/contacts/{contact}/topics")).await.body);
    assert_eq!(topic_order.len(), 3);
    pages_through(&app, &format!("/contacts/{contact}/topics"), &topic_order, &properties[0]).await;
    let segment_order = ids(&app.get(&format!("/contacts/{contact}/segments")).await.body);
    assert_eq!(segment_order.len(), 3);
    pages_through(&app, &format!("/contacts/{contact}/segments"), &segment_order, &topics[0]).await;

    for (role, name) in [("admin", "Ada"), ("member", "Bo"), ("viewer", "Cy")] {
        tests::inbox::person(&app, app.team_id, role, name).await;
    }
    let members = ids(&app.get("/team/members").await.body);
    assert_eq!(members.len(), 3);
    pages_through(&app, "/team/members", &members, &contact).await;
}

#[tokio::test]
async fn the_starter_library_pages_by_slug() {
    let app = TestApp::spawn_unthrottled().await;
    let slugs = |answer: &Value| -> Vec<String> { answer["data"].as_array().unwrap().iter().map(|s| s["slug"].as_str().unwrap().to_string()).collect() };
    let all = slugs(&app.get("/starters").await.body);
    assert!(all.len() >= 3, "{all:?}");
    let first = app.get("/starters?limit=2").await;
    assert_eq!((slugs(&first.body), &first.body["has_more"]), (all[..2].to_vec(), &json!(true)), "{}", first.body);
    let rest = app.get(&format!("/starters?after={}", all[1])).await;
    assert_eq!((slugs(&rest.body), &rest.body["has_more"]), (all[2..].to_vec(), &json!(false)), "{}", rest.body);
    let back = app.get(&format!("/starters?limit=1&before={}", all[1])).await;
    assert_eq!((slugs(&back.body), &back.body["has_more"]), (all[..1].to_vec(), &json!(false)), "{}", back.body);
    app.get("/starters?after=no-such-starter").await.assert_error(422, "invalid_parameter");
}
