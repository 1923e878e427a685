//! Billing's third part (#24): add-ons held as items of the team's subscription, a closed
//! period's overage billed to Stripe once, and the spend cap bounding email overage and the
//! bill, all against the Stripe stand-in (localstripe behind the tests crate's server).

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tests::mail::Mail;
use tests::stripe::{StripeStandIn, app_with_stripe, billing_when, mail_with_stripe, post_event, subscribe};
use tests::{Answer, TestApp};

async fn subscription_id(app: &TestApp) -> String {
    sqlx::query_scalar("SELECT stripe_subscription_id FROM team_billing WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap()
}

async fn customer_id(app: &TestApp) -> String {
    sqlx::query_scalar("SELECT stripe_customer_id FROM team_billing WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap()
}

/// The subscription's items as Stripe (the stand-in) holds them: `(price, quantity)`.
async fn items(stripe: &StripeStandIn, app: &TestApp) -> Vec<(String, i64)> {
    let answer = reqwest::Client::new().get(format!("{}/v1/subscriptions/{}", stripe.base, subscription_id(app).await)).bearer_auth(tests::stripe::SECRET_KEY).send().await.unwrap();
    let object: Value = answer.json().await.unwrap();
    object["items"]["data"].as_array().unwrap().iter().map(|i| (i["plan"]["id"].as_str().unwrap().to_string(), i["quantity"].as_i64().unwrap())).collect()
}

fn addons(billing: &Value) -> Vec<(String, i64)> {
    let mut held: Vec<(String, i64)> = billing["addons"].as_array().unwrap().iter().map(|a| (a["code"].as_str().unwrap().to_string(), a["quantity"].as_i64().unwrap())).collect();
    held.sort();
    held
}

async fn storage_limit(app: &TestApp) -> Option<i64> {
    sqlx::query_scalar("SELECT inbound_storage_bytes FROM team_limits WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap()
}

#[tokio::test]
async fn an_addon_joins_the_subscription_as_an_item_of_its_own_and_leaves_it() {
    let (app, stripe) = app_with_stripe().await;
    let subscribed = subscribe(&app, "pro").await;
    assert_eq!(subscribed["storage_addon_purchase"], "add_item");
    assert_eq!(storage_limit(&app).await, Some(50 << 30), "the pro plan's 50 GB");

    let storage = app.post("/billing/addons", json!({ "addon_code": "inbox_storage_100gb" })).await;
    assert_eq!(storage.status, 200, "{}", storage.body);
    assert_eq!((addons(&storage.body), storage.body["storage_addon_purchase"].as_str()), (vec![("inbox_storage_100gb".into(), 1)], Some("held")));
    assert_eq!(storage_limit(&app).await, Some(150 << 30), "100 GB more for the Inbox");
    let again = app.post("/billing/addons", json!({ "addon_code": "inbox_storage_100gb" })).await;
    assert_eq!((again.status, addons(&again.body).len()), (200, 1));
    assert_eq!(items(&stripe, &app).await.len(), 2, "asking again for what is held adds nothing");

    let seats = app.post("/billing/addons", json!({ "addon_code": "inbox_seat", "quantity": 3 })).await;
    assert_eq!(seats.status, 200, "{}", seats.body);
    assert_eq!((seats.body["inbox_seats"]["quantity"].as_i64(), seats.body["inbox_seats"]["included"].as_i64()), (Some(3), Some(3)));
    let more = app.post("/billing/addons", json!({ "addon_code": "inbox_seat", "quantity": 5 })).await;
    assert_eq!(more.body["inbox_seats"]["quantity"], 5, "the quantity is set, not added");
    assert_eq!(items(&stripe, &app).await.iter().map(|(_, q)| *q).collect::<Vec<_>>(), [1, 1, 5]);

    // The plan item is found by its price, not by its place among the items.
    let up = app.post("/billing/plan", json!({ "plan_code": "scale" })).await;
    assert_eq!(up.status, 200, "{}", up.body);
    assert_eq!((up.body["plan"]["code"].as_str(), addons(&up.body).len()), (Some("scale"), 2));

    let removed = app.request(Method::DELETE, "/billing/addons/inbox_seat").send().await.unwrap();
    let removed = Answer::from(removed).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!((addons(&removed.body), removed.body["inbox_seats"]["quantity"].as_i64()), (vec![("inbox_storage_100gb".into(), 1)], Some(0)));
    Answer::from(app.request(Method::DELETE, "/billing/addons/inbox_seat").send().await.unwrap()).await.assert_error(404, "not_found");
    Answer::from(app.request(Method::DELETE, "/billing/addons/dedicated_ip").send().await.unwrap()).await.assert_error(404, "not_found");
    let b = billing_when(&app, |b| addons(b).len() == 1).await;
    assert_eq!(b["plan"]["code"], "scale", "the webhook's copy agrees");
}

#[tokio::test]
async fn an_addon_without_a_subscription_points_at_checkout_and_bad_input_changes_nothing() {
    let (app, stripe) = app_with_stripe().await;
    let answer = app.post("/billing/addons", json!({ "addon_code": "inbox_seat", "quantity": 2 })).await;
    answer.assert_error(422, "validation_error");
    assert_eq!(answer.body["details"]["next"], "checkout");
    let answer = Answer::from(app.request(Method::DELETE, "/billing/addons/inbox_seat").send().await.unwrap()).await;
    assert_eq!((answer.status, answer.body["details"]["next"].as_str()), (422, Some("checkout")));

    subscribe(&app, "pro").await;
    let before = items(&stripe, &app).await;
    for (body, status, name) in [
        (json!({ "addon_code": "inbox_seat", "quantity": 0 }), 400, "validation_error"),
        (json!({ "addon_code": "inbox_seat", "quantity": 101 }), 400, "validation_error"),
        (json!({ "addon_code": "inbox_storage_100gb", "quantity": 1 }), 422, "validation_error"),
        (json!({ "addon_code": "dedicated_ip" }), 422, "validation_error"),
        (json!({ "quantity": 2 }), 422, "missing_required_field"),
    ] {
        let answer = app.post("/billing/addons", body.clone()).await;
        answer.assert_error(status, name);
        assert_eq!(items(&stripe, &app).await, before, "{body}: nothing reached Stripe");
    }
    assert_eq!(addons(&app.get("/billing").await.body), vec![]);

    let person = tests::inbox::person(&app, app.team_id, "admin", "Ada").await;
    let reader = tests::inbox::token(&app, &person, app.team_id, &["billing:read"]).await;
    let answer = Answer::from(app.request_as(&reader, Method::POST, "/billing/addons").json(&json!({ "addon_code": "inbox_seat" })).send().await.unwrap()).await;
    answer.assert_error(403, "invalid_permission");
    assert_eq!(items(&stripe, &app).await, before);

    let unconfigured = TestApp::spawn().await;
    unconfigured.post("/billing/addons", json!({ "addon_code": "inbox_storage_100gb" })).await.assert_error(503, "service_unavailable");
    Answer::from(unconfigured.request(Method::DELETE, "/billing/addons/inbox_storage_100gb").send().await.unwrap()).await.assert_error(503, "service_unavailable");
}

/// Posts Stripe's renewal of the team's subscription: the next period, as
/// `customer.subscription.updated`.
async fn renew(app: &TestApp, stripe: &StripeStandIn, event_id: &str) -> Answer {
    let mut object = stripe.get(&format!("/v1/subscriptions/{}", subscription_id(app).await)).await;
    let end = object["current_period_end"].as_i64().unwrap();
    object["current_period_start"] = json!(end);
    object["current_period_end"] = json!(end + 30 * 86_400);
    post_event(app, event_id, "customer.subscription.updated", chrono::Utc::now().timestamp() + 60, object).await
}

/// The customer's invoice items not yet on an invoice: `(amount, description)`.
async fn pending_items(app: &TestApp, stripe: &StripeStandIn) -> Vec<(i64, String)> {
    let listed = stripe.get(&format!("/v1/invoiceitems?customer={}", customer_id(app).await)).await;
    let mut found: Vec<(i64, String)> =
        listed["data"].as_array().unwrap().iter().map(|i| (i["amount"].as_i64().unwrap(), i["description"].as_str().unwrap().to_string())).collect();
    found.sort();
    found
}

async fn use_this_period(app: &TestApp, emails: i32, peak_contacts: i64) {
    sqlx::query("INSERT INTO send_usage (team_id, period_kind, period_start, emails) VALUES ($1, 'day', (now() AT TIME ZONE 'UTC')::date, $2)")
        .bind(app.team_id)
        .bind(emails)
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO billable_contact_peaks (team_id, month, peak) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, $2)")
        .bind(app.team_id)
        .bind(peak_contacts)
        .execute(&app.pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_closed_periods_overage_is_billed_once_on_the_subscriptions_next_invoice() {
    let (app, stripe) = app_with_stripe().await;
    subscribe(&app, "pro").await;
    assert_eq!(app.patch("/billing", json!({ "pay_as_you_go": { "enabled": true } })).await.status, 200);
    use_this_period(&app, 52_500, 52_001).await;
    let b = app.get("/billing").await.body;
    assert_eq!(b["usage"]["estimated_contact_overage_cents"], 300);

    assert_eq!(renew(&app, &stripe, "evt_renewal").await.status, 200);
    let billed = tests::eventually(|| async {
        let found = pending_items(&app, &stripe).await;
        (found.len() == 2).then_some(found)
    })
    .await;
    assert_eq!(
        billed,
        vec![
            (270, "Email overage: 52500 emails on the pro plan".to_string()),
            (300, "Contact overage: a peak of 52001 billable contacts on the pro plan".to_string())
        ],
        "each started 1,000 past the plan: 3 x 90 cents of emails, 3 x 100 cents of contacts"
    );
    // The report is marked after Stripe took its items, in the job's next statement.
    tests::eventually(|| async {
        let status: String = sqlx::query_scalar("SELECT status FROM billing_usage_reports WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
        (status == "reported").then_some(())
    })
    .await;

    // The same renewal again, or told twice: the period is billed once.
    assert_eq!(renew(&app, &stripe, "evt_renewal").await.body["first_delivery"], false);
    assert_eq!(renew(&app, &stripe, "evt_renewal_again").await.status, 200);
    let period_start: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT period_start FROM billing_usage_reports WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    let client = app.state.stripe.clone();
    assert_eq!(jobs::billing_usage::report(&app.pool, client.as_ref(), app.team_id, period_start).await.unwrap(), "already_reported");
    // A report whose row was lost after Stripe answered (its item ids unknown) adds nothing: the
    // idempotency key names the team, the period and the meter.
    sqlx::query("UPDATE billing_usage_reports SET status = 'pending', email_item_id = NULL, contact_item_id = NULL").execute(&app.pool).await.unwrap();
    assert_eq!(jobs::billing_usage::report(&app.pool, client.as_ref(), app.team_id, period_start).await.unwrap(), "reported");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(pending_items(&app, &stripe).await.len(), 2, "billed once");
    let reports: i64 = sqlx::query_scalar("SELECT count(*) FROM billing_usage_reports WHERE team_id = $1").bind(app.team_id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(reports, 1);
}

#[tokio::test]
async fn an_ended_subscriptions_last_overage_is_invoiced_on_its_own() {
    let (app, stripe) = app_with_stripe().await;
    subscribe(&app, "pro").await;
    use_this_period(&app, 51_000, 0).await;
    let subscription = subscription_id(&app).await;
    let ended = reqwest::Client::new().delete(format!("{}/v1/subscriptions/{subscription}", stripe.base)).bearer_auth(tests::stripe::SECRET_KEY).send().await.unwrap();
    assert!(ended.status().is_success());
    billing_when(&app, |b| b["plan"]["code"] == "free").await;
    // The charge is on an invoice of its own, made of the pending items alone.
    let invoice = tests::eventually(|| async { stripe.invoices_of_items().into_iter().next() }).await;
    assert_eq!((invoice["customer"].as_str(), invoice["total"].as_i64()), (Some(customer_id(&app).await.as_str()), Some(90)), "one started 1,000 past the plan");
    assert_eq!(invoice["lines"]["data"][0]["description"], "Email overage: 51000 emails on the pro plan");
    app.wait_for_rows("billing_usage_reports WHERE status = 'reported'", 1).await;
}

async fn send(mail: &Mail) -> Answer {
    mail.app.post("/emails", Mail::message("delivered@simulator.herald.test")).await
}

#[tokio::test]
async fn a_spend_cap_stops_email_overage_where_the_cap_leaves_no_room_and_bounds_the_bill() {
    let (mail, stripe) = mail_with_stripe().await;
    let app = &mail.app;
    subscribe(app, "pro").await;
    assert_eq!(app.get("/billing").await.body["usage"]["monthly_limit"], json!(null), "overage is billed without a cap");

    let capped = app.patch("/billing", json!({ "spend_cap_cents": 2200 })).await;
    assert_eq!(capped.status, 200, "{}", capped.body);
    assert_eq!(capped.body["usage"]["monthly_limit"], 52_000, "the $20 plan and 2 x 90 cents of overage fit under $22");
    use_this_period(app, 51_999, 0).await;
    assert_eq!(send(&mail).await.status, 200);
    let over = send(&mail).await;
    over.assert_error(429, "monthly_quota_exceeded");

    // Emails written past the cap some other way are still billed only up to it.
    sqlx::query("UPDATE send_usage SET emails = 52500 WHERE team_id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    assert_eq!(renew(app, &stripe, "evt_renewal").await.status, 200);
    let billed = tests::eventually(|| async {
        let found = pending_items(app, &stripe).await;
        (!found.is_empty()).then_some(found)
    })
    .await;
    assert_eq!(billed.iter().map(|(cents, _)| *cents).collect::<Vec<_>>(), [200], "270 cents of overage, capped at the $2 the cap leaves");

    assert_eq!(app.patch("/billing", json!({ "spend_cap_cents": null })).await.body["usage"]["monthly_limit"], json!(null));
    assert_eq!(send(&mail).await.status, 200, "without the cap, overage is billed again");
}

#[tokio::test]
async fn each_sending_tier_caps_the_days_sends_whatever_the_plan_allows() {
    let mail = tests::mail::setup().await;
    let app = &mail.app;
    let team = app.get("/team").await.body;
    assert_eq!(team["sending"]["tier_name"], "verified", "a pro team whose domain verified");
    assert_eq!((team["sending"]["daily_cap"].as_i64(), team["sending"]["next_daily_cap"].as_i64()), (Some(10_000), Some(100_000)));
    assert_eq!(app.get("/billing").await.body["usage"]["daily_limit"], 10_000, "the pro plan has no daily cap; the tier has");

    sqlx::query("INSERT INTO send_usage (team_id, period_kind, period_start, emails) VALUES ($1, 'day', (now() AT TIME ZONE 'UTC')::date, 9999)")
        .bind(app.team_id)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(send(&mail).await.status, 200);
    send(&mail).await.assert_error(429, "daily_quota_exceeded");

    // An operator's review lifts the tier's cap: the plan's (none) applies.
    let mut conn = app.pool.acquire().await.unwrap();
    assert_eq!(schema::store::stripe::trust(&mut conn, app.team_id, true).await.unwrap(), Some(3));
    let team = app.get("/team").await.body;
    assert_eq!((team["sending"]["daily_cap"].clone(), team["sending"]["next_daily_cap"].clone()), (json!(null), json!(null)));
    assert_eq!(app.get("/billing").await.body["usage"]["daily_limit"], json!(null));
    assert_eq!(send(&mail).await.status, 200);

    // A new team is held to its tier's 100 a day even on a bigger plan.
    let fresh = TestApp::spawn().await;
    sqlx::query("UPDATE teams SET plan_code = 'scale' WHERE id = $1").bind(fresh.team_id).execute(&fresh.pool).await.unwrap();
    let team = fresh.get("/team").await.body;
    assert_eq!((team["sending"]["tier_name"].as_str(), team["sending"]["daily_cap"].as_i64()), (Some("new"), Some(100)));
    assert_eq!(fresh.get("/billing").await.body["usage"]["daily_limit"], 100);
}
