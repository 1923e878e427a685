//! The operation table: every route's id, method, path, least credential and OAuth scope.
//! The gateway authorizes each request from it, and the OpenAPI document's `x-svc-*`
//! annotations are written from it, so the two cannot disagree.

use poem::http::Method;

/// The least credential an operation needs (`x-svc-permission`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credential (health, readiness, OAuth endpoints).
    Public,
    /// A page for people, reached from a link Herald handed out: no credential, and no
    /// User-Agent needed (mail clients' one-click posts need not send one).
    Page,
    /// Any API key, `sending_access` included.
    SendingAccess,
    /// A `full_access` API key.
    FullAccess,
    /// A dashboard session only.
    Session,
    /// No key or session reaches it (OAuth access token only).
    TokenOnly,
    /// An OAuth client's registration access token (`rkor_`), checked by the route itself.
    Registration,
    /// The Inbox: an API key of any permission whose `inbox_access` reaches the operation's
    /// level, an OAuth token with its Inbox scope, or the dashboard session (a viewer reads only).
    Inbox,
}

impl Access {
    /// Whether a request must carry a key or token.
    pub fn needs_credential(self) -> bool {
        !matches!(self, Access::Public | Access::Page | Access::Registration)
    }

    /// The `x-svc-permission` value (`None` is JSON null).
    pub fn annotation(self) -> Option<&'static str> {
        match self {
            Access::Public | Access::Page => Some("none"),
            Access::SendingAccess | Access::Inbox => Some("sending_access"),
            Access::FullAccess => Some("full_access"),
            Access::Session => Some("session"),
            Access::TokenOnly | Access::Registration => None,
        }
    }
}

/// One API operation.
#[derive(Debug, Clone)]
pub struct Operation {
    pub id: &'static str,
    pub method: Method,
    pub path: &'static str,
    pub access: Access,
    /// OAuth scope a token needs, or `None` when no scope reaches it.
    pub scope: Option<&'static str>,
    /// Inbox access level on `/inbox` operations.
    pub inbox_access: Option<&'static str>,
    /// Whether the request carries a send's content (logged as size and digest).
    pub carries_send_content: bool,
    /// An AI assist call: every text of its body is logged as size and digest, and its
    /// deadline covers the provider's own timeout.
    pub ai: bool,
    /// The largest request body it reads, in bytes: past it the gateway answers `413` without
    /// reading on.
    pub body_limit: usize,
}

/// The body limit of most operations: far above any JSON they take.
pub const SMALL_BODY: usize = 1024 * 1024;
/// Sends: attachments up to 40 MB (base64 in JSON, a third larger) and 2 MB of content.
pub const SEND_BODY: usize = 64 * 1024 * 1024;
/// Content that may hold 2 MB of HTML and text (templates, broadcasts, saved blocks, the
/// MCP server's tools), escaped in JSON.
pub const CONTENT_BODY: usize = 8 * 1024 * 1024;
/// A contact import: a CSV file of up to 50 MB and its form fields.
pub const IMPORT_BODY: usize = 51 * 1024 * 1024;
/// A brand-kit upload: an image of up to 2 MB and its form fields.
pub const UPLOAD_BODY: usize = 2 * 1024 * 1024 + 64 * 1024;

const fn op(id: &'static str, method: Method, path: &'static str, access: Access) -> Operation {
    Operation { id, method, path, access, scope: None, inbox_access: None, carries_send_content: false, ai: false, body_limit: SMALL_BODY }
}

impl Operation {
    /// Whether it answers errors in OAuth's `{ error, error_description }` shape (document C:
    /// the token, revoke, register and registration-management routes).
    pub fn answers_oauth_errors(&self) -> bool {
        matches!(
            self.id,
            "register-oauth-client" | "get-oauth-client" | "update-oauth-client" | "delete-oauth-client" | "oauth-token" | "oauth-revoke"
        )
    }

    /// The same operation reading bodies of up to `limit` bytes.
    const fn body(mut self, limit: usize) -> Operation {
        self.body_limit = limit;
        self
    }
}

/// Every operation Herald serves.
pub static OPERATIONS: &[Operation] = &[
    op("get-health", Method::GET, "/health", Access::Public),
    op("get-ready", Method::GET, "/ready", Access::Public),
    op("sign-up", Method::POST, "/auth/signup", Access::Public),
    op("sign-in", Method::POST, "/auth/login", Access::Public),
    op("get-session", Method::GET, "/auth/session", Access::Session),
    op("sign-out", Method::POST, "/auth/logout", Access::Session),
    op("list-teams", Method::GET, "/teams", Access::Session),
    op("create-team", Method::POST, "/teams", Access::Session),
    op("switch-team", Method::POST, "/teams/{team_id}/switch", Access::Session),
    op("update-team-member", Method::PATCH, "/team/members/{user_id}", Access::Session),
    op("remove-team-member", Method::DELETE, "/team/members/{user_id}", Access::Session),
    op("create-invitation", Method::POST, "/team/invitations", Access::Session),
    op("list-invitations", Method::GET, "/team/invitations", Access::Session),
    op("revoke-invitation", Method::DELETE, "/team/invitations/{invitation_id}", Access::Session),
    op("accept-invitation", Method::POST, "/auth/invitations/accept", Access::Session),
    op("view-invitation", Method::GET, "/invitations/{token}", Access::Page),
    op("join-by-invitation", Method::POST, "/invitations/{token}", Access::Page),
    op("resend-verification", Method::POST, "/auth/verify-email/resend", Access::Session),
    op("view-verify-email", Method::GET, "/auth/verify-email/{token}", Access::Page),
    op("verify-email", Method::POST, "/auth/verify-email/{token}", Access::Page),
    op("request-password-reset", Method::POST, "/auth/password-reset", Access::Public),
    op("view-password-reset", Method::GET, "/auth/password-reset/{token}", Access::Page),
    op("reset-password", Method::POST, "/auth/password-reset/{token}", Access::Page),
    op("enrol-totp", Method::POST, "/auth/mfa/totp", Access::Session),
    op("confirm-totp", Method::POST, "/auth/mfa/totp/confirm", Access::Session),
    op("disable-totp", Method::POST, "/auth/mfa/totp/disable", Access::Session),
    op("get-authorization-server-metadata", Method::GET, "/.well-known/oauth-authorization-server", Access::Public),
    op("get-protected-resource-metadata", Method::GET, "/.well-known/oauth-protected-resource", Access::Public),
    op("register-oauth-client", Method::POST, "/oauth/register", Access::Public),
    op("get-oauth-client", Method::GET, "/oauth/register/{client_id}", Access::Registration),
    op("update-oauth-client", Method::PUT, "/oauth/register/{client_id}", Access::Registration),
    op("delete-oauth-client", Method::DELETE, "/oauth/register/{client_id}", Access::Registration),
    op("authorize", Method::GET, "/oauth/authorize", Access::Page),
    op("view-consent", Method::GET, "/oauth/consent/{token}", Access::Page),
    op("answer-consent", Method::POST, "/oauth/consent/{token}", Access::Page),
    op("oauth-token", Method::POST, "/oauth/token", Access::Public),
    op("oauth-revoke", Method::POST, "/oauth/revoke", Access::Public),
    op("list-oauth-grants", Method::GET, "/oauth/grants", Access::FullAccess),
    op("delete-oauth-grant", Method::DELETE, "/oauth/grants/{grant_id}", Access::FullAccess),
    op("mcp", Method::POST, "/mcp", Access::TokenOnly).body(CONTENT_BODY),
    op("list-team-members", Method::GET, "/team/members", Access::FullAccess),
    op("create-api-key", Method::POST, "/api-keys", Access::FullAccess),
    op("list-api-keys", Method::GET, "/api-keys", Access::FullAccess),
    op("update-api-key", Method::PATCH, "/api-keys/{api_key_id}", Access::FullAccess),
    op("delete-api-key", Method::DELETE, "/api-keys/{api_key_id}", Access::FullAccess),
    scoped("list-logs", Method::GET, "/logs", Access::FullAccess, "logs:read"),
    scoped("get-log", Method::GET, "/logs/{log_id}", Access::FullAccess, "logs:read"),
    scoped("create-domain", Method::POST, "/domains", Access::FullAccess, "domains:write"),
    scoped("list-domains", Method::GET, "/domains", Access::FullAccess, "domains:read"),
    scoped("claim-domain", Method::POST, "/domains/claim", Access::FullAccess, "domains:write"),
    scoped("get-domain", Method::GET, "/domains/{domain_id}", Access::FullAccess, "domains:read"),
    scoped("update-domain", Method::PATCH, "/domains/{domain_id}", Access::FullAccess, "domains:write"),
    scoped("delete-domain", Method::DELETE, "/domains/{domain_id}", Access::FullAccess, "domains:write"),
    scoped("verify-domain", Method::POST, "/domains/{domain_id}/verify", Access::FullAccess, "domains:write"),
    scoped("get-domain-claim", Method::GET, "/domains/{domain_id}/claim", Access::FullAccess, "domains:read"),
    scoped("rotate-domain-dkim", Method::POST, "/domains/{domain_id}/dkim/rotate", Access::FullAccess, "domains:write"),
    scoped("autoconfigure-domain", Method::POST, "/domains/{domain_id}/autoconfigure", Access::FullAccess, "domains:write"),
    scoped("delete-domain-autoconfigure-credential", Method::DELETE, "/domains/{domain_id}/autoconfigure/credential", Access::FullAccess, "domains:write"),
    send("send-email", "/emails"),
    send("send-batch-emails", "/emails/batch"),
    read("list-emails", Method::GET, "/emails"),
    read("get-email", Method::GET, "/emails/{email_id}"),
    scoped("update-email", Method::PATCH, "/emails/{email_id}", Access::FullAccess, "emails:send"),
    scoped("cancel-email", Method::POST, "/emails/{email_id}/cancel", Access::FullAccess, "emails:send"),
    read("list-email-attachments", Method::GET, "/emails/{email_id}/attachments"),
    read("get-email-attachment", Method::GET, "/emails/{email_id}/attachments/{attachment_id}"),
    read("get-email-metrics", Method::GET, "/emails/metrics"),
    scoped("share-email", Method::POST, "/emails/{email_id}/share", Access::FullAccess, "emails:send"),
    scoped("revoke-email-shares", Method::DELETE, "/emails/{email_id}/share", Access::FullAccess, "emails:send"),
    read("list-received-emails", Method::GET, "/emails/receiving"),
    read("get-received-email", Method::GET, "/emails/receiving/{email_id}"),
    scoped("delete-received-email", Method::DELETE, "/emails/receiving/{email_id}", Access::FullAccess, "emails:send"),
    read("list-received-email-attachments", Method::GET, "/emails/receiving/{email_id}/attachments"),
    read("get-received-email-attachment", Method::GET, "/emails/receiving/{email_id}/attachments/{attachment_id}"),
    read("get-received-email-raw", Method::GET, "/emails/receiving/{email_id}/raw"),
    op("download-received-attachment", Method::GET, "/received-attachments/{token}", Access::Page),
    op("download-email-attachment", Method::GET, "/email-attachments/{token}", Access::Page),
    op("download-received-raw", Method::GET, "/received-raw/{token}", Access::Page),
    op("view-shared-email", Method::GET, "/share/{token}", Access::Page),
    op("view-preferences", Method::GET, "/preferences/{token}", Access::Page),
    op("save-preferences", Method::POST, "/preferences/{token}", Access::Page),
    op("view-unsubscribe", Method::GET, "/unsubscribe/{token}", Access::Page),
    op("one-click-unsubscribe", Method::POST, "/unsubscribe/{token}", Access::Page),
    op("track-click", Method::GET, "/click/{token}", Access::Page),
    op("track-open", Method::GET, "/open/{token}", Access::Page),
    scoped("create-suppression", Method::POST, "/suppressions", Access::FullAccess, "suppressions:write"),
    scoped("batch-add-suppressions", Method::POST, "/suppressions/batch/add", Access::FullAccess, "suppressions:write"),
    scoped("batch-remove-suppressions", Method::POST, "/suppressions/batch/remove", Access::FullAccess, "suppressions:write"),
    scoped("list-suppressions", Method::GET, "/suppressions", Access::FullAccess, "suppressions:read"),
    scoped("get-suppression", Method::GET, "/suppressions/{suppression}", Access::FullAccess, "suppressions:read"),
    scoped("delete-suppression", Method::DELETE, "/suppressions/{suppression}", Access::FullAccess, "suppressions:write"),
    scoped("create-contact-import", Method::POST, "/contacts/imports", Access::FullAccess, "contacts:write").body(IMPORT_BODY),
    scoped("list-contact-imports", Method::GET, "/contacts/imports", Access::SendingAccess, "contacts:read"),
    scoped("get-contact-import", Method::GET, "/contacts/imports/{import_id}", Access::SendingAccess, "contacts:read"),
    scoped("create-contact", Method::POST, "/contacts", Access::FullAccess, "contacts:write"),
    scoped("list-contacts", Method::GET, "/contacts", Access::SendingAccess, "contacts:read"),
    scoped("get-contact", Method::GET, "/contacts/{contact}", Access::SendingAccess, "contacts:read"),
    scoped("update-contact", Method::PATCH, "/contacts/{contact}", Access::FullAccess, "contacts:write"),
    scoped("delete-contact", Method::DELETE, "/contacts/{contact}", Access::FullAccess, "contacts:write"),
    scoped("create-contact-property", Method::POST, "/contact-properties", Access::FullAccess, "contacts:write"),
    scoped("list-contact-properties", Method::GET, "/contact-properties", Access::SendingAccess, "contacts:read"),
    scoped("get-contact-property", Method::GET, "/contact-properties/{property_id}", Access::SendingAccess, "contacts:read"),
    scoped("update-contact-property", Method::PATCH, "/contact-properties/{property_id}", Access::FullAccess, "contacts:write"),
    scoped("delete-contact-property", Method::DELETE, "/contact-properties/{property_id}", Access::FullAccess, "contacts:write"),
    scoped("create-topic", Method::POST, "/topics", Access::FullAccess, "contacts:write"),
    scoped("list-topics", Method::GET, "/topics", Access::SendingAccess, "contacts:read"),
    scoped("get-topic", Method::GET, "/topics/{topic_id}", Access::SendingAccess, "contacts:read"),
    scoped("update-topic", Method::PATCH, "/topics/{topic_id}", Access::FullAccess, "contacts:write"),
    scoped("delete-topic", Method::DELETE, "/topics/{topic_id}", Access::FullAccess, "contacts:write"),
    scoped("list-contact-consents", Method::GET, "/contacts/{contact}/consents", Access::FullAccess, "contacts:read"),
    scoped("list-contact-topics", Method::GET, "/contacts/{contact}/topics", Access::SendingAccess, "contacts:read"),
    scoped("update-contact-topics", Method::PATCH, "/contacts/{contact}/topics", Access::FullAccess, "contacts:write"),
    scoped("create-segment", Method::POST, "/segments", Access::FullAccess, "contacts:write"),
    scoped("list-segments", Method::GET, "/segments", Access::SendingAccess, "contacts:read"),
    scoped("count-segment", Method::POST, "/segments/count", Access::SendingAccess, "contacts:read"),
    scoped("get-segment", Method::GET, "/segments/{segment_id}", Access::SendingAccess, "contacts:read"),
    scoped("update-segment", Method::PATCH, "/segments/{segment_id}", Access::FullAccess, "contacts:write"),
    scoped("delete-segment", Method::DELETE, "/segments/{segment_id}", Access::FullAccess, "contacts:write"),
    scoped("add-contact-segment", Method::POST, "/contacts/{contact}/segments/{segment_id}", Access::FullAccess, "contacts:write"),
    scoped("remove-contact-segment", Method::DELETE, "/contacts/{contact}/segments/{segment_id}", Access::FullAccess, "contacts:write"),
    scoped("list-contact-segments", Method::GET, "/contacts/{contact}/segments", Access::SendingAccess, "contacts:read"),
    scoped("list-segment-contacts", Method::GET, "/segments/{segment_id}/contacts", Access::SendingAccess, "contacts:read"),
    scoped("create-audience", Method::POST, "/audiences", Access::FullAccess, "contacts:write"),
    scoped("list-audiences", Method::GET, "/audiences", Access::SendingAccess, "contacts:read"),
    scoped("get-audience", Method::GET, "/audiences/{audience_id}", Access::SendingAccess, "contacts:read"),
    scoped("delete-audience", Method::DELETE, "/audiences/{audience_id}", Access::FullAccess, "contacts:write"),
    scoped("create-audience-contact", Method::POST, "/audiences/{audience_id}/contacts", Access::FullAccess, "contacts:write"),
    scoped("list-audience-contacts", Method::GET, "/audiences/{audience_id}/contacts", Access::SendingAccess, "contacts:read"),
    scoped("get-audience-contact", Method::GET, "/audiences/{audience_id}/contacts/{contact}", Access::SendingAccess, "contacts:read"),
    scoped("update-audience-contact", Method::PATCH, "/audiences/{audience_id}/contacts/{contact}", Access::FullAccess, "contacts:write"),
    scoped("delete-audience-contact", Method::DELETE, "/audiences/{audience_id}/contacts/{contact}", Access::FullAccess, "contacts:write"),
    scoped("create-webhook", Method::POST, "/webhooks", Access::FullAccess, "webhooks:write"),
    scoped("list-webhooks", Method::GET, "/webhooks", Access::FullAccess, "webhooks:read"),
    scoped("get-webhook", Method::GET, "/webhooks/{webhook_id}", Access::FullAccess, "webhooks:read"),
    scoped("update-webhook", Method::PATCH, "/webhooks/{webhook_id}", Access::FullAccess, "webhooks:write"),
    scoped("delete-webhook", Method::DELETE, "/webhooks/{webhook_id}", Access::FullAccess, "webhooks:write"),
    scoped("list-webhook-events", Method::GET, "/webhooks/{webhook_id}/events", Access::FullAccess, "webhooks:read"),
    scoped("get-webhook-event", Method::GET, "/webhooks/{webhook_id}/events/{event_id}", Access::FullAccess, "webhooks:read"),
    scoped("list-webhook-event-attempts", Method::GET, "/webhooks/{webhook_id}/events/{event_id}/attempts", Access::FullAccess, "webhooks:read"),
    scoped("replay-webhook-event", Method::POST, "/webhooks/{webhook_id}/events/{event_id}/replay", Access::FullAccess, "webhooks:write"),
    scoped("rotate-webhook-signing-secret", Method::POST, "/webhooks/{webhook_id}/signing-secret/rotate", Access::FullAccess, "webhooks:write"),
    scoped("get-team", Method::GET, "/team", Access::FullAccess, "team:read"),
    scoped("update-team", Method::PATCH, "/team", Access::FullAccess, "team:write"),
    op("create-verified-identity", Method::POST, "/team/identities", Access::FullAccess),
    op("list-verified-identities", Method::GET, "/team/identities", Access::FullAccess),
    op("delete-verified-identity", Method::DELETE, "/team/identities/{identity_id}", Access::FullAccess),
    op("configure-sso", Method::PUT, "/team/sso", Access::Session),
    op("delete-sso", Method::DELETE, "/team/sso", Access::Session),
    op("start-sso", Method::GET, "/auth/sso/start", Access::Page),
    op("finish-sso", Method::GET, "/auth/sso/callback", Access::Page),
    op("view-verified-identity-link", Method::GET, "/identities/{token}", Access::Page),
    op("confirm-verified-identity", Method::POST, "/identities/{token}", Access::Page),
    scoped("get-billing", Method::GET, "/billing", Access::FullAccess, "billing:read"),
    scoped("list-invoices", Method::GET, "/billing/invoices", Access::FullAccess, "billing:read"),
    op("create-checkout-session", Method::POST, "/billing/checkout", Access::FullAccess),
    op("create-billing-portal-session", Method::POST, "/billing/portal", Access::FullAccess),
    op("receive-stripe-event", Method::POST, "/billing/stripe/webhook", Access::Public),
    op("change-plan", Method::POST, "/billing/plan", Access::FullAccess),
    op("add-billing-addon", Method::POST, "/billing/addons", Access::FullAccess),
    op("remove-billing-addon", Method::DELETE, "/billing/addons/{addon_code}", Access::FullAccess),
    op("create-export", Method::POST, "/exports", Access::FullAccess),
    op("list-exports", Method::GET, "/exports", Access::FullAccess),
    op("get-export", Method::GET, "/exports/{export_id}", Access::FullAccess),
    op("download-export", Method::GET, "/exports/download/{token}", Access::Page),
    op("create-migration", Method::POST, "/migrations", Access::FullAccess).body(IMPORT_BODY),
    op("list-migrations", Method::GET, "/migrations", Access::FullAccess),
    op("get-migration", Method::GET, "/migrations/{migration_id}", Access::FullAccess),
    op("start-migration", Method::POST, "/migrations/{migration_id}/start", Access::FullAccess),
    op("cancel-migration", Method::POST, "/migrations/{migration_id}/cancel", Access::FullAccess),
    ai("suggest-subject-lines", "/ai/subject-lines"),
    ai("suggest-subject-variants", "/ai/subject-variants"),
    ai("draft-email", "/ai/draft"),
    ai("write-alt-text", "/ai/alt-text"),
    ai("draft-block-document", "/ai/draft-blocks"),
    ai("rewrite-block", "/ai/rewrite"),
    ai("diagnose-email", "/ai/diagnosis"),
    op("update-billing", Method::PATCH, "/billing", Access::FullAccess),
    op("create-limit-request", Method::POST, "/billing/limit-requests", Access::FullAccess),
    op("list-limit-requests", Method::GET, "/billing/limit-requests", Access::FullAccess),
    scoped("upload-brand-asset", Method::POST, "/team/brand-kit/uploads", Access::FullAccess, "team:write").body(UPLOAD_BODY),
    op("get-brand-asset", Method::GET, "/brand-assets/{asset_id}", Access::Page),
    scoped("create-template", Method::POST, "/templates", Access::FullAccess, "templates:write").body(CONTENT_BODY),
    scoped("list-templates", Method::GET, "/templates", Access::SendingAccess, "templates:read"),
    scoped("get-template", Method::GET, "/templates/{template_id}", Access::SendingAccess, "templates:read"),
    scoped("update-template", Method::PATCH, "/templates/{template_id}", Access::FullAccess, "templates:write").body(CONTENT_BODY),
    scoped("delete-template", Method::DELETE, "/templates/{template_id}", Access::FullAccess, "templates:write"),
    scoped("publish-template", Method::POST, "/templates/{template_id}/publish", Access::FullAccess, "templates:write"),
    scoped("duplicate-template", Method::POST, "/templates/{template_id}/duplicate", Access::FullAccess, "templates:write"),
    scoped("list-template-versions", Method::GET, "/templates/{template_id}/versions", Access::SendingAccess, "templates:read"),
    scoped("get-template-version", Method::GET, "/templates/{template_id}/versions/{version}", Access::SendingAccess, "templates:read"),
    scoped("check-template", Method::POST, "/templates/{template_id}/checks", Access::SendingAccess, "templates:read").body(CONTENT_BODY),
    scoped("create-saved-block", Method::POST, "/saved-blocks", Access::FullAccess, "templates:write").body(CONTENT_BODY),
    scoped("list-saved-blocks", Method::GET, "/saved-blocks", Access::SendingAccess, "templates:read"),
    scoped("get-saved-block", Method::GET, "/saved-blocks/{saved_block_id}", Access::SendingAccess, "templates:read"),
    scoped("update-saved-block", Method::PATCH, "/saved-blocks/{saved_block_id}", Access::FullAccess, "templates:write").body(CONTENT_BODY),
    scoped("delete-saved-block", Method::DELETE, "/saved-blocks/{saved_block_id}", Access::FullAccess, "templates:write"),
    scoped("list-starters", Method::GET, "/starters", Access::SendingAccess, "templates:read"),
    scoped("create-broadcast", Method::POST, "/broadcasts", Access::FullAccess, "broadcasts:write").body(CONTENT_BODY),
    scoped("list-broadcasts", Method::GET, "/broadcasts", Access::FullAccess, "broadcasts:read"),
    scoped("get-broadcast", Method::GET, "/broadcasts/{broadcast_id}", Access::FullAccess, "broadcasts:read"),
    scoped("update-broadcast", Method::PATCH, "/broadcasts/{broadcast_id}", Access::FullAccess, "broadcasts:write").body(CONTENT_BODY),
    scoped("delete-broadcast", Method::DELETE, "/broadcasts/{broadcast_id}", Access::FullAccess, "broadcasts:write"),
    scoped("send-broadcast", Method::POST, "/broadcasts/{broadcast_id}/send", Access::FullAccess, "broadcasts:write"),
    scoped("cancel-broadcast", Method::POST, "/broadcasts/{broadcast_id}/cancel", Access::FullAccess, "broadcasts:write"),
    scoped("duplicate-broadcast", Method::POST, "/broadcasts/{broadcast_id}/duplicate", Access::FullAccess, "broadcasts:write"),
    scoped("get-broadcast-checklist", Method::GET, "/broadcasts/{broadcast_id}/checklist", Access::FullAccess, "broadcasts:read"),
    scoped("check-broadcast", Method::POST, "/broadcasts/{broadcast_id}/checks", Access::FullAccess, "broadcasts:read").body(CONTENT_BODY),
    scoped("list-broadcast-recipients", Method::GET, "/broadcasts/{broadcast_id}/recipients", Access::FullAccess, "broadcasts:read"),
    scoped("list-broadcast-clicked-links", Method::GET, "/broadcasts/{broadcast_id}/clicked-links", Access::FullAccess, "broadcasts:read"),
    scoped("create-event", Method::POST, "/events", Access::FullAccess, "automations:write"),
    scoped("list-events", Method::GET, "/events", Access::FullAccess, "automations:read"),
    scoped("send-event", Method::POST, "/events/send", Access::SendingAccess, "events:send"),
    scoped("get-event", Method::GET, "/events/{id_or_name}", Access::FullAccess, "automations:read"),
    scoped("update-event", Method::PATCH, "/events/{id_or_name}", Access::FullAccess, "automations:write"),
    scoped("delete-event", Method::DELETE, "/events/{id_or_name}", Access::FullAccess, "automations:write"),
    scoped("create-automation", Method::POST, "/automations", Access::FullAccess, "automations:write"),
    scoped("list-automations", Method::GET, "/automations", Access::FullAccess, "automations:read"),
    scoped("get-automation", Method::GET, "/automations/{automation_id}", Access::FullAccess, "automations:read"),
    scoped("update-automation", Method::PATCH, "/automations/{automation_id}", Access::FullAccess, "automations:write"),
    scoped("delete-automation", Method::DELETE, "/automations/{automation_id}", Access::FullAccess, "automations:write"),
    scoped("stop-automation", Method::POST, "/automations/{automation_id}/stop", Access::FullAccess, "automations:write"),
    scoped("duplicate-automation", Method::POST, "/automations/{automation_id}/duplicate", Access::FullAccess, "automations:write"),
    scoped("list-automation-runs", Method::GET, "/automations/{automation_id}/runs", Access::FullAccess, "automations:read"),
    scoped("get-automation-run", Method::GET, "/automations/{automation_id}/runs/{run_id}", Access::FullAccess, "automations:read"),
    inbox_setup("create-inbox-channel", Method::POST, "/inbox/channels"),
    inbox("list-inbox-channels", Method::GET, "/inbox/channels", "read"),
    inbox_setup("update-inbox-channel", Method::PATCH, "/inbox/channels/{channel_id}"),
    inbox_setup("set-inbox-channel-members", Method::PUT, "/inbox/channels/{channel_id}/members"),
    inbox("list-inbox-channel-teammates", Method::GET, "/inbox/channels/{channel_id}/teammates", "read"),
    inbox("create-inbox-conversation", Method::POST, "/inbox/conversations", "create").body(CONTENT_BODY),
    inbox("list-inbox-conversations", Method::GET, "/inbox/conversations", "read"),
    inbox("get-inbox-conversation", Method::GET, "/inbox/conversations/{conversation_id}", "read"),
    inbox("update-inbox-conversation", Method::PATCH, "/inbox/conversations/{conversation_id}", "write"),
    inbox("list-inbox-messages", Method::GET, "/inbox/conversations/{conversation_id}/messages", "read"),
    inbox("search-inbox", Method::GET, "/inbox/search", "read"),
    inbox("list-inbox-labels", Method::GET, "/inbox/labels", "read"),
    inbox("create-inbox-label", Method::POST, "/inbox/labels", "write"),
    inbox("update-inbox-label", Method::PATCH, "/inbox/labels/{label_id}", "write"),
    inbox("delete-inbox-label", Method::DELETE, "/inbox/labels/{label_id}", "write"),
    inbox("list-inbox-folders", Method::GET, "/inbox/folders", "read"),
    inbox("create-inbox-folder", Method::POST, "/inbox/folders", "write"),
    inbox("update-inbox-folder", Method::PATCH, "/inbox/folders/{folder_id}", "write"),
    inbox("delete-inbox-folder", Method::DELETE, "/inbox/folders/{folder_id}", "write"),
    inbox_own("get-inbox-draft", Method::GET, "/inbox/conversations/{conversation_id}/draft"),
    inbox_setup("save-inbox-draft", Method::PUT, "/inbox/conversations/{conversation_id}/draft"),
    inbox_setup("delete-inbox-draft", Method::DELETE, "/inbox/conversations/{conversation_id}/draft"),
    inbox("create-inbox-reply", Method::POST, "/inbox/conversations/{conversation_id}/replies", "write").body(CONTENT_BODY),
    inbox("create-inbox-note", Method::POST, "/inbox/conversations/{conversation_id}/notes", "write").body(CONTENT_BODY),
];

/// An Inbox operation needing `level` (`create`, `read` or `write`): scope `inbox:read` for
/// reads, `inbox:write` for the rest.
const fn inbox(id: &'static str, method: Method, path: &'static str, level: &'static str) -> Operation {
    let scope = if matches!(level.as_bytes(), b"read") { "inbox:read" } else { "inbox:write" };
    Operation { id, method, path, access: Access::Inbox, scope: Some(scope), inbox_access: Some(level), carries_send_content: false, ai: false, body_limit: SMALL_BODY }
}

/// The dashboard session only, reading the person's own Inbox state (their draft).
const fn inbox_own(id: &'static str, method: Method, path: &'static str) -> Operation {
    Operation { id, method, path, access: Access::Session, scope: None, inbox_access: Some("read"), carries_send_content: false, ai: false, body_limit: SMALL_BODY }
}

/// The dashboard session only: setting the Inbox up (a team admin), and a person's own drafts.
const fn inbox_setup(id: &'static str, method: Method, path: &'static str) -> Operation {
    Operation { id, method, path, access: Access::Session, scope: None, inbox_access: Some("write"), carries_send_content: false, ai: false, body_limit: SMALL_BODY }
}

/// An operation an OAuth token with `scope` reaches.
const fn scoped(id: &'static str, method: Method, path: &'static str, access: Access, scope: &'static str) -> Operation {
    Operation { id, method, path, access, scope: Some(scope), inbox_access: None, carries_send_content: false, ai: false, body_limit: SMALL_BODY }
}

/// An AI assist call: a `full_access` key or a token with `ai:use`, its texts logged as sizes.
const fn ai(id: &'static str, path: &'static str) -> Operation {
    Operation { id, method: Method::POST, path, access: Access::FullAccess, scope: Some("ai:use"), inbox_access: None, carries_send_content: false, ai: true, body_limit: SMALL_BODY }
}

/// A send: any key, scope `emails:send`, its content logged as size and digest.
const fn send(id: &'static str, path: &'static str) -> Operation {
    Operation {
        id,
        method: Method::POST,
        path,
        access: Access::SendingAccess,
        scope: Some("emails:send"),
        inbox_access: None,
        carries_send_content: true,
        ai: false,
        body_limit: SEND_BODY,
    }
}

/// Reading or changing sent mail: a `full_access` key, scope `emails:read`.
const fn read(id: &'static str, method: Method, path: &'static str) -> Operation {
    Operation { id, method, path, access: Access::FullAccess, scope: Some("emails:read"), inbox_access: None, carries_send_content: false, ai: false, body_limit: SMALL_BODY }
}

/// Every OAuth scope: the ones document C names and one read and one write scope per area an
/// agent would use. `/.well-known/oauth-authorization-server` lists them.
pub const SCOPES: &[&str] = &[
    "emails:send",
    "emails:read",
    "domains:read",
    "domains:write",
    "contacts:read",
    "contacts:write",
    "suppressions:read",
    "suppressions:write",
    "templates:read",
    "templates:write",
    "broadcasts:read",
    "broadcasts:write",
    "automations:read",
    "automations:write",
    "events:send",
    "webhooks:read",
    "webhooks:write",
    "logs:read",
    "team:read",
    "team:write",
    "billing:read",
    "ai:use",
    "inbox:read",
    "inbox:write",
];

/// Paths served outside the table, to `GET` without a credential: the index (`/`), the
/// browsable reference (`/docs`) and the machine-readable description itself; and the operator
/// metrics (`/metrics`), whose route checks its own token (`HERALD_METRICS_TOKEN`).
pub const UNLISTED_PUBLIC_PATHS: &[&str] = &["/", "/docs", "/openapi.json", "/metrics", "/outbox"];

/// What the router table says about a request.
#[derive(Debug, Clone, Copy)]
pub enum Routing {
    Found(&'static Operation),
    /// The path exists, the method does not.
    WrongMethod,
    NotFound,
}

/// Finds the operation for a method and path (without the `/api/v1` prefix). Literal segments
/// win over `{parameters}`, so `/domains/claim` beats `/domains/{id}`.
pub fn route(method: &Method, path: &str) -> Routing {
    let served = served_at(path);
    match served.iter().find(|operation| operation.method == method) {
        Some(operation) => Routing::Found(operation),
        None if served.is_empty() => Routing::NotFound,
        None => Routing::WrongMethod,
    }
}

/// The methods served at `path`, in table order (for a 405's `Allow`).
pub fn allowed_methods(path: &str) -> Vec<Method> {
    served_at(path).into_iter().map(|operation| operation.method.clone()).collect()
}

/// The operations of the template that serves `path`: among the templates matching it, the one
/// with a literal segment where the others have a parameter, earliest first (as the router
/// picks: `/contacts/imports` is never `/contacts/{contact}`, whatever the method).
fn served_at(path: &str) -> Vec<&'static Operation> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let mut best: Option<u64> = None;
    let mut served = Vec::new();
    for operation in OPERATIONS {
        let Some(specificity) = match_path(operation.path, &segments) else { continue };
        if best.is_none_or(|best| specificity > best) {
            best = Some(specificity);
            served.clear();
        }
        if best == Some(specificity) {
            served.push(operation);
        }
    }
    served
}

/// When `template` matches `segments`: a number whose bits, from the highest down, say which
/// segments are literal, so that a literal earlier in the path weighs more than any later ones.
fn match_path(template: &str, segments: &[&str]) -> Option<u64> {
    let parts: Vec<&str> = template.split('/').skip(1).collect();
    if parts.len() != segments.len() || parts.len() > 63 {
        return None;
    }
    let mut specificity = 0;
    for (position, (part, segment)) in parts.iter().zip(segments).enumerate() {
        if part.starts_with('{') {
            if segment.is_empty() {
                return None;
            }
        } else if part == segment {
            specificity |= 1 << (62 - position);
        } else {
            return None;
        }
    }
    Some(specificity)
}

/// The operation with this id.
pub fn by_id(id: &str) -> Option<&'static Operation> {
    OPERATIONS.iter().find(|operation| operation.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_with_an_id_routes_to_its_operation() {
        let Routing::Found(operation) = route(&Method::PATCH, "/api-keys/123") else { panic!("not found") };
        assert_eq!(operation.id, "update-api-key");
    }

    #[test]
    fn a_known_path_with_another_method_is_a_wrong_method() {
        assert!(matches!(route(&Method::PUT, "/api-keys"), Routing::WrongMethod));
    }

    #[test]
    fn the_allowed_methods_of_a_path_are_every_method_it_serves() {
        assert_eq!(allowed_methods("/api-keys"), vec![Method::POST, Method::GET]);
        assert_eq!(allowed_methods("/api-keys/1"), vec![Method::PATCH, Method::DELETE]);
    }

    #[test]
    fn a_literal_segment_wins_over_a_parameter_whatever_the_method() {
        assert_eq!(allowed_methods("/contacts/imports"), vec![Method::POST, Method::GET]);
        assert!(matches!(route(&Method::PATCH, "/contacts/imports"), Routing::WrongMethod));
        assert!(matches!(route(&Method::DELETE, "/emails/batch"), Routing::WrongMethod));
        let Routing::Found(operation) = route(&Method::GET, "/contacts/imports/x") else { panic!("not found") };
        assert_eq!(operation.id, "get-contact-import");
        let Routing::Found(operation) = route(&Method::GET, "/contacts/x/segments") else { panic!("not found") };
        assert_eq!(operation.id, "list-contact-segments");
    }

    #[test]
    fn an_unknown_path_is_not_found() {
        assert!(matches!(route(&Method::GET, "/nothing/here"), Routing::NotFound));
        assert!(matches!(route(&Method::GET, "/api-keys/1/2"), Routing::NotFound));
    }

    #[test]
    fn a_trailing_slash_is_the_same_route() {
        assert!(matches!(route(&Method::GET, "/api-keys/"), Routing::Found(_)));
    }

    #[test]
    fn operation_ids_are_unique() {
        let mut ids: Vec<_> = OPERATIONS.iter().map(|o| o.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), OPERATIONS.len());
    }

    #[test]
    fn every_operations_scope_is_in_the_catalogue() {
        for operation in OPERATIONS {
            if let Some(scope) = operation.scope {
                assert!(SCOPES.contains(&scope), "{}: {scope}", operation.id);
            }
        }
    }
}
