//! The routes, a folder per area (the operation table's tags) and a file per single resource:
//! handlers and their request and response types. What two routes share lives in a module of
//! its own, never in a route file. Tags, the list of every API in document order, and the small
//! answers every area uses are here.

pub mod ai;
pub mod api_keys;
pub mod audience;
pub mod automations;
pub mod billing;
pub mod broadcasts;
pub mod dashboard;
pub mod domains;
pub mod emails;
pub mod health;
pub mod inbox;
pub mod logs;
pub mod mcp;
pub mod migrations;
pub mod oauth;
pub mod pages;
pub mod people;
pub mod suppressions;
pub mod team;
pub mod templates;
pub mod webhooks;

use poem_openapi::Tags;

/// Groups of operations in the OpenAPI document.
#[derive(Tags)]
pub enum Tag {
    /// Liveness and readiness.
    Operations,
    /// API keys of the team.
    #[oai(rename = "API keys")]
    ApiKeys,
    /// Logs of every call made with the team's credentials.
    Logs,
    /// Sending domains, their DNS records, verification and claims.
    Domains,
    /// Transactional email: send, batch, read, reschedule, cancel.
    Emails,
    /// Addresses the team will not send to.
    Suppressions,
    /// The audience: contacts, their properties, topics and segments.
    Contacts,
    /// Endpoints that receive signed deliveries of the team's events.
    Webhooks,
    /// The team: plan, sending tier, sender identity and brand kit.
    Team,
    /// Versioned templates with typed variables, visual block documents, saved blocks and starters.
    Templates,
    /// Broadcasts: one message to a segment, through the compliance gate and content checks.
    Broadcasts,
    /// Mail received at the team's receiving domains: messages, attachments, raw source.
    Receiving,
    /// Automations: per-contact workflows started by custom events and built-in triggers, and
    /// the custom events that start them.
    Automations,
    /// People and the dashboard session: accounts, sign-in, sign-out, the teams a person belongs to.
    People,
    /// OAuth 2.1 for agents: dynamic client registration, authorization with PKCE, tokens,
    /// revocation, discovery, and the grants a team has given.
    OAuth,
    /// The support Inbox: channels, conversations from inbound mail, messages and notes.
    Inbox,
    /// Billing: the plan, the subscription and the period's usage.
    Billing,
    /// AI assist: subject lines, drafts and alt text through the operator's provider, metered
    /// by monthly credits; nothing is saved or sent.
    #[oai(rename = "AI")]
    Ai,
    /// Pages for people (`text/html`), reached by links Herald hands out.
    #[oai(rename = "Hosted pages")]
    Pages,
}

/// Declares `Apis`, every API in document order, and `apis()` building it, from groups of
/// APIs (each a unit struct): poem-openapi implements its trait for tuples of up to 16, so the
/// groups nest.
macro_rules! apis {
    ($([$($api:path),+ $(,)?]),+ $(,)?) => {
        /// Every API of the service, in document order.
        pub type Apis = ($(($($api,)+),)+);

        pub fn apis() -> Apis {
            ($(($($api,)+),)+)
        }
    };
}

apis!(
    [
        health::HealthApi,
        api_keys::ApiKeysApi,
        logs::LogsApi,
        domains::manage::DomainsApi,
        domains::claims::ClaimsApi,
        domains::autoconfigure::AutoconfigureApi,
        emails::send::SendApi,
        emails::manage::EmailsApi,
        emails::shares::EmailSharesApi,
        emails::received::ReceivedApi,
        suppressions::SuppressionsApi,
        audience::contact_imports::ContactImportsApi,
        automations::events::EventsApi,
        automations::automations::AutomationsApi,
        people::auth::AuthApi,
    ],
    [
        people::teams::TeamsApi,
        people::teams::MembersApi,
        oauth::discovery::DiscoveryApi,
        oauth::registration::RegistrationApi,
        oauth::authorize::AuthorizeApi,
        oauth::tokens::TokensApi,
        oauth::grants::GrantsApi,
        audience::contacts::ContactsApi,
        audience::contact_properties::ContactPropertiesApi,
        audience::topics::TopicsApi,
        audience::consent::ConsentApi,
        audience::segments::SegmentsApi,
        audience::contacts::ContactAliasesApi,
        audience::segments::SegmentAliasesApi,
        webhooks::WebhooksApi,
        team::profile::TeamApi,
    ],
    [
        team::brand_assets::BrandAssetsApi,
        audience::segment_count::SegmentCountApi,
        templates::templates::TemplatesApi,
        templates::saved_blocks::SavedBlocksApi,
        broadcasts::manage::BroadcastsApi,
        broadcasts::sending::BroadcastSendingApi,
        broadcasts::reports::BroadcastReportsApi,
        pages::share::PagesApi,
        pages::preferences::PreferencesApi,
        pages::tracking::TrackingApi,
        people::account::AccountApi,
        people::invitations::InvitationsApi,
    ],
    [
        inbox::channels::InboxChannelsApi,
        inbox::conversations::InboxConversationsApi,
        inbox::messages::InboxMessagesApi,
        inbox::replies::InboxRepliesApi,
        inbox::filing::InboxFilingApi,
        inbox::search::InboxSearchApi,
        inbox::drafts::InboxDraftsApi,
        billing::overview::BillingApi,
        billing::invoices::InvoicesApi,
        billing::checkout::CheckoutApi,
        billing::addons::AddonsApi,
        billing::stripe_events::StripeEventsApi,
        billing::plan::PlanApi,
        billing::limits::LimitRequestsApi,
    ],
    [
        ai::writing::WritingApi,
        ai::blocks::BlocksApi,
        ai::diagnosis::DiagnosisApi,
        migrations::exports::ExportsApi,
        team::identities::IdentitiesApi,
        migrations::platforms::MigrationsApi,
        team::sso::SsoApi,
        people::sso::SsoSignInApi,
    ],
);

/// A path's id; anything that is not an id answers 404 like a missing `what`.
pub fn path_id(raw: &str, what: &str) -> crate::http::error::ApiResult<uuid::Uuid> {
    schema::ids::parse_id(raw).ok_or_else(|| crate::http::error::ApiError::not_found(what))
}

/// A record an import or a migration could not take.
#[derive(poem_openapi::Object)]
pub struct FailedRow {
    /// Its row as a spreadsheet shows it (the header is row 1), or for a migration through a
    /// platform's API, its place in the platform's answers.
    pub row: i64,
    /// The address cell as written.
    pub email: String,
    /// `invalid_email`, `type_mismatch` or `contact_limit`.
    pub reason: String,
    /// What was wrong, for a person.
    pub message: String,
}

/// The failed records kept as JSON (`[{ row, email, reason, message }]`).
pub fn failed_rows(kept: &serde_json::Value) -> Vec<FailedRow> {
    kept.as_array()
        .into_iter()
        .flatten()
        .map(|f| FailedRow {
            row: f["row"].as_i64().unwrap_or_default(),
            email: f["email"].as_str().unwrap_or_default().to_string(),
            reason: f["reason"].as_str().unwrap_or_default().to_string(),
            message: f["message"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

/// `{ object, id }`, the answer of an update.
#[derive(poem_openapi::Object)]
pub struct Updated {
    /// The kind of object.
    pub object: String,
    /// Its id.
    pub id: String,
}

/// `{ object, id, deleted: true }`, the answer of a delete.
#[derive(poem_openapi::Object)]
pub struct Deleted {
    /// The kind of object.
    pub object: String,
    /// Its id.
    pub id: String,
    /// Always true.
    pub deleted: bool,
}
