//! `GET /emails/metrics` from the counts kept per hour (`schema::store::email_metrics`): the same
//! answer before and after a refresh, a late event on an old email counted once, partial hours at
//! the window's ends counted exactly, and a watermark that never runs ahead of the clock.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use serde_json::{Value, json};
use sqlx::PgPool;
use tests::TestApp;
use uuid::Uuid;

/// An id minted at `at`.
fn id_at(at: DateTime<Utc>) -> Uuid {
    Uuid::new_v7(uuid::Timestamp::from_unix(uuid::NoContext, at.timestamp() as u64, at.timestamp_subsec_nanos()))
}

/// An email accepted at `at`, with an event of each of `types` a minute later.
async fn email(pool: &PgPool, team_id: Uuid, at: DateTime<Utc>, types: &[&str]) -> Uuid {
    let id = id_at(at);
    sqlx::query(
        "INSERT INTO emails (id, team_id, from_header, from_email, subject, html, message_id, last_event, size_bytes, created_at, updated_at)
         VALUES ($1, $2, 'Shop <news@shop.test>', 'news@shop.test', 'Receipt', '<p>Thanks</p>', $1 || '@shop.test', 'sent', 300, $3, $3)",
    )
    .bind(id)
    .bind(team_id)
    .bind(at)
    .execute(pool)
    .await
    .unwrap();
    for kind in types {
        event(pool, team_id, id, kind, at + TimeDelta::minutes(1)).await;
    }
    id
}

async fn event(pool: &PgPool, team_id: Uuid, email_id: Uuid, kind: &str, at: DateTime<Utc>) {
    sqlx::query("INSERT INTO events (id, team_id, email_id, type, data, created_at) VALUES ($1, $2, $3, $4, '{}', $5)")
        .bind(id_at(at))
        .bind(team_id)
        .bind(email_id)
        .bind(format!("email.{kind}"))
        .bind(at)
        .execute(pool)
        .await
        .unwrap();
}

/// The counts that matter here, from an answer.
fn counts(m: &Value) -> Value {
    json!({ "received": m["received"], "sent": m["sent"], "delivered": m["delivered"], "bounced": m["bounced"], "opened": m["opened"] })
}

async fn refresh(app: &TestApp) -> u32 {
    jobs::schedule::refresh_email_metrics(&app.pool, Utc::now()).await.unwrap()
}

#[tokio::test]
async fn metrics_read_from_the_kept_hours_match_the_emails_and_count_a_late_event_once() {
    let app = TestApp::spawn_unthrottled().await;
    let (other_team, _) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let hour = (Utc::now() - TimeDelta::days(3)).duration_trunc(TimeDelta::hours(1)).unwrap();
    let first = email(&app.pool, app.team_id, hour + TimeDelta::minutes(10), &["sent", "delivered", "opened"]).await;
    let second = email(&app.pool, app.team_id, hour + TimeDelta::minutes(40), &["sent", "bounced"]).await;
    email(&app.pool, app.team_id, Utc::now() - TimeDelta::hours(26), &["sent", "delivered"]).await;
    email(&app.pool, app.team_id, Utc::now() - TimeDelta::minutes(10), &["sent"]).await;
    email(&app.pool, other_team, hour + TimeDelta::minutes(20), &["sent", "delivered"]).await;
    let expected = json!({ "received": 4, "sent": 4, "delivered": 2, "bounced": 1, "opened": 1 });

    let before = app.get("/emails/metrics?dimensions=period&granularity=daily").await;
    assert_eq!(before.status, 200, "{}", before.body);
    assert_eq!(counts(&before.body), expected, "counted from the emails before any refresh");
    let now = Utc::now();
    assert!(jobs::schedule::refresh_email_metrics(&app.pool, now).await.unwrap() >= 1, "the first refresh catches up from the oldest email");
    assert_eq!(jobs::schedule::refresh_email_metrics(&app.pool, now).await.unwrap(), 0, "and a second one for the same instant has nothing to do");
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM email_metrics_hourly WHERE team_id = $1 AND kind = 'received'")
        .bind(app.team_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept, 3, "one row per hour that holds the team's emails");
    let after = app.get("/emails/metrics?dimensions=period&granularity=daily").await;
    assert_eq!((counts(&after.body), &after.body["data"]), (expected.clone(), &before.body["data"]), "the same answer from the kept hours");

    // A late open on the 40-minute email and a second open on the 10-minute one, after the refresh.
    event(&app.pool, app.team_id, second, "opened", Utc::now()).await;
    event(&app.pool, app.team_id, first, "opened", Utc::now()).await;
    let expected = json!({ "received": 4, "sent": 4, "delivered": 2, "bounced": 1, "opened": 2 });
    assert_eq!(counts(&app.get("/emails/metrics").await.body), expected, "a later event is counted once per email");
    tokio::time::sleep(std::time::Duration::from_millis(5_100)).await;
    assert!(refresh(&app).await >= 1);
    assert_eq!(counts(&app.get("/emails/metrics").await.body), expected, "and still once after the hour is recounted");

    // The kept hour is what a read of whole hours uses.
    sqlx::query("UPDATE email_metrics_hourly SET count = count + 100 WHERE team_id = $1 AND hour = $2 AND kind = 'received'")
        .bind(app.team_id)
        .bind(hour)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(app.get("/emails/metrics").await.body["received"], 104, "whole hours are read from the kept counts");
    // A window starting inside that hour counts its part from the emails themselves.
    let from = (hour + TimeDelta::minutes(30)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let partial = app.get(&format!("/emails/metrics?start_date={from}")).await;
    assert_eq!(partial.status, 200, "{}", partial.body);
    assert_eq!(counts(&partial.body), json!({ "received": 3, "sent": 3, "delivered": 1, "bounced": 1, "opened": 1 }), "from minute 30 on");
    let until = (Utc::now() - TimeDelta::minutes(20)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let ended = app.get(&format!("/emails/metrics?start_date={from}&end_date={until}")).await;
    assert_eq!(ended.body["received"], 2, "the email of ten minutes ago is after the window: {}", ended.body);
}

#[tokio::test]
async fn the_kept_counts_never_run_ahead_of_the_clock() {
    let app = TestApp::spawn_unthrottled().await;
    email(&app.pool, app.team_id, Utc::now() - TimeDelta::hours(2), &["sent"]).await;
    jobs::schedule::refresh_email_metrics(&app.pool, Utc::now() + TimeDelta::hours(1)).await.unwrap();
    let through: Uuid = sqlx::query_scalar("SELECT through FROM email_metrics_watermark").fetch_one(&app.pool).await.unwrap();
    assert!(through < schema::ids::first_at(Utc::now()), "a tick dated in the future moves the watermark only to the clock's now");
    let later = email(&app.pool, app.team_id, Utc::now(), &["sent", "delivered"]).await;
    let m = app.get("/emails/metrics").await.body;
    assert_eq!(counts(&m), json!({ "received": 2, "sent": 2, "delivered": 1, "bounced": 0, "opened": 0 }), "{later} is counted: {m}");
}
