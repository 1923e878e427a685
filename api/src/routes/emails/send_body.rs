//! The body of a send (`POST /emails` and each item of a batch) as clients write it: addresses,
//! attachments, tags, a template and its variables.

use crate::http::fields::Required;
use poem_openapi::{Object, Union};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use uuid::Uuid;

/// One address or a list of them.
#[derive(Union, Deserialize, Debug, Clone)]
#[serde(untagged)]
#[oai(one_of)]
pub enum Addresses {
    One(String),
    Many(Vec<String>),
}

impl Addresses {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Addresses::One(one) => vec![one],
            Addresses::Many(many) => many,
        }
    }
}

/// An attachment: `filename` and exactly one of `content` (base64) or `path` (https URL).
#[derive(Object, Deserialize, Debug, Clone)]
pub struct AttachmentIn {
    /// The file name shown to the recipient.
    pub filename: Option<String>,
    /// The file's bytes: base64 text, or an array of byte values (0 to 255) as the Resend
    /// SDKs may send them.
    pub content: Option<AttachmentContent>,
    /// An https URL Herald fetches (at most 40 MB, 10 seconds; never a loopback, private or
    /// link-local address).
    pub path: Option<String>,
    /// The MIME type; guessed from the file name when omitted.
    pub content_type: Option<String>,
    /// Makes the attachment inline, referenced from the HTML as `cid:<content_id>`.
    pub content_id: Option<String>,
}

/// An attachment's bytes: base64 text (whitespace ignored) or an array of byte values.
#[derive(Union, Deserialize, Debug, Clone)]
#[serde(untagged)]
#[oai(one_of)]
pub enum AttachmentContent {
    Base64(String),
    Bytes(Vec<u8>),
}

/// A tag: `{ name, value }`.
#[derive(Object, Deserialize, Debug, Clone)]
pub struct TagIn {
    /// 1 to 252 characters of A-Z, a-z, 0-9, `_`, `-`.
    #[oai(validator(max_length = 252, pattern = "^[A-Za-z0-9_-]+$"))]
    pub name: Required<String>,
    /// 1 to 256 characters of A-Z, a-z, 0-9, `_`, `-`.
    #[oai(validator(max_length = 256, pattern = "^[A-Za-z0-9_-]+$"))]
    pub value: Required<String>,
}

/// Body of `POST /emails` (and each item of `POST /emails/batch`).
#[derive(Object, Deserialize, Debug, Clone)]
pub struct SendEmail {
    /// `address` or `Name <address>` on a domain verified by the team; required unless the
    /// template supplies it.
    pub from: Option<String>,
    /// Recipients; `to`, `cc` and `bcc` together at most 50.
    pub to: Required<Addresses>,
    /// Cc recipients; counted toward the cap of 50.
    pub cc: Option<Addresses>,
    /// Bcc recipients; counted toward the cap of 50.
    pub bcc: Option<Addresses>,
    /// Reply-To addresses (not counted toward the recipient cap).
    pub reply_to: Option<Addresses>,
    /// One line, at most 998 bytes of UTF-8; required unless the template supplies it.
    pub subject: Option<String>,
    /// HTML body; `html` and `text` together at most 2 MB; at least one is required.
    pub html: Option<String>,
    /// Plain-text body.
    pub text: Option<String>,
    /// ISO 8601 instant or a phrase (`in 2 hours`, `tomorrow at 9am`), read as UTC, 1 minute
    /// to 30 days ahead.
    pub scheduled_at: Option<String>,
    /// Custom headers, name to value; reserved headers are refused.
    pub headers: Option<BTreeMap<String, String>>,
    /// An Inbox channel's id or address: Reply-To is the channel, and the recipient's answer
    /// opens a conversation there linked to this email. An unknown channel is
    /// `422 invalid_parameter`; a restricted one needs a key limited to it; not combinable with
    /// `reply_to`.
    #[oai(validator(max_length = 320))]
    pub inbox: Option<String>,
    /// Up to 100 attachments.
    #[oai(validator(max_items = 100))]
    pub attachments: Option<Vec<AttachmentIn>>,
    /// Up to 50 tags with unique names.
    #[oai(validator(max_items = 50))]
    pub tags: Option<Vec<TagIn>>,
    /// A published template (by id or alias) that supplies `html` and `text` and, when the
    /// send leaves them out, `subject`, `from` and `reply_to`. Not combinable with `html` or
    /// `text`.
    pub template: Option<TemplateIn>,
    /// `true` gives each recipient's copy Herald's signed `List-Unsubscribe` (https and
    /// mailto) and `List-Unsubscribe-Post` headers naming that recipient's address; its
    /// one-click suppresses the address for the team (origin `unsubscribe`).
    pub unsubscribe_link: Option<bool>,
    /// Reserved by the spec for a later release: a send carrying it answers
    /// `501 not_implemented` and nothing is written.
    #[oai(skip)]
    pub topic_id: Option<String>,
    /// The template version the body was rendered from (set by [`apply_templates`]).
    #[oai(skip)]
    #[serde(skip)]
    pub rendered_from: Option<(Uuid, i32)>,
}

/// The template of a send.
#[derive(Object, Deserialize, Debug, Clone)]
pub struct TemplateIn {
    /// The template's id or alias.
    pub id: Required<String>,
    /// Declared keys to a string or number (at most 2,000 characters); a key left out takes
    /// its `fallback_value`.
    pub variables: Option<BTreeMap<String, VariableValue>>,
}

/// A template variable's value in a send.
#[derive(Union, Deserialize, Debug, Clone)]
#[serde(untagged)]
#[oai(one_of)]
pub enum VariableValue {
    Text(String),
    Number(f64),
}

impl VariableValue {
    pub fn into_json(self) -> Value {
        match self {
            VariableValue::Text(text) => Value::String(text),
            // Whole numbers print without a decimal point.
            VariableValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => json!(n as i64),
            VariableValue::Number(n) => json!(n),
        }
    }
}
