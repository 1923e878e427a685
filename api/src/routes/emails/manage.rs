//! One sent email: read it with its timeline, reschedule or cancel it, read its attachments;
//! and the team's sending metrics.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::paging::{date_range, page_of, page_request};
use crate::http::fields::{Choice, IdText, InstantOrDate, Nullable};
use crate::routes::{Tag, Updated, path_id};
use crate::state::{AppState, Caller};
use base64::Engine;
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::Object;
use schema::jobs::Deliver;
use schema::store::emails::{self, Email};
use schema::store::email_metrics;
use schema::store::events::{self, NewEvent};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use crate::routes::emails::views::{TimelineItem, EmailView, view};
use crate::routes::emails::received::{DOWNLOAD_VALID_SECONDS, DownloadResponse, serve_download};

pub struct EmailsApi;

#[poem_openapi::OpenApi(tag = "Tag::Emails")]
impl EmailsApi {
    /// Delivery, bounce, complaint and engagement counts of the emails accepted in a window
    /// (default the last 30 days), each email counted once per outcome.
    #[oai(path = "/emails/metrics", method = "get", operation_id = "get-email-metrics")]
    async fn metrics(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// ISO 8601 instant or calendar date, inclusive (default 30 days before `end_date`).
        start_date: Query<Option<InstantOrDate>>,
        /// ISO 8601 instant or calendar date, inclusive (default now, or `start_date` when that is later).
        end_date: Query<Option<InstantOrDate>>,
        /// `period` breaks the counts down by the period each email was accepted in (`data`);
        /// absent for totals only.
        dimensions: Query<Option<Choice<Dimension>>>,
        /// The period's length when `dimensions` is `period` (default `daily`); periods are UTC.
        granularity: Query<Option<Choice<Granularity>>>,
    ) -> ApiResult<Json<EmailMetrics>> {
        let (start, end) = date_range(start_date.0, end_date.0, true)?;
        let end = end.unwrap_or_else(|| start.map_or_else(Utc::now, |start| start.max(Utc::now())));
        let start = start.unwrap_or(end - chrono::TimeDelta::days(30));
        if end < start {
            return Err(ApiError::invalid_parameter("start_date", "must not be after `end_date`"));
        }
        let granularity = granularity.0.map_or_else(|| "daily".to_string(), Choice::into_string);
        let unit = match granularity.as_str() {
            "hourly" => "hour",
            "daily" => "day",
            "weekly" => "week",
            "monthly" => "month",
            other => return Err(ApiError::invalid_parameter("granularity", format!("must be hourly, daily, weekly or monthly, not {other:?}"))),
        };
        let by_period = match dimensions.0.map(Choice::into_string).as_deref() {
            Some("period") => true,
            Some(other) => return Err(ApiError::invalid_parameter("dimensions", format!("only `period` is computed, not {other:?}"))),
            None => false,
        };
        let mut conn = state.pool.acquire().await?;
        let rows = email_metrics::by_period(&mut conn, caller.team_id, start, end, unit).await?;
        let mut counts: HashMap<String, i64> = HashMap::new();
        for (_, kind, count) in &rows {
            *counts.entry(kind.clone()).or_default() += count;
        }
        let count = |kind: &str| counts.get(kind).copied().unwrap_or(0);
        let received = count("received");
        let rate = |n: i64| if received == 0 { 0.0 } else { n as f64 / received as f64 };
        let totals: BTreeMap<String, i64> = METRIC_NAMES.iter().map(|name| (name.to_string(), if *name == "received" { received } else { count(&format!("email.{name}")) })).collect();
        let data = by_period.then(|| periods(rows));
        Ok(Json(EmailMetrics {
            object: "metrics".into(),
            metrics: METRIC_NAMES.iter().map(|name| name.to_string()).collect(),
            dimensions: data.as_ref().map(|_| vec!["period".to_string()]).unwrap_or_default(),
            granularity,
            totals,
            data,
            start_date: start,
            end_date: end,
            received,
            sent: count("email.sent"),
            delivered: count("email.delivered"),
            delivery_delayed: count("email.delivery_delayed"),
            bounced: count("email.bounced"),
            complained: count("email.complained"),
            failed: count("email.failed"),
            suppressed: count("email.suppressed"),
            canceled: count("email.canceled"),
            opened: count("email.opened"),
            clicked: count("email.clicked"),
            delivery_rate: rate(count("email.delivered")),
            bounce_rate: rate(count("email.bounced")),
            complaint_rate: rate(count("email.complained")),
            open_rate: rate(count("email.opened")),
            click_rate: rate(count("email.clicked")),
        }))
    }

    /// Retrieve an email with its recipients' delivery and its event timeline. While the team
    /// is past a limit that was lowered, `403 email_above_quota`.
    #[oai(path = "/emails/:email_id", method = "get", operation_id = "get-email")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, email_id: Path<String>) -> ApiResult<Json<EmailView>> {
        let id = path_id(&email_id.0, "Email")?;
        let mut conn = state.pool.acquire().await?;
        let email = emails::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        content_readable(&mut conn, caller.team_id).await?;
        let recipients = emails::recipients(&mut conn, &[id]).await?;
        let timeline = emails::timeline(&mut conn, id).await?;
        let mut view = view(email, &recipients, true);
        view.events = Nullable::from(Some(
            timeline
                .into_iter()
                .map(|e| TimelineItem { id: e.id.to_string(), event_type: e.event_type, created_at: e.created_at, data: e.data })
                .collect(),
        ));
        Ok(Json(view))
    }

    /// Reschedule a scheduled email. Once a worker has dispatched it: `409 resource_locked`.
    #[oai(path = "/emails/:email_id", method = "patch", operation_id = "update-email")]
    async fn update(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        email_id: Path<String>,
        body: Body<Reschedule>,
    ) -> ApiResult<Json<Updated>> {
        let id = path_id(&email_id.0, "Email")?;
        let at = schema::when::parse_scheduled_at(&body.0.scheduled_at, Utc::now())
            .map_err(|e| ApiError::invalid_field("scheduled_at", e.message()))?;
        let mut tx = state.pool.begin().await?;
        let email = emails::lock(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        if email.dispatched_at.is_some() || email.last_event != "scheduled" {
            return Err(locked(&email));
        }
        emails::reschedule(&mut tx, id, at).await?;
        schema::jobs::enqueue_at(&mut tx, &Deliver { email_id: id }, at.into()).await.map_err(anyhow::Error::from)?;
        tx.commit().await?;
        Ok(Json(Updated { object: "email".into(), id: id.to_string() }))
    }

    /// Cancel an email no worker has dispatched yet; emits `email.canceled`. Once dispatched:
    /// `409 resource_locked`.
    #[oai(path = "/emails/:email_id/cancel", method = "post", operation_id = "cancel-email")]
    async fn cancel(&self, state: Data<&AppState>, caller: Data<&Caller>, email_id: Path<String>) -> ApiResult<Json<Updated>> {
        let id = path_id(&email_id.0, "Email")?;
        let mut tx = state.pool.begin().await?;
        let email = emails::lock(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        if email.dispatched_at.is_some() || !matches!(email.last_event.as_str(), "scheduled" | "queued") {
            return Err(locked(&email));
        }
        emails::cancel(&mut tx, id).await?;
        let recipients = emails::recipients(&mut tx, &[id]).await?;
        let to: Vec<&str> = recipients.iter().map(|r| r.email.as_str()).collect();
        let event = NewEvent { team_id: caller.team_id, event_type: "email.canceled", data: email.event_data(&to, None), email_id: Some(id) };
        events::emit(&mut tx, &[event]).await?;
        tx.commit().await?;
        Ok(Json(Updated { object: "email".into(), id: id.to_string() }))
    }

    /// List an email's attachments (without their bytes).
    #[oai(path = "/emails/:email_id/attachments", method = "get", operation_id = "list-email-attachments")]
    async fn attachments(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        email_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<AttachmentList>> {
        let id = path_id(&email_id.0, "Email")?;
        let page = page_request(limit.0, after.0, before.0)?;
        let mut conn = state.pool.acquire().await?;
        emails::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        let page = page_of(emails::attachments(&mut conn, id).await?, |a| a.id, &page)?;
        let data = page.data.into_iter().map(|a| attachment_view(&state, a, None)).collect();
        Ok(Json(AttachmentList { object: "list".into(), has_more: page.has_more, data }))
    }

    /// Retrieve one attachment with its bytes (base64); `403 email_above_quota` while the team
    /// is past a limit that was lowered.
    #[oai(path = "/emails/:email_id/attachments/:attachment_id", method = "get", operation_id = "get-email-attachment")]
    async fn attachment(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        email_id: Path<String>,
        attachment_id: Path<String>,
    ) -> ApiResult<Json<AttachmentView>> {
        let id = path_id(&email_id.0, "Email")?;
        let attachment_id = path_id(&attachment_id.0, "Attachment")?;
        let mut conn = state.pool.acquire().await?;
        emails::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        content_readable(&mut conn, caller.team_id).await?;
        let found = emails::attachment(&mut conn, id, attachment_id).await?.ok_or_else(|| ApiError::not_found("Attachment"))?;
        Ok(Json(attachment_view(&state, found.attachment, Some(base64::engine::general_purpose::STANDARD.encode(found.content)))))
    }

    /// Download a sent email's attachment through the `download_url` of `GET
    /// /emails/{email_id}/attachments` (no credential; valid 15 minutes). Served as a download;
    /// types outside a short allowlist are served as `application/octet-stream`.
    #[oai(path = "/email-attachments/:token", method = "get", operation_id = "download-email-attachment", tag = "Tag::Pages")]
    async fn download(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<DownloadResponse> {
        let Some(id) = schema::tracking::verify_sent_download(&state.link_key, &token.0, Utc::now().timestamp()) else {
            return Ok(serve_download(None));
        };
        let mut conn = state.pool.acquire().await?;
        let Some((team_id, filename, content_type, bytes)) = emails::attachment_download(&mut conn, id).await? else {
            return Ok(serve_download(None));
        };
        content_readable(&mut conn, team_id).await?;
        Ok(serve_download(Some((filename, content_type, bytes))))
    }
}

/// `403 email_above_quota` while the team's sends are past a limit that applies now (after a
/// limit was lowered): an email's content (its bodies, attachment bytes, a view link) waits
/// until the day or month turns or the limit rises. Lists and metrics still answer.
pub(super) async fn content_readable(conn: &mut sqlx::PgConnection, team_id: uuid::Uuid) -> ApiResult<()> {
    match schema::store::usage::current(conn, team_id, Utc::now()).await? {
        Some(usage) if usage.over() => Err(ApiError::new(
            ErrorKind::EmailAboveQuota,
            "The team has sent more than its plan now allows; email content is unavailable until the quota resets or the plan changes.",
        )),
        _ => Ok(()),
    }
}

/// `(period, kind, count)` rows as the answer's `data`: one row per period, oldest first, with
/// every metric (0 when none).
fn periods(rows: Vec<(DateTime<Utc>, String, i64)>) -> Vec<BTreeMap<String, serde_json::Value>> {
    let mut by_period: BTreeMap<DateTime<Utc>, BTreeMap<String, serde_json::Value>> = BTreeMap::new();
    for (period, kind, count) in rows {
        let row = by_period.entry(period).or_insert_with(|| {
            let mut row: BTreeMap<String, serde_json::Value> = METRIC_NAMES.iter().map(|name| (name.to_string(), serde_json::json!(0))).collect();
            row.insert("period".into(), serde_json::json!(period.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)));
            row
        });
        row.insert(kind.trim_start_matches("email.").to_string(), serde_json::json!(count));
    }
    by_period.into_values().collect()
}

crate::choices! {
    /// A period's length in a metrics breakdown (UTC).
    Granularity = &["hourly", "daily", "weekly", "monthly"];
    /// What a metrics breakdown is by (only `period` is computed).
    Dimension = &["period"];
}

/// The metrics `GET /emails/metrics` computes, by the names the Resend SDKs use.
const METRIC_NAMES: [&str; 10] = ["received", "sent", "delivered", "delivery_delayed", "bounced", "complained", "failed", "suppressed", "opened", "clicked"];

/// Of the emails accepted in a window, how many reached each outcome. Rates are fractions of
/// `received`. The counts appear twice: as top-level fields and in `totals`, the shape the
/// Resend SDKs read.
#[derive(Object)]
pub struct EmailMetrics {
    /// Always `metrics`.
    pub object: String,
    /// The metrics computed: `received`, `sent`, `delivered`, `delivery_delayed`, `bounced`,
    /// `complained`, `failed`, `suppressed`, `opened`, `clicked`.
    pub metrics: Vec<String>,
    /// `["period"]` when the counts are broken down by period (`data`), else empty.
    pub dimensions: Vec<String>,
    /// The periods' length: `hourly`, `daily` (default), `weekly` or `monthly`.
    pub granularity: String,
    /// Each metric's count over the window.
    pub totals: BTreeMap<String, i64>,
    /// With `dimensions=period`: one row per period in which emails were accepted, oldest
    /// first, `{ period, <metric>: count, ... }` (`period` the UTC start of the period).
    #[oai(skip_serializing_if_is_none)]
    pub data: Option<Vec<BTreeMap<String, serde_json::Value>>>,
    /// The window's start, inclusive.
    pub start_date: DateTime<Utc>,
    /// The window's end, inclusive.
    pub end_date: DateTime<Utc>,
    /// Emails accepted from you for sending in the window (not inbound mail).
    pub received: i64,
    /// ...with at least one recipient's server accepting them (`email.sent`).
    pub sent: i64,
    /// ...delivered to at least one recipient's own mail server.
    pub delivered: i64,
    /// ...with at least one `email.delivery_delayed` event.
    pub delivery_delayed: i64,
    /// ...with at least one `email.bounced` event.
    pub bounced: i64,
    /// ...with at least one `email.complained` event.
    pub complained: i64,
    /// ...with at least one `email.failed` event.
    pub failed: i64,
    /// ...with at least one `email.suppressed` event.
    pub suppressed: i64,
    /// ...with at least one `email.canceled` event.
    pub canceled: i64,
    /// Engagement: opened at least once (when open tracking is on).
    pub opened: i64,
    /// Engagement: a link clicked at least once (when click tracking is on).
    pub clicked: i64,
    /// `delivered` over `received`, from 0 to 1 (0 when nothing was received).
    pub delivery_rate: f64,
    /// `bounced` over `received`, from 0 to 1 (0 when nothing was received).
    pub bounce_rate: f64,
    /// `complained` over `received`, from 0 to 1 (0 when nothing was received).
    pub complaint_rate: f64,
    /// `opened` over `received`, from 0 to 1 (0 when nothing was received).
    pub open_rate: f64,
    /// `clicked` over `received`, from 0 to 1 (0 when nothing was received).
    pub click_rate: f64,
}

/// Body of `PATCH /emails/{email_id}`.
#[derive(Object, Deserialize)]
pub struct Reschedule {
    /// The new time: ISO 8601 or a phrase, 1 minute to 30 days ahead.
    pub scheduled_at: String,
}

/// An attachment of a sent email.
#[derive(Object)]
pub struct AttachmentView {
    /// Always `attachment`.
    pub object: String,
    /// The attachment's id.
    pub id: String,
    /// The file name shown to the recipient.
    pub filename: String,
    /// The MIME type.
    pub content_type: String,
    /// The Content-ID an inline attachment is referenced by from the HTML (`cid:<content_id>`), or `null`.
    pub content_id: Nullable<String>,
    /// `inline` (it has a Content-ID) or `attachment`.
    pub content_disposition: String,
    /// Bytes.
    pub size: i32,
    /// The bytes, base64 (retrieve only).
    pub content: Nullable<String>,
    /// A link that downloads the bytes with no credential, valid 15 minutes.
    pub download_url: String,
    /// When `download_url` stops working.
    pub expires_at: DateTime<Utc>,
}

/// The attachments of an email.
#[derive(Object)]
pub struct AttachmentList {
    /// Always `list`.
    pub object: String,
    /// Whether more attachments follow this page.
    pub has_more: bool,
    /// The attachments, in the order they were sent in.
    pub data: Vec<AttachmentView>,
}

pub fn locked(email: &Email) -> ApiError {
    ApiError::new(ErrorKind::ResourceLocked, format!("The email is already {}; it can no longer be rescheduled or canceled.", match email.last_event.as_str() {
            "scheduled" | "queued" => "dispatched",
            other => other,
        }),
    )
}

pub fn attachment_view(state: &AppState, attachment: emails::Attachment, content: Option<String>) -> AttachmentView {
    let expires_at = Utc::now() + chrono::TimeDelta::seconds(DOWNLOAD_VALID_SECONDS);
    let token = schema::tracking::sent_download_token(&state.link_key, attachment.id, expires_at.timestamp());
    AttachmentView {
        object: "attachment".into(),
        id: attachment.id.to_string(),
        filename: attachment.filename,
        content_type: attachment.content_type,
        content_disposition: if attachment.content_id.is_some() { "inline" } else { "attachment" }.into(),
        content_id: attachment.content_id.into(),
        size: attachment.size,
        content: content.into(),
        download_url: format!("{}/email-attachments/{token}", state.config.public_url.trim_end_matches('/')),
        expires_at,
    }
}
