//! Counting a filter before it is saved (`POST /segments/count`) and the dashboard's condition
//! builder on it: the count follows the conditions, a refused condition's error stands beside
//! its row, and saving creates the segment with the filter built.

use reqwest::redirect::Policy;
use serde_json::json;
use tests::TestApp;
use tests::inbox::person;

async fn audience(app: &TestApp) {
    assert_eq!(app.post("/contact-properties", json!({ "key": "plan", "type": "string" })).await.status, 201);
    assert_eq!(app.post("/contact-properties", json!({ "key": "seats", "type": "number" })).await.status, 201);
    for (email, plan, seats) in [("a@example.com", "pro", 3), ("b@example.com", "pro", 12), ("c@example.com", "free", 1)] {
        let made = app.post("/contacts", json!({ "email": email, "properties": { "plan": plan, "seats": seats } })).await;
        assert_eq!(made.status, 201, "{}", made.body);
    }
}

#[tokio::test]
async fn a_filter_is_counted_before_it_is_saved_and_a_bad_one_is_refused_as_creating_it_would_be() {
    let app = TestApp::spawn_unthrottled().await;
    audience(&app).await;
    let count = |filter: serde_json::Value| app.post("/segments/count", json!({ "filter": filter }));
    let pro = count(json!({ "all": [{ "field": "properties.plan", "op": "eq", "value": "pro" }] })).await;
    assert_eq!(pro.status, 200, "{}", pro.body);
    assert_eq!((&pro.body["object"], &pro.body["contacts"]), (&json!("segment_count"), &json!(2)));
    let big = count(json!({ "all": [{ "field": "properties.plan", "op": "eq", "value": "pro" }, { "field": "properties.seats", "op": "gt", "value": 10 }] })).await;
    assert_eq!(big.body["contacts"], 1);

    let segments = app.count("segments").await;
    let refused = count(json!({ "all": [{ "field": "properties.nope", "op": "eq", "value": "x" }, { "field": "properties.seats", "op": "contains", "value": "1" }] })).await;
    refused.assert_error(422, "validation_error");
    assert_eq!(refused.body["errors"].as_array().unwrap().len(), 2, "one entry per bad condition: {}", refused.body);
    app.post("/segments/count", json!({})).await.assert_error(422, "missing_required_field");
    assert_eq!(app.count("segments").await, segments, "counting saves nothing");
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let theirs = tests::Answer::from(app.request_as(&other, reqwest::Method::POST, "/segments/count").json(&json!({ "filter": { "all": [{ "field": "email", "op": "contains", "value": "@" }] } })).send().await.unwrap()).await;
    assert_eq!(theirs.body["contacts"], 0, "another team's contacts are not counted");
}

#[tokio::test]
async fn the_condition_builder_counts_as_the_conditions_change_shows_a_refusal_beside_its_row_and_saves_the_segment() {
    let app = TestApp::spawn_unthrottled().await;
    audience(&app).await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let browser = reqwest::Client::builder().user_agent("Mozilla/5.0 (dashboard test)").redirect(Policy::none()).build().unwrap();
    let page = browser.get(app.url("/app/segments")).header("cookie", format!("herald_session={}", admin.cookie)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("hx-post=\"/app/segments/count\"") && page.contains("<option value=\"properties.seats\">"), "{page}");
    let post = |path: &'static str, fields: Vec<(&'static str, &'static str)>| {
        let mut form = vec![("csrf", admin.csrf.clone())];
        form.extend(fields.into_iter().map(|(k, v)| (k, v.to_string())));
        let request = browser.post(app.url(path)).header("cookie", format!("herald_session={}", admin.cookie)).form(&form);
        async move {
            let answer = request.send().await.unwrap();
            (answer.status().as_u16(), answer.headers().get("location").map(|l| l.to_str().unwrap().to_string()), answer.text().await.unwrap())
        }
    };
    let (status, _, said) = post("/app/segments/count", vec![("match", "all"), ("field0", "properties.plan"), ("op0", "eq"), ("value0", "pro")]).await;
    assert_eq!((status, said.as_str()), (200, "<b>2</b> contacts match now."));
    let (_, _, said) = post("/app/segments/count", vec![("match", "all"), ("field0", "properties.plan"), ("op0", "eq"), ("value0", "pro"), ("field2", "properties.seats"), ("op2", "gte"), ("value2", "12")]).await;
    assert_eq!(said, "<b>1</b> contact matches now.", "a number typed by the property's type");
    let (_, _, said) = post("/app/segments/count", vec![("match", "any"), ("field0", "properties.plan"), ("op0", "in"), ("value0", "free, pro")]).await;
    assert!(said.starts_with("<b>3</b>"), "{said}");
    let (_, _, said) = post("/app/segments/count", vec![("match", "all")]).await;
    assert!(said.contains("Add a condition"), "{said}");

    let segments = app.count("segments").await;
    let (status, _, page) = post("/app/segments", vec![("name", "Big pro"), ("match", "all"), ("field0", "properties.plan"), ("op0", "eq"), ("value0", "pro"), ("field3", "properties.seats"), ("op3", "contains"), ("value3", "1")]).await;
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("id=\"field3\" name=\"field3\" list=\"segment-fields\" maxlength=\"300\" value=\"properties.seats\" aria-invalid=\"true\" aria-describedby=\"condition3-error\""), "the error beside the fourth row, the one refused: {page}");
    assert_eq!(app.count("segments").await, segments, "a refused segment is not written");

    let (status, location, _) = post("/app/segments", vec![("name", "Big pro"), ("match", "all"), ("field0", "properties.plan"), ("op0", "eq"), ("value0", "pro"), ("field3", "properties.seats"), ("op3", "gt"), ("value3", "10")]).await;
    assert_eq!(status, 303);
    let id = location.unwrap().trim_start_matches("/app/segments/").to_string();
    let saved = app.get(&format!("/segments/{id}")).await;
    assert_eq!(saved.body["filter"], json!({ "all": [{ "field": "properties.plan", "op": "eq", "value": "pro" }, { "field": "properties.seats", "op": "gt", "value": 10.0 }] }));
    let members = app.get(&format!("/segments/{id}/contacts")).await;
    assert_eq!(members.body["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_builder_counts_a_topic_condition_and_a_second_group_joined_by_or_and_saves_the_nested_filter() {
    let app = TestApp::spawn_unthrottled().await;
    audience(&app).await;
    let news = app.post("/topics", json!({ "name": "News", "default_subscription": "opt_out" })).await.body["id"].as_str().unwrap().to_string();
    let patched = app.patch("/contacts/c@example.com/topics", json!([{ "id": news, "subscription": "opt_in" }])).await;
    assert!(patched.status < 300, "{}", patched.body);
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let (_, page) = tests::dashboard::get(&app, &admin, "/app/segments").await;
    assert!(page.contains(&format!("<option value=\"topic.{news}\">Topic: News</option>")) && page.contains("name=\"match2\""), "{page}");
    let topic_field = format!("topic.{news}");
    let said = tests::dashboard::post(&app, &admin, "/app/segments/count", &[("match", "all"), ("field0", &topic_field), ("op0", "opt_in")]).await.2;
    assert_eq!(said, "<b>1</b> contact matches now.", "the one subscribed to News");
    // Pro with more than ten seats, or subscribed to News: b and c.
    let fields = [
        ("match", "all"), ("field0", "properties.plan"), ("op0", "eq"), ("value0", "pro"), ("field1", "properties.seats"), ("op1", "gt"), ("value1", "10"),
        ("join", "any"), ("match2", "all"), ("field5", topic_field.as_str()), ("op5", "opt_in"),
    ];
    let said = tests::dashboard::post(&app, &admin, "/app/segments/count", &fields).await.2;
    assert_eq!(said, "<b>2</b> contacts match now.");

    let (status, _, page) = tests::dashboard::post(&app, &admin, "/app/segments", &[("name", "Nested"), ("match", "all"), ("field0", "properties.seats"), ("op0", "contains"), ("value0", "1"), ("join", "any"), ("field5", &topic_field), ("op5", "opt_in")]).await;
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("aria-describedby=\"condition0-error\""), "the nested condition's error beside its row: {page}");
    let (status, location, _) = tests::dashboard::post(&app, &admin, "/app/segments", &[("name", "Nested"), ("match", "all"), ("field0", "properties.seats"), ("op0", "gt"), ("value0", "10"), ("join", "any"), ("field5", &topic_field), ("op5", "opt_in")]).await;
    assert_eq!(status, 303);
    let saved = app.get(&format!("/segments/{}", location.unwrap().trim_start_matches("/app/segments/"))).await.body;
    assert_eq!(saved["filter"], json!({ "any": [{ "all": [{ "field": "properties.seats", "op": "gt", "value": 10.0 }] }, { "all": [{ "topic": news, "subscription": "opt_in" }] }] }));
}
