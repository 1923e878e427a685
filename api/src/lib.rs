//! Herald's API: the `herald` binary's CLI, configuration, the gateway (auth, rate limit,
//! errors, request logs), idempotency, and one module of routes per resource.

pub mod account_mail;
pub mod app;
pub mod auth_cache;
pub mod body;
pub mod cli;
pub mod config;
pub mod credentials;
pub mod error;
pub mod form;
pub mod gateway;
pub mod idempotency;
pub mod input;
pub mod invite;
pub mod mcp;
pub mod metrics;
pub mod mfa;
pub mod openapi_doc;
pub mod openapi_webhooks;
pub mod operations;
pub mod outbox;
pub mod paging;
pub mod rate_limit;
pub mod fields;
pub mod request_log;
pub mod spool;
pub mod routes;
pub mod send;
pub mod state;
pub mod template_content;
