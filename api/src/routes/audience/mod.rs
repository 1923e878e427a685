//! The audience: contacts and their properties, topics (consent), segments (with the legacy
//! `/audiences` aliases the Resend SDKs still call) and contact imports.

pub mod consent;
pub mod contact_imports;
pub mod contact_properties;
pub mod contacts;
pub mod refs;
pub mod segment_count;
pub mod segments;
pub mod topics;
