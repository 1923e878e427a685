//! Email: sending (the accept pipeline and its routes), reading, rescheduling and cancelling
//! sent mail, share links, and received mail.

pub mod accept;
pub mod received;
pub mod send;
pub mod shares;
