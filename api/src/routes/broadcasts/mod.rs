//! Broadcasts: drafts and their changes (`manage`), sending through the compliance gate (`gate`) and
//! content checks, cancelling (`sending`), and what happened to a sent one (`reports`). What
//! they share: the broadcast's view and finding one by its path id (`views`).

pub mod gate;
pub mod manage;
pub mod reports;
pub mod sending;
pub mod views;
