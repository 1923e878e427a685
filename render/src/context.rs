//! What one render is given, and what it gives back.

use std::collections::HashMap;

/// How show-when rules and repeat groups are decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A `POST /emails` send, a preview or a test: every block is shown and repeat groups draw no items.
    Transactional,
    /// A broadcast or flow step: rules are decided per contact and repeat groups draw their items.
    PerContact,
}

/// Everything one render reads.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// `{{key}}` values (the caller has applied fallbacks).
    pub variables: &'a serde_json::Map<String, serde_json::Value>,
    /// The recipient, for merge tags and show-when rules.
    pub contact: Option<&'a Contact>,
    /// The properties of the flow's trigger event, for `event.<key>` merge tags, rules and lists.
    pub event: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// A contact as the renderer sees it.
#[derive(Debug, Clone, Default)]
pub struct Contact {
    /// The address (`{{{EMAIL}}}`).
    pub email: String,
    /// `{{{FIRST_NAME}}}`.
    pub first_name: Option<String>,
    /// `{{{LAST_NAME}}}`.
    pub last_name: Option<String>,
    /// Whether the contact unsubscribed from everything.
    pub unsubscribed: bool,
    /// When the contact was created.
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The contact's property values.
    pub properties: serde_json::Map<String, serde_json::Value>,
    /// Property key -> the property's `fallback_value`.
    pub fallbacks: HashMap<String, String>,
    /// Every live topic -> whether the contact is effectively opted in.
    pub topics: HashMap<uuid::Uuid, bool>,
    /// Every live segment -> whether the contact is in it. A rule naming a segment missing
    /// here (deleted since) hides its block, whether it asks for members or non-members.
    pub segments: HashMap<uuid::Uuid, bool>,
    /// `{{{UNSUBSCRIBE_URL}}}`.
    pub unsubscribe_url: Option<String>,
    /// `{{{PREFERENCES_URL}}}`.
    pub preferences_url: Option<String>,
}

/// The three rendered parts; an absent part renders as an empty string (see
/// [`crate::Compiled::has_html`] and friends to know which parts exist).
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The subject line.
    pub subject: String,
    /// The HTML body.
    pub html: String,
    /// The plain-text body.
    pub text: String,
}
