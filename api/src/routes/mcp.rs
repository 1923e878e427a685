//! The remote Model Context Protocol server at `POST /mcp` (rmcp, streamable HTTP, stateless
//! with JSON answers, so any process serves any request). Only an OAuth access token reaches
//! it (the gateway checks); each tool makes the call of its route, in this process, through
//! the whole gateway with the same token: the same scopes, the same checks, the same handler,
//! and a request-log entry whose source is `mcp`.

use poem::http::{HeaderValue, Method, header};
use poem::{Endpoint, IntoResponse, Request, Response};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The User-Agent of the calls tools make (the request log reads it as source `mcp`).
pub const USER_AGENT: &str = "herald-mcp/1.0";

/// The whole application (gateway and routes), filled once it is built: what tools call.
pub use crate::app::AppSlot;

/// The `/mcp` endpoint: hands the request to rmcp's streamable HTTP service.
pub struct McpEndpoint {
    service: StreamableHttpService<Tools, NeverSessionManager>,
}

impl McpEndpoint {
    pub fn new(app: AppSlot) -> Self {
        let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false).with_json_response(true).disable_allowed_hosts();
        let service = StreamableHttpService::new(move || Ok(Tools::new(app.clone())), Arc::new(NeverSessionManager::default()), config);
        Self { service }
    }
}

impl Endpoint for McpEndpoint {
    type Output = Response;

    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        let body = req.take_body().into_bytes().await?;
        let mut builder = http::Request::builder().method(req.method().clone()).uri(req.uri().clone());
        for (name, value) in req.headers() {
            builder = builder.header(name, value);
        }
        let request = builder.body(http_body_util::Full::new(body)).map_err(|e| poem::Error::from_string(e.to_string(), poem::http::StatusCode::BAD_REQUEST))?;
        let mut service = self.service.clone();
        let response = tower_service::Service::call(&mut service, request).await.unwrap_or_else(|never| match never {});
        let (parts, body) = response.into_parts();
        let bytes = http_body_util::BodyExt::collect(body).await.map(|c| c.to_bytes()).unwrap_or_default();
        let mut answer = Response::builder().status(parts.status).body(bytes);
        *answer.headers_mut() = parts.headers;
        Ok(answer.into_response())
    }
}

/// The tools: each one call of a route.
#[derive(Clone)]
pub struct Tools {
    app: AppSlot,
    tool_router: ToolRouter<Tools>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SendEmail {
    /// The sender, `Name <address@your-verified-domain>`.
    pub from: String,
    /// Recipient addresses (up to 50).
    pub to: Vec<String>,
    pub subject: String,
    /// The HTML body.
    pub html: Option<String>,
    /// The plain-text body.
    pub text: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListPage {
    /// Items per page, 1 to 100 (default 20).
    pub limit: Option<u32>,
    /// Return items after (older than) this id.
    pub after: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ById {
    /// The id.
    pub id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FindContacts {
    /// Text found in the address or the names.
    pub search: Option<String>,
    /// Items per page, 1 to 100 (default 20).
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UpsertContact {
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    /// Whether the contact is unsubscribed from every broadcast.
    pub unsubscribed: Option<bool>,
    /// Values of the team's contact properties.
    pub properties: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BroadcastDraft {
    /// The segment to send to.
    pub segment_id: String,
    /// The sender, on a verified domain.
    pub from: String,
    pub subject: String,
    pub html: Option<String>,
    pub text: Option<String>,
    /// A name to find the draft by.
    pub name: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SubjectLines {
    /// The current subject, if any.
    pub subject: Option<String>,
    /// The message's HTML.
    pub html: Option<String>,
    /// The message's text.
    pub text: Option<String>,
    /// Who receives it.
    pub audience: Option<String>,
    /// A template of the team (id or alias) whose current version is the message.
    pub template_id: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DraftEmail {
    /// What the message should say (up to 2,000 characters).
    pub brief: String,
    /// `neutral` (default), `friendly` or `formal`.
    pub tone: Option<String>,
    /// HTML to start from.
    pub existing_html: Option<String>,
    /// A template of the team (id or alias) whose current version is context.
    pub template_id: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct InboxQuery {
    /// Words, `"a phrase"` or `-excluded` words, 1 to 200 characters.
    pub q: String,
    /// Matches per page, 1 to 100 (default 20).
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct InboxReply {
    /// The conversation's id.
    pub conversation_id: String,
    /// The reply as text.
    pub text: Option<String>,
    /// The reply as HTML.
    pub html: Option<String>,
    /// The latest customer message's id, as the conversation shows it: a newer one makes the
    /// reply a conflict to read first.
    pub in_reply_to: Option<String>,
}

#[tool_router]
impl Tools {
    fn new(app: AppSlot) -> Self {
        Self { app, tool_router: Self::tool_router() }
    }

    /// Calls a route with the request's own token; answers its JSON as the tool's result (an
    /// error result for a 4xx or 5xx).
    async fn call_route(&self, parts: &http::request::Parts, method: Method, path: &str, body: Option<Value>) -> Result<CallToolResult, McpError> {
        let app = self.app.get().ok_or_else(|| McpError::internal_error("the application is not ready", None))?;
        let mut request = Request::builder().method(method).uri(path.parse().map_err(|_| McpError::invalid_params("a path does not parse", None))?);
        if let Some(authorization) = parts.headers.get(header::AUTHORIZATION) {
            request = request.header(header::AUTHORIZATION, authorization.clone());
        }
        request = request.header(header::USER_AGENT, HeaderValue::from_static(USER_AGENT));
        let request = match body {
            Some(body) => request.content_type("application/json").body(body.to_string()),
            None => request.finish(),
        };
        let response = app.get_response(request).await;
        let status = response.status();
        let text = response.into_body().into_string().await.unwrap_or_default();
        let block = ContentBlock::text(text);
        Ok(if status.is_success() { CallToolResult::success(vec![block]) } else { CallToolResult::error(vec![block]) })
    }

    #[tool(description = "Send an email from one of the team's verified domains (needs emails:send). Answers the new email's id.")]
    async fn send_email(&self, Extension(parts): Extension<http::request::Parts>, Parameters(send): Parameters<SendEmail>) -> Result<CallToolResult, McpError> {
        let body = json!({ "from": send.from, "to": send.to, "subject": send.subject, "html": send.html, "text": send.text });
        self.call_route(&parts, Method::POST, "/emails", Some(body)).await
    }

    #[tool(description = "List the team's sent emails, newest first (needs emails:read).")]
    async fn list_emails(&self, Extension(parts): Extension<http::request::Parts>, Parameters(page): Parameters<ListPage>) -> Result<CallToolResult, McpError> {
        self.call_route(&parts, Method::GET, &paged("/emails", &page), None).await
    }

    #[tool(description = "Read one sent email with its status and events (needs emails:read).")]
    async fn get_email(&self, Extension(parts): Extension<http::request::Parts>, Parameters(email): Parameters<ById>) -> Result<CallToolResult, McpError> {
        self.call_route(&parts, Method::GET, &format!("/emails/{}", segment(&email.id)), None).await
    }

    #[tool(description = "List the team's sending domains and their status (needs domains:read).")]
    async fn list_domains(&self, Extension(parts): Extension<http::request::Parts>, Parameters(page): Parameters<ListPage>) -> Result<CallToolResult, McpError> {
        self.call_route(&parts, Method::GET, &paged("/domains", &page), None).await
    }

    #[tool(description = "Read one domain with the DNS records to publish (needs domains:read).")]
    async fn get_domain(&self, Extension(parts): Extension<http::request::Parts>, Parameters(domain): Parameters<ById>) -> Result<CallToolResult, McpError> {
        self.call_route(&parts, Method::GET, &format!("/domains/{}", segment(&domain.id)), None).await
    }

    #[tool(description = "Find contacts by address or name (needs contacts:read).")]
    async fn find_contacts(&self, Extension(parts): Extension<http::request::Parts>, Parameters(find): Parameters<FindContacts>) -> Result<CallToolResult, McpError> {
        let mut path = format!("/contacts?limit={}", find.limit.unwrap_or(20));
        if let Some(search) = find.search.filter(|s| !s.trim().is_empty()) {
            path.push_str(&format!("&search={}", url::form_urlencoded::byte_serialize(search.as_bytes()).collect::<String>()));
        }
        self.call_route(&parts, Method::GET, &path, None).await
    }

    #[tool(description = "Create a contact, or update the one with this address (needs contacts:write).")]
    async fn upsert_contact(&self, Extension(parts): Extension<http::request::Parts>, Parameters(contact): Parameters<UpsertContact>) -> Result<CallToolResult, McpError> {
        let mut fields = serde_json::Map::new();
        for (key, value) in [("first_name", contact.first_name.map(Value::from)), ("last_name", contact.last_name.map(Value::from)), ("unsubscribed", contact.unsubscribed.map(Value::from)), ("properties", contact.properties.map(Value::Object))] {
            if let Some(value) = value {
                fields.insert(key.into(), value);
            }
        }
        let path = format!("/contacts/{}", segment(&contact.email));
        let existing = self.call_route(&parts, Method::GET, &path, None).await?;
        if existing.is_error == Some(true) {
            fields.insert("email".into(), Value::from(contact.email));
            return self.call_route(&parts, Method::POST, "/contacts", Some(Value::Object(fields))).await;
        }
        self.call_route(&parts, Method::PATCH, &path, Some(Value::Object(fields))).await
    }

    #[tool(description = "List the team's segments (needs contacts:read).")]
    async fn list_segments(&self, Extension(parts): Extension<http::request::Parts>, Parameters(page): Parameters<ListPage>) -> Result<CallToolResult, McpError> {
        self.call_route(&parts, Method::GET, &paged("/segments", &page), None).await
    }

    #[tool(description = "List the support Inbox's open conversations, newest first (needs inbox:read).")]
    async fn list_inbox_conversations(&self, Extension(parts): Extension<http::request::Parts>, Parameters(page): Parameters<ListPage>) -> Result<CallToolResult, McpError> {
        self.call_route(&parts, Method::GET, &paged("/inbox/conversations", &page), None).await
    }

    #[tool(description = "Read an Inbox conversation's messages and notes, oldest first (needs inbox:read).")]
    async fn read_inbox_conversation(&self, Extension(parts): Extension<http::request::Parts>, Parameters(conversation): Parameters<ById>) -> Result<CallToolResult, McpError> {
        self.call_route(&parts, Method::GET, &format!("/inbox/conversations/{}/messages?limit=100", segment(&conversation.id)), None).await
    }

    #[tool(description = "Search the Inbox's conversations by subject, message text or address, best match first (needs inbox:read).")]
    async fn search_inbox(&self, Extension(parts): Extension<http::request::Parts>, Parameters(query): Parameters<InboxQuery>) -> Result<CallToolResult, McpError> {
        self.call_route(&parts, Method::GET, &format!("/inbox/search?q={}&limit={}", segment(&query.q), query.limit.unwrap_or(20)), None).await
    }

    #[tool(description = "Reply to an Inbox conversation's customer from its channel's address (needs inbox:write).")]
    async fn reply_to_inbox_conversation(&self, Extension(parts): Extension<http::request::Parts>, Parameters(reply): Parameters<InboxReply>) -> Result<CallToolResult, McpError> {
        let body = json!({ "text": reply.text, "html": reply.html, "in_reply_to": reply.in_reply_to });
        self.call_route(&parts, Method::POST, &format!("/inbox/conversations/{}/replies", segment(&reply.conversation_id)), Some(body)).await
    }

    #[tool(description = "Suggest subject lines for a message with AI assist; nothing is saved or sent (needs ai:use; one AI credit).")]
    async fn suggest_subject_lines(&self, Extension(parts): Extension<http::request::Parts>, Parameters(ask): Parameters<SubjectLines>) -> Result<CallToolResult, McpError> {
        let body = serde_json::json!({ "subject": ask.subject, "html": ask.html, "text": ask.text, "audience": ask.audience, "template_id": ask.template_id });
        self.call_route(&parts, Method::POST, "/ai/subject-lines", Some(body)).await
    }

    #[tool(description = "Draft an email's HTML and text from a brief with AI assist; nothing is saved or sent (needs ai:use; one AI credit).")]
    async fn draft_email(&self, Extension(parts): Extension<http::request::Parts>, Parameters(ask): Parameters<DraftEmail>) -> Result<CallToolResult, McpError> {
        let body = serde_json::json!({ "brief": ask.brief, "tone": ask.tone, "existing_html": ask.existing_html, "template_id": ask.template_id });
        self.call_route(&parts, Method::POST, "/ai/draft", Some(body)).await
    }

    #[tool(description = "Create a broadcast draft for a segment; it is not sent (needs broadcasts:write).")]
    async fn create_broadcast_draft(&self, Extension(parts): Extension<http::request::Parts>, Parameters(draft): Parameters<BroadcastDraft>) -> Result<CallToolResult, McpError> {
        let body = json!({ "segment_id": draft.segment_id, "from": draft.from, "subject": draft.subject, "html": draft.html, "text": draft.text, "name": draft.name });
        self.call_route(&parts, Method::POST, "/broadcasts", Some(body)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("herald", env!("CARGO_PKG_VERSION")))
            .with_instructions("Herald's email API: send and read emails, list domains and their DNS records, find and upsert contacts, list segments, draft broadcasts, read, search and answer the support Inbox, and suggest subject lines and draft emails with AI assist. Each tool acts with this token's scopes in its team.")
    }
}

fn paged(path: &str, page: &ListPage) -> String {
    let mut path = format!("{path}?limit={}", page.limit.unwrap_or(20));
    if let Some(after) = &page.after {
        path.push_str(&format!("&after={}", segment(after)));
    }
    path
}

/// A value as one path segment or query value.
fn segment(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect::<String>().replace('+', "%20")
}
