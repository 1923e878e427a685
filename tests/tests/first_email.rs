//! The first hour: a development server sends a first email without DNS, from the development
//! sender into the local outbox, signed as it would have gone out; any other server refuses it.

use serde_json::{Value, json};
use tests::TestApp;

const DEV_FROM: &str = "Herald <hello@dev.herald.localhost>";

fn first_email(to: &str) -> Value {
    json!({ "from": DEV_FROM, "to": to, "subject": "Hello from Herald", "html": "<p>It <b>works</b>.</p>", "text": "It works." })
}

#[tokio::test]
async fn a_development_server_delivers_a_first_email_from_the_development_sender_into_the_outbox_signed() {
    let mut app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    app.start_workers();
    // Any recipient: the team is in the sending sandbox, but this mail never leaves the machine.
    let sent = app.post("/emails", first_email("you@example.com")).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let id = sent.body["id"].as_str().unwrap().to_string();
    tests::mail::wait_for_event(&app, &id, "delivered").await;

    let (message, public_key): (Vec<u8>, String) = sqlx::query_as(
        "SELECT o.message, d.dkim_public_key FROM dev_outbox o JOIN emails e ON e.id = o.email_id JOIN domains d ON d.id = e.domain_id
         WHERE o.email_id = $1::uuid",
    )
    .bind(&id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let verified = tests::dkim::verify(&message, &public_key).expect("the outbox copy verifies");
    assert_eq!(verified.domain, "dev.herald.localhost");

    let page = app.client.get(app.url("/outbox")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.text().await.unwrap();
    assert!(html.contains("Hello from Herald") && html.contains("you@example.com") && html.contains(&id), "{html}");
    assert!(html.contains("DKIM</b> signed"), "{html}");
}

#[tokio::test]
async fn the_development_sender_is_verified_without_dns_and_a_verify_call_leaves_it_so() {
    let app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    let listed = app.get("/domains").await;
    let dev = listed.body["data"].as_array().unwrap().iter().find(|d| d["name"] == "dev.herald.localhost").expect("listed").clone();
    assert_eq!(dev["status"], "verified");
    // The test DNS server knows nothing of it; verify does not ask.
    let verified = app.post(&format!("/domains/{}/verify", dev["id"].as_str().unwrap()), json!({})).await;
    assert_eq!(verified.status, 200, "{}", verified.body);
    assert_eq!(verified.body["status"], "verified");
}

#[tokio::test]
async fn outside_development_the_development_sender_is_refused_saying_why_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    // Even a team that kept the row from development days cannot use it.
    api::routes::pages::outbox::ensure_dev_senders(&app.pool).await.unwrap();
    let refused = app.post("/emails", first_email("you@example.com")).await;
    refused.assert_error(403, "validation_error");
    let message = refused.body["message"].as_str().unwrap();
    assert!(message.contains("HERALD_ENV=development") && message.contains("POST /domains"), "{message}");
    assert_eq!(app.count("emails").await, 0);
    assert_eq!(app.count("apalis.jobs").await, 0);

    let batch = app.post("/emails/batch", json!([first_email("you@example.com")])).await;
    batch.assert_error(403, "validation_error");
    assert_eq!(app.count("emails").await, 0);
}

#[tokio::test]
async fn outside_development_the_outbox_is_not_served() {
    let app = TestApp::spawn().await;
    let page = app.client.get(app.url("/outbox")).send().await.unwrap();
    assert_eq!(page.status(), 404);
}

#[tokio::test]
async fn no_team_can_add_a_domain_under_localhost() {
    let app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    let before = app.count("domains").await;
    for name in ["dev.herald.localhost", "mail.example.localhost"] {
        let refused = app.post("/domains", json!({ "name": name })).await;
        refused.assert_error(400, "validation_error");
        assert!(refused.body["message"].as_str().unwrap().contains(".localhost"), "{}", refused.body);
    }
    assert_eq!(app.count("domains").await, before);
}

#[tokio::test]
async fn on_the_free_plan_in_development_a_real_domain_can_be_added_right_after_the_first_send() {
    let app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    let plan: String = sqlx::query_scalar("SELECT plan_code FROM teams WHERE id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(plan, "free");
    let sent = app.post("/emails", first_email("you@example.com")).await;
    assert_eq!(sent.status, 200, "{}", sent.body);

    // The development sender takes no place in the free plan's one domain.
    let added = app.post("/domains", json!({ "name": "mycompany.example" })).await;
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(added.body["name"], "mycompany.example");
    // The plan's limit still holds for real domains.
    let second = app.post("/domains", json!({ "name": "another.example" })).await;
    second.assert_error(422, "validation_error");
    assert!(second.body["message"].as_str().unwrap().contains("allows 1 domain"), "{}", second.body);
    let names: Vec<String> = sqlx::query_scalar("SELECT name FROM domains WHERE team_id = $1 ORDER BY name").bind(app.team_id).fetch_all(&app.pool).await.unwrap();
    assert_eq!(names, ["dev.herald.localhost", "mycompany.example"]);
}

/// A full-access key for `team_id`, minted the way `herald team create` mints one.
async fn key_for(app: &TestApp, team_id: uuid::Uuid) -> String {
    let token = schema::secret::mint("rk_");
    let key = schema::store::api_keys::NewApiKey {
        id: schema::ids::new_id(),
        team_id,
        name: "Signed-up team",
        permission: schema::model::Permission::FullAccess,
        domain_id: None,
        token_hash: &token.hash,
        key_prefix: &token.prefix,
        inbox_access: schema::model::InboxAccess::None,
        inbox_channel_ids: None,
    };
    schema::store::api_keys::insert(&mut *app.pool.acquire().await.unwrap(), &key).await.unwrap();
    token.plaintext
}

#[tokio::test]
async fn a_team_made_by_sign_up_sends_from_the_development_sender_at_once() {
    let mut app = TestApp::spawn_with(|config| config.env = "development".into()).await;
    app.start_workers();
    let signed_up = app
        .client
        .post(app.url("/auth/signup"))
        .json(&json!({ "email": "newcomer@example.com", "password": "correct horse battery", "name": "Nia" }))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_up.status(), 201);
    let session: Value = signed_up.json().await.unwrap();
    let team_id: uuid::Uuid = session["team"]["id"].as_str().unwrap().parse().unwrap();

    let key = key_for(&app, team_id).await;
    let sent = app.request_as(&key, reqwest::Method::POST, "/emails").json(&first_email("you@example.com")).send().await.unwrap();
    let sent = tests::Answer::from(sent).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let id = sent.body["id"].as_str().unwrap().to_string();
    let delivered = tests::eventually(|| async {
        let kept: Option<uuid::Uuid> = sqlx::query_scalar("SELECT email_id FROM dev_outbox WHERE email_id = $1::uuid").bind(&id).fetch_optional(&app.pool).await.unwrap();
        kept
    })
    .await;
    assert_eq!(delivered.to_string(), id);
}

#[tokio::test]
async fn herald_team_invite_mails_the_invitation_into_the_outbox_and_its_link_makes_the_first_admin() {
    let url = tests::fresh_database().await;
    let created = std::process::Command::new(tests::herald_binary())
        .args(["team", "create", "--name", "Acme"])
        .env("DATABASE_URL", &url)
        .env("HERALD_LOG", "error")
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let team_id = serde_json::from_slice::<Value>(&created.stdout).unwrap()["team_id"].as_str().unwrap().to_string();

    let invite = |email: &str| {
        std::process::Command::new(tests::herald_binary())
            .args(["team", "invite", "--team", &team_id, "--email", email])
            .env("DATABASE_URL", &url)
            .env("HERALD_LOG", "error")
            .output()
            .unwrap()
    };
    let refused = invite("not an address");
    assert!(!refused.status.success());
    let pool = schema::connect(&url, 12).await.unwrap();
    let invitations: i64 = sqlx::query_scalar("SELECT count(*) FROM invitations").fetch_one(&pool).await.unwrap();
    assert_eq!(invitations, 0);

    let invited = invite("owner@example.com");
    assert!(invited.status.success(), "{}", String::from_utf8_lossy(&invited.stderr));
    let printed: Value = serde_json::from_slice(&invited.stdout).unwrap();
    assert_eq!((printed["role"].as_str(), printed["mailed"].as_bool()), (Some("admin"), Some(true)), "{printed}");
    let link = printed["link"].as_str().unwrap().to_string();

    // The invitation went through the delivery path into the development outbox.
    let mut app = TestApp::start(&url, pool.clone(), |config| config.env = "development".into()).await;
    app.start_workers();
    let message = tests::eventually(|| async {
        let kept: Option<Vec<u8>> = sqlx::query_scalar(
            "SELECT o.message FROM dev_outbox o JOIN email_recipients r ON r.email_id = o.email_id WHERE r.email = 'owner@example.com'",
        )
        .fetch_optional(&pool)
        .await
        .unwrap();
        kept
    })
    .await;
    let message = String::from_utf8_lossy(&message);
    assert!(message.contains("Join Acme on Herald"), "{message}");
    let token = link.rsplit('/').next().unwrap();
    assert!(message.contains(token), "the mailed message carries the printed link");

    // The link's page makes the account, and its person is the team's admin.
    let joined = app
        .client
        .post(app.url(&format!("/invitations/{token}")))
        .form(&[("name", "Owner"), ("password", "correct horse battery")])
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), 201, "{}", joined.text().await.unwrap());
    let role: String = sqlx::query_scalar("SELECT m.role FROM memberships m JOIN people p ON p.id = m.person_id WHERE p.email = 'owner@example.com' AND m.team_id = $1::uuid")
        .bind(&team_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(role, "admin");

    // Now the team has an admin, the next invitation is a member's by default.
    let next = invite("colleague@example.com");
    assert!(next.status.success(), "{}", String::from_utf8_lossy(&next.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&next.stdout).unwrap()["role"], "member");
}
