//! Templates, saved blocks and the content checks and rendering that sends, broadcasts and
//! templates share.

pub mod content;
pub mod saved_blocks;
pub mod templates;
pub mod views;
