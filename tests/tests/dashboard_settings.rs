//! The team's settings pages in the dashboard (#28): billing with its meters and a plan change
//! the API refuses shown on the page with nothing written, and a migration uploaded as a file,
//! reviewed and started from the dashboard until its contacts arrive, with an export's link.

use tests::dashboard::{browser, get, post};
use tests::inbox::person;

#[tokio::test]
async fn the_billing_page_shows_the_plan_and_meters_and_a_refused_plan_change_writes_nothing() {
    let app = tests::TestApp::spawn_unthrottled().await;
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let viewer = person(&app, app.team_id, "viewer", "Vi").await;
    let (status, page) = get(&app, &admin, "/app/billing").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Emails this period") && page.contains("<meter") && page.contains("action=\"/app/billing/plan\""), "{page}");
    let (_, viewing) = get(&app, &viewer, "/app/billing").await;
    assert!(viewing.contains("Emails this period") && !viewing.contains("action=\"/app/billing/plan\""), "a viewer sees no plan change");

    let plan_before: String = sqlx::query_scalar("SELECT plan_code FROM teams WHERE id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    // This server's public address is http: checkout needs an https return, and says so.
    let (status, _, page) = post(&app, &admin, "/app/billing/plan", &[("plan_code", "pro")]).await;
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("role=\"alert\"") && page.contains("Billing"), "{page}");
    let plan_after: String = sqlx::query_scalar("SELECT plan_code FROM teams WHERE id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(plan_after, plan_before);
    let (status, _, _) = post(&app, &viewer, "/app/billing/plan", &[("plan_code", "free")]).await;
    assert_eq!(status, 403, "the server refuses a viewer's change anyway");
}

#[tokio::test]
async fn a_migration_uploaded_from_the_dashboard_is_reviewed_started_and_its_contacts_arrive() {
    let mut app = tests::TestApp::spawn_with(|config| {
        config.rate_limit_capacity = 1000;
        config.rate_limit_refill = 1000.0;
        config.secret_key = Some("dashboard-migration-secret".into());
    })
    .await;
    app.start_workers();
    sqlx::query("UPDATE teams SET plan_code = 'pro' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    let admin = person(&app, app.team_id, "admin", "Ada").await;
    let (_, empty) = get(&app, &admin, "/app/migrations").await;
    assert!(empty.contains("No migration yet") && empty.contains("Connect and review"), "{empty}");

    let csv = "email,first_name,last_name\nada@moving.test,Ada,Lovelace\ngrace@moving.test,Grace,Hopper\n";
    let (content_type, body) = tests::multipart(&[("csrf", None, admin.csrf.as_bytes()), ("source", None, b"resend"), ("file", Some("contacts.csv"), csv.as_bytes())]);
    let answer = browser().post(app.url("/app/migrations/upload")).header("cookie", format!("herald_session={}", admin.cookie)).header("content-type", content_type).body(body).send().await.unwrap();
    assert_eq!(answer.status(), 303, "{}", answer.text().await.unwrap());
    let location = answer.headers()["location"].to_str().unwrap().to_string();
    let id = location.strip_prefix("/app/migrations/").unwrap().to_string();

    let reviewed = tests::eventually(|| async {
        let (_, page) = get(&app, &admin, &location).await;
        page.contains("Start the move").then_some(page)
    })
    .await;
    assert!(reviewed.contains("2 in all: 2 new"), "the review counts the file: {reviewed}");
    let (status, _, page) = post(&app, &admin, &format!("{location}/start"), &[]).await;
    assert_eq!(status, 303, "{page}");
    let done = tests::eventually(|| async {
        let (_, fragment) = get(&app, &admin, &format!("{location}/progress")).await;
        fragment.contains("<b>completed</b> · 100%").then_some(fragment)
    })
    .await;
    assert!(!done.contains("hx-trigger") && done.contains("<li><b>2</b>created</li>"), "{done}");
    assert_eq!(app.get("/contacts/grace@moving.test").await.body["first_name"], "Grace");

    // Another team's migration is the not-found page.
    let (stranger_team, _) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let stranger = person(&app, stranger_team, "admin", "Sam").await;
    let (status, _) = get(&app, &stranger, &format!("/app/migrations/{id}")).await;
    assert_eq!(status, 404);

    let (status, location, page) = post(&app, &admin, "/app/exports?kind=contacts", &[]).await;
    assert_eq!((status, location.as_deref()), (303, Some("/app/migrations#exports")), "{page}");
    let listed = tests::eventually(|| async {
        let (_, page) = get(&app, &admin, "/app/migrations").await;
        page.contains("Download CSV").then_some(page)
    })
    .await;
    assert!(listed.contains("/exports/download/"), "{listed}");
}
