//! Sending domains against a real DNS server: records, verification, drift, claims, DKIM
//! rotation, the return-path check, plan limits and key pins.

use hickory_proto::rr::RecordType;
use serde_json::{Value, json};
use tests::TestApp;

/// Adds a domain and returns its view.
async fn add(app: &TestApp, body: Value) -> Value {
    let answer = app.post("/domains", body).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body
}

fn record<'a>(domain: &'a Value, kind: &str) -> &'a Value {
    domain["records"].as_array().unwrap().iter().find(|r| r["kind"] == kind).unwrap()
}

/// Publishes the domain's DKIM key (as two strings) and mail-from CNAME in the test DNS.
fn publish(app: &TestApp, domain: &Value) {
    let dkim = record(domain, "dkim");
    let value = dkim["value"].as_str().unwrap();
    let (first, second) = value.split_at(255);
    app.dns.zone.set_txt(dkim["fqdn"].as_str().unwrap(), &[&[first, second]]);
    let mail_from = record(domain, "mail_from");
    app.dns.zone.set_cname(mail_from["fqdn"].as_str().unwrap(), mail_from["value"].as_str().unwrap());
}

async fn verify(app: &TestApp, id: &str) -> Value {
    let answer = app.post(&format!("/domains/{id}/verify"), json!({})).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body
}

/// Moves the last check back past the 15-second throttle.
async fn age_check(app: &TestApp, id: &str) {
    sqlx::query("UPDATE domains SET checked_at = checked_at - interval '1 minute' WHERE id = $1::uuid")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
}

async fn upgrade(app: &TestApp, team_id: uuid::Uuid) {
    sqlx::query("UPDATE teams SET plan_code = 'scale' WHERE id = $1").bind(team_id).execute(&app.pool).await.unwrap();
}

async fn events(app: &TestApp, event_type: &str) -> Vec<Value> {
    sqlx::query_scalar("SELECT data FROM events WHERE type = $1 ORDER BY id")
        .bind(event_type)
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

fn id(domain: &Value) -> String {
    domain["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_new_domain_answers_its_records_and_keeps_a_fresh_dkim_key() {
    let app = TestApp::spawn().await;
    let domain = add(&app, json!({ "name": "Example.TEST", "region": "eu-west-1" })).await;
    assert_eq!((domain["name"].as_str(), domain["status"].as_str()), (Some("example.test"), Some("not_started")));
    assert_eq!(domain["tls"], "opportunistic");
    assert_eq!(domain["capabilities"], json!({ "sending": "enabled", "receiving": "disabled" }));
    let kinds: Vec<_> = domain["records"].as_array().unwrap().iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["dkim", "mail_from", "receiving", "tracking"]);
    let names: Vec<_> = domain["records"].as_array().unwrap().iter().map(|r| r["record"].as_str().unwrap()).collect();
    assert_eq!(names, ["DKIM", "SPF", "Receiving MX", "Tracking"], "as the Resend SDKs name them");

    let dkim = record(&domain, "dkim");
    assert_eq!((dkim["name"].as_str(), dkim["type"].as_str()), (Some("svc._domainkey"), Some("TXT")));
    let value = dkim["value"].as_str().unwrap();
    assert!(value.starts_with("p=MIIBIjAN") && value.len() > 255, "a bare 2048-bit p= value: {value}");
    let mail_from = record(&domain, "mail_from");
    assert_eq!((mail_from["name"].as_str(), mail_from["type"].as_str()), (Some("send"), Some("CNAME")));
    assert!(mail_from["value"].as_str().unwrap().ends_with(".feedback.eu-west-1.herald.localhost"));
    let receiving = record(&domain, "receiving");
    assert_eq!((receiving["name"].as_str(), receiving["priority"].as_u64()), (Some("@"), Some(10)));
    assert_eq!(receiving["required"], false);
    assert_eq!(record(&domain, "tracking")["name"], "links");

    let (private, public): (String, String) =
        sqlx::query_as("SELECT dkim_private_key, dkim_public_key FROM domains").fetch_one(&app.pool).await.unwrap();
    assert!(private.starts_with("-----BEGIN RSA PRIVATE KEY-----"));
    assert_eq!(format!("p={public}"), value);
    assert_eq!(events(&app, "domain.created").await[0]["name"], "example.test");

    let fetched = app.get(&format!("/domains/{}", id(&domain))).await;
    assert_eq!(fetched.body["records"], domain["records"]);
    let listed = app.get("/domains").await;
    assert_eq!((listed.body["object"].as_str(), listed.body["data"][0]["id"].as_str()), (Some("list"), domain["id"].as_str()));
}

#[tokio::test]
async fn a_subdomain_is_its_own_domain_whose_record_names_carry_its_labels() {
    let app = TestApp::spawn().await;
    let domain = add(&app, json!({ "name": "mail.example.test", "custom_return_path": "bounce", "region": "sa-east-1" })).await;
    let names: Vec<_> = domain["records"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    // sa-east-1 has no inbound mail, so no receiving record.
    assert_eq!(names, ["svc._domainkey.mail", "bounce.mail", "links.mail"]);
    assert_eq!(record(&domain, "mail_from")["fqdn"], "bounce.mail.example.test");
}

#[tokio::test]
async fn bad_input_is_refused_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let cases = [
        (json!({ "name": "not a domain" }), 400, "validation_error"),
        (json!({ "name": "localhost" }), 400, "validation_error"),
        (json!({ "name": "co.uk" }), 400, "validation_error"),
        (json!({ "name": "127.0.0.1" }), 400, "validation_error"),
        (json!({}), 422, "missing_required_field"),
        (json!({ "name": "example.test", "region": "mars-1" }), 422, "invalid_parameter"),
        (json!({ "name": "example.test", "tls": "sometimes" }), 422, "invalid_parameter"),
        (json!({ "name": "example.test", "custom_return_path": "a.b" }), 400, "validation_error"),
        (json!({ "name": "example.test", "region": "ap-northeast-1", "capabilities": { "receiving": "enabled" } }), 422, "validation_error"),
    ];
    for (body, status, name) in cases {
        app.post("/domains", body).await.assert_error(status, name);
    }
    assert_eq!(app.count("domains").await, 0);
    assert_eq!(app.count("events").await, 0);
}

#[tokio::test]
async fn the_plan_domain_limit_is_enforced() {
    let app = TestApp::spawn().await;
    add(&app, json!({ "name": "one.test" })).await;
    let answer = app.post("/domains", json!({ "name": "two.test" })).await;
    answer.assert_error(422, "validation_error");
    assert!(answer.body["message"].as_str().unwrap().contains("limit"));
    assert_eq!(app.count("domains").await, 1);
    app.post("/domains", json!({ "name": "one.test" })).await.assert_error(422, "validation_error");
}

#[tokio::test]
async fn publishing_dkim_and_mail_from_verifies_the_domain_and_raises_the_sending_tier() {
    let app = TestApp::spawn().await;
    let domain = add(&app, json!({ "name": "example.test" })).await;
    let before = verify(&app, &id(&domain)).await;
    assert_eq!(before["status"], "pending");
    assert_eq!(record(&before, "dkim")["status"], "pending");

    age_check(&app, &id(&domain)).await;
    publish(&app, &domain);
    let after = verify(&app, &id(&domain)).await;
    assert_eq!(after["status"], "verified");
    assert_eq!((record(&after, "dkim")["status"].as_str(), record(&after, "mail_from")["status"].as_str()), (Some("verified"), Some("verified")));
    // Receiving and tracking are off, so they need not verify.
    assert_eq!(record(&after, "tracking")["status"], "pending");
    let tier: i16 = sqlx::query_scalar("SELECT sending_tier FROM teams WHERE id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!((schema::model::tier_name(tier), schema::model::next_unlock(tier)), ("verified", Some("add_payment_method")));
    let updates = events(&app, "domain.updated").await;
    assert_eq!(updates.last().unwrap()["status"], "verified");
}

#[tokio::test]
async fn a_verify_within_fifteen_seconds_answers_without_rechecking_and_a_vanished_record_drifts() {
    let app = TestApp::spawn().await;
    let domain = add(&app, json!({ "name": "example.test" })).await;
    publish(&app, &domain);
    assert_eq!(verify(&app, &id(&domain)).await["status"], "verified");

    let dkim_name = record(&domain, "dkim")["fqdn"].as_str().unwrap().to_string();
    app.dns.zone.remove(&dkim_name, RecordType::TXT);
    let throttled = verify(&app, &id(&domain)).await;
    assert_eq!(throttled["status"], "verified", "no recheck within 15 s");

    age_check(&app, &id(&domain)).await;
    let drifted = verify(&app, &id(&domain)).await;
    assert_eq!((drifted["status"].as_str(), record(&drifted, "dkim")["status"].as_str()), (Some("drifted"), Some("drifted")));
    assert_eq!(record(&drifted, "mail_from")["status"], "verified");

    age_check(&app, &id(&domain)).await;
    publish(&app, &domain);
    assert_eq!(verify(&app, &id(&domain)).await["status"], "verified");
}

#[tokio::test]
async fn a_dns_outage_leaves_verified_records_verified_and_marks_unchecked_ones_temporary_failures() {
    let app = TestApp::spawn().await;
    upgrade(&app, app.team_id).await;
    let verified = add(&app, json!({ "name": "good.test" })).await;
    publish(&app, &verified);
    verify(&app, &id(&verified)).await;
    let fresh = add(&app, json!({ "name": "fresh.test" })).await;

    app.dns.zone.set_failing(true);
    age_check(&app, &id(&verified)).await;
    assert_eq!(verify(&app, &id(&verified)).await["status"], "verified");
    let failing = verify(&app, &id(&fresh)).await;
    assert_eq!((failing["status"].as_str(), record(&failing, "dkim")["status"].as_str()), (Some("temporary_failure"), Some("temporary_failure")));
}

#[tokio::test]
async fn records_still_missing_three_days_after_creation_fail() {
    let app = TestApp::spawn().await;
    let domain = add(&app, json!({ "name": "late.test" })).await;
    sqlx::query("UPDATE domains SET created_at = now() - interval '73 hours'").execute(&app.pool).await.unwrap();
    let failed = verify(&app, &id(&domain)).await;
    assert_eq!((failed["status"].as_str(), record(&failed, "mail_from")["status"].as_str()), (Some("failed"), Some("failed")));
}

#[tokio::test]
async fn another_teams_domain_answers_not_found() {
    let app = TestApp::spawn().await;
    let domain = add(&app, json!({ "name": "example.test" })).await;
    let (_, other) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    for (method, path) in [
        (reqwest::Method::GET, format!("/domains/{}", id(&domain))),
        (reqwest::Method::POST, format!("/domains/{}/verify", id(&domain))),
        (reqwest::Method::PATCH, format!("/domains/{}", id(&domain))),
        (reqwest::Method::DELETE, format!("/domains/{}", id(&domain))),
        (reqwest::Method::POST, format!("/domains/{}/dkim/rotate", id(&domain))),
        (reqwest::Method::GET, format!("/domains/{}/claim", id(&domain))),
    ] {
        let answer = tests::Answer::from(app.request_as(&other, method, &path).json(&json!({})).send().await.unwrap()).await;
        answer.assert_error(404, "not_found");
    }
    app.post("/domains/not-a-uuid/verify", json!({})).await.assert_error(404, "not_found");
    let checked: Option<chrono::DateTime<chrono::Utc>> = sqlx::query_scalar("SELECT checked_at FROM domains").fetch_one(&app.pool).await.unwrap();
    assert_eq!(checked, None);
    assert_eq!(app.count("domains").await, 1);
}

#[tokio::test]
async fn an_update_changes_settings_but_never_the_region() {
    let app = TestApp::spawn().await;
    let domain = add(&app, json!({ "name": "example.test" })).await;
    let path = format!("/domains/{}", id(&domain));
    app.patch(&path, json!({ "region": "eu-west-1" })).await.assert_error(422, "invalid_parameter");
    app.patch(&path, json!({ "custom_return_path": "other" })).await.assert_error(422, "invalid_parameter");
    app.patch(&path, json!({ "tls": "never" })).await.assert_error(422, "invalid_parameter");
    assert_eq!(app.count("events WHERE type = 'domain.updated'").await, 0);

    let answer = app.patch(&path, json!({ "region": "us-east-1", "tls": "enforced", "open_tracking": true, "capabilities": { "receiving": "enabled" } })).await;
    assert_eq!((answer.status, answer.body["object"].as_str()), (200, Some("domain")));
    let changed = app.get(&path).await.body;
    assert_eq!((changed["tls"].as_str(), changed["open_tracking"].as_bool()), (Some("enforced"), Some(true)));
    assert_eq!((record(&changed, "receiving")["required"].as_bool(), record(&changed, "tracking")["required"].as_bool()), (Some(true), Some(true)));
    assert_eq!(app.count("events WHERE type = 'domain.updated'").await, 1);
}

#[tokio::test]
async fn deleting_a_domain_emits_its_last_state_and_waits_for_pinned_keys() {
    let app = TestApp::spawn().await;
    let domain = add(&app, json!({ "name": "example.test" })).await;
    let pin = json!({ "name": "pinned", "permission": "sending_access", "domain_id": id(&domain) });
    app.post("/api-keys", pin.clone()).await.assert_error(403, "validation_error");
    assert_eq!(app.count("api_keys").await, 1);

    publish(&app, &domain);
    verify(&app, &id(&domain)).await;
    let (key_id, _) = app.create_key(pin).await;
    app.delete(&format!("/domains/{}", id(&domain))).await.assert_error(409, "resource_locked");
    assert_eq!(app.count("domains").await, 1);

    app.delete(&format!("/api-keys/{key_id}")).await;
    let answer = app.delete(&format!("/domains/{}", id(&domain))).await;
    assert_eq!((answer.status, answer.body["deleted"].as_bool()), (200, Some(true)));
    assert_eq!(app.count("domains").await, 0);
    assert_eq!(events(&app, "domain.deleted").await[0]["status"], "verified");
    app.get(&format!("/domains/{}", id(&domain))).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_return_path_label_holding_someone_elses_record_is_refused_with_a_suggestion() {
    let app = TestApp::spawn().await;
    app.dns.zone.set_mx("send.example.test", 10, "mx.elsewhere.test");
    let answer = app.post("/domains", json!({ "name": "example.test" })).await;
    answer.assert_error(403, "validation_error");
    let details = &answer.body["details"];
    assert_eq!(details["reason"], "return_path_in_use");
    assert_eq!(details["label"], "send");
    assert_eq!(details["found"], json!({ "type": "MX", "value": "10 mx.elsewhere.test" }));
    assert_eq!(details["suggestion"], "bounces");
    assert_eq!(app.count("domains").await, 0);

    // Our own mail-from CNAME at the label is not in the way.
    app.dns.zone.remove("send.example.test", RecordType::MX);
    app.dns.zone.set_cname("send.example.test", "abc.feedback.us-east-1.herald.localhost");
    add(&app, json!({ "name": "example.test" })).await;
}

#[tokio::test]
async fn a_rotated_dkim_key_takes_over_once_dns_carries_it() {
    let app = TestApp::spawn().await;
    let domain = add(&app, json!({ "name": "example.test" })).await;
    publish(&app, &domain);
    verify(&app, &id(&domain)).await;
    let rotate = app.post(&format!("/domains/{}/dkim/rotate", id(&domain)), json!({})).await;
    assert_eq!(rotate.status, 200, "{}", rotate.body);
    let next = rotate.body["dkim_rotation"]["next_value"].as_str().unwrap().to_string();
    assert_ne!(next, record(&domain, "dkim")["value"].as_str().unwrap());
    app.post(&format!("/domains/{}/dkim/rotate", id(&domain)), json!({})).await.assert_error(409, "resource_locked");

    age_check(&app, &id(&domain)).await;
    assert!(verify(&app, &id(&domain)).await["dkim_rotation"].is_object(), "the old key is still published");

    let (first, second) = next.split_at(255);
    app.dns.zone.set_txt(record(&domain, "dkim")["fqdn"].as_str().unwrap(), &[&[first, second]]);
    age_check(&app, &id(&domain)).await;
    let rotated = verify(&app, &id(&domain)).await;
    assert_eq!((rotated["status"].as_str(), rotated["dkim_rotation"].is_null()), (Some("verified"), true));
    assert_eq!(record(&rotated, "dkim")["value"], next);
}

#[tokio::test]
async fn a_domain_verified_by_another_team_is_locked_and_moves_only_by_a_claim() {
    let app = TestApp::spawn().await;
    let held = add(&app, json!({ "name": "example.test" })).await;
    publish(&app, &held);
    verify(&app, &id(&held)).await;
    let (other_team, other) = api::cli::create_team(&app.pool, "Claimant").await.unwrap();
    let as_other = |method, path: &str, body: Value| {
        let request = app.request_as(&other, method, path).json(&body);
        async move { tests::Answer::from(request.send().await.unwrap()).await }
    };

    let locked = as_other(reqwest::Method::POST, "/domains", json!({ "name": "example.test" })).await;
    locked.assert_error(409, "resource_locked");
    assert_eq!(locked.body["claimable"], true);
    as_other(reqwest::Method::POST, "/domains/claim", json!({ "name": "nobody.test" })).await.assert_error(422, "validation_error");
    assert_eq!(app.count("domains").await, 1);

    let claim = as_other(reqwest::Method::POST, "/domains/claim", json!({ "name": "example.test" })).await;
    assert_eq!(claim.status, 201, "{}", claim.body);
    let token = claim.body["record"]["value"].as_str().unwrap().to_string();
    assert!(token.starts_with("svc-domain-verification="));
    assert_eq!(claim.body["record"]["name"], "@");
    let copy = claim.body["domain_id"].as_str().unwrap().to_string();
    as_other(reqwest::Method::POST, "/domains/claim", json!({ "name": "example.test" })).await.assert_error(409, "resource_locked");

    // Not published yet.
    as_other(reqwest::Method::POST, &format!("/domains/{copy}/verify"), json!({})).await;
    let waiting = as_other(reqwest::Method::GET, &format!("/domains/{copy}/claim"), json!({})).await;
    assert_eq!((waiting.body["status"].as_str(), waiting.body["blocked_reason"].as_str()), (Some("pending"), Some("record_not_found")));

    // Published, but the holder verified moments ago.
    app.dns.zone.set_txt("example.test", &[&[&token]]);
    jobs::domains::check_claims(&app.pool, &app.checker.dns, None).await.unwrap();
    let blocked = as_other(reqwest::Method::GET, &format!("/domains/{copy}/claim"), json!({})).await;
    assert_eq!(blocked.body["blocked_reason"], "owner_recently_verified");

    // Verified long ago but sent today.
    sqlx::query("UPDATE domains SET verified_at = now() - interval '73 hours', last_sent_at = now() - interval '1 hour' WHERE team_id = $1")
        .bind(app.team_id)
        .execute(&app.pool)
        .await
        .unwrap();
    jobs::domains::check_claims(&app.pool, &app.checker.dns, None).await.unwrap();
    let blocked = as_other(reqwest::Method::GET, &format!("/domains/{copy}/claim"), json!({})).await;
    assert_eq!(blocked.body["blocked_reason"], "owner_recently_sent");

    sqlx::query("UPDATE domains SET last_sent_at = now() - interval '25 hours' WHERE team_id = $1")
        .bind(app.team_id)
        .execute(&app.pool)
        .await
        .unwrap();
    jobs::domains::check_claims(&app.pool, &app.checker.dns, None).await.unwrap();
    let done = as_other(reqwest::Method::GET, &format!("/domains/{copy}/claim"), json!({})).await;
    assert_eq!((done.body["status"].as_str(), done.body["blocked_reason"].as_str()), (Some("completed"), None));
    assert_eq!(app.get(&format!("/domains/{}", id(&held))).await.body["status"], "disabled");
    let moved = as_other(reqwest::Method::GET, &format!("/domains/{copy}"), json!({})).await;
    assert_eq!(moved.body["status"], "pending");
    assert_ne!(record(&moved.body, "dkim")["value"], record(&held, "dkim")["value"], "fresh DKIM key");
    let updates: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE type = 'domain.updated' AND team_id = $1")
        .bind(other_team)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(updates, 1);

    // The claimant verifies its own key and now holds the name.
    publish(&app, &moved.body);
    let verified = as_other(reqwest::Method::POST, &format!("/domains/{copy}/verify"), json!({})).await;
    assert_eq!(verified.body["status"], "verified");
}

#[tokio::test]
async fn a_claim_expires_after_seven_days() {
    let app = TestApp::spawn().await;
    let held = add(&app, json!({ "name": "example.test" })).await;
    publish(&app, &held);
    verify(&app, &id(&held)).await;
    let (_, other) = api::cli::create_team(&app.pool, "Claimant").await.unwrap();
    let claim = tests::Answer::from(
        app.request_as(&other, reqwest::Method::POST, "/domains/claim").json(&json!({ "name": "example.test" })).send().await.unwrap(),
    )
    .await;
    assert_eq!(claim.status, 201);
    sqlx::query("UPDATE domain_claims SET expires_at = now() - interval '1 second'").execute(&app.pool).await.unwrap();
    jobs::domains::sweep(&app.pool, &app.checker).await.unwrap();
    let status: String = sqlx::query_scalar("SELECT status FROM domain_claims").fetch_one(&app.pool).await.unwrap();
    assert_eq!(status, "expired");
    let copy: String = sqlx::query_scalar("SELECT status FROM domains WHERE id = $1::uuid")
        .bind(claim.body["domain_id"].as_str().unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(copy, "claim_expired");
    assert_eq!(events(&app, "domain.updated").await.last().unwrap()["status"], "claim_expired");
}

#[tokio::test]
async fn the_sweep_rechecks_every_domain_and_a_scheduled_run_does_it_in_a_worker() {
    let mut app = TestApp::spawn().await;
    upgrade(&app, app.team_id).await;
    let mut ids = Vec::new();
    for n in 0..5 {
        let domain = add(&app, json!({ "name": format!("d{n}.test") })).await;
        if n % 2 == 0 {
            publish(&app, &domain);
        }
        ids.push(id(&domain));
    }
    assert_eq!(jobs::domains::sweep(&app.pool, &app.checker).await.unwrap(), 5);
    assert_eq!(app.count("domains WHERE status = 'verified'").await, 3);
    assert_eq!(app.count("domains WHERE status = 'pending'").await, 2);

    // A vanished record is noticed by the scheduled sweep run in a worker.
    let first = app.get(&format!("/domains/{}", ids[0])).await.body;
    app.dns.zone.remove(record(&first, "mail_from")["fqdn"].as_str().unwrap(), RecordType::CNAME);
    app.start_workers();
    jobs::schedule::tick(&app.pool, chrono::Utc::now()).await.unwrap();
    tests::eventually(|| async { (app.count("domains WHERE status = 'drifted'").await == 1).then_some(()) }).await;
    app.shutdown().await;
}
