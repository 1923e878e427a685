//! Billing (#24, first part): `GET /billing` from Herald's own counters: the plan and its
//! prices, the subscription as last reported, the period's sends and billable contacts.

use chrono::{Datelike, TimeZone, Utc};
use reqwest::Method;
use serde_json::json;
use tests::mail::{self, Mail};

#[tokio::test]
async fn a_new_team_sees_the_free_plan_its_sends_this_month_and_no_subscription() {
    let mail = mail::setup().await;
    let app = &mail.app;
    sqlx::query("UPDATE teams SET plan_code = 'free' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    for _ in 0..3 {
        mail.send(Mail::message("delivered@simulator.herald.test")).await;
    }
    let billing = app.get("/billing").await;
    assert_eq!(billing.status, 200, "{}", billing.body);
    let b = &billing.body;
    assert_eq!((b["object"].as_str(), b["plan"]["code"].as_str(), b["effective_plan_code"].as_str()), (Some("billing"), Some("free"), Some("free")));
    assert_eq!((b["plan"]["monthly_price_cents"].as_i64(), b["plan"]["included_emails"].as_i64()), (Some(0), Some(3000)));
    assert_eq!(b["plan"]["overage_per_1000_cents"], json!(null), "the free plan stops at its limit");
    let usage = &b["usage"];
    assert_eq!((usage["emails"].as_i64(), usage["emails_today"].as_i64()), (Some(3), Some(3)), "{usage}");
    assert_eq!((usage["daily_limit"].as_i64(), usage["monthly_limit"].as_i64(), usage["contacts_included"].as_i64()), (Some(100), Some(3000), Some(1000)));
    let now = Utc::now();
    let at = |field: &str| usage[field].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).map(|t| t.with_timezone(&Utc));
    assert_eq!(at("period_start"), Utc.with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0).single(), "{usage}");
    assert_eq!(at("day_start"), now.date_naive().and_hms_opt(0, 0, 0).map(|t| t.and_utc()), "{usage}");
    assert!(at("period_end") > at("period_start"), "{usage}");
    assert_eq!((b["subscription"].clone(), b["checkout_available"].as_bool(), b["paid_plan"].as_bool()), (json!(null), Some(true), Some(false)));
    assert_eq!((b["payment_method"]["present"].as_bool(), b["payment_state"].as_str()), (Some(false), Some("ok")));
    assert_eq!(b["storage_addon_purchase"], "unavailable", "no payment provider is configured");
    assert_eq!((b["inbox_seats"]["code"].as_str(), b["inbox_seats"]["included"].as_i64()), (Some("inbox_seat"), Some(1)));
}

#[tokio::test]
async fn a_subscribed_team_is_billed_for_each_started_thousand_of_its_peak_past_the_plan_with_pay_as_you_go() {
    let mail = mail::setup().await;
    let app = &mail.app;
    sqlx::query("UPDATE teams SET plan_code = 'pro' WHERE id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    sqlx::query("UPDATE plans SET contact_limit = 1000 WHERE code = 'pro'").execute(&app.pool).await.unwrap();
    sqlx::query("INSERT INTO billable_contact_peaks (team_id, month, peak) VALUES ($1, date_trunc('month', now())::date, 2500)").bind(app.team_id).execute(&app.pool).await.unwrap();
    sqlx::query(
        "INSERT INTO team_billing (team_id, subscription_status, current_period_start, current_period_end, invoicing, pay_as_you_go,
             payment_method_brand, payment_method_last4)
         VALUES ($1, 'active', date_trunc('day', now()) - interval '3 days', date_trunc('day', now()) + interval '27 days', 'automatic', false, 'visa', '4242')",
    )
    .bind(app.team_id)
    .execute(&app.pool)
    .await
    .unwrap();
    let b = app.get("/billing").await.body;
    assert_eq!((b["plan"]["code"].as_str(), b["plan"]["monthly_price_cents"].as_i64(), b["plan"]["overage_per_1000_cents"].as_i64()), (Some("pro"), Some(2000), Some(90)));
    assert_eq!((b["subscription"]["status"].as_str(), b["checkout_available"].as_bool(), b["paid_plan"].as_bool()), (Some("active"), Some(false), Some(true)));
    assert_eq!(b["usage"]["period_start"], b["subscription"]["current_period_start"], "usage runs over the subscription's period");
    assert_eq!((b["payment_method"]["present"].as_bool(), b["payment_method"]["brand"].as_str(), b["payment_method"]["last4"].as_str()), (Some(true), Some("visa"), Some("4242")));
    assert_eq!((b["usage"]["peak_billable_contacts"].as_i64(), b["usage"]["estimated_contact_overage_cents"].as_i64()), (Some(2500), Some(0)), "off: nothing billed");

    sqlx::query("UPDATE team_billing SET pay_as_you_go = true WHERE team_id = $1").bind(app.team_id).execute(&app.pool).await.unwrap();
    let b = app.get("/billing").await.body;
    assert_eq!(b["pay_as_you_go"]["enabled"], true);
    assert_eq!(b["usage"]["estimated_contact_overage_cents"].as_i64(), Some(200), "1,500 past the plan: two started thousands at 100 cents");
}

#[tokio::test]
async fn billing_reads_take_a_full_access_key_or_a_token_with_billing_read() {
    let mail = mail::setup().await;
    let app = &mail.app;
    let (_, sending) = app.create_key(json!({ "name": "sender", "permission": "sending_access" })).await;
    tests::Answer::from(app.request_as(&sending, Method::GET, "/billing").send().await.unwrap()).await.assert_error(401, "restricted_api_key");
    let person = tests::inbox::person(app, app.team_id, "admin", "Ada").await;
    let reader = tests::inbox::token(app, &person, app.team_id, &["billing:read"]).await;
    let answer = tests::Answer::from(app.request_as(&reader, Method::GET, "/billing").send().await.unwrap()).await;
    assert_eq!((answer.status, answer.body["object"].as_str()), (200, Some("billing")), "{}", answer.body);
    let other = tests::inbox::token(app, &person, app.team_id, &["team:read"]).await;
    tests::Answer::from(app.request_as(&other, Method::GET, "/billing").send().await.unwrap()).await.assert_error(403, "invalid_permission");
}
