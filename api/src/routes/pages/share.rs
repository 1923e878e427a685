//! The read-only page of a shared email.

use crate::http::error::ApiResult;
use crate::routes::Tag;
use crate::state::AppState;
use poem::web::Data;
use poem_openapi::param::Path;
use schema::store::{emails, shares};
use crate::routes::pages::html::{PageResponse, document, escape, message_body};

pub struct PagesApi;

#[poem_openapi::OpenApi(tag = "Tag::Pages")]
impl PagesApi {
    /// The read-only view of a sent email behind a link from `POST /emails/{email_id}/share`
    /// (`text/html`). An unknown, expired or revoked link answers the same 404 page.
    #[oai(path = "/share/:token", method = "get", operation_id = "view-shared-email")]
    async fn shared_email(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<PageResponse> {
        let mut conn = state.pool.acquire().await?;
        let Some(email_id) = shares::live_email(&mut conn, &schema::secret::hash(&token.0)).await? else {
            return Ok(PageResponse::not_found());
        };
        let Some(email) = emails::by_id(&mut conn, email_id).await? else { return Ok(PageResponse::not_found()) };
        let recipients = emails::recipients(&mut conn, &[email_id]).await?;
        let attachments = emails::attachments(&mut conn, email_id).await?;
        Ok(PageResponse::page(email_page(&email, &recipients, &attachments)))
    }
}

/// The page of one email: its headers, its body, and its attachments' names. Bcc recipients are
/// not shown.
fn email_page(email: &emails::Email, recipients: &[emails::Recipient], attachments: &[emails::Attachment]) -> String {
    let list = |kind: &str| {
        recipients.iter().filter(|r| r.kind == kind).map(|r| escape(&r.address)).collect::<Vec<_>>().join(", ")
    };
    let mut rows = vec![("From", escape(&email.from_header)), ("To", list("to"))];
    let cc = list("cc");
    if !cc.is_empty() {
        rows.push(("Cc", cc));
    }
    rows.push(("Date", escape(&email.created_at.format("%a, %d %b %Y %H:%M UTC").to_string())));
    let mut body = format!("<main><h1>{}</h1><dl>", escape(&email.subject));
    for (name, value) in rows {
        body.push_str(&format!("<dt>{name}</dt><dd>{value}</dd>"));
    }
    body.push_str("</dl>");
    body.push_str(&message_body(email.html.as_deref(), email.text.as_deref()));
    if !attachments.is_empty() {
        body.push_str("<h2>Attachments</h2><ul>");
        for attachment in attachments {
            body.push_str(&format!("<li>{} ({} bytes)</li>", escape(&attachment.filename), attachment.size));
        }
        body.push_str("</ul>");
    }
    body.push_str("</main>");
    document(&email.subject, &body)
}
