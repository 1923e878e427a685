//! What references in a document are checked against at save.

use std::collections::{HashMap, HashSet};

/// What references in a document are checked against at save.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Declared contact properties: key -> `"string"`, `"number"` or `"boolean"`.
    pub properties: HashMap<String, String>,
    /// The team's live topics.
    pub topics: HashSet<uuid::Uuid>,
    /// The team's live segments.
    pub segments: HashSet<uuid::Uuid>,
    /// Saved blocks: id -> a block (an object with `type`) or a section (an object with `columns`).
    pub saved_blocks: HashMap<uuid::Uuid, serde_json::Value>,
}
