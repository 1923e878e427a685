//! Sent email: accepting (batched inserts), reading, rescheduling and canceling, and the
//! delivery worker's claim and outcome writes.

use crate::page::{Page, PageRequest};
use crate::store::usage;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::types::Json;
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// An email about to be accepted.
#[derive(Debug, Clone)]
pub struct NewEmail {
    pub id: Uuid,
    pub team_id: Uuid,
    pub api_key_id: Option<Uuid>,
    pub domain_id: Uuid,
    pub from_header: String,
    pub from_email: String,
    pub subject: String,
    pub html: Option<String>,
    pub text: Option<String>,
    pub reply_to: Vec<String>,
    pub headers: Value,
    pub tags: Value,
    pub message_id: String,
    pub scheduled_at: Option<DateTime<Utc>>,
    pub size_bytes: i32,
    pub created_at: DateTime<Utc>,
    /// The template and the exact version the email was rendered from.
    pub template: Option<(Uuid, i32)>,
    /// The broadcast the email is one recipient's copy of.
    pub broadcast_id: Option<Uuid>,
    pub recipients: Vec<NewRecipient>,
    pub attachments: Vec<NewAttachment>,
    /// The Inbox channel the `inbox` send field named: its address is the Reply-To, and the
    /// answer opens a conversation linked to this email.
    pub inbox_channel_id: Option<Uuid>,
    /// Each recipient's copy carries Herald's signed `List-Unsubscribe` for its own address.
    pub unsubscribe_link: bool,
}

/// One recipient of a new email.
#[derive(Debug, Clone)]
pub struct NewRecipient {
    /// `to`, `cc` or `bcc`.
    pub kind: &'static str,
    /// As sent (may carry a display name).
    pub address: String,
    /// Bare, lower-case.
    pub email: String,
    /// The suppression's origin when the address is suppressed for the team: recorded, never
    /// delivered.
    pub suppressed: Option<String>,
}

/// One attachment of a new email, decoded.
#[derive(Debug, Clone)]
pub struct NewAttachment {
    pub id: Uuid,
    pub filename: String,
    pub content_type: String,
    pub content_id: Option<String>,
    pub content: Vec<u8>,
}

impl NewEmail {
    /// Whether every recipient is suppressed (nothing to deliver).
    pub fn all_suppressed(&self) -> bool {
        self.recipients.iter().all(|r| r.suppressed.is_some())
    }

    /// One `email.suppressed` event per suppressed recipient: recorded, never delivered.
    pub fn suppressed_events(&self) -> Vec<crate::store::events::NewEvent> {
        self.recipients
            .iter()
            .filter_map(|recipient| {
                let origin = recipient.suppressed.as_ref()?;
                let extra = json!({
                    "reason": "OnSuppressionList",
                    "type": origin,
                    "message": "The address is on the team's suppression list; the email was not sent to it.",
                    "diagnosticCode": [],
                });
                let data = self.event_data(&[recipient.email.as_str()], Some(("suppressed", extra)));
                Some(crate::store::events::NewEvent { team_id: self.team_id, event_type: "email.suppressed", data, email_id: Some(self.id) })
            })
            .collect()
    }

    /// The status an accepted email starts in.
    pub fn first_event(&self) -> &'static str {
        if self.all_suppressed() {
            "suppressed"
        } else if self.scheduled_at.is_some() {
            "scheduled"
        } else {
            "queued"
        }
    }
}

/// Inserts emails, their recipients and attachments: one statement, two with attachments,
/// whatever the count. With a `count`, the same statement adds it to the team's sending
/// counter and answers the usage after it.
pub async fn insert_many(conn: &mut PgConnection, emails: &[NewEmail], count: Option<usage::Count>) -> sqlx::Result<Option<usage::Usage>> {
    let mut ids = Vec::new();
    let mut positions = Vec::new();
    let mut kinds = Vec::new();
    let mut addresses = Vec::new();
    let mut keys = Vec::new();
    let mut statuses = Vec::new();
    for email in emails {
        for (position, recipient) in email.recipients.iter().enumerate() {
            ids.push(email.id);
            positions.push(position as i16);
            kinds.push(recipient.kind);
            addresses.push(recipient.address.as_str());
            keys.push(recipient.email.as_str());
            statuses.push(if recipient.suppressed.is_some() { "suppressed" } else { "queued" });
        }
    }
    let mut query = QueryBuilder::new("WITH ");
    if let Some(count) = count {
        usage::push_count(&mut query, count);
        query.push(", ");
    }
    // Columns as arrays through `unnest`: one statement text whatever the page size, so it is
    // parsed and planned once per connection, and binding is one array per column.
    fn column<'a, T>(emails: &'a [NewEmail], f: impl Fn(&'a NewEmail) -> T) -> Vec<T> {
        emails.iter().map(f).collect()
    }
    query.push(
        "e AS (INSERT INTO emails (id, team_id, api_key_id, domain_id, from_header, from_email, subject, html, text,
            reply_to, headers, tags, message_id, last_event, scheduled_at, size_bytes, created_at, template_id, template_version, broadcast_id, unsubscribe_link)
         SELECT id, team_id, api_key_id, domain_id, from_header, from_email, subject, html, text,
                ARRAY(SELECT jsonb_array_elements_text(reply_to)), headers, tags, message_id, last_event, scheduled_at, size_bytes,
                created_at, template_id, template_version, broadcast_id, unsubscribe_link
         FROM unnest(",
    );
    query.push_bind(column(emails, |e| e.id)).push("::uuid[], ");
    query.push_bind(column(emails, |e| e.team_id)).push("::uuid[], ");
    query.push_bind(column(emails, |e| e.api_key_id)).push("::uuid[], ");
    query.push_bind(column(emails, |e| e.domain_id)).push("::uuid[], ");
    query.push_bind(column(emails, |e| e.from_header.as_str())).push("::text[], ");
    query.push_bind(column(emails, |e| e.from_email.as_str())).push("::text[], ");
    query.push_bind(column(emails, |e| e.subject.as_str())).push("::text[], ");
    query.push_bind(column(emails, |e| e.html.as_deref())).push("::text[], ");
    query.push_bind(column(emails, |e| e.text.as_deref())).push("::text[], ");
    query.push_bind(column(emails, |e| json!(e.reply_to))).push("::jsonb[], ");
    query.push_bind(column(emails, |e| &e.headers)).push("::jsonb[], ");
    query.push_bind(column(emails, |e| &e.tags)).push("::jsonb[], ");
    query.push_bind(column(emails, |e| e.message_id.as_str())).push("::text[], ");
    query.push_bind(column(emails, NewEmail::first_event)).push("::text[], ");
    query.push_bind(column(emails, |e| e.scheduled_at)).push("::timestamptz[], ");
    query.push_bind(column(emails, |e| e.size_bytes)).push("::int4[], ");
    query.push_bind(column(emails, |e| e.created_at)).push("::timestamptz[], ");
    query.push_bind(column(emails, |e| e.template.map(|(id, _)| id))).push("::uuid[], ");
    query.push_bind(column(emails, |e| e.template.map(|(_, version)| version))).push("::int4[], ");
    query.push_bind(column(emails, |e| e.broadcast_id)).push("::uuid[], ");
    query.push_bind(column(emails, |e| e.unsubscribe_link)).push(
        "::bool[]) AS u(id, team_id, api_key_id, domain_id, from_header, from_email, subject, html, text, reply_to, headers, tags,
                        message_id, last_event, scheduled_at, size_bytes, created_at, template_id, template_version, broadcast_id,
                        unsubscribe_link)",
    );
    // The recipients reference their email: the CTE's rows exist when the outer insert's
    // foreign keys are checked (at the end of the statement).
    query.push(
        " RETURNING 1) INSERT INTO email_recipients (email_id, position, kind, address, email, status)
         SELECT * FROM unnest(",
    );
    query.push_bind(&ids).push("::uuid[], ");
    query.push_bind(&positions).push("::int2[], ");
    query.push_bind(&kinds).push("::text[], ");
    query.push_bind(&addresses).push("::text[], ");
    query.push_bind(&keys).push("::text[], ");
    query.push_bind(&statuses).push("::text[])");
    let usage = match count {
        Some(_) => {
            query.push(" RETURNING ").push(usage::USAGE_OUTPUT);
            let rows: Vec<usage::UsageRow> = query.build_query_as().fetch_all(&mut *conn).await?;
            rows.into_iter().next().map(usage::Usage::from)
        }
        None => {
            query.build().execute(&mut *conn).await?;
            None
        }
    };

    let attachments: Vec<(Uuid, usize, &NewAttachment)> = emails
        .iter()
        .flat_map(|email| email.attachments.iter().enumerate().map(move |(i, a)| (email.id, i, a)))
        .collect();
    if !attachments.is_empty() {
        let mut query = QueryBuilder::new(
            "INSERT INTO email_attachments (id, email_id, position, filename, content_type, content_id, size, content) ",
        );
        query.push_values(&attachments, |mut row, (email_id, position, attachment)| {
            row.push_bind(attachment.id)
                .push_bind(*email_id)
                .push_bind(*position as i16)
                .push_bind(&attachment.filename)
                .push_bind(&attachment.content_type)
                .push_bind(&attachment.content_id)
                .push_bind(attachment.content.len() as i32)
                .push_bind(&attachment.content);
        });
        query.build().execute(&mut *conn).await?;
    }
    Ok(usage)
}

/// A stored email.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Email {
    pub id: Uuid,
    pub team_id: Uuid,
    pub api_key_id: Option<Uuid>,
    pub domain_id: Option<Uuid>,
    pub from_header: String,
    pub from_email: String,
    pub subject: String,
    pub html: Option<String>,
    pub text: Option<String>,
    pub reply_to: Vec<String>,
    pub headers: Value,
    pub tags: Value,
    pub message_id: String,
    pub last_event: String,
    pub scheduled_at: Option<DateTime<Utc>>,
    pub dispatched_at: Option<DateTime<Utc>>,
    pub failed_reason: Option<String>,
    pub size_bytes: i32,
    pub created_at: DateTime<Utc>,
    pub template_id: Option<Uuid>,
    pub template_version: Option<i32>,
    /// Each recipient's copy carries Herald's signed `List-Unsubscribe` for its own address.
    pub unsubscribe_link: bool,
}

const EMAIL_COLUMNS: &str = "id, team_id, api_key_id, domain_id, from_header, from_email, subject, html, text, reply_to,
    headers, tags, message_id, last_event, scheduled_at, dispatched_at, failed_reason, size_bytes, created_at, template_id, template_version,
    unsubscribe_link";

const RECIPIENT_COLUMNS: &str = "email_id, position, kind, address, email, status, attempts, last_response";

/// One recipient as stored.
#[derive(Debug, Clone, sqlx::FromRow, serde::Deserialize)]
pub struct Recipient {
    pub email_id: Uuid,
    pub position: i16,
    pub kind: String,
    pub address: String,
    pub email: String,
    pub status: String,
    pub attempts: i32,
    pub last_response: Option<String>,
}

/// The fields every `email.*` event carries, borrowed from a stored or a new email.
struct EventHead<'a> {
    id: Uuid,
    from: &'a str,
    subject: &'a str,
    message_id: &'a str,
    created_at: DateTime<Utc>,
    tags: &'a Value,
    headers: &'a Value,
}

impl EventHead<'_> {
    /// The `data` document C gives every `email.*` event: `to` names the recipients the event
    /// concerns; `extra` is the type's own key (`bounce`, `failed`, ...).
    fn data(&self, to: &[&str], extra: Option<(&str, Value)>) -> Value {
        let mut data = json!({
            "email_id": self.id,
            "from": self.from,
            "to": to,
            "subject": self.subject,
            "message_id": self.message_id,
            "created_at": self.created_at,
        });
        if self.tags.as_object().is_some_and(|tags| !tags.is_empty()) {
            data["tags"] = self.tags.clone();
        }
        if self.headers.as_object().is_some_and(|headers| !headers.is_empty()) {
            data["headers"] = self.headers.clone();
        }
        if let Some((key, value)) = extra {
            data[key] = value;
        }
        data
    }
}

/// `event_data` for an email type whose fields an event head reads: the stored email and the
/// one being accepted.
macro_rules! event_data {
    ($email:ty) => {
        impl $email {
            /// An event's `data` for this email (see [`EventHead::data`]).
            pub fn event_data(&self, to: &[&str], extra: Option<(&str, Value)>) -> Value {
                let head = EventHead {
                    id: self.id,
                    from: &self.from_header,
                    subject: &self.subject,
                    message_id: &self.message_id,
                    created_at: self.created_at,
                    tags: &self.tags,
                    headers: &self.headers,
                };
                head.data(to, extra)
            }
        }
    };
}

event_data!(Email);
event_data!(NewEmail);
event_data!(EmailHead);

/// What an email's events carry about it (without its bodies), and its `to` addresses.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EmailHead {
    pub id: Uuid,
    pub team_id: Uuid,
    pub from_header: String,
    pub subject: String,
    pub message_id: String,
    pub created_at: DateTime<Utc>,
    pub tags: Value,
    pub headers: Value,
    pub to: Vec<String>,
}

/// The heads of these emails, in one statement.
pub async fn heads(conn: &mut PgConnection, ids: &[Uuid]) -> sqlx::Result<Vec<EmailHead>> {
    sqlx::query_as(
        "SELECT e.id, e.team_id, e.from_header, e.subject, e.message_id, e.created_at, e.tags, e.headers,
                ARRAY(SELECT r.address FROM email_recipients r WHERE r.email_id = e.id AND r.kind = 'to' ORDER BY r.position) AS to
         FROM emails e WHERE e.id = ANY($1)",
    )
    .bind(ids)
    .fetch_all(conn)
    .await
}

/// One email of the team.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Email>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {EMAIL_COLUMNS} FROM emails WHERE team_id = $1 AND id = $2")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// One email by id, any team (the worker).
pub async fn by_id(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Email>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {EMAIL_COLUMNS} FROM emails WHERE id = $1")))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// One email of the team, locked for a change.
pub async fn lock(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Email>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {EMAIL_COLUMNS} FROM emails WHERE team_id = $1 AND id = $2 FOR UPDATE"
    )))
    .bind(team_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// An email's recipients, locked for the caller's transaction (a report recording an outcome
/// waits for a delivery or an ambiguity check writing one, and the other way round).
pub async fn recipients_for_update(conn: &mut PgConnection, email_id: Uuid) -> sqlx::Result<Vec<Recipient>> {
    sqlx::query_as(
        "SELECT email_id, position, kind, address, email, status, attempts, last_response
         FROM email_recipients WHERE email_id = $1 ORDER BY position FOR UPDATE",
    )
    .bind(email_id)
    .fetch_all(conn)
    .await
}

/// The recipients of these emails, in order.
pub async fn recipients(conn: &mut PgConnection, email_ids: &[Uuid]) -> sqlx::Result<Vec<Recipient>> {
    sqlx::query_as(
        "SELECT email_id, position, kind, address, email, status, attempts, last_response
         FROM email_recipients WHERE email_id = ANY($1) ORDER BY email_id, position",
    )
    .bind(email_ids)
    .fetch_all(conn)
    .await
}

/// Filters of `GET /emails`.
#[derive(Debug, Default)]
pub struct ListFilter {
    pub status: Option<String>,
    pub api_key_id: Option<Uuid>,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
    pub search: Option<String>,
    /// Tag names that must be present, and name/value pairs that must match.
    pub tag_names: Vec<String>,
    pub tag_pairs: Value,
}

/// A page of the team's emails, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, filter: &ListFilter, page: &PageRequest) -> sqlx::Result<Page<Email>> {
    let mut query = QueryBuilder::new(format!("SELECT {EMAIL_COLUMNS} FROM emails WHERE team_id = "));
    query.push_bind(team_id);
    if let Some(status) = &filter.status {
        query.push(" AND last_event = ").push_bind(status.clone());
    }
    if let Some(key) = filter.api_key_id {
        query.push(" AND api_key_id = ").push_bind(key);
    }
    if let Some(start) = filter.start {
        query.push(" AND created_at >= ").push_bind(start);
    }
    if let Some(end) = filter.end {
        query.push(" AND created_at <= ").push_bind(end);
    }
    if let Some(address) = filter.search.as_deref().and_then(search_address) {
        // A whole address: the emails from it or to it (to, cc or bcc), both by index (the
        // recipients' ids gathered once, so the emails' key serves them too).
        query.push(" AND (from_email = ").push_bind(address.clone());
        query.push(" OR id = ANY(ARRAY(SELECT email_id FROM email_recipients WHERE email = ").push_bind(address).push(")))");
    } else if let Some(search) = &filter.search {
        let pattern = super::like_pattern(search);
        query.push(" AND (subject ILIKE ").push_bind(pattern.clone());
        query.push(" OR from_header ILIKE ").push_bind(pattern.clone());
        query.push(" OR EXISTS (SELECT 1 FROM email_recipients r WHERE r.email_id = emails.id AND r.address ILIKE ");
        query.push_bind(pattern).push("))");
    }
    if !filter.tag_names.is_empty() {
        query.push(" AND tags ?& ").push_bind(filter.tag_names.clone());
    }
    if filter.tag_pairs.as_object().is_some_and(|pairs| !pairs.is_empty()) {
        query.push(" AND tags @> ").push_bind(filter.tag_pairs.clone());
    }
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// The search text as an address to look up exactly (lower-case, as `from_email` and a
/// recipient's `email` are kept), when it is a whole bare address.
fn search_address(search: &str) -> Option<String> {
    let mailbox = crate::email::Mailbox::parse(search).ok()?;
    (mailbox.name().is_none() && !search.contains('<')).then(|| mailbox.key())
}

/// Moves a scheduled email to `at` (the caller holds its lock).
pub async fn reschedule(conn: &mut PgConnection, id: Uuid, at: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query("UPDATE emails SET scheduled_at = $2, updated_at = now() WHERE id = $1")
        .bind(id)
        .bind(at)
        .execute(conn)
        .await?;
    Ok(())
}

/// Cancels an email that no worker has started (the caller holds its lock).
pub async fn cancel(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE emails SET last_event = 'canceled', updated_at = now() WHERE id = $1").bind(id).execute(&mut *conn).await?;
    sqlx::query("UPDATE email_recipients SET status = 'canceled', updated_at = now() WHERE email_id = $1 AND status = 'queued'")
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// An attachment's description (without its bytes).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Attachment {
    pub id: Uuid,
    pub email_id: Uuid,
    pub filename: String,
    pub content_type: String,
    pub content_id: Option<String>,
    pub size: i32,
}

const ATTACHMENT_COLUMNS: &str = "id, email_id, filename, content_type, content_id, size";

/// The attachments of an email, in order.
pub async fn attachments(conn: &mut PgConnection, email_id: Uuid) -> sqlx::Result<Vec<Attachment>> {
    sqlx::query_as(
        sqlx::AssertSqlSafe(format!("SELECT {ATTACHMENT_COLUMNS} FROM email_attachments WHERE email_id = $1 ORDER BY position")),
    )
    .bind(email_id)
    .fetch_all(conn)
    .await
}

/// An attachment with its bytes.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AttachmentContent {
    #[sqlx(flatten)]
    pub attachment: Attachment,
    pub content: Vec<u8>,
}

/// One attachment with its bytes.
pub async fn attachment(conn: &mut PgConnection, email_id: Uuid, id: Uuid) -> sqlx::Result<Option<AttachmentContent>> {
    sqlx::query_as(
        sqlx::AssertSqlSafe(format!("SELECT {ATTACHMENT_COLUMNS}, content FROM email_attachments WHERE email_id = $1 AND id = $2")),
    )
    .bind(email_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// A sent attachment by its id alone (its download link is the credential): the team, file
/// name, type and bytes.
pub async fn attachment_download(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<(Uuid, String, String, Vec<u8>)>> {
    sqlx::query_as(
        "SELECT e.team_id, a.filename, a.content_type, a.content FROM email_attachments a JOIN emails e ON e.id = a.email_id WHERE a.id = $1",
    )
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// The bytes of every attachment of an email, in order (the worker builds MIME from them).
pub async fn attachment_contents(conn: &mut PgConnection, email_id: Uuid) -> sqlx::Result<Vec<AttachmentContent>> {
    sqlx::query_as(
        sqlx::AssertSqlSafe(format!("SELECT {ATTACHMENT_COLUMNS}, content FROM email_attachments WHERE email_id = $1 ORDER BY position")),
    )
    .bind(email_id)
    .fetch_all(conn)
    .await
}

/// An event of an email's timeline.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TimelineEvent {
    pub id: Uuid,
    pub event_type: String,
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

/// The email's events, oldest first.
pub async fn timeline(conn: &mut PgConnection, email_id: Uuid) -> sqlx::Result<Vec<TimelineEvent>> {
    sqlx::query_as("SELECT id, type AS event_type, data, created_at FROM events WHERE email_id = $1 ORDER BY id")
        .bind(email_id)
        .fetch_all(conn)
        .await
}

/// The sending side of an email's domain, as delivery needs it.
#[derive(Debug, Clone)]
pub struct SendingDomain {
    pub domain_id: Uuid,
    pub domain_name: String,
    pub domain_tls: crate::domain::Tls,
    pub domain_return_path: String,
    pub domain_last_sent_at: Option<DateTime<Utc>>,
    /// PKCS#1 PEM.
    pub dkim_private_key: String,
    /// The development sender: its mail goes to the local outbox, never out.
    pub development: bool,
    /// Open tracking: an open pixel in the HTML body.
    pub open_tracking: bool,
    /// Click tracking: the HTML body's links go through signed redirects.
    pub click_tracking: bool,
}

/// What delivering an email needs.
#[derive(Debug)]
pub struct DeliveryMaterial {
    pub email: Email,
    pub recipients: Vec<Recipient>,
    /// `None` once the domain is deleted.
    pub domain: Option<SendingDomain>,
    pub has_attachments: bool,
}

/// Reads emails, their recipients and their domains' sending settings and keys, in one
/// statement. Emails that are gone are left out.
pub async fn for_delivery(conn: &mut PgConnection, email_ids: &[Uuid]) -> sqlx::Result<Vec<DeliveryMaterial>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        email: Email,
        recipients: Json<Vec<Recipient>>,
        has_attachments: bool,
        domain_id: Option<Uuid>,
        domain_name: Option<String>,
        domain_tls: Option<crate::domain::Tls>,
        domain_return_path: Option<String>,
        domain_last_sent_at: Option<DateTime<Utc>>,
        dkim_private_key: Option<String>,
        domain_development: Option<bool>,
        domain_open_tracking: Option<bool>,
        domain_click_tracking: Option<bool>,
    }
    let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT e.*,
                COALESCE((SELECT json_agg(r ORDER BY r.position) FROM
                    (SELECT {RECIPIENT_COLUMNS} FROM email_recipients WHERE email_id = e.id) r), '[]') AS recipients,
                EXISTS (SELECT 1 FROM email_attachments WHERE email_id = e.id) AS has_attachments,
                d.id AS domain_id, d.name AS domain_name, d.tls AS domain_tls, d.custom_return_path AS domain_return_path,
                d.last_sent_at AS domain_last_sent_at, d.dkim_private_key, d.development AS domain_development,
                d.open_tracking AS domain_open_tracking, d.click_tracking AS domain_click_tracking
         FROM (SELECT {EMAIL_COLUMNS} FROM emails WHERE id = ANY($1)) e
         LEFT JOIN domains d ON d.id = e.domain_id AND d.team_id = e.team_id"
    )))
    .bind(email_ids)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let domain = match (row.domain_id, row.domain_name, row.domain_tls, row.domain_return_path, row.dkim_private_key) {
                (Some(domain_id), Some(domain_name), Some(domain_tls), Some(domain_return_path), Some(dkim_private_key)) => {
                    Some(SendingDomain {
                        domain_id,
                        domain_name,
                        domain_tls,
                        domain_return_path,
                        domain_last_sent_at: row.domain_last_sent_at,
                        dkim_private_key,
                        development: row.domain_development.unwrap_or(false),
                        open_tracking: row.domain_open_tracking.unwrap_or(false),
                        click_tracking: row.domain_click_tracking.unwrap_or(false),
                    })
                }
                _ => None,
            };
            DeliveryMaterial { email: row.email, recipients: row.recipients.0, domain, has_attachments: row.has_attachments }
        })
        .collect())
}

/// What the worker found when it claimed an email.
#[derive(Debug)]
pub struct Claimed {
    pub email: Email,
    /// Recipients this run delivers to (now `sending`).
    pub to_send: Vec<Recipient>,
    /// Recipients an earlier run left `sending`: it may have delivered them, so they are
    /// never sent again.
    pub interrupted: Vec<Recipient>,
}

/// Claims emails for delivery: marks each dispatched and its `queued` and `delayed`
/// recipients `sending`, in one statement. Emails gone, canceled or not due are left out.
pub async fn claim(conn: &mut PgConnection, email_ids: &[Uuid]) -> sqlx::Result<Vec<Claimed>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        email: Email,
        interrupted: Json<Vec<Recipient>>,
        to_send: Json<Vec<Recipient>>,
    }
    // One statement, so no transaction is needed: its CTEs share one snapshot, so `interrupted`
    // sees the recipients an earlier run left `sending`, and `claimed` the ones still to send.
    // The recipients are also narrowed by `$1` itself: with `IN (SELECT id FROM e)` alone, the
    // prepared statement's generic plan scanned every row of `email_recipients`.
    let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "WITH e AS (
             UPDATE emails SET dispatched_at = coalesce(dispatched_at, now()), updated_at = now()
             WHERE id = ANY($1) AND last_event <> 'canceled' AND (scheduled_at IS NULL OR scheduled_at <= now() + interval '1 second')
             RETURNING {EMAIL_COLUMNS}
         ), interrupted AS (
             SELECT {RECIPIENT_COLUMNS} FROM email_recipients
             WHERE email_id = ANY($1) AND email_id IN (SELECT id FROM e) AND status = 'sending'
         ), claimed AS (
             UPDATE email_recipients SET status = 'sending', attempts = attempts + 1, updated_at = now()
             WHERE email_id = ANY($1) AND email_id IN (SELECT id FROM e) AND status IN ('queued', 'delayed')
             RETURNING {RECIPIENT_COLUMNS}
         )
         SELECT e.*,
                COALESCE((SELECT json_agg(i ORDER BY i.position) FROM interrupted i WHERE i.email_id = e.id), '[]') AS interrupted,
                COALESCE((SELECT json_agg(c ORDER BY c.position) FROM claimed c WHERE c.email_id = e.id), '[]') AS to_send
         FROM e"
    )))
    .bind(email_ids)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|row| Claimed { email: row.email, to_send: row.to_send.0, interrupted: row.interrupted.0 }).collect())
}

/// The outcome of one recipient's delivery attempt.
#[derive(Debug, Clone)]
pub struct RecipientOutcome {
    pub position: i16,
    /// The recipient's new status.
    pub status: &'static str,
    pub response: Option<String>,
}

/// One email's delivery outcomes: its recipients' and its latest event and failure reason.
#[derive(Debug, Clone)]
pub struct EmailOutcome<'a> {
    pub email_id: Uuid,
    pub recipients: Vec<RecipientOutcome>,
    pub last_event: Option<&'a str>,
    pub failed_reason: Option<&'a str>,
}

/// Records emails' recipient outcomes and latest events and failure reasons, in one statement.
pub async fn record_outcomes(conn: &mut PgConnection, outcomes: &[EmailOutcome<'_>]) -> sqlx::Result<()> {
    let recipients = || outcomes.iter().flat_map(|o| o.recipients.iter().map(move |r| (o.email_id, r)));
    let recipient_emails: Vec<Uuid> = recipients().map(|(id, _)| id).collect();
    let positions: Vec<i16> = recipients().map(|(_, r)| r.position).collect();
    let statuses: Vec<&str> = recipients().map(|(_, r)| r.status).collect();
    let responses: Vec<Option<&str>> = recipients().map(|(_, r)| r.response.as_deref()).collect();
    let email_ids: Vec<Uuid> = outcomes.iter().map(|o| o.email_id).collect();
    let last_events: Vec<Option<&str>> = outcomes.iter().map(|o| o.last_event).collect();
    let failed_reasons: Vec<Option<&str>> = outcomes.iter().map(|o| o.failed_reason).collect();
    sqlx::query(
        "WITH r AS (
             UPDATE email_recipients r SET status = o.status, last_response = coalesce(o.response, r.last_response), updated_at = now()
             FROM unnest($1::uuid[], $2::int2[], $3::text[], $4::text[]) AS o(email_id, position, status, response)
             WHERE r.email_id = o.email_id AND r.position = o.position
         )
         UPDATE emails e SET last_event = coalesce(u.last_event, e.last_event), failed_reason = coalesce(u.failed_reason, e.failed_reason),
                updated_at = now()
         FROM unnest($5::uuid[], $6::text[], $7::text[]) AS u(id, last_event, failed_reason)
         WHERE e.id = u.id AND (u.last_event IS NOT NULL OR u.failed_reason IS NOT NULL)",
    )
    .bind(&recipient_emails)
    .bind(&positions)
    .bind(&statuses)
    .bind(&responses)
    .bind(&email_ids)
    .bind(&last_events)
    .bind(&failed_reasons)
    .execute(conn)
    .await?;
    Ok(())
}

/// Recipients still `ambiguous` on this email (the two-hour check fails them).
pub async fn ambiguous_recipients(conn: &mut PgConnection, email_id: Uuid) -> sqlx::Result<Vec<Recipient>> {
    sqlx::query_as(
        "SELECT email_id, position, kind, address, email, status, attempts, last_response
         FROM email_recipients WHERE email_id = $1 AND status = 'ambiguous' ORDER BY position FOR UPDATE",
    )
    .bind(email_id)
    .fetch_all(conn)
    .await
}
