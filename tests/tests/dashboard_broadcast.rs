//! A broadcast composed, checked and sent from the dashboard (#28): the draft from the compose
//! form, its checklist, Send, the progress fragment until the fan-out is over (then it stops
//! asking), and each member's email accepted by the SMTP sink, personalised.

use std::time::Duration;
use tests::dashboard::{get, post};
use tests::inbox::person;
use tests::mail::{self, RECIPIENT_DOMAIN, SENDING_DOMAIN};

#[tokio::test]
async fn a_broadcast_composed_and_sent_from_the_dashboard_reaches_every_member_and_its_progress_stops_asking_when_done() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let admin = person(app, app.team_id, "admin", "Ada").await;
    let segment = tests::dashboard::readers(app).await;

    let from = format!("Acme <news@{SENDING_DOMAIN}>");
    let html = "<p>Hi {{{FIRST_NAME|friend}}}, spring is here.</p><p><a href=\"https://acme.example/spring\">Read more</a></p>";
    let (status, location, page) =
        post(app, &admin, "/app/broadcasts", &[("name", "Spring news"), ("from", &from), ("subject", "Spring for {{{FIRST_NAME|friend}}}"), ("segment_id", &segment), ("template", ""), ("html", html)]).await;
    assert_eq!(status, 303, "{page}");
    let location = location.unwrap();
    let id = location.strip_prefix("/app/broadcasts/").expect("the draft's page").to_string();
    let draft = get(app, &admin, &location).await.1;
    assert!(draft.contains("Spring news") && draft.contains(&format!("action=\"/app/broadcasts/{id}/send\"")), "the draft with its Send button: {draft}");

    let (status, _, page) = post(app, &admin, &format!("/app/broadcasts/{id}/send"), &[("acknowledge_checks", "true")]).await;
    assert_eq!(status, 303, "{page}");
    let messages = mail.sink.wait_for(3, Duration::from_secs(60)).await;
    let mut to: Vec<String> = messages.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    to.sort();
    assert_eq!(to, (0..3).map(|i| format!("reader{i}@{RECIPIENT_DOMAIN}")).collect::<Vec<_>>());
    assert!(messages.iter().any(|m| m.text().contains("Hi Reader1")), "each email personalised");

    let done = tests::eventually(|| async {
        let fragment = get(app, &admin, &format!("/app/broadcasts/{id}/progress")).await.1;
        fragment.contains("<b>sent</b> · 100%").then_some(fragment)
    })
    .await;
    assert!(!done.contains("hx-trigger"), "a finished fan-out stops asking: {done}");
    assert!(done.contains("<li><b>3</b>recipients</li>"), "{done}");
}

#[tokio::test]
async fn a_broadcast_scheduled_from_the_dashboard_waits_a_bad_time_stands_beside_the_field_and_cancel_sends_nothing() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let admin = person(app, app.team_id, "admin", "Ada").await;
    let segment = tests::dashboard::readers(app).await;
    let from = format!("Acme <news@{SENDING_DOMAIN}>");
    let (status, location, page) = post(app, &admin, "/app/broadcasts", &[("name", "Later"), ("from", &from), ("subject", "Later news"), ("segment_id", &segment), ("template", ""), ("html", "<p>Later.</p>")]).await;
    assert_eq!(status, 303, "{page}");
    let location = location.unwrap();
    let id = location.strip_prefix("/app/broadcasts/").unwrap().to_string();

    let (status, _, page) = post(app, &admin, &format!("{location}/send"), &[("scheduled_at", "the day after never")]).await;
    assert!(status >= 400, "{status}: {page}");
    assert!(page.contains("id=\"b-scheduled_at-error\""), "the refusal beside the time: {page}");
    assert_eq!(app.get(&format!("/broadcasts/{id}")).await.body["status"], "draft", "nothing scheduled");

    let (status, _, page) = post(app, &admin, &format!("{location}/send"), &[("scheduled_at", "in 2 hours")]).await;
    assert_eq!(status, 303, "{page}");
    let scheduled = app.get(&format!("/broadcasts/{id}")).await.body;
    assert_eq!(scheduled["status"], "scheduled", "{scheduled}");
    let page = get(app, &admin, &location).await.1;
    assert!(page.contains("Cancel the scheduled send"), "{page}");
    let (status, _, _) = post(app, &admin, &format!("{location}/cancel"), &[]).await;
    assert_eq!(status, 303);
    assert_eq!(app.get(&format!("/broadcasts/{id}")).await.body["status"], "canceled");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(mail.sink.messages().is_empty(), "a canceled broadcast sends nothing");
}
