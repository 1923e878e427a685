//! AI assist: subject lines, drafts, block drafts, block rewrites, alt text, subject variants
//! and delivery diagnosis through the operator's OpenAI-compatible provider, metered by monthly
//! credits. Nothing is saved or sent.

mod assist;
pub mod blocks;
pub mod diagnosis;
pub mod writing;
