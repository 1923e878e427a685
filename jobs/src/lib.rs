//! Job workers: the runtime that runs every queue under apalis, the schedule that enqueues
//! periodic work once however many workers run, and one module per job.

pub mod ai;
pub mod automations;
pub mod backoff;
pub mod billing;
pub mod billing_usage;
mod compose;
pub mod deliver;
pub mod dkim;
pub mod dns;
pub mod dns_provider;
pub mod domains;
pub mod exports;
pub mod migrate;
pub mod housekeeping;
pub mod broadcasts;
pub mod import_contacts;
pub mod inbound;
pub mod runtime;
pub mod schedule;
pub mod supervise;
pub mod webhooks;
pub mod smtp;
pub mod stripe;

pub use runtime::{WorkerOptions, run};
