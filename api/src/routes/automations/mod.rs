//! Automations and the custom events that start them.

pub mod automations;
pub mod graph;
pub mod events;
