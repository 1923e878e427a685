//! What every handler can reach.

use crate::config::Config;
use crate::http::operations::Operation;
use crate::http::request_log::LogWriter;
use schema::model::{InboxAccess, Permission};
use sqlx::PgPool;
use uuid::Uuid;

/// Shared application state, cloned into every request for the price of one reference count.
#[derive(Clone)]
pub struct AppState(std::sync::Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(std::sync::Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`AppState`] holds.
pub struct Shared {
    /// The main pool: every durable write.
    pub pool: PgPool,
    /// Bookkeeping whose loss in a crash is harmless, off the WAL flush: rate-limit grants,
    /// `last_used_at`, key lookups and the key listener, request logs.
    pub relaxed: PgPool,
    pub config: Config,
    pub logs: LogWriter,
    /// Checks domains against DNS (the verify route runs the workers' check).
    pub checker: jobs::domains::DomainChecker,
    /// Fetches attachment `path`s.
    pub fetcher: crate::routes::emails::fetch::Fetcher,
    /// Signs the hosted preference and unsubscribe links (made once, shared by every process).
    pub link_key: std::sync::Arc<Vec<u8>>,
    /// The keys this process has seen (dropped when PostgreSQL says they changed).
    pub keys: crate::http::key_cache::KeyCache,
    /// The per-team rate-limit buckets, leased from PostgreSQL in grants.
    pub buckets: std::sync::Arc<crate::http::rate_limit::Buckets>,
    /// Where open and click hits go before PostgreSQL.
    pub spool: crate::routes::pages::spool::Spool,
    /// Stripe, when configured.
    pub stripe: Option<jobs::stripe::Stripe>,
    /// AI assist's provider, when configured.
    pub ai: Option<jobs::ai::Ai>,
    /// Each team's invoices as Stripe last listed them, kept 60 seconds.
    pub invoices: crate::routes::billing::invoices::InvoiceCache,
    /// The operator's `sending` switch as this process last read it.
    pub sending: crate::routes::emails::pause::SendingSwitch,
}

impl Shared {
    /// The hosted page of a signed link: `preferences` or `unsubscribe`.
    pub fn link_url(&self, page: &str, link: schema::links::Link) -> String {
        format!("{}/{page}/{}", self.config.public_url.trim_end_matches('/'), schema::links::token(&self.link_key, link))
    }
}

/// The authenticated caller of a request, placed in the request by the gateway.
#[derive(Debug, Clone)]
pub struct Caller {
    pub team_id: Uuid,
    /// The API key; `None` when an OAuth access token made the request.
    pub key_id: Option<Uuid>,
    pub permission: Permission,
    pub domain_id: Option<Uuid>,
    pub inbox_access: InboxAccess,
    /// The person, when the request also carries the dashboard session of an admin of the key's
    /// team (with its CSRF token): what raising a key's Inbox access needs.
    pub signed_in_admin: Option<Uuid>,
    /// What an OAuth access token acts as, when one made the request.
    pub token: Option<TokenFacts>,
    /// The person, when an Inbox route was reached with the dashboard session.
    pub session_person: Option<Uuid>,
}

/// An OAuth access token's member, role and scopes.
#[derive(Debug, Clone)]
pub struct TokenFacts {
    pub grant_id: Uuid,
    pub person_id: Uuid,
    /// `admin`, `member` or `viewer`: a viewer's token reads only.
    pub role: String,
    pub scopes: Vec<String>,
}

impl TokenFacts {
    /// Whether the token reaches an operation: the operation has a scope, the token holds it,
    /// and a viewer's token only reads (`:read` scopes). `403 invalid_permission` otherwise.
    pub fn reaches(&self, operation: &crate::http::operations::Operation) -> Result<(), crate::http::error::ApiError> {
        use crate::http::error::ApiError;
        // The MCP server: each of its tools is checked again as the call of its own route.
        if operation.access == crate::http::operations::Access::TokenOnly {
            return Ok(());
        }
        let Some(scope) = operation.scope else {
            return Err(ApiError::invalid_permission("No OAuth scope reaches this route; it takes an API key."));
        };
        if !self.scopes.iter().any(|s| s == scope) {
            return Err(ApiError::invalid_permission(format!("This token lacks the `{scope}` scope this route needs.")));
        }
        if self.role == "viewer" && !scope.ends_with(":read") {
            return Err(ApiError::invalid_permission("The token's member is a viewer of the team: it reads and cannot write."));
        }
        Ok(())
    }
}

/// Facts about every request, authenticated or not.
#[derive(Debug, Clone)]
pub struct RequestContext {
    pub request_id: String,
    pub operation: Option<&'static Operation>,
}

/// The dashboard session of a request on a session route, placed in the request by the gateway.
#[derive(Debug, Clone)]
pub struct SessionCaller {
    pub session: schema::store::people::Session,
}
