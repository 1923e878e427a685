//! Billing changes (#24): plan changes through Stripe (an upgrade at once with proration, a
//! downgrade at the period's end, refused over the target's limits), pay-as-you-go with a spend
//! cap, and limit requests an operator reviews.

use reqwest::Method;
use serde_json::json;
use tests::stripe::{app_with_stripe, billing_when, post_event, subscribe};
use tests::{Answer, TestApp};

async fn limit(app: &TestApp, column: &str) -> Option<i32> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT {column} FROM team_limits WHERE team_id = $1")))
        .bind(app.team_id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_upgrade_applies_at_once_with_proration_and_a_downgrade_waits_for_the_periods_end() {
    let (app, stripe) = app_with_stripe().await;
    let subscribed = subscribe(&app, "pro").await;
    let period_end = subscribed["subscription"]["current_period_end"].as_str().unwrap().to_string();

    let up = app.post("/billing/plan", json!({ "plan_code": "scale" })).await;
    assert_eq!(up.status, 200, "{}", up.body);
    assert_eq!((up.body["plan"]["code"].as_str(), up.body["pending_change"].clone()), (Some("scale"), json!(null)), "at once");
    assert_eq!(stripe.prorations(), ["create_prorations"]);

    let down = app.post("/billing/plan", json!({ "plan_code": "pro" })).await;
    assert_eq!(down.status, 200, "{}", down.body);
    assert_eq!(down.body["plan"]["code"], "scale", "the paid period keeps its plan");
    assert_eq!(down.body["pending_change"]["plan_code"], "pro");
    let effective = chrono::DateTime::parse_from_rfc3339(down.body["pending_change"]["effective_at"].as_str().unwrap()).unwrap();
    assert_eq!(effective, chrono::DateTime::parse_from_rfc3339(&period_end).unwrap());
    let kept = app.post("/billing/plan", json!({ "plan_code": "scale" })).await;
    assert_eq!((kept.body["plan"]["code"].as_str(), kept.body["pending_change"].clone()), (Some("scale"), json!(null)), "asking for the current plan cancels the change");

    app.post("/billing/plan", json!({ "plan_code": "pro" })).await;
    sqlx::query("UPDATE team_billing SET pending_effective_at = now() - interval '1 second' WHERE team_id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    let client = app.state.stripe.clone();
    assert_eq!(jobs::billing::change_plan_now(&app.pool, client.as_ref(), app.team_id).await.unwrap(), "applied");
    let b = billing_when(&app, |b| b["plan"]["code"] == "pro").await;
    assert_eq!(b["pending_change"], json!(null));
    assert_eq!(stripe.prorations().last().map(String::as_str), Some("none"), "the period that ends was paid at the old price");
    assert_eq!(jobs::billing::change_plan_now(&app.pool, client.as_ref(), app.team_id).await.unwrap(), "not_due", "once");

    let to_free = app.post("/billing/plan", json!({ "plan_code": "free" })).await;
    assert_eq!(to_free.status, 200, "{}", to_free.body);
    assert_eq!((to_free.body["plan"]["code"].as_str(), to_free.body["pending_change"]["plan_code"].as_str()), (Some("pro"), Some("free")));
    let subscription_id: String = sqlx::query_scalar("SELECT stripe_subscription_id FROM team_billing WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(stripe.get(&format!("/v1/subscriptions/{subscription_id}")).await["cancel_at_period_end"], true, "Stripe ends it at the period's end");
}

#[tokio::test]
async fn a_downgrade_is_refused_while_the_teams_usage_is_over_the_target_plans_limits() {
    let (app, _stripe) = app_with_stripe().await;
    subscribe(&app, "pro").await;
    sqlx::query("INSERT INTO contacts (id, team_id, email) SELECT herald_uuid_v7(), $1, 'c' || n || '@example.com' FROM generate_series(1, 1001) n")
        .bind(app.team_id)
        .execute(&app.pool)
        .await
        .unwrap();
    let refused = app.post("/billing/plan", json!({ "plan_code": "free" })).await;
    refused.assert_error(422, "validation_error");
    let named: Vec<&str> = refused.body["errors"].as_array().unwrap().iter().map(|e| e["message"].as_str().unwrap()).collect();
    assert_eq!(named, ["contacts: 1001 in use, the free plan allows 1000"]);
    let pending: Option<String> = sqlx::query_scalar("SELECT pending_plan_code FROM team_billing WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(pending, None, "nothing changed");
}

#[tokio::test]
async fn without_a_subscription_plan_changes_and_pay_as_you_go_point_at_checkout() {
    let (app, _stripe) = app_with_stripe().await;
    let refused = app.post("/billing/plan", json!({ "plan_code": "pro" })).await;
    refused.assert_error(422, "validation_error");
    assert_eq!(refused.body["details"]["next"], "checkout");
    let same = app.post("/billing/plan", json!({ "plan_code": "free" })).await;
    assert_eq!((same.status, same.body["plan"]["code"].as_str()), (200, Some("free")), "the plan it has");
    app.post("/billing/plan", json!({ "plan_code": "enterprise" })).await.assert_error(422, "validation_error");
    app.post("/billing/plan", json!({})).await.assert_error(422, "missing_required_field");
    let payg = app.request(Method::PATCH, "/billing").json(&json!({ "pay_as_you_go": { "enabled": true } })).send().await.unwrap();
    let payg = Answer::from(payg).await;
    payg.assert_error(422, "validation_error");
    assert_eq!(payg.body["details"]["next"], "checkout");
    assert_eq!(app.count("team_billing").await, 0, "nothing written");
}

#[tokio::test]
async fn pay_as_you_go_bills_contacts_past_the_plan_up_to_the_spend_cap() {
    let (app, _stripe) = app_with_stripe().await;
    subscribe(&app, "pro").await;
    assert_eq!(limit(&app, "contact_limit").await, Some(50_000), "the plan's own limit");
    let patch = |body: serde_json::Value| {
        let request = app.request(Method::PATCH, "/billing").json(&body);
        async move { Answer::from(request.send().await.unwrap()).await }
    };
    let on = patch(json!({ "pay_as_you_go": { "enabled": true } })).await;
    assert_eq!((on.status, on.body["pay_as_you_go"]["enabled"].as_bool()), (200, Some(true)), "{}", on.body);
    assert_eq!(limit(&app, "contact_limit").await, None, "past the plan is billed, not refused");
    patch(json!({ "spend_cap_cents": 1999 })).await.assert_error(422, "validation_error");
    patch(json!({ "spend_cap_cents": -1 })).await.assert_error(400, "validation_error");
    let capped = patch(json!({ "spend_cap_cents": 5000 })).await;
    assert_eq!((capped.status, capped.body["pay_as_you_go"]["spend_cap_cents"].as_i64()), (200, Some(5000)), "{}", capped.body);
    assert_eq!(limit(&app, "contact_limit").await, Some(80_000), "$30 past the $20 plan at $1 per 1,000");
    let cleared = patch(json!({ "spend_cap_cents": null })).await;
    assert_eq!(cleared.body["pay_as_you_go"]["spend_cap_cents"], json!(null));
    patch(json!({ "pay_as_you_go": { "enabled": false } })).await;
    assert_eq!(limit(&app, "contact_limit").await, Some(50_000));
}

#[tokio::test]
async fn a_limit_request_reviewed_by_an_operator_becomes_the_teams_own_limit() {
    let (app, _stripe) = app_with_stripe().await;
    let filed = app.post("/billing/limit-requests", json!({ "limit": "domains", "requested": 3, "reason": "Three brands send from here" })).await;
    assert_eq!(filed.status, 201, "{}", filed.body);
    assert_eq!((filed.body["status"].as_str(), filed.body["current"].as_i64(), filed.body["requested"].as_i64()), (Some("pending"), Some(1), Some(3)));
    let cases = [
        (json!({ "limit": "domains", "requested": 5, "reason": "again" }), 422, "validation_error"),
        (json!({ "limit": "webhook_endpoints", "requested": 1, "reason": "not above" }), 422, "validation_error"),
        (json!({ "limit": "seats", "requested": 5, "reason": "x" }), 422, "validation_error"),
        (json!({ "limit": "contacts", "requested": 0, "reason": "x" }), 400, "validation_error"),
        (json!({ "limit": "contacts", "requested": 5000 }), 422, "missing_required_field"),
        (json!({ "limit": "contacts", "requested": 5000, "reason": "two\nlines" }), 400, "validation_error"),
    ];
    for (body, status, name) in cases {
        let answer = app.post("/billing/limit-requests", body.clone()).await;
        assert_eq!((answer.status, answer.body["name"].as_str()), (status, Some(name)), "{body} -> {}", answer.body);
    }
    assert_eq!(app.count("limit_requests").await, 1, "refusals write nothing");

    let id = filed.body["id"].as_str().unwrap();
    let output = std::process::Command::new(tests::herald_binary())
        .args(["team", "review", "--request", id, "--decision", "approve", "--note", "Welcome"])
        .env("DATABASE_URL", &app.database_url)
        .env("HERALD_LOG", "error")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((printed["status"].as_str(), printed["review_note"].as_str()), (Some("approved"), Some("Welcome")));
    assert_eq!(limit(&app, "domain_limit").await, Some(3));
    let listed = app.get("/billing/limit-requests").await;
    assert_eq!(listed.body["data"][0]["status"], "approved");
    let again = std::process::Command::new(tests::herald_binary())
        .args(["team", "review", "--request", id, "--decision", "decline"])
        .env("DATABASE_URL", &app.database_url)
        .env("HERALD_LOG", "error")
        .output()
        .unwrap();
    assert!(!again.status.success(), "a decided request is decided once");
}

#[tokio::test]
async fn billing_writes_refuse_oauth_tokens_even_with_billing_read() {
    let (app, _stripe) = app_with_stripe().await;
    let person = tests::inbox::person(&app, app.team_id, "admin", "Ada").await;
    let reader = tests::inbox::token(&app, &person, app.team_id, &["billing:read"]).await;
    for (method, path, body) in [
        (Method::POST, "/billing/plan", json!({ "plan_code": "pro" })),
        (Method::PATCH, "/billing", json!({ "pay_as_you_go": { "enabled": true } })),
        (Method::POST, "/billing/limit-requests", json!({ "limit": "domains", "requested": 3, "reason": "x" })),
        (Method::POST, "/billing/portal", json!({ "return_url": "https://app.example.com" })),
    ] {
        let answer = Answer::from(app.request_as(&reader, method, path).json(&body).send().await.unwrap()).await;
        answer.assert_error(403, "invalid_permission");
    }
    assert_eq!(app.count("limit_requests").await, 0);
}

#[tokio::test]
async fn the_sending_tier_rises_with_a_card_on_file_and_falls_back_on_a_failed_payment_each_move_logged() {
    let (app, _stripe) = app_with_stripe().await;
    // A domain was verified earlier: `verified` is kept once reached.
    sqlx::query("UPDATE teams SET sending_tier = 1 WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    subscribe(&app, "pro").await;
    let b = billing_when(&app, |b| b["payment_method"]["present"] == true).await;
    assert_eq!((b["payment_method"]["brand"].as_str(), b["payment_method"]["last4"].as_str()), (Some("visa"), Some("4242")));
    let sending = tests::eventually(|| async {
        let team = app.get("/team").await.body;
        (team["sending"]["tier"] == 2).then_some(team["sending"].clone())
    })
    .await;
    assert_eq!((sending["tier_name"].as_str(), sending["next_unlock"].as_str()), (Some("paid"), Some("operator_review")));

    let customer: String = sqlx::query_scalar("SELECT stripe_customer_id FROM team_billing WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    let now = chrono::Utc::now().timestamp() + 5;
    let failed = post_event(&app, "evt_failed", "invoice.payment_failed", now, json!({ "id": "in_x", "object": "invoice", "customer": customer, "status": "open" })).await;
    assert_eq!(failed.status, 200, "{}", failed.body);
    billing_when(&app, |b| b["payment_state"] == "past_due").await;
    assert_eq!(app.get("/team").await.body["sending"]["tier_name"], "verified", "back a tier until payments are in order");
    let moves: Vec<(i16, i16, String)> = sqlx::query_as("SELECT from_tier, to_tier, reason FROM sending_tier_moves WHERE team_id = $1 ORDER BY id")
        .bind(app.team_id)
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(moves, [(1, 2, "a payment method was added".to_string()), (2, 1, "a payment failed".to_string())]);
}

#[tokio::test]
async fn an_operator_trusts_a_team_and_takes_the_trust_back_each_move_logged() {
    let app = TestApp::spawn().await;
    let run = |revoke: bool| {
        let mut command = std::process::Command::new(tests::herald_binary());
        command.args(["team", "trust", "--team", &app.team_id.to_string()]).env("DATABASE_URL", &app.database_url).env("HERALD_LOG", "error");
        if revoke {
            command.arg("--revoke");
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()["tier"].as_i64()
    };
    assert_eq!(run(false), Some(3));
    assert_eq!(app.get("/team").await.body["sending"]["tier_name"], "trusted");
    assert_eq!(run(true), Some(0), "no verified domain: back to new");
    let moves: Vec<(i16, i16, String)> = sqlx::query_as("SELECT from_tier, to_tier, reason FROM sending_tier_moves WHERE team_id = $1 ORDER BY id")
        .bind(app.team_id)
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(moves, [(0, 3, "an operator reviewed the team".to_string()), (3, 0, "an operator took the trust back".to_string())]);
}
