//! Herald's template renderer.
//!
//! Templates are compiled once — on save — into a flat [`Compiled`] program of literal chunks
//! and placeholder, merge-tag, show-when and repeat nodes; rendering walks that program and
//! appends into one pre-sized `String` per part, with no re-parsing.
//!
//! * `{{key}}` placeholders take the caller's variables ([`Context::variables`]).
//! * `{{{KEY|default|format}}}` merge tags take contact fields, contact properties, the flow's
//!   trigger event (`event.<key>`) and repeat-group items (`item.<key>`).
//! * Block documents (`{"kind":"svc.blocks","version":1,...}`) compile into email-safe HTML and a
//!   plain-text version with the team's [`Brand`]; see [`Compiled::from_document`].

#![warn(missing_docs)]

mod brand;
mod catalog;
pub mod checks;
pub mod condition;
mod context;
mod document;
mod escape;
mod format;
mod htmlscan;
mod merge;
mod parse;
mod program;
mod rule;
mod sanitize;
pub mod starters;
pub mod tracking;

pub use brand::Brand;
pub use catalog::Catalog;
pub use context::{Contact, Context, Mode, Rendered};
pub use document::{LIMIT_BLOCKS, LIMIT_SECTIONS, Visual};
pub use program::{Compiled, LIMIT_ITEMS};
pub use sanitize::{clean as sanitize_html, to_text as html_to_text};

/// One thing wrong with a template, at a JSON-path-like `path` such as
/// `document.sections[0].columns[1].blocks[2].type`, or `subject` / `html` / `text` for plain parts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    /// Where the problem is, e.g. `document.sections[0].columns[0].blocks[1].url`.
    pub path: String,
    /// What is wrong, as a sentence fragment a person can act on.
    pub message: String,
}

impl Problem {
    /// A problem at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem { path: path.into(), message: message.into() }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}
