//! The edge: what every request passes through before and after its route. The gateway
//! (body limit, credential, rate limit, permission), the operation table it reads, the one
//! public error, request bodies and forms, field types, input checks, paging, idempotency, the
//! rate limiter, the key cache, request logs and operator metrics.

pub mod body;
pub mod credentials;
pub mod error;
pub mod fields;
pub mod form;
pub mod gateway;
pub mod idempotency;
pub mod input;
pub mod key_cache;
pub mod metrics;
pub mod operations;
pub mod paging;
pub mod rate_limit;
pub mod request_log;
