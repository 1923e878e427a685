//! Billing through Stripe (#24), against localstripe and the stand-in in front of it: hosted
//! checkout and portal, prices found or created by lookup key, Stripe's signed webhooks applied
//! once and only forwards, invoices, and a clear 503 whenever Stripe is missing or failing.

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tests::stripe::{Failure, StripeStandIn, WEBHOOK_SECRET, app_with_stripe, billing_when, pay};
use tests::{Answer, TestApp, eventually};

async fn setup() -> (TestApp, StripeStandIn) {
    app_with_stripe().await
}

fn checkout(plan: &str) -> Value {
    json!({ "plan_code": plan, "return_url": "https://app.example.com/settings/billing?tab=plan" })
}

#[tokio::test]
async fn a_checkout_opens_a_hosted_page_whose_payment_moves_the_team_to_its_plan_through_signed_webhooks() {
    let (app, stripe) = setup().await;
    let before = app.get("/billing").await.body;
    assert_eq!((before["storage_addon_purchase"].as_str(), before["checkout_available"].as_bool()), (Some("checkout"), Some(true)));

    let opened = app.post("/billing/checkout", checkout("pro")).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    assert_eq!(opened.body["object"], "checkout_session");
    let url = opened.body["url"].as_str().unwrap().to_string();
    assert!(url.starts_with(&stripe.base), "{url}");
    let expires = chrono::DateTime::parse_from_rfc3339(opened.body["expires_at"].as_str().unwrap()).unwrap();
    assert!(expires > chrono::Utc::now(), "{expires}");
    let prices = stripe.prices();
    assert_eq!(prices.len(), 1, "the price was created once, by its lookup key");
    assert_eq!((prices[0]["lookup_key"].as_str(), prices[0]["unit_amount"].as_i64()), (Some("herald_pro_monthly"), Some(2000)));
    let customer: String = sqlx::query_scalar("SELECT stripe_customer_id FROM team_billing WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(stripe.get(&format!("/v1/customers/{customer}")).await["metadata"]["team_id"], app.team_id.to_string());

    let again = app.post("/billing/checkout", checkout("pro")).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(stripe.prices().len(), 1, "a second checkout finds the kept price");
    let customers = stripe.get("/v1/customers").await;
    assert_eq!(customers["data"].as_array().unwrap().len(), 1, "and the same customer");

    let paid = pay(&url, "4242424242424242").await;
    assert_eq!(paid.status(), 303);
    let back = paid.headers()["location"].to_str().unwrap().to_string();
    assert_eq!(back, "https://app.example.com/settings/billing?tab=plan&checkout=success");

    let b = billing_when(&app, |b| b["plan"]["code"] == "pro" && b["subscription"]["status"] == "active").await;
    assert_eq!((b["paid_plan"].as_bool(), b["checkout_available"].as_bool(), b["storage_addon_purchase"].as_str()), (Some(true), Some(false), Some("add_item")));
    assert!(b["subscription"]["current_period_end"].is_string(), "{b}");
    assert_eq!(b["subscription"]["invoicing"], "automatic");
    let team_plan: String = sqlx::query_scalar("SELECT plan_code FROM teams WHERE id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(team_plan, "pro", "the plan's limits apply at once");

    let invoices = app.get("/billing/invoices").await;
    assert_eq!(invoices.status, 200, "{}", invoices.body);
    let list = invoices.body["data"].as_array().unwrap();
    assert!(!list.is_empty(), "the subscription's first invoice: {}", invoices.body);
    assert_eq!((list[0]["total_cents"].as_i64(), list[0]["currency"].as_str()), (Some(2000), Some("usd")));

    // A second subscription is never started: the plan changes, and add-ons join, the one held.
    for (body, route) in [(checkout("scale"), "/billing/plan"), (json!({ "addon_code": "inbox_seat", "return_url": "https://app.example.com" }), "/billing/addons")] {
        let refused = app.post("/billing/checkout", body).await;
        refused.assert_error(422, "validation_error");
        assert!(refused.body["message"].as_str().unwrap().contains(route), "{}", refused.body);
    }

    let portal = app.post("/billing/portal", json!({ "return_url": "https://app.example.com/settings/billing" })).await;
    assert_eq!(portal.status, 200, "{}", portal.body);
    assert_eq!(portal.body["object"], "billing_portal_session");
    let page = reqwest::get(portal.body["url"].as_str().unwrap()).await.unwrap();
    assert_eq!(page.status(), 200);
}

#[tokio::test]
async fn stripe_events_are_applied_once_by_id_and_never_move_the_subscription_backwards() {
    let (app, _stripe) = setup().await;
    sqlx::query("INSERT INTO team_billing (team_id, stripe_customer_id) VALUES ($1, 'cus_known')").bind(app.team_id).execute(&app.pool).await.unwrap();
    let send = |id: &str, kind: &str, created: i64, object: Value| {
        let body = json!({ "id": id, "object": "event", "type": kind, "created": created, "data": { "object": object } }).to_string();
        let signature = jobs::stripe::sign(WEBHOOK_SECRET, body.as_bytes(), chrono::Utc::now().timestamp());
        let request = app.request(Method::POST, "/billing/stripe/webhook").header("Stripe-Signature", signature).header("content-type", "application/json").body(body);
        async move { Answer::from(request.send().await.unwrap()).await }
    };
    let subscription = |status: &str| json!({ "id": "sub_1", "object": "subscription", "customer": "cus_known", "status": status, "items": { "data": [] } });
    let now = chrono::Utc::now().timestamp();
    let first = send("evt_new", "customer.subscription.updated", now, subscription("past_due")).await;
    assert_eq!((first.status, first.body["first_delivery"].as_bool()), (200, Some(true)), "{}", first.body);
    let replay = send("evt_new", "customer.subscription.updated", now, subscription("past_due")).await;
    assert_eq!((replay.status, replay.body["first_delivery"].as_bool()), (200, Some(false)));
    billing_when(&app, |b| b["subscription"]["status"] == "past_due").await;
    let older = send("evt_old", "customer.subscription.updated", now - 60, subscription("active")).await;
    assert_eq!(older.status, 200);
    let outcome = eventually(|| async {
        sqlx::query_scalar::<_, Option<String>>("SELECT outcome FROM stripe_events WHERE id = 'evt_old'").fetch_one(&app.pool).await.unwrap()
    })
    .await;
    assert_eq!(outcome, "stale");
    assert_eq!(app.get("/billing").await.body["subscription"]["status"], "past_due", "an older event changes nothing");
    assert_eq!(app.count("stripe_events").await, 2, "each event id kept once");
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM apalis.jobs WHERE job_type = 'billing'").fetch_one(&app.pool).await.unwrap();
    assert_eq!(jobs, 2, "one job per event id, none for the redelivery");

    let failed = send("evt_fail", "invoice.payment_failed", now, json!({ "id": "in_1", "object": "invoice", "customer": "cus_known", "status": "open" })).await;
    assert_eq!(failed.status, 200);
    billing_when(&app, |b| b["payment_state"] == "past_due" && b["subscription"]["latest_invoice_status"] == "open").await;
    let paid = send("evt_paid", "invoice.paid", now + 1, json!({ "id": "in_1", "object": "invoice", "customer": "cus_known", "status": "paid" })).await;
    assert_eq!(paid.status, 200);
    billing_when(&app, |b| b["payment_state"] == "ok").await;

    let deleted = send("evt_end", "customer.subscription.deleted", now + 2, subscription("canceled")).await;
    assert_eq!(deleted.status, 200);
    let b = billing_when(&app, |b| b["subscription"]["status"] == "canceled").await;
    assert_eq!((b["plan"]["code"].as_str(), b["checkout_available"].as_bool()), (Some("free"), Some(true)));
}

#[tokio::test]
async fn a_webhook_with_a_bad_or_stale_signature_is_refused_and_changes_nothing() {
    let (app, _stripe) = setup().await;
    let body = json!({ "id": "evt_forged", "object": "event", "type": "customer.subscription.deleted", "created": 1, "data": { "object": {} } }).to_string();
    let now = chrono::Utc::now().timestamp();
    for signature in [
        jobs::stripe::sign("whsec_wrong", body.as_bytes(), now),
        jobs::stripe::sign(WEBHOOK_SECRET, body.as_bytes(), now - 301),
        format!("t={now},v1=zz"),
        String::new(),
    ] {
        let request = app.request(Method::POST, "/billing/stripe/webhook").header("Stripe-Signature", signature).body(body.clone());
        Answer::from(request.send().await.unwrap()).await.assert_error(400, "validation_error");
    }
    let tampered = jobs::stripe::sign(WEBHOOK_SECRET, body.as_bytes(), now);
    let request = app.request(Method::POST, "/billing/stripe/webhook").header("Stripe-Signature", tampered).body(body.replace("forged", "forgeD"));
    Answer::from(request.send().await.unwrap()).await.assert_error(400, "validation_error");
    assert_eq!(app.count("stripe_events").await, 0);
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM apalis.jobs WHERE job_type = 'billing'").fetch_one(&app.pool).await.unwrap();
    assert_eq!(jobs, 0);
}

#[tokio::test]
async fn bad_checkout_input_is_refused_before_stripe_is_called() {
    let (app, stripe) = setup().await;
    let url = "https://app.example.com/billing";
    let cases = [
        (json!({ "plan_code": "pro", "return_url": "http://app.example.com/billing" }), 422, "validation_error"),
        (json!({ "plan_code": "pro", "return_url": "/billing" }), 422, "validation_error"),
        (json!({ "return_url": url }), 422, "missing_required_field"),
        (json!({ "plan_code": "pro", "addon_code": "inbox_seat", "return_url": url }), 422, "validation_error"),
        (json!({ "addon_code": "inbox_seat", "quantity": 0, "return_url": url }), 400, "validation_error"),
        (json!({ "addon_code": "inbox_seat", "quantity": 101, "return_url": url }), 400, "validation_error"),
        (json!({ "addon_code": "inbox_storage_100gb", "quantity": 2, "return_url": url }), 422, "validation_error"),
        (json!({ "plan_code": "pro", "quantity": 2, "return_url": url }), 422, "validation_error"),
        (json!({ "plan_code": "enterprise", "return_url": url }), 422, "validation_error"),
        (json!({ "addon_code": "dedicated_ip", "return_url": url }), 422, "validation_error"),
        (json!({ "plan_code": "pro", "return_url": url, "return_to": "elsewhere" }), 422, "validation_error"),
    ];
    for (body, status, name) in cases {
        let answer = app.post("/billing/checkout", body.clone()).await;
        assert_eq!((answer.status, answer.body["name"].as_str()), (status, Some(name)), "{body} -> {}", answer.body);
    }
    app.post("/billing/portal", json!({ "return_url": "ftp://x.example.com" })).await.assert_error(422, "validation_error");
    assert_eq!(stripe.get("/v1/customers").await["data"].as_array().unwrap().len(), 0, "Stripe was never called");
    assert_eq!(app.count("team_billing").await, 0);

    let seats = app.post("/billing/checkout", json!({ "addon_code": "inbox_seat", "quantity": 3, "return_url": url })).await;
    assert_eq!(seats.status, 200, "{}", seats.body);
}

#[tokio::test]
async fn stripe_failing_or_timing_out_during_checkout_is_a_clear_503_and_no_subscription() {
    let (app, stripe) = setup().await;
    for failure in [Failure::ServerError, Failure::Hang] {
        stripe.fail_checkout(Some(failure));
        let started = std::time::Instant::now();
        let answer = app.post("/billing/checkout", checkout("scale")).await;
        answer.assert_error(503, "service_unavailable");
        assert!(started.elapsed() < Duration::from_secs(10), "{failure:?}: bounded by the client's timeout");
    }
    let status: Option<String> = sqlx::query_scalar("SELECT subscription_status FROM team_billing WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(status, None, "no subscription recorded");
    stripe.fail_checkout(None);
    assert_eq!(app.post("/billing/checkout", checkout("scale")).await.status, 200, "works again once Stripe does");
}

#[tokio::test]
async fn without_a_stripe_key_billing_writes_are_503_and_reads_still_answer() {
    let app = TestApp::spawn().await;
    app.post("/billing/checkout", checkout("pro")).await.assert_error(503, "service_unavailable");
    app.post("/billing/portal", json!({ "return_url": "https://app.example.com" })).await.assert_error(503, "service_unavailable");
    let b = app.get("/billing").await;
    assert_eq!((b.status, b.body["plan"]["code"].as_str(), b.body["storage_addon_purchase"].as_str()), (200, Some("free"), Some("unavailable")));
    let invoices = app.get("/billing/invoices").await;
    assert_eq!((invoices.status, invoices.body["data"].clone()), (200, json!([])));
    let request = app.request(Method::POST, "/billing/stripe/webhook").header("Stripe-Signature", "t=1,v1=00").body("{}");
    Answer::from(request.send().await.unwrap()).await.assert_error(503, "service_unavailable");
    assert_eq!(app.count("team_billing").await, 0);
}

#[tokio::test]
async fn a_billing_read_token_cannot_open_a_checkout() {
    let (app, stripe) = setup().await;
    let person = tests::inbox::person(&app, app.team_id, "admin", "Ada").await;
    let reader = tests::inbox::token(&app, &person, app.team_id, &["billing:read"]).await;
    let answer = Answer::from(app.request_as(&reader, Method::POST, "/billing/checkout").json(&checkout("pro")).send().await.unwrap()).await;
    answer.assert_error(403, "invalid_permission");
    let listed = Answer::from(app.request_as(&reader, Method::GET, "/billing/invoices").send().await.unwrap()).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(stripe.get("/v1/customers").await["data"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn the_checkout_and_portal_urls_open_their_pages_in_a_browser() {
    let (app, _stripe) = setup().await;
    let checkout_url = app.post("/billing/checkout", checkout("scale")).await.body["url"].as_str().unwrap().to_string();
    let portal_url = app.post("/billing/portal", json!({ "return_url": "https://app.example.com/billing" })).await.body["url"].as_str().unwrap().to_string();
    let mut browser = tests::browser::Browser::launch().await.unwrap().expect("chromium is installed (scripts/test installs it)");
    browser.goto(&checkout_url).await.unwrap();
    let text = browser.text().await.unwrap();
    assert!(text.contains("Subscribe") && text.contains("price_"), "{text}");
    assert_eq!(browser.eval("document.querySelector('form button') !== null").await.unwrap(), json!(true));
    browser.goto(&portal_url).await.unwrap();
    let text = browser.text().await.unwrap();
    assert!(text.contains("Manage billing") && text.contains("bps_"), "{text}");
}
