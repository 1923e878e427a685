//! Pages for people, reached by links Herald hands out (no credential): shared emails, the
//! preference page and one-click unsubscribe, tracking redirects and the pixel, the development
//! outbox; the hits spool behind tracking; the HTML they share.

pub mod html;
pub mod outbox;
pub mod preferences;
pub mod share;
pub mod spool;
pub mod tracking;
