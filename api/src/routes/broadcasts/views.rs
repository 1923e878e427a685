//! A broadcast as the API shows it, and finding one by its path id.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Nullable, Required};
use crate::routes::path_id;
use chrono::{DateTime, Utc};
use poem_openapi::Object;
use schema::store::broadcasts::{self, Broadcast};
use serde::Deserialize;
use sqlx::PgConnection;
use uuid::Uuid;

/// The template of a broadcast.
#[derive(Object, Deserialize, Clone, Debug)]
pub struct BroadcastTemplate {
    /// A template id or alias; it must be published when the broadcast is sent.
    pub id: Required<String>,
}

/// Recipients by outcome.
#[derive(Object)]
pub struct BroadcastCounts {
    /// Contacts the send resolved so far.
    pub recipients: i64,
    /// Left out (unsubscribed, opted out of the topic, suppressed).
    pub excluded: i64,
    /// Emails created.
    pub sent: i64,
    /// Emails whose latest event is `delivered`.
    pub delivered: i64,
    /// Emails whose latest event is `bounced`.
    pub bounced: i64,
    /// Emails whose latest event is `complained`.
    pub complained: i64,
    /// Emails whose latest event is `failed`.
    pub failed: i64,
    /// Recipients who opened at least once (counted when the domain's open tracking is on).
    pub opened: i64,
    /// Recipients who clicked a link at least once (counted when click tracking is on).
    pub clicked: i64,
}

/// A broadcast.
#[derive(Object)]
pub struct BroadcastView {
    /// Always `broadcast`.
    pub object: String,
    /// The broadcast's id.
    pub id: String,
    /// The broadcast's name (for the team's own reference), or `null` when it has none.
    pub name: Nullable<String>,
    /// The segment sent to, or `null` when none is set.
    pub segment_id: Nullable<String>,
    /// Deprecated: the same as `segment_id`.
    pub audience_id: Nullable<String>,
    /// The topic: contacts opted out of it are left out; `null` when none is set.
    pub topic_id: Nullable<String>,
    /// The template used instead of `html` and `text`, or `null`.
    pub template_id: Nullable<String>,
    /// The From, as `Name <address>`.
    pub from: String,
    /// The subject line, with its `{{{KEY}}}` merge variables.
    pub subject: String,
    /// The Reply-To addresses; empty when none.
    pub reply_to: Vec<String>,
    /// The HTML with its `{{{KEY}}}` merge variables, or `null` when there is none.
    pub html: Nullable<String>,
    /// The plain text with its `{{{KEY}}}` merge variables, or `null` when there is none.
    pub text: Nullable<String>,
    /// The preview line mail clients show after the subject, or `null` when there is none.
    pub preview_text: Nullable<String>,
    /// The broadcast's status.
    pub status: Choice<BroadcastStatus>,
    /// When the send is scheduled, or `null` when it is not scheduled.
    pub scheduled_at: Nullable<DateTime<Utc>>,
    /// When the send finished (status `sent`), or `null` until then.
    pub sent_at: Nullable<DateTime<Utc>>,
    /// Why the broadcast failed.
    pub failed_reason: Nullable<String>,
    /// Its recipients by outcome.
    pub counts: BroadcastCounts,
    /// When the broadcast was created.
    pub created_at: DateTime<Utc>,
    /// When the broadcast was last changed.
    pub updated_at: DateTime<Utc>,
}

pub fn scheduled(raw: &str) -> ApiResult<DateTime<Utc>> {
    schema::when::parse_scheduled_at(raw, Utc::now()).map_err(|e| ApiError::invalid_field("scheduled_at", e.message()))
}

pub async fn found(conn: &mut PgConnection, team_id: Uuid, raw: &str, lock: bool) -> ApiResult<Broadcast> {
    let id = path_id(raw, "Broadcast")?;
    broadcasts::get(conn, team_id, id, lock).await?.ok_or_else(|| ApiError::not_found("Broadcast"))
}

pub fn draft_only(broadcast: &Broadcast, what: &str) -> ApiResult<()> {
    if broadcast.status != schema::status::BroadcastStatus::Draft {
        return Err(ApiError::refused(format!("Only a draft can be {what}; this broadcast is {}.", broadcast.status))
            .with_error("status", broadcast.status.as_str()));
    }
    Ok(())
}

pub fn view(c: broadcasts::Counts, b: Broadcast) -> BroadcastView {
    let segment = b.segment_id.map(|id| id.to_string());
    BroadcastView {
        object: "broadcast".into(),
        id: b.id.to_string(),
        name: Nullable(b.name),
        audience_id: Nullable(segment.clone()),
        segment_id: Nullable(segment),
        topic_id: Nullable(b.topic_id.map(|id| id.to_string())),
        template_id: Nullable(b.template_id.map(|id| id.to_string())),
        from: b.from_header,
        subject: b.subject,
        reply_to: b.reply_to,
        html: Nullable(b.html),
        text: Nullable(b.text),
        preview_text: Nullable(b.preview_text),
        status: Choice::new(b.status.as_str()),
        scheduled_at: Nullable(b.scheduled_at),
        sent_at: Nullable(b.sent_at),
        failed_reason: Nullable(b.failed_reason),
        counts: BroadcastCounts {
            recipients: c.recipients,
            excluded: c.excluded,
            sent: c.sent,
            delivered: c.delivered,
            bounced: c.bounced,
            complained: c.complained,
            failed: c.failed,
            opened: c.opened,
            clicked: c.clicked,
        },
        created_at: b.created_at,
        updated_at: b.updated_at,
    }
}

crate::choices! {
    /// A broadcast's status: `draft`, `scheduled`, `queued`, `sending`, `sent`, `canceled` or `failed`.
    BroadcastStatus = &["draft", "scheduled", "queued", "sending", "sent", "canceled", "failed"];
    /// A recipient filter: `sent`, `delivered`, `opened`, `clicked`, `bounced`, `complained`,
    /// `unsubscribed` or `suppressed`.
    RecipientType = &["sent", "delivered", "opened", "clicked", "bounced", "complained", "unsubscribed", "suppressed"];
}

/// `{ object: "broadcast", id }`.
#[derive(Object)]
pub struct BroadcastRef {
    /// Always `broadcast`.
    pub object: String,
    /// The broadcast's id.
    pub id: String,
}
