//! Received emails: mail the inbound server accepted for the team's receiving domains, with
//! their attachments (downloaded through signed links that need no credential) and raw source.
//! A received email's id is never a sent email's: each answers 404 on the other's routes.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{IdText, InstantOrDate, Nullable, Search};
use crate::http::paging::{date_range, page_of, page_request, search_text};
use crate::routes::{Deleted, Tag, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Binary, Json, PlainText};
use poem_openapi::{ApiResponse, Object};
use schema::store::received::{self, Attachment, Received};
use std::collections::HashMap;

pub struct ReceivedApi;

/// How long an attachment's download link works.
pub const DOWNLOAD_VALID_SECONDS: i64 = 15 * 60;

/// Types served as themselves; anything else (`text/html` and `image/svg+xml` included) is
/// served as `application/octet-stream`.
const INLINE_SAFE_TYPES: &[&str] = &[
    "message/rfc822",
    "application/pdf",
    "application/zip",
    "text/plain",
    "text/csv",
    "text/calendar",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "audio/mpeg",
    "video/mp4",
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.ms-excel",
];

/// An attachment of a received email.
#[derive(Object)]
pub struct ReceivedAttachmentView {
    /// The attachment's id.
    pub id: String,
    /// The file name it came with, made safe (`attachment-<n>` when nothing usable was left).
    pub filename: String,
    /// The part's MIME type, lower case (`application/octet-stream` when it gave none).
    pub content_type: String,
    /// `attachment` or `inline`.
    pub content_disposition: String,
    /// The part's Content-ID, when it has one.
    pub content_id: Nullable<String>,
    /// Bytes (decoded).
    pub size: i32,
}

/// A received email as listed.
#[derive(Object)]
pub struct ReceivedEmailItem {
    /// Always `email`.
    pub object: String,
    /// The received email's id.
    pub id: String,
    /// The `To` addresses of the message.
    pub to: Vec<String>,
    /// The `From` of the message (`Name <address>` or an address).
    pub from: String,
    /// The `Subject` of the message.
    pub subject: String,
    /// The message's own Message-ID, without angle brackets.
    pub message_id: Nullable<String>,
    /// The `Bcc` addresses of the message.
    pub bcc: Vec<String>,
    /// The `Cc` addresses of the message.
    pub cc: Vec<String>,
    /// The `Reply-To` addresses of the message.
    pub reply_to: Vec<String>,
    /// Why the message was accepted but not stored: `storage_quota`, `daily_cap`, `virus`,
    /// `parse_failed`, `no_mailbox` or `team_blocked`; null for a stored message.
    pub dropped_reason: Nullable<String>,
    /// When it was received.
    pub created_at: DateTime<Utc>,
    /// The message's attachments, in message order.
    pub attachments: Vec<ReceivedAttachmentView>,
}

/// A received email with its content.
#[derive(Object)]
pub struct ReceivedEmailView {
    #[oai(flatten)]
    pub item: ReceivedEmailItem,
    /// The team's addresses the message was accepted for (the SMTP recipients): route on this.
    pub received_for: Vec<String>,
    /// The HTML body as decoded, never sanitised; null when there is none or it was dropped.
    pub html: Nullable<String>,
    /// The text body as decoded; null when there is none or it was dropped.
    pub text: Nullable<String>,
    /// Each header field by lower-case name with its first value (the shape the Resend SDKs
    /// read); empty when dropped. `header_values` keeps every value of a repeated field.
    pub headers: HashMap<String, String>,
    /// Each header field by lower-case name, its values in message order; null when dropped.
    pub header_values: Nullable<HashMap<String, Vec<String>>>,
    /// A link to the raw source (`message/rfc822`) with no credential, valid 15 minutes; null
    /// when no source is kept (a dropped message other than `parse_failed`).
    pub raw: Nullable<RawLink>,
}

/// A link to a received email's raw source.
#[derive(Object)]
pub struct RawLink {
    /// Downloads the message exactly as received, with no credential.
    pub download_url: String,
    /// When `download_url` stops working.
    pub expires_at: DateTime<Utc>,
}

/// A page of received emails.
#[derive(Object)]
pub struct ReceivedEmailList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<ReceivedEmailItem>,
}

/// An attachment with its download link.
#[derive(Object)]
pub struct ReceivedAttachmentLink {
    /// Always `attachment`.
    pub object: String,
    #[oai(flatten)]
    pub part: ReceivedAttachmentView,
    /// A link that downloads the bytes with no credential, valid 15 minutes; absent for a part
    /// that was refused (too large to keep).
    #[oai(skip_serializing_if_is_none)]
    pub download_url: Option<String>,
    /// When `download_url` stops working; absent with `download_url`.
    #[oai(skip_serializing_if_is_none)]
    pub expires_at: Option<DateTime<Utc>>,
}

/// The attachments of a received email.
#[derive(Object)]
pub struct ReceivedAttachmentList {
    /// Always `list`.
    pub object: String,
    /// Whether more attachments follow this page.
    pub has_more: bool,
    /// The attachments, in message order.
    pub data: Vec<ReceivedAttachmentLink>,
}

#[derive(ApiResponse)]
pub enum RawResponse {
    /// The message exactly as received.
    #[oai(status = 200)]
    Ok(Binary<Vec<u8>>, #[oai(header = "content-type")] String, #[oai(header = "content-disposition")] String),
}

#[derive(ApiResponse)]
pub enum DownloadResponse {
    /// The attachment's bytes, as a download.
    #[oai(status = 200)]
    Ok(
        Binary<Vec<u8>>,
        #[oai(header = "content-type")] String,
        #[oai(header = "content-disposition")] String,
        #[oai(header = "x-content-type-options")] String,
        #[oai(header = "content-security-policy")] String,
        #[oai(header = "cache-control")] String,
    ),
    /// An unknown, expired or altered link.
    #[oai(status = 404)]
    NotFound(PlainText<String>),
}

#[poem_openapi::OpenApi(tag = "Tag::Receiving")]
impl ReceivedApi {
    /// List the team's received emails, newest first.
    #[oai(path = "/emails/receiving", method = "get", operation_id = "list-received-emails")]
    #[allow(clippy::too_many_arguments)]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this id.
        before: Query<Option<IdText>>,
        /// 1 to 200 characters matched case-insensitively in the subject, the sender's address
        /// or name, or any recipient; `%` and `_` are literal.
        search: Query<Option<Search<200>>>,
        /// ISO 8601 instant or calendar date, inclusive.
        start_date: Query<Option<InstantOrDate>>,
        /// ISO 8601 instant or calendar date, inclusive.
        end_date: Query<Option<InstantOrDate>>,
    ) -> ApiResult<Json<ReceivedEmailList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let (start, end) = date_range(start_date.0, end_date.0, true)?;
        let filter = received::ListFilter { search: search_text(search.0)?, start, end };
        let mut conn = state.pool.acquire().await?;
        let page = received::list(&mut conn, caller.team_id, &filter, &page).await?;
        let ids: Vec<uuid::Uuid> = page.data.iter().map(|r| r.id).collect();
        let mut attachments = by_email(received::attachments(&mut conn, caller.team_id, &ids).await?);
        let data = page
            .data
            .into_iter()
            .map(|r| {
                let parts = attachments.remove(&r.id).unwrap_or_default();
                item(r, parts)
            })
            .collect();
        Ok(Json(ReceivedEmailList { object: "list".into(), has_more: page.has_more, data }))
    }

    /// Retrieve a received email with its bodies, headers and the addresses it was accepted for.
    #[oai(path = "/emails/receiving/:email_id", method = "get", operation_id = "get-received-email")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, email_id: Path<String>) -> ApiResult<Json<ReceivedEmailView>> {
        let id = path_id(&email_id.0, "Received email")?;
        let mut conn = state.pool.acquire().await?;
        let found = received::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Received email"))?;
        let parts = received::attachments(&mut conn, caller.team_id, &[id]).await?;
        let header_values: Option<HashMap<String, Vec<String>>> = found.headers.clone().and_then(|h| serde_json::from_value(h).ok());
        let headers = header_values.iter().flatten().filter_map(|(name, values)| Some((name.clone(), values.first()?.clone()))).collect();
        let kept = matches!(found.dropped_reason.as_deref(), None | Some("parse_failed"));
        let raw = kept.then(|| {
            let expires_at = Utc::now() + chrono::TimeDelta::seconds(DOWNLOAD_VALID_SECONDS);
            let token = schema::tracking::raw_token(&state.link_key, id, caller.team_id, expires_at.timestamp());
            RawLink { download_url: format!("{}/received-raw/{token}", state.config.public_url.trim_end_matches('/')), expires_at }
        });
        let (html, text, received_for) = (found.html.clone(), found.text.clone(), found.received_for.clone());
        Ok(Json(ReceivedEmailView {
            item: item(found, parts),
            received_for,
            html: html.into(),
            text: text.into(),
            headers,
            header_values: header_values.into(),
            raw: raw.into(),
        }))
    }

    /// List a received email's attachments, each with a download link valid 15 minutes (a
    /// refused part is listed with its size and no link).
    #[oai(path = "/emails/receiving/:email_id/attachments", method = "get", operation_id = "list-received-email-attachments")]
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
    ) -> ApiResult<Json<ReceivedAttachmentList>> {
        let id = path_id(&email_id.0, "Received email")?;
        let page = page_request(limit.0, after.0, before.0)?;
        let mut conn = state.pool.acquire().await?;
        received::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Received email"))?;
        let parts = page_of(received::attachments(&mut conn, caller.team_id, &[id]).await?, |a| a.id, &page)?;
        let data = parts.data.into_iter().map(|a| attachment_link(&state, a)).collect();
        Ok(Json(ReceivedAttachmentList { object: "list".into(), has_more: parts.has_more, data }))
    }

    /// Retrieve one attachment of a received email with its download link (valid 15 minutes).
    #[oai(path = "/emails/receiving/:email_id/attachments/:attachment_id", method = "get", operation_id = "get-received-email-attachment")]
    async fn attachment(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        email_id: Path<String>,
        attachment_id: Path<String>,
    ) -> ApiResult<Json<ReceivedAttachmentLink>> {
        let id = path_id(&email_id.0, "Received email")?;
        let attachment_id = path_id(&attachment_id.0, "Attachment")?;
        let mut conn = state.pool.acquire().await?;
        let parts = received::attachments(&mut conn, caller.team_id, &[id]).await?;
        let part = parts.into_iter().find(|a| a.id == attachment_id).ok_or_else(|| ApiError::not_found("Attachment"))?;
        Ok(Json(attachment_link(&state, part)))
    }

    /// The raw source of a received email as `message/rfc822` (also for one that did not
    /// parse; no other dropped message keeps its source).
    #[oai(path = "/emails/receiving/:email_id/raw", method = "get", operation_id = "get-received-email-raw")]
    async fn raw(&self, state: Data<&AppState>, caller: Data<&Caller>, email_id: Path<String>) -> ApiResult<RawResponse> {
        let id = path_id(&email_id.0, "Received email")?;
        let raw = received::raw(&mut *state.pool.acquire().await?, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Received email"))?;
        Ok(RawResponse::Ok(Binary(raw), "message/rfc822".into(), format!("attachment; filename=\"{id}.eml\"")))
    }

    /// Download a received email's raw source through the `raw.download_url` of `GET
    /// /emails/receiving/{email_id}` (no credential; valid 15 minutes).
    #[oai(path = "/received-raw/:token", method = "get", operation_id = "download-received-raw", tag = "Tag::Pages")]
    async fn download_raw(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<DownloadResponse> {
        let found = match schema::tracking::verify_raw(&state.link_key, &token.0, Utc::now().timestamp()) {
            Some((id, team_id)) => received::raw(&mut *state.pool.acquire().await?, team_id, id).await?.map(|raw| (format!("{id}.eml"), "message/rfc822".to_string(), raw)),
            None => None,
        };
        Ok(serve_download(found))
    }

    /// Delete a received email with its attachments and raw source; it answers 404 afterwards.
    #[oai(path = "/emails/receiving/:email_id", method = "delete", operation_id = "delete-received-email")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, email_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let id = path_id(&email_id.0, "Received email")?;
        let mut tx = state.pool.begin().await?;
        if !received::delete(&mut tx, caller.team_id, id).await? {
            return Err(ApiError::not_found("Received email"));
        }
        tx.commit().await?;
        Ok(Json(Deleted { object: "email".into(), id: id.to_string(), deleted: true }))
    }

    /// Download a received attachment through a link from `GET
    /// /emails/receiving/{email_id}/attachments` (no credential). Served as a download; types
    /// outside a short allowlist are served as `application/octet-stream`.
    #[oai(path = "/received-attachments/:token", method = "get", operation_id = "download-received-attachment", tag = "Tag::Pages")]
    async fn download(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<DownloadResponse> {
        let found = match schema::tracking::verify_download(&state.link_key, &token.0, Utc::now().timestamp()) {
            Some(id) => received::attachment_content(&mut *state.pool.acquire().await?, id).await?,
            None => None,
        };
        Ok(serve_download(found))
    }
}

/// A received attachment with its download link (none for a refused part).
fn attachment_link(state: &AppState, a: Attachment) -> ReceivedAttachmentLink {
    let expires_at = Utc::now() + chrono::TimeDelta::seconds(DOWNLOAD_VALID_SECONDS);
    let link = (!a.refused).then(|| {
        let token = schema::tracking::download_token(&state.link_key, a.id, expires_at.timestamp());
        format!("{}/received-attachments/{token}", state.config.public_url.trim_end_matches('/'))
    });
    ReceivedAttachmentLink { object: "attachment".into(), part: part_view(a), expires_at: link.is_some().then_some(expires_at), download_url: link }
}

/// An attachment's bytes served as a download (types outside a short allowlist as
/// `application/octet-stream`), or the same 404 for any link that names nothing.
pub fn serve_download(found: Option<(String, String, Vec<u8>)>) -> DownloadResponse {
    let Some((filename, content_type, bytes)) = found else {
        return DownloadResponse::NotFound(PlainText("Not found".into()));
    };
    let served = if INLINE_SAFE_TYPES.contains(&content_type.as_str()) { content_type } else { "application/octet-stream".into() };
    DownloadResponse::Ok(
        Binary(bytes),
        served,
        content_disposition(&filename),
        "nosniff".into(),
        "default-src 'none'; sandbox".into(),
        "private, no-store".into(),
    )
}

/// `attachment` with an ASCII fallback name and the UTF-8 name (RFC 6266, RFC 8187).
fn content_disposition(filename: &str) -> String {
    let ascii: String = filename.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' }).collect();
    let encoded = percent_encoding::utf8_percent_encode(filename, percent_encoding::NON_ALPHANUMERIC);
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

fn by_email(parts: Vec<Attachment>) -> HashMap<uuid::Uuid, Vec<Attachment>> {
    let mut map: HashMap<uuid::Uuid, Vec<Attachment>> = HashMap::new();
    for part in parts {
        map.entry(part.received_email_id).or_default().push(part);
    }
    map
}

fn item(r: Received, parts: Vec<Attachment>) -> ReceivedEmailItem {
    ReceivedEmailItem {
        object: "email".into(),
        id: r.id.to_string(),
        to: r.to_addresses,
        from: r.from_header,
        subject: r.subject,
        message_id: r.message_id.into(),
        bcc: r.bcc,
        cc: r.cc,
        reply_to: r.reply_to,
        dropped_reason: r.dropped_reason.into(),
        created_at: r.created_at,
        attachments: parts.into_iter().map(part_view).collect(),
    }
}

fn part_view(a: Attachment) -> ReceivedAttachmentView {
    ReceivedAttachmentView {
        id: a.id.to_string(),
        filename: a.filename,
        content_type: a.content_type,
        content_disposition: a.content_disposition,
        content_id: a.content_id.into(),
        size: a.size,
    }
}
