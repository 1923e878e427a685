//! A sent email as the API shows it (recipients, timeline, template) and the list's filters.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Nullable;
use chrono::{DateTime, Utc};
use poem_openapi::Object;
use schema::store::emails::{Email, Recipient};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One recipient and how its delivery stands.
#[derive(Object)]
pub struct RecipientView {
    /// The bare address.
    pub email: String,
    /// `to`, `cc` or `bcc`.
    pub kind: String,
    /// `queued`, `sending`, `delayed`, `sent`, `delivered`, `bounced`, `complained`, `failed`,
    /// `suppressed`, `ambiguous` or `canceled`.
    pub status: String,
    /// Submission attempts so far.
    pub attempts: i32,
    /// The last SMTP reply or failure.
    pub last_response: Nullable<String>,
}

/// One event of an email's timeline.
#[derive(Object)]
pub struct TimelineItem {
    /// The event's id.
    pub id: String,
    /// The event type, such as `email.delivered`.
    #[oai(rename = "type")]
    pub event_type: String,
    /// When the event happened.
    pub created_at: DateTime<Utc>,
    /// The event's data, as webhooks deliver it.
    pub data: Value,
}

/// A sent email.
#[derive(Object)]
pub struct EmailView {
    /// Always `email`.
    pub object: String,
    /// The email's id.
    pub id: String,
    /// The From, as sent (`address` or `Name <address>`).
    pub from: String,
    /// The `To` addresses, as sent.
    pub to: Vec<String>,
    /// The `Cc` addresses, as sent.
    pub cc: Vec<String>,
    /// The `Bcc` addresses, as sent.
    pub bcc: Vec<String>,
    /// The Reply-To addresses; empty when none.
    pub reply_to: Vec<String>,
    /// The subject line.
    pub subject: String,
    /// The HTML body, or `null` when there is none (always `null` in lists).
    pub html: Nullable<String>,
    /// The plain-text body, or `null` when there is none (always `null` in lists).
    pub text: Nullable<String>,
    /// Custom headers, name to value.
    pub headers: BTreeMap<String, String>,
    /// Tags, name to value.
    pub tags: BTreeMap<String, String>,
    /// The Message-ID header's value (without angle brackets).
    pub message_id: String,
    /// The latest event: `queued`, `scheduled`, `sent`, `delivered`, `delivery_delayed`,
    /// `bounced`, `complained`, `failed`, `canceled` or `suppressed`.
    pub last_event: String,
    /// When the email is (or was) scheduled to send; `null` for an email sent at once.
    pub scheduled_at: Nullable<DateTime<Utc>>,
    /// Why the email failed (`ambiguous_submission`, `tls_required`).
    pub failed_reason: Nullable<String>,
    /// The key that sent it.
    pub api_key_id: Nullable<String>,
    /// Size of the bodies and attachments in bytes.
    pub size: i32,
    /// When the email was accepted.
    pub created_at: DateTime<Utc>,
    /// The template and the exact version the email was rendered from, or `null`.
    pub template: Nullable<EmailTemplate>,
    /// Per-recipient delivery (retrieve only).
    pub recipients: Nullable<Vec<RecipientView>>,
    /// The email's events, oldest first (retrieve only).
    pub events: Nullable<Vec<TimelineItem>>,
}

/// The template version a send used.
#[derive(Object)]
pub struct EmailTemplate {
    /// The template's id.
    pub id: String,
    /// The template version the email was rendered from.
    pub version: i32,
}

/// A page of emails.
#[derive(Object)]
pub struct EmailList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<EmailView>,
}

/// `name` and `name:value` terms of the `tags` filter.
pub fn tag_filter(raw: Option<&str>) -> ApiResult<(Vec<String>, Value)> {
    let mut names = Vec::new();
    let mut pairs = BTreeMap::new();
    for term in raw.unwrap_or_default().split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match term.split_once(':') {
            Some((name, value)) => {
                schema::email::check_tag(name, value).map_err(|m| ApiError::invalid_parameter("tags", m))?;
                pairs.insert(name.to_string(), value.to_string());
            }
            None => {
                schema::email::check_tag(term, "x").map_err(|m| ApiError::invalid_parameter("tags", m))?;
                names.push(term.to_string());
            }
        }
    }
    Ok((names, json!(pairs)))
}

/// A stored name-to-value object (headers, tags) as the string map it holds.
pub fn string_map(stored: Value) -> BTreeMap<String, String> {
    let Value::Object(map) = stored else { return BTreeMap::new() };
    map.into_iter().map(|(name, value)| (name, value.as_str().map_or_else(|| value.to_string(), str::to_string))).collect()
}

pub fn view(email: Email, recipients: &[Recipient], full: bool) -> EmailView {
    let own: Vec<&Recipient> = recipients.iter().filter(|r| r.email_id == email.id).collect();
    let of_kind = |kind: &str| own.iter().filter(|r| r.kind == kind).map(|r| r.address.clone()).collect::<Vec<_>>();
    EmailView {
        object: "email".into(),
        id: email.id.to_string(),
        from: email.from_header,
        to: of_kind("to"),
        cc: of_kind("cc"),
        bcc: of_kind("bcc"),
        reply_to: email.reply_to,
        subject: email.subject,
        html: if full { email.html.into() } else { None.into() },
        text: if full { email.text.into() } else { None.into() },
        headers: string_map(email.headers),
        tags: string_map(email.tags),
        message_id: email.message_id,
        last_event: email.last_event,
        scheduled_at: email.scheduled_at.into(),
        failed_reason: email.failed_reason.into(),
        api_key_id: email.api_key_id.map(|id| id.to_string()).into(),
        size: email.size_bytes,
        created_at: email.created_at,
        template: Nullable(email.template_id.zip(email.template_version).map(|(id, version)| EmailTemplate { id: id.to_string(), version })),
        recipients: Nullable::from(full.then(|| {
            own.iter()
                .map(|r| RecipientView {
                    email: r.email.clone(),
                    kind: r.kind.clone(),
                    status: r.status.clone(),
                    attempts: r.attempts,
                    last_response: r.last_response.clone().into(),
                })
                .collect()
        })),
        events: None.into(),
    }
}

crate::choices! {
    /// An email's latest event.
    EmailStatus = &[
        "queued", "scheduled", "sent", "delivered", "delivery_delayed", "bounced", "complained", "failed", "canceled", "suppressed",
    ];
}
