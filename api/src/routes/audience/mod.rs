//! The audience: contacts and their properties, topics (consent), segments, audiences (the
//! older name of segments) and contact imports.

pub mod audiences;
pub mod contact_imports;
pub mod contact_properties;
pub mod contacts;
pub mod segments;
pub mod topics;
