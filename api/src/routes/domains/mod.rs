//! Sending domains: adding, reading, changing, verifying and removing them, DKIM rotation
//! (`manage`); claims of a domain another team verified (`claims`); DNS auto-configuration
//! through a provider's API (`autoconfigure`). What they share: adding a domain (`adding`) and
//! the domain's view with its records (`views`).

pub mod adding;
pub mod autoconfigure;
pub mod claims;
pub mod manage;
pub mod views;
