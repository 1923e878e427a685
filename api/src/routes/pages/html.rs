//! Pages served to people rather than programs, at `HERALD_PUBLIC_URL`: plain server-rendered
//! HTML without JavaScript.

use crate::http::error::ApiResult;
use crate::routes::Tag;
use crate::state::AppState;
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Html;
use poem_openapi::ApiResponse;
use schema::store::{emails, shares};

pub struct PagesApi;

/// No scripts anywhere; the email's own HTML is shown in a sandboxed frame, with only inline
/// styles and https or inline images.
pub const PAGE_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; frame-src 'self'; base-uri 'none'; form-action 'none'";

/// Who made a request to a page (kept with consent records and engagement events): the peer's
/// IP address and the User-Agent, cut to 500 characters.
pub fn visitor(request: &poem::Request) -> (Option<String>, Option<String>) {
    let ip_address = request.remote_addr().as_socket_addr().map(|addr| addr.ip().to_string());
    let user_agent = request.header("user-agent").map(|agent| agent.chars().take(500).collect());
    (ip_address, user_agent)
}

/// The page of an unknown, expired or revoked link.
pub fn not_found_page() -> String {
    document("Link not found", "<main><h1>This link does not work</h1><p>It may have expired or been revoked. Ask the sender for a new one.</p></main>")
}

/// A hosted page or the page that says it is not there.
#[derive(ApiResponse)]
pub enum PageResponse {
    /// The page.
    #[oai(status = 200)]
    Ok(
        Html<String>,
        #[oai(header = "content-security-policy")] String,
        #[oai(header = "cache-control")] String,
        #[oai(header = "referrer-policy")] String,
        #[oai(header = "x-robots-tag")] String,
    ),
    /// An unknown, expired or revoked link: one answer for all three.
    #[oai(status = 404)]
    NotFound(Html<String>, #[oai(header = "cache-control")] String),
}

/// A page whose forms post back to Herald.
pub const FORM_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

impl PageResponse {
    fn page(html: String) -> Self {
        PageResponse::Ok(Html(html), PAGE_POLICY.into(), "no-store".into(), "no-referrer".into(), "noindex, nofollow".into())
    }

    /// A page holding a form that posts back here.
    pub fn form_page(title: &str, body: &str) -> Self {
        PageResponse::Ok(Html(document(title, body)), FORM_POLICY.into(), "no-store".into(), "no-referrer".into(), "noindex, nofollow".into())
    }

    pub fn not_found() -> Self {
        PageResponse::NotFound(Html(not_found_page()), "no-store".into())
    }
}

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

/// A message's body for a page: its HTML in a sandboxed frame, else its text.
pub fn message_body(html: Option<&str>, text: Option<&str>) -> String {
    match (html, text) {
        (Some(html), _) => {
            format!("<iframe title=\"Message\" sandbox referrerpolicy=\"no-referrer\" srcdoc=\"{}\"></iframe>", escape(html))
        }
        (None, Some(text)) => format!("<pre>{}</pre>", escape(text)),
        (None, None) => String::new(),
    }
}

pub fn document(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <meta name=\"robots\" content=\"noindex\"><title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>",
        escape(title)
    )
}

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f6f6;color:#222}\
    main{max-width:760px;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:6px}\
    h1{font-size:1.4rem;margin:0 0 1rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0 0 1rem}\
    dt{font-weight:600}dd{margin:0;word-break:break-all}iframe{width:100%;min-height:60vh;border:1px solid #ddd}\
    pre{white-space:pre-wrap}fieldset{border:1px solid #ddd;border-radius:6px;margin:0 0 1rem}\
    label{display:block;margin:.5rem 0}small{display:block;color:#666;margin-left:1.6rem}\
    button{font:inherit;padding:.5rem 1rem;border:0;border-radius:4px;background:#222;color:#fff;cursor:pointer}\
    .notice{background:#eef7ee;border:1px solid #9c9;padding:.5rem 1rem;border-radius:4px}";

/// Escapes text for HTML content and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_quotes_are_escaped() {
        assert_eq!(escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }
}
