//! The support Inbox: channels set up by an admin, conversations opened by mail through real
//! SMTP (threaded by `In-Reply-To`) and through the API, notes, updates with `If-Match`, and
//! who reaches what (keys by Inbox access and channel limit, people by session and role).

use reqwest::Method;
use serde_json::{Value, json};
use tests::inbox::{self, Desk, as_key, as_person, channel, desk, inbox_key, write_in};
use tests::eventually;

/// The conversations a key lists (every place).
async fn conversations(desk: &Desk, key: &str, query: &str) -> Vec<Value> {
    let answer = as_key(desk.app(), key, Method::GET, &format!("/inbox/conversations{query}"), None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body["data"].as_array().unwrap().clone()
}

async fn events_of(desk: &Desk, event_type: &str) -> Vec<Value> {
    sqlx::query_scalar("SELECT data FROM events WHERE type = $1 ORDER BY id").bind(event_type).fetch_all(&desk.app().pool).await.unwrap()
}

#[tokio::test]
async fn a_team_without_an_open_channel_answers_403_inbox_not_set_up_on_every_inbox_route() {
    let desk = desk().await;
    let key = inbox_key(desk.app(), &desk.admin, "write", None).await;
    let some_id = uuid::Uuid::now_v7();
    for (method, path, body) in [
        (Method::GET, "/inbox/channels".to_string(), None),
        (Method::GET, "/inbox/conversations".to_string(), None),
        (Method::GET, format!("/inbox/conversations/{some_id}"), None),
        (Method::POST, "/inbox/conversations".to_string(), Some(json!({ "channel_id": "support@acme.test", "from": { "email": "c@example.com" }, "text": "Hi" }))),
        (Method::POST, format!("/inbox/conversations/{some_id}/notes"), Some(json!({ "text": "Hi" }))),
    ] {
        as_key(desk.app(), &key, method, &path, body).await.assert_error(403, "inbox_not_set_up");
    }
    assert_eq!(desk.app().count("inbox_conversations").await, 0);
    // A closed channel is no channel.
    let id = channel(&desk, "support", json!({})).await;
    assert_eq!(as_person(desk.app(), &desk.admin, Method::PATCH, &format!("/inbox/channels/{id}"), Some(json!({ "closed": true }))).await.status, 200);
    as_key(desk.app(), &key, Method::GET, "/inbox/channels", None).await.assert_error(403, "inbox_not_set_up");
}

#[tokio::test]
async fn an_admin_adds_channels_on_receiving_domains_and_refused_ones_write_nothing() {
    let desk = desk().await;
    let app = desk.app();
    let id = channel(&desk, "support", json!({})).await;
    let listed = as_person(app, &desk.admin, Method::GET, "/inbox/channels", None).await;
    assert_eq!(listed.body["data"][0]["address"], "support@acme.test", "{}", listed.body);
    assert_eq!(listed.body["data"][0]["id"], id.as_str());
    let before = app.count("inbox_channels").await;
    for (body, field, status, name) in [
        (json!({ "name": "Elsewhere", "address": "help@elsewhere.test" }), "address", 422, "invalid_parameter"),
        (json!({ "name": "Again", "address": "SUPPORT@acme.test" }), "address", 422, "invalid_parameter"),
        (json!({ "name": "  ", "address": "sales@acme.test" }), "name", 400, "validation_error"),
        (json!({ "name": "Bad", "address": "not an address" }), "address", 400, "validation_error"),
    ] {
        let answer = as_person(app, &desk.admin, Method::POST, "/inbox/channels", Some(body)).await;
        answer.assert_error(status, name);
        assert_eq!(answer.body["errors"][0]["path"], field, "{}", answer.body);
    }
    // Not an admin, or a key: refused.
    let member = inbox::person(app, app.team_id, "member", "Mo").await;
    as_person(app, &member, Method::POST, "/inbox/channels", Some(json!({ "name": "M", "address": "m@acme.test" }))).await.assert_error(403, "invalid_permission");
    let answer = as_key(app, &app.key, Method::POST, "/inbox/channels", Some(json!({ "name": "K", "address": "k@acme.test" }))).await;
    answer.assert_error(403, "invalid_permission");
    assert_eq!(app.count("inbox_channels").await, before);
    // Teammates: everyone for an unrestricted channel; a viewer cannot write.
    let viewer = inbox::person(app, app.team_id, "viewer", "Vi").await;
    let teammates = as_person(app, &viewer, Method::GET, &format!("/inbox/channels/{id}/teammates"), None).await;
    assert_eq!(teammates.status, 200, "{}", teammates.body);
    let can_write: Vec<(String, bool)> = teammates.body["data"].as_array().unwrap().iter().map(|t| (t["name"].as_str().unwrap().to_string(), t["can_write"].as_bool().unwrap())).collect();
    assert!(can_write.contains(&("Vi".into(), false)) && can_write.contains(&("Ada".into(), true)) && can_write.contains(&("Mo".into(), true)), "{can_write:?}");
}

#[tokio::test]
async fn mail_to_a_channel_opens_a_conversation_and_an_answer_to_it_threads_in_and_reopens_it() {
    let desk = desk().await;
    let app = desk.app();
    channel(&desk, "support", json!({})).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    write_in(&desk, "carol@customer.example", "support", "Broken widget", "first@customer.example", "").await;
    let opened = eventually(|| async { conversations(&desk, &key, "").await.into_iter().next() }).await;
    assert_eq!((opened["subject"].as_str(), opened["status"].as_str(), opened["message_count"].as_i64()), (Some("Broken widget"), Some("open"), Some(1)));
    assert_eq!(opened["customer"]["email"], "carol@customer.example");
    let id = opened["id"].as_str().unwrap().to_string();
    // The received email is the message: the same record, read through both.
    let messages = as_key(app, &key, Method::GET, &format!("/inbox/conversations/{id}/messages"), None).await;
    let received_id = messages.body["data"][0]["received_email_id"].as_str().unwrap().to_string();
    assert_eq!(messages.body["data"][0]["text"].as_str().map(str::trim), Some("Hello about Broken widget."));
    assert_eq!(app.get(&format!("/emails/receiving/{received_id}")).await.status, 200);

    // Done, then the customer answers: the same conversation, open again.
    let done = as_key(app, &key, Method::PATCH, &format!("/inbox/conversations/{id}"), Some(json!({ "status": "done" }))).await;
    assert_eq!(done.body["status"], "done", "{}", done.body);
    write_in(&desk, "carol@customer.example", "support", "Re: Broken widget", "second@customer.example", "In-Reply-To: <first@customer.example>\r\nReferences: <first@customer.example>\r\n").await;
    let threaded = eventually(|| async {
        let all = conversations(&desk, &key, "").await;
        (all.len() == 1 && all[0]["message_count"] == 2).then(|| all[0].clone())
    })
    .await;
    assert_eq!(threaded["status"], "open", "a customer writing into a done conversation reopens it");
    // A message naming no known Message-ID opens a new one.
    write_in(&desk, "dan@customer.example", "support", "Other thing", "third@customer.example", "In-Reply-To: <nobody@nowhere.example>\r\n").await;
    eventually(|| async { (conversations(&desk, &key, "").await.len() == 2).then_some(()) }).await;
    assert_eq!(events_of(&desk, "inbox.conversation.created").await.len(), 2);
    assert_eq!(events_of(&desk, "inbox.message.received").await.len(), 3);
    assert_eq!(events_of(&desk, "inbox.conversation.status_changed").await.len(), 1);
}

#[tokio::test]
async fn mail_to_a_closed_channel_is_received_but_opens_no_conversation_and_a_forged_reply_never_reaches_another_team() {
    let desk = desk().await;
    let app = desk.app();
    channel(&desk, "support", json!({})).await;
    let sales = channel(&desk, "sales", json!({})).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    write_in(&desk, "carol@customer.example", "support", "Question", "q1@customer.example", "").await;
    eventually(|| async { (conversations(&desk, &key, "").await.len() == 1).then_some(()) }).await;
    as_person(app, &desk.admin, Method::PATCH, &format!("/inbox/channels/{sales}"), Some(json!({ "closed": true }))).await;
    write_in(&desk, "erin@customer.example", "sales", "Quote", "q2@customer.example", "").await;
    eventually(|| async { (app.count("received_emails").await == 2).then_some(()) }).await;
    // An answer naming the support conversation's message, sent to the closed channel, threads
    // nowhere: threading stays within a channel.
    write_in(&desk, "erin@customer.example", "sales", "Re: Question", "q3@customer.example", "In-Reply-To: <q1@customer.example>\r\n").await;
    eventually(|| async { (app.count("received_emails").await == 3).then_some(()) }).await;
    assert_eq!(app.count("inbox_conversations").await, 1);
    assert_eq!(app.count("inbox_messages").await, 1);
}

#[tokio::test]
async fn keys_reach_conversations_by_their_inbox_access_and_channel_limit() {
    let desk = desk().await;
    let app = desk.app();
    let open = channel(&desk, "support", json!({})).await;
    let restricted = channel(&desk, "vip", json!({ "restricted": true })).await;
    let personal = channel(&desk, "ada", json!({ "personal": true })).await;
    let writer = inbox_key(app, &desk.admin, "write", None).await;
    let reader = inbox_key(app, &desk.admin, "read", None).await;
    let creator = inbox_key(app, &desk.admin, "create", None).await;
    let limited = inbox_key(app, &desk.admin, "write", Some(vec![restricted.clone()])).await;
    let open_in = |key: String, channel: String| {
        let app = app;
        async move { as_key(app, &key, Method::POST, "/inbox/conversations", Some(json!({ "channel_id": channel, "from": { "email": "c@customer.example", "name": "C" }, "subject": "Hi", "text": "Hello" }))).await }
    };
    let created = open_in(creator.clone(), open.clone()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    // create reaches only the opening; read reads and cannot write; none reaches nothing.
    as_key(app, &creator, Method::GET, "/inbox/conversations", None).await.assert_error(403, "invalid_permission");
    open_in(reader.clone(), open.clone()).await.assert_error(403, "invalid_permission");
    assert_eq!(as_key(app, &reader, Method::GET, &format!("/inbox/conversations/{id}"), None).await.status, 200);
    as_key(app, &reader, Method::PATCH, &format!("/inbox/conversations/{id}"), Some(json!({ "status": "pending" }))).await.assert_error(403, "invalid_permission");
    as_key(app, &app.key, Method::GET, "/inbox/conversations", None).await.assert_error(403, "invalid_permission");
    // Channels: a restricted one only for a key limited to it; a personal one for no key.
    open_in(writer.clone(), restricted.clone()).await.assert_error(404, "not_found");
    open_in(writer.clone(), personal.clone()).await.assert_error(404, "not_found");
    open_in(limited.clone(), open.clone()).await.assert_error(404, "not_found");
    let vip = open_in(limited.clone(), "vip@acme.test".into()).await;
    assert_eq!(vip.status, 201, "{}", vip.body);
    let vip_id = vip.body["id"].as_str().unwrap();
    as_key(app, &writer, Method::GET, &format!("/inbox/conversations/{vip_id}"), None).await.assert_error(404, "not_found");
    let listed: Vec<String> = as_key(app, &writer, Method::GET, "/inbox/channels", None).await.body["data"].as_array().unwrap().iter().map(|c| c["address"].as_str().unwrap().to_string()).collect();
    assert_eq!(listed, vec!["support@acme.test".to_string()]);
    let listed: Vec<String> = as_key(app, &limited, Method::GET, "/inbox/channels", None).await.body["data"].as_array().unwrap().iter().map(|c| c["address"].as_str().unwrap().to_string()).collect();
    assert_eq!(listed, vec!["vip@acme.test".to_string()]);
    // The admin's session reaches all three, their own channel included.
    let mine = as_person(app, &desk.admin, Method::GET, "/inbox/channels", None).await;
    assert_eq!(mine.body["data"].as_array().unwrap().len(), 3, "{}", mine.body);
    // A member reaches the restricted channel once made a member of it.
    let member = inbox::person(app, app.team_id, "member", "Mo").await;
    as_person(app, &member, Method::GET, &format!("/inbox/conversations/{vip_id}"), None).await.assert_error(404, "not_found");
    let members = as_person(app, &desk.admin, Method::PUT, &format!("/inbox/channels/{restricted}/members"), Some(json!({ "user_ids": [member.id] }))).await;
    assert_eq!(members.status, 200, "{}", members.body);
    assert_eq!(as_person(app, &member, Method::GET, &format!("/inbox/conversations/{vip_id}"), None).await.status, 200);
    // A viewer reads and cannot write.
    let viewer = inbox::person(app, app.team_id, "viewer", "Vi").await;
    assert_eq!(as_person(app, &viewer, Method::GET, &format!("/inbox/conversations/{id}"), None).await.status, 200);
    as_person(app, &viewer, Method::POST, &format!("/inbox/conversations/{id}/notes"), Some(json!({ "text": "mine" }))).await.assert_error(403, "invalid_permission");
}

#[tokio::test]
async fn opening_through_the_api_is_idempotent_by_external_id_and_bad_input_writes_nothing() {
    let desk = desk().await;
    let app = desk.app();
    channel(&desk, "support", json!({})).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    let body = json!({ "channel_id": "support@acme.test", "from": { "email": "C@Customer.example" }, "subject": "Order 7", "html": "<p>Where is <b>order</b> 7?</p>", "external_id": "ticket-7" });
    let first = as_key(app, &key, Method::POST, "/inbox/conversations", Some(body.clone())).await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.header("etag"), Some("\"2\""));
    let again = as_key(app, &key, Method::POST, "/inbox/conversations", Some(body)).await;
    assert_eq!((again.status, &again.body["id"]), (200, &first.body["id"]));
    let found = conversations(&desk, &key, "?external_id=ticket-7").await;
    assert_eq!(found.len(), 1);
    let before = (app.count("inbox_conversations").await, app.count("inbox_messages").await, app.count("events").await);
    let long = "x".repeat(256);
    let huge = "x".repeat(2 * 1024 * 1024 + 1);
    for (body, status, name) in [
        (json!({ "channel_id": "support@acme.test", "from": { "email": "c@x.example" } }), 422, "missing_required_field"),
        (json!({ "channel_id": "support@acme.test", "from": { "email": "c@x.example" }, "text": "   " }), 422, "missing_required_field"),
        (json!({ "channel_id": "support@acme.test", "from": { "email": "c@x.example" }, "text": huge }), 400, "validation_error"),
        (json!({ "channel_id": "support@acme.test", "from": { "email": "not an address" }, "text": "Hi" }), 400, "validation_error"),
        (json!({ "channel_id": "support@acme.test", "from": { "email": "c@x.example" }, "text": "Hi", "external_id": long }), 400, "validation_error"),
        (json!({ "channel_id": "support@acme.test", "from": { "email": "c@x.example" }, "text": "Hi", "subject": "two\nlines" }), 400, "validation_error"),
        (json!({ "channel_id": "nobody@acme.test", "from": { "email": "c@x.example" }, "text": "Hi" }), 404, "not_found"),
        (json!({ "channel_id": uuid::Uuid::now_v7(), "from": { "email": "c@x.example" }, "text": "Hi" }), 404, "not_found"),
    ] {
        as_key(app, &key, Method::POST, "/inbox/conversations", Some(body.clone())).await.assert_error(status, name);
    }
    assert_eq!(before, (app.count("inbox_conversations").await, app.count("inbox_messages").await, app.count("events").await));
}

#[tokio::test]
async fn updates_check_the_version_the_teammate_and_the_place_and_emit_their_events() {
    let desk = desk().await;
    let app = desk.app();
    let support = channel(&desk, "support", json!({})).await;
    let restricted = channel(&desk, "vip", json!({ "restricted": true })).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    let opened = as_key(app, &key, Method::POST, "/inbox/conversations", Some(json!({ "channel_id": support, "from": { "email": "c@x.example" }, "text": "Hi" }))).await;
    let id = opened.body["id"].as_str().unwrap().to_string();
    let path = format!("/inbox/conversations/{id}");
    let version = opened.body["version"].as_i64().unwrap();
    let patch = |body: Value, if_match: Option<String>| {
        let (app, key, path) = (app, key.clone(), path.clone());
        async move {
            let mut request = app.request_as(&key, Method::PATCH, &path).json(&body);
            if let Some(tag) = if_match {
                request = request.header("if-match", tag);
            }
            tests::Answer::from(request.send().await.unwrap()).await
        }
    };
    let member = inbox::person(app, app.team_id, "member", "Mo").await;
    let assigned = patch(json!({ "assignee_id": member.id, "status": "pending" }), Some(format!("\"{version}\""))).await;
    assert_eq!(assigned.status, 200, "{}", assigned.body);
    assert_eq!((assigned.body["assignee"]["name"].as_str(), assigned.body["status"].as_str()), (Some("Mo"), Some("pending")));
    // Refusals change nothing.
    let current = as_key(app, &key, Method::GET, &path, None).await;
    let stranger = uuid::Uuid::now_v7();
    sqlx::query("INSERT INTO people (id, email, name, password_hash) VALUES ($1, 'x@elsewhere.example', 'X', 'unused')").bind(stranger).execute(&app.pool).await.unwrap();
    let other_channels_folder = sqlx::query_scalar::<_, uuid::Uuid>("INSERT INTO inbox_folders (id, team_id, channel_id, name) VALUES ($1, $2, $3, 'VIP') RETURNING id")
        .bind(uuid::Uuid::now_v7())
        .bind(app.team_id)
        .bind(uuid::Uuid::parse_str(&restricted).unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap();
    patch(json!({ "status": "open" }), Some(format!("\"{version}\""))).await.assert_error(412, "precondition_failed");
    patch(json!({ "status": "open" }), Some("not-a-version".into())).await.assert_error(422, "invalid_parameter");
    patch(json!({ "assignee_id": stranger }), None).await.assert_error(422, "invalid_parameter");
    patch(json!({ "folder_id": other_channels_folder }), None).await.assert_error(422, "invalid_parameter");
    patch(json!({ "label_ids": [uuid::Uuid::now_v7()] }), None).await.assert_error(422, "invalid_parameter");
    patch(json!({ "status": "bogus" }), None).await.assert_error(400, "validation_error");
    patch(json!({ "snoozed_until": "2030-01-01T09:00:00Z" }), None).await.assert_error(422, "snooze_needs_a_person");
    assert_eq!(as_key(app, &key, Method::GET, &path, None).await.body, current.body, "a refused update changes nothing");
    // In trash: only a move out.
    assert_eq!(patch(json!({ "place": "trash" }), None).await.status, 200);
    patch(json!({ "status": "done" }), None).await.assert_error(409, "conversation_conflict");
    as_key(app, &key, Method::POST, &format!("{path}/notes"), Some(json!({ "text": "n" }))).await.assert_error(409, "conversation_conflict");
    let back = patch(json!({ "place": "inbox", "status": "done" }), None).await;
    assert_eq!((back.status, back.body["status"].as_str()), (200, Some("done")), "{}", back.body);
    assert_eq!(events_of(&desk, "inbox.conversation.assigned").await.len(), 1);
    assert_eq!(events_of(&desk, "inbox.conversation.status_changed").await.len(), 2);
}

#[tokio::test]
async fn an_endpoint_subscribed_to_inbox_events_receives_each_signed_as_it_happens() {
    let desk = desk().await;
    let app = desk.app();
    let receiver = tests::receiver::Receiver::start().await;
    let events = ["inbox.conversation.created", "inbox.message.received", "inbox.note.created", "inbox.conversation.assigned", "inbox.conversation.status_changed"];
    let hook = app.post("/webhooks", json!({ "endpoint": receiver.url("/desk"), "events": events })).await;
    assert_eq!(hook.status, 201, "{}", hook.body);
    let secret = hook.body["signing_secret"].as_str().unwrap().to_string();
    let support = channel(&desk, "support", json!({})).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    write_in(&desk, "erin@customer.example", "support", "Where is my parcel", "parcel@customer.example", "").await;
    let id = eventually(|| async { conversations(&desk, &key, "").await.first().and_then(|c| c["id"].as_str().map(str::to_string)) }).await;
    let note = as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/notes"), Some(json!({ "text": "Checking with the carrier." }))).await;
    assert_eq!(note.status, 201, "{}", note.body);
    let changed = as_key(app, &key, Method::PATCH, &format!("/inbox/conversations/{id}"), Some(json!({ "assignee_id": desk.admin.id, "status": "pending" }))).await;
    assert_eq!(changed.status, 200, "{}", changed.body);

    let deliveries = receiver.wait_for("/desk", 5, std::time::Duration::from_secs(20)).await;
    let mut seen: Vec<String> = deliveries.iter().map(|d| d.json()["type"].as_str().unwrap().to_string()).collect();
    seen.sort();
    let mut expected: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    expected.sort();
    assert_eq!(seen, expected, "each Inbox event once");
    for delivery in &deliveries {
        assert_eq!(tests::receiver::verified_signatures(&secret, delivery), 1, "signed like every other event");
        let body = delivery.json();
        assert_eq!((body["data"]["conversation_id"].as_str(), body["data"]["channel_id"].as_str()), (Some(id.as_str()), Some(support.as_str())), "{body}");
    }
    let of = |t: &str| deliveries.iter().map(|d| d.json()).find(|b| b["type"] == t).unwrap()["data"].clone();
    assert_eq!(of("inbox.conversation.created")["customer"]["email"], "erin@customer.example");
    assert_eq!(of("inbox.note.created")["message_id"], note.body["id"]);
    assert_eq!(of("inbox.conversation.assigned")["assignee_id"], json!(desk.admin.id));
    assert_eq!((of("inbox.conversation.status_changed")["status"].as_str(), of("inbox.conversation.status_changed")["previous_status"].as_str()), (Some("pending"), Some("open")));
}

#[tokio::test]
async fn a_keys_note_keeps_the_keys_name_and_lists_with_the_messages() {
    let desk = desk().await;
    let app = desk.app();
    channel(&desk, "support", json!({})).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    let opened = as_key(app, &key, Method::POST, "/inbox/conversations", Some(json!({ "channel_id": "support@acme.test", "from": { "email": "c@x.example" }, "text": "Hi" }))).await;
    let id = opened.body["id"].as_str().unwrap().to_string();
    let note = as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/notes"), Some(json!({ "text": "Customer is on the pro plan." }))).await;
    assert_eq!(note.status, 201, "{}", note.body);
    assert_eq!((note.body["kind"].as_str(), note.body["direction"].as_str(), note.body["author"]["name"].as_str()), (Some("note"), Some("internal"), Some("write desk key")));
    sqlx::query("UPDATE api_keys SET name = 'renamed'").execute(&app.pool).await.unwrap();
    let by_person = as_person(app, &desk.admin, Method::POST, &format!("/inbox/conversations/{id}/notes"), Some(json!({ "text": "Escalating." }))).await;
    assert_eq!(by_person.body["author"]["name"], "Ada", "{}", by_person.body);
    let messages = as_key(app, &key, Method::GET, &format!("/inbox/conversations/{id}/messages"), None).await;
    let kinds: Vec<(&str, &str)> = messages.body["data"].as_array().unwrap().iter().map(|m| (m["kind"].as_str().unwrap(), m["author"]["name"].as_str().unwrap_or(""))).collect();
    assert_eq!(kinds, vec![("customer", ""), ("note", "write desk key"), ("note", "Ada")]);
    let conversation = as_key(app, &key, Method::GET, &format!("/inbox/conversations/{id}"), None).await;
    assert_eq!(conversation.body["message_count"], 3);
    assert_eq!(conversation.body["latest_message_id"], opened.body["latest_message_id"], "a note is never the latest message");
    for bad in [json!({ "text": "" }), json!({ "text": "x".repeat(2 * 1024 * 1024 + 1) })] {
        as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/notes"), Some(bad)).await.assert_error(400, "validation_error");
    }
    assert_eq!(app.count("inbox_messages").await, 3);
    // Request logs keep no Inbox bodies.
    let logged: i64 = sqlx::query_scalar("SELECT count(*) FROM request_logs WHERE endpoint LIKE '/inbox%' AND (request_body IS NOT NULL OR response_body IS NOT NULL)").fetch_one(&app.pool).await.unwrap();
    assert_eq!(logged, 0);
}

#[tokio::test]
async fn a_reply_reaches_the_customer_dkim_signed_from_the_channel_threaded_and_their_answer_lands_in_the_same_conversation() {
    let desk = desk().await;
    let app = desk.app();
    channel(&desk, "support", json!({})).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    write_in(&desk, "carol@inbox.test", "support", "Broken widget", "first@inbox.test", "").await;
    let opened = eventually(|| async { conversations(&desk, &key, "").await.into_iter().next() }).await;
    let id = opened["id"].as_str().unwrap().to_string();
    let latest = opened["latest_customer_message_id"].as_str().unwrap().to_string();

    let reply = as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "We are on it.", "in_reply_to": latest }))).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!((reply.body["kind"].as_str(), reply.body["direction"].as_str()), (Some("reply"), Some("outbound")));
    let email_id = reply.body["email_id"].as_str().unwrap().to_string();
    let arrived = desk.mail.sink.wait_for(1, std::time::Duration::from_secs(30)).await;
    let message = &arrived[0];
    let verified = tests::dkim::verify(&message.data, &tests::mail::dkim_public_key(&desk.mail.domain)).expect("the reply is DKIM-signed on the channel's domain");
    assert_eq!(verified.domain, "acme.test");
    assert_eq!(message.header("From").as_deref(), Some("\"support desk\" <support@acme.test>"));
    assert_eq!(message.header("To").as_deref(), Some("carol@inbox.test"));
    assert_eq!(message.header("Subject").as_deref(), Some("Re: Broken widget"));
    assert_eq!(message.header("In-Reply-To").as_deref(), Some("<first@inbox.test>"));
    assert!(message.header("References").unwrap_or_default().contains("<first@inbox.test>"));
    assert_eq!(message.header("Message-ID").unwrap(), format!("<{email_id}@acme.test>"));
    assert_eq!(app.get(&format!("/emails/{email_id}")).await.status, 200, "the reply is an ordinary sent email");

    // The customer answers the reply: the same conversation.
    let answer = format!("In-Reply-To: <{email_id}@acme.test>\r\nReferences: <first@inbox.test> <{email_id}@acme.test>\r\n");
    write_in(&desk, "carol@inbox.test", "support", "Re: Broken widget", "second@inbox.test", &answer).await;
    let threaded = eventually(|| async {
        let all = conversations(&desk, &key, "").await;
        (all.len() == 1 && all[0]["message_count"] == 3).then(|| all[0].clone())
    })
    .await;
    // Replying to the earlier message now is a conflict naming the newer one; naming it succeeds.
    let stale = as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "Again", "in_reply_to": latest }))).await;
    stale.assert_error(409, "conversation_conflict");
    assert_eq!(stale.body["details"]["latest_message_id"], threaded["latest_customer_message_id"]);
    let fresh = as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "Again", "in_reply_to": threaded["latest_customer_message_id"] }))).await;
    assert_eq!(fresh.status, 201, "{}", fresh.body);
    assert_eq!(events_of(&desk, "inbox.reply.sent").await.len(), 2);
    // Refusals send nothing.
    let emails = app.count("emails").await;
    as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "" }))).await.assert_error(422, "missing_required_field");
    as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "x", "cc": ["not an address"] }))).await.assert_error(400, "validation_error");
    assert_eq!(app.count("emails").await, emails);
}

#[tokio::test]
async fn labels_and_folders_file_conversations_within_their_channel_and_a_folder_never_nests_in_itself() {
    let desk = desk().await;
    let app = desk.app();
    let support = channel(&desk, "support", json!({})).await;
    let sales = channel(&desk, "sales", json!({})).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    let post = |path: &'static str, body: Value| {
        let key = key.clone();
        async move { as_key(app, &key, Method::POST, path, Some(body)).await }
    };
    let urgent = post("/inbox/labels", json!({ "name": "Urgent", "colour": "#ff0000" })).await;
    assert_eq!((urgent.status, urgent.body["channel_id"].clone()), (201, Value::Null), "{}", urgent.body);
    let vip = post("/inbox/labels", json!({ "name": "VIP", "channel_id": support })).await.body["id"].clone();
    let sales_label = post("/inbox/labels", json!({ "name": "Lead", "channel_id": sales })).await.body["id"].clone();
    let billing = post("/inbox/folders", json!({ "name": "Billing", "channel_id": support })).await;
    assert_eq!(billing.status, 201, "{}", billing.body);
    let billing = billing.body["id"].clone();
    let refunds = post("/inbox/folders", json!({ "name": "Refunds", "channel_id": support, "parent_id": billing })).await.body["id"].clone();
    let sales_folder = post("/inbox/folders", json!({ "name": "Quotes", "channel_id": sales })).await.body["id"].clone();
    // A folder nested under one of another channel, or under itself, is refused.
    post("/inbox/folders", json!({ "name": "X", "channel_id": support, "parent_id": sales_folder })).await.assert_error(422, "invalid_parameter");
    as_key(app, &key, Method::PATCH, &format!("/inbox/folders/{}", billing.as_str().unwrap()), Some(json!({ "parent_id": refunds }))).await.assert_error(422, "invalid_parameter");
    post("/inbox/labels", json!({ "name": "Bad", "colour": "red" })).await.assert_error(400, "validation_error");
    assert_eq!(app.count("inbox_folders").await, 3);

    let opened = post("/inbox/conversations", json!({ "channel_id": support, "from": { "email": "c@x.example" }, "text": "Refund please" })).await;
    let id = opened.body["id"].as_str().unwrap().to_string();
    let path = format!("/inbox/conversations/{id}");
    as_key(app, &key, Method::PATCH, &path, Some(json!({ "label_ids": [sales_label] }))).await.assert_error(422, "invalid_parameter");
    as_key(app, &key, Method::PATCH, &path, Some(json!({ "folder_id": sales_folder }))).await.assert_error(422, "invalid_parameter");
    let filed = as_key(app, &key, Method::PATCH, &path, Some(json!({ "label_ids": [urgent.body["id"], vip], "folder_id": refunds }))).await;
    assert_eq!(filed.status, 200, "{}", filed.body);
    let names: Vec<&str> = filed.body["labels"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["Urgent", "VIP"]);
    assert_eq!(filed.body["folder_id"], refunds);
    assert_eq!(conversations(&desk, &key, &format!("?label_id={}", vip.as_str().unwrap())).await.len(), 1);
    assert_eq!(conversations(&desk, &key, &format!("?folder_id={}", refunds.as_str().unwrap())).await.len(), 1);
    assert_eq!(conversations(&desk, &key, &format!("?label_id={}", sales_label.as_str().unwrap())).await.len(), 0);
    // A key limited to sales sees the team-wide label and sales' own, not support's.
    let limited = inbox_key(app, &desk.admin, "read", Some(vec![sales.clone()])).await;
    let seen: Vec<String> = as_key(app, &limited, Method::GET, "/inbox/labels", None).await.body["data"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(seen, vec!["Urgent".to_string(), "Lead".to_string()]);
    // Deleting the parent folder takes its child with it; the conversation leaves it.
    let deleted = as_key(app, &key, Method::DELETE, &format!("/inbox/folders/{}", billing.as_str().unwrap()), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(as_key(app, &key, Method::GET, &path, None).await.body["folder_id"], Value::Null);
    assert_eq!(app.count("inbox_folders").await, 1);
}

#[tokio::test]
async fn search_finds_conversations_by_subject_body_and_address_best_first_within_reach() {
    let desk = desk().await;
    let app = desk.app();
    let support = channel(&desk, "support", json!({})).await;
    let vip = channel(&desk, "vip", json!({ "restricted": true })).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    let limited = inbox_key(app, &desk.admin, "read", Some(vec![vip.clone()])).await;
    write_in(&desk, "carol@customer.example", "support", "Invoice question", "s1@customer.example", "").await;
    write_in(&desk, "dan@customer.example", "support", "Login trouble", "s2@customer.example", "").await;
    let opened = |channel: String, text: &'static str, subject: &'static str| {
        let key = if channel == vip { limited.clone() } else { key.clone() };
        async move {
            let body = json!({ "channel_id": channel, "from": { "email": "erin@customer.example" }, "subject": subject, "text": text });
            let _ = as_key(app, &key, Method::POST, "/inbox/conversations", Some(body)).await;
        }
    };
    // The limited key cannot open in vip (read access): a write key limited to it can.
    let vip_writer = inbox_key(app, &desk.admin, "write", Some(vec![vip.clone()])).await;
    let answer = as_key(app, &vip_writer, Method::POST, "/inbox/conversations", Some(json!({ "channel_id": vip, "from": { "email": "vip@customer.example" }, "subject": "Invoice overdue", "text": "My invoice invoice is overdue" }))).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    opened(support.clone(), "The refund for my invoice never arrived", "Refund").await;
    eventually(|| async { (app.count("inbox_conversations").await == 4).then_some(()) }).await;

    let search = |key: String, q: &'static str| async move {
        let answer = as_key(app, &key, Method::GET, &format!("/inbox/search?q={q}"), None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body["data"].as_array().unwrap().clone()
    };
    let hits = search(key.clone(), "invoice").await;
    let subjects: Vec<&str> = hits.iter().map(|h| h["conversation"]["subject"].as_str().unwrap()).collect();
    assert_eq!(subjects, vec!["Invoice question", "Refund"], "the subject match ranks first; vip is out of reach");
    assert!(hits[1]["snippet"].as_str().unwrap().contains("<b>invoice</b>"), "{}", hits[1]);
    assert_eq!(search(key.clone(), "dan%40customer.example").await.len(), 1, "addresses match");
    assert_eq!(search(key.clone(), "%22never+arrived%22").await.len(), 1, "a phrase matches");
    assert_eq!(search(key.clone(), "invoice+-refund").await.len(), 1, "an excluded word excludes");
    let theirs = search(limited.clone(), "invoice").await;
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0]["conversation"]["subject"], "Invoice overdue");
    // Paging continues after the last hit of a page.
    let first = as_key(app, &key, Method::GET, "/inbox/search?q=invoice&limit=1", None).await;
    assert_eq!(first.body["has_more"], true);
    let after = first.body["data"][0]["conversation"]["id"].as_str().unwrap();
    let second = as_key(app, &key, Method::GET, &format!("/inbox/search?q=invoice&limit=1&after={after}"), None).await;
    assert_eq!(second.body["data"][0]["conversation"]["subject"], "Refund", "{}", second.body);
    assert_eq!(second.body["has_more"], false);
    let refund = second.body["data"][0]["conversation"]["id"].as_str().unwrap();
    let back = as_key(app, &key, Method::GET, &format!("/inbox/search?q=invoice&limit=1&before={refund}"), None).await;
    assert_eq!(back.body["data"][0]["conversation"]["subject"], "Invoice question", "{}", back.body);
    for bad in ["%20%20", &"x".repeat(201)] {
        as_key(app, &key, Method::GET, &format!("/inbox/search?q={bad}"), None).await.assert_error(422, "invalid_parameter");
    }
}

#[tokio::test]
async fn a_token_needs_each_inbox_scope_and_an_agent_reads_searches_and_replies_through_mcp() {
    let desk = desk().await;
    let app = desk.app();
    channel(&desk, "support", json!({})).await;
    write_in(&desk, "carol@inbox.test", "support", "Invoice missing", "m1@inbox.test", "").await;
    let member = inbox::person(app, app.team_id, "member", "Mo").await;
    let reader = inbox::token(app, &member, app.team_id, &["inbox:read"]).await;
    let writer = inbox::token(app, &member, app.team_id, &["inbox:write"]).await;
    let both = inbox::token(app, &member, app.team_id, &["inbox:read", "inbox:write"]).await;
    let listed = eventually(|| async { as_key(app, &reader, Method::GET, "/inbox/conversations", None).await.body["data"][0]["id"].as_str().map(str::to_string) }).await;
    // One Inbox scope does not imply the other.
    as_key(app, &writer, Method::GET, "/inbox/conversations", None).await.assert_error(403, "invalid_permission");
    as_key(app, &reader, Method::POST, &format!("/inbox/conversations/{listed}/notes"), Some(json!({ "text": "n" }))).await.assert_error(403, "invalid_permission");
    assert_eq!(as_key(app, &writer, Method::POST, &format!("/inbox/conversations/{listed}/notes"), Some(json!({ "text": "n" }))).await.status, 201);

    let (failed, found) = inbox::tool(app, &reader, "search_inbox", json!({ "q": "invoice" })).await;
    assert!(!failed && found.contains(&listed), "{found}");
    let (failed, read) = inbox::tool(app, &reader, "read_inbox_conversation", json!({ "id": listed })).await;
    assert!(!failed && read.contains("Invoice missing"), "{read}");
    let (failed, refused) = inbox::tool(app, &reader, "reply_to_inbox_conversation", json!({ "conversation_id": listed, "text": "On it" })).await;
    assert!(failed && refused.contains("invalid_permission"), "{refused}");
    let (failed, replied) = inbox::tool(app, &both, "reply_to_inbox_conversation", json!({ "conversation_id": listed, "text": "On it" })).await;
    assert!(!failed, "{replied}");
    let arrived = desk.mail.sink.wait_for(1, std::time::Duration::from_secs(30)).await;
    assert_eq!(arrived[0].header("Subject").as_deref(), Some("Re: Invoice missing"));
    // The tool's call is the route's own, logged with source `mcp` (and no body).
    let source: String = eventually(|| async {
        sqlx::query_scalar("SELECT source FROM request_logs WHERE endpoint = '/inbox/conversations/{conversation_id}/replies' AND response_status = 201")
            .fetch_optional(&app.pool)
            .await
            .unwrap()
    })
    .await;
    assert_eq!(source, "mcp");
}

#[tokio::test]
async fn a_send_naming_a_channel_replies_to_it_and_the_answer_opens_a_conversation_linked_to_the_email() {
    let desk = desk().await;
    let app = desk.app();
    channel(&desk, "support", json!({})).await;
    let vip = channel(&desk, "vip", json!({ "restricted": true })).await;
    let mut send = tests::mail::Mail::message("carol@inbox.test");
    send["inbox"] = json!("support@acme.test");
    let sent = app.post("/emails", send.clone()).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let email_id = sent.body["id"].as_str().unwrap().to_string();
    let arrived = desk.mail.sink.wait_for(1, std::time::Duration::from_secs(30)).await;
    assert_eq!(arrived[0].header("Reply-To").as_deref(), Some("\"support desk\" <support@acme.test>"));

    let answer = format!("In-Reply-To: <{email_id}@acme.test>\r\n");
    write_in(&desk, "carol@inbox.test", "support", "Re: Hello", "answer@inbox.test", &answer).await;
    let key = inbox_key(app, &desk.admin, "read", None).await;
    let opened = eventually(|| async { conversations(&desk, &key, "").await.into_iter().next() }).await;
    assert_eq!(opened["email_id"], email_id.as_str(), "the conversation is linked to the email it answers");

    // Refused: an unknown channel, with reply_to, a restricted channel for a key not limited to it.
    let emails = app.count("emails").await;
    let mut unknown = send.clone();
    unknown["inbox"] = json!("nobody@acme.test");
    app.post("/emails", unknown).await.assert_error(422, "invalid_parameter");
    let mut both = send.clone();
    both["reply_to"] = json!("help@acme.test");
    app.post("/emails", both).await.assert_error(422, "invalid_parameter");
    let mut restricted = send.clone();
    restricted["inbox"] = json!(vip);
    app.post("/emails", restricted.clone()).await.assert_error(403, "invalid_permission");
    let mut unknown = send.clone();
    unknown["inbox"] = json!("nobody@acme.test");
    let batch = json!([send.clone(), unknown, restricted.clone()]);
    app.post("/emails/batch", batch.clone()).await.assert_error(422, "invalid_parameter");
    assert_eq!(app.count("emails").await, emails);
    // A permissive batch sends the good item and names the others.
    let permissive = app.request(Method::POST, "/emails/batch").header("x-batch-validation", "permissive").json(&batch).send().await.unwrap();
    let permissive = tests::Answer::from(permissive).await;
    assert_eq!(permissive.status, 200, "{}", permissive.body);
    assert_eq!(permissive.body["data"].as_array().map(Vec::len), Some(1), "{}", permissive.body);
    let refused: Vec<i64> = permissive.body["errors"].as_array().unwrap().iter().map(|e| e["index"].as_i64().unwrap()).collect();
    assert_eq!(refused, [1, 2], "{}", permissive.body);
    assert_eq!(app.count("emails").await, emails + 1);
    let limited = inbox_key(app, &desk.admin, "write", Some(vec![vip.clone()])).await;
    let allowed = as_key(app, &limited, Method::POST, "/emails", Some(restricted)).await;
    assert_eq!(allowed.status, 200, "{}", allowed.body);
}

#[tokio::test]
async fn a_teammates_fresh_draft_holds_off_other_replies_and_a_snooze_wakes_the_conversation_at_its_time() {
    let desk = desk().await;
    let app = desk.app();
    channel(&desk, "support", json!({})).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    let opened = as_key(app, &key, Method::POST, "/inbox/conversations", Some(json!({ "channel_id": "support@acme.test", "from": { "email": "carol@inbox.test" }, "subject": "Help", "text": "Hi" }))).await;
    let id = opened.body["id"].as_str().unwrap().to_string();
    let member = inbox::person(app, app.team_id, "member", "Mo").await;

    // Mo is writing: Ada's reply and the key's wait; drafts are the session's alone.
    let saved = as_person(app, &member, Method::PUT, &format!("/inbox/conversations/{id}/draft"), Some(json!({ "text": "Working on it" }))).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    as_key(app, &key, Method::PUT, &format!("/inbox/conversations/{id}/draft"), Some(json!({ "text": "x" }))).await.assert_error(403, "invalid_permission");
    let blocked = as_person(app, &desk.admin, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "Me too" }))).await;
    blocked.assert_error(409, "conversation_conflict");
    assert!(blocked.body["message"].as_str().unwrap().contains("Mo is replying"), "{}", blocked.body);
    as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "Bot" }))).await.assert_error(409, "conversation_conflict");
    // Mo's own reply goes out and drops Mo's draft; then others may reply again.
    let sent = as_person(app, &member, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "Done" }))).await;
    assert_eq!(sent.status, 201, "{}", sent.body);
    as_person(app, &member, Method::DELETE, &format!("/inbox/conversations/{id}/draft"), None).await.assert_error(404, "not_found");
    assert_eq!(as_person(app, &desk.admin, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "Also" }))).await.status, 201);
    // A draft older than a minute holds nothing off.
    as_person(app, &member, Method::PUT, &format!("/inbox/conversations/{id}/draft"), Some(json!({ "text": "stale" }))).await;
    sqlx::query("UPDATE inbox_person_state SET draft_updated_at = now() - interval '61 seconds'").execute(&app.pool).await.unwrap();
    assert_eq!(as_key(app, &key, Method::POST, &format!("/inbox/conversations/{id}/replies"), Some(json!({ "text": "Bot" }))).await.status, 201);

    // Ada snoozes it: pending until the time, then open again (the schedules' tick wakes it).
    let path = format!("/inbox/conversations/{id}");
    let until = (chrono::Utc::now() + chrono::TimeDelta::minutes(5)).to_rfc3339();
    let snoozed = as_person(app, &desk.admin, Method::PATCH, &path, Some(json!({ "snoozed_until": until }))).await;
    assert_eq!(snoozed.body["status"], "pending", "{}", snoozed.body);
    as_person(app, &desk.admin, Method::PATCH, &path, Some(json!({ "snoozed_until": "2000-01-01T00:00:00Z" }))).await.assert_error(422, "invalid_parameter");
    jobs::schedule::wake_snoozes(&app.pool).await.unwrap();
    assert_eq!(as_key(app, &key, Method::GET, &path, None).await.body["status"], "pending", "not due yet");
    sqlx::query("UPDATE inbox_person_state SET snoozed_until = now() - interval '1 second' WHERE snoozed_until IS NOT NULL").execute(&app.pool).await.unwrap();
    jobs::schedule::wake_snoozes(&app.pool).await.unwrap();
    assert_eq!(as_key(app, &key, Method::GET, &path, None).await.body["status"], "open");
    let changes = events_of(&desk, "inbox.conversation.status_changed").await;
    assert_eq!(changes.last().unwrap()["previous_status"], "pending");
}

#[tokio::test]
async fn read_marks_and_stars_are_each_persons_own_and_a_key_has_none() {
    let desk = desk().await;
    let app = desk.app();
    channel(&desk, "support", json!({})).await;
    let key = inbox_key(app, &desk.admin, "write", None).await;
    let opened = as_key(app, &key, Method::POST, "/inbox/conversations", Some(json!({ "channel_id": "support@acme.test", "from": { "email": "c@x.example" }, "text": "Hi" }))).await;
    let path = format!("/inbox/conversations/{}", opened.body["id"].as_str().unwrap());
    let member = inbox::person(app, app.team_id, "member", "Mo").await;
    let marked = as_person(app, &desk.admin, Method::PATCH, &path, Some(json!({ "read": true, "starred": true }))).await;
    assert_eq!(marked.status, 200, "{}", marked.body);
    assert_eq!((marked.body["mine"]["read"].as_bool(), marked.body["mine"]["starred"].as_bool()), (Some(true), Some(true)));
    assert_eq!(marked.body["version"], opened.body["version"], "a person's marks do not change the conversation");
    let theirs = as_person(app, &member, Method::GET, &path, None).await;
    assert_eq!((theirs.body["mine"]["read"].as_bool(), theirs.body["mine"]["starred"].as_bool()), (Some(false), Some(false)), "{}", theirs.body);
    let listed = as_person(app, &desk.admin, Method::GET, "/inbox/conversations", None).await;
    assert_eq!(listed.body["data"][0]["mine"]["starred"], true);
    assert_eq!(as_key(app, &key, Method::GET, &path, None).await.body["mine"], Value::Null, "a key sees no one's marks");
    as_key(app, &key, Method::PATCH, &path, Some(json!({ "starred": true }))).await.assert_error(422, "invalid_parameter");
    let unread = as_person(app, &desk.admin, Method::PATCH, &path, Some(json!({ "read": false }))).await;
    assert_eq!((unread.body["mine"]["read"].as_bool(), unread.body["mine"]["starred"].as_bool()), (Some(false), Some(true)));
}
