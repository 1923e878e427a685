//! What the pages served to people share, at `HERALD_PUBLIC_URL`: plain server-rendered HTML
//! without JavaScript, its content policies, the document frame and escaping.

use poem_openapi::payload::Html;
use poem_openapi::ApiResponse;

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
    pub fn page(html: String) -> Self {
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
