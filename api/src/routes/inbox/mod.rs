//! The support Inbox: channels on receiving addresses, conversations threaded from inbound mail
//! (and opened through the API), their messages and notes, and who reaches which channel.

pub mod actor;
pub mod channels;
pub mod conversations;
pub mod drafts;
pub mod filing;
pub mod messages;
pub mod replies;
pub mod rules;
pub mod search;
pub mod views;
