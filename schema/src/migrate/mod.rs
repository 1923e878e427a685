//! Moving an audience in from another platform: the items read from its API or its export file,
//! in Herald's shape, and what the read found besides contacts. The job that reads a source
//! writes items into chunks; the job that applies them reads them back.

pub mod files;

use crate::email::Mailbox;
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The platforms a team can move from.
pub const SOURCES: &[&str] = &["resend", "mailchimp", "listmonk"];

/// Longest first or last name kept (longer ones are cut).
const MAX_NAME: usize = 200;
/// Longest property key.
const MAX_KEY: usize = 50;
/// Longest string property value kept (longer ones are cut).
const MAX_VALUE: usize = 2000;

/// One contact as read from the source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Its row in the file (the header is row 1), or its place in the API's answers.
    pub row: i64,
    /// Bare, lower-case.
    pub email: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
    /// Property key to a string, number or boolean.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub properties: Map<String, Value>,
    /// Asked not to get marketing mail.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsubscribed: bool,
    /// A suppression to write, by its origin (`bounce`, `complaint` or `manual`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppression: Option<String>,
    /// Topic name to `opt_in` or `opt_out`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub topics: BTreeMap<String, String>,
    /// Names of the segments it joins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<String>,
    /// When it opted in, as the platform recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent_at: Option<DateTime<Utc>>,
    /// From where it opted in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent_ip: Option<String>,
    /// A further record of a contact read before (a segment's membership), not counted again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub again: bool,
}

/// A record that could not become a contact.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    pub row: i64,
    /// The address as written.
    pub email: String,
    /// `invalid_email`.
    pub reason: &'static str,
    pub message: String,
}

impl Failed {
    /// As kept in a migration's failed items.
    pub fn to_json(&self) -> Value {
        serde_json::json!({ "row": self.row, "email": self.email, "reason": self.reason, "message": self.message })
    }
}

impl Item {
    /// An item for the address `raw`, or why it cannot be one (no usable address, a NUL).
    pub fn new(row: i64, raw: &str) -> Result<Item, Failed> {
        let raw = raw.trim();
        let failed = |message: &str| Failed { row, email: raw.replace('\0', ""), reason: "invalid_email", message: message.into() };
        if raw.contains('\0') {
            return Err(failed("the address holds a NUL character"));
        }
        match Mailbox::parse(raw) {
            Ok(mailbox) if !raw.is_empty() => Ok(Item { row, email: mailbox.key(), ..Item::default() }),
            _ => Err(failed("no usable email address")),
        }
    }

    /// Sets the names, cut to their longest and left unset when empty.
    pub fn names(mut self, first: Option<&str>, last: Option<&str>) -> Item {
        self.first_name = clean(first, MAX_NAME);
        self.last_name = clean(last, MAX_NAME);
        self
    }

    /// Sets a property when the value is usable (strings cut to their longest, NULs dropped).
    pub fn property(&mut self, key: &str, value: Value) {
        let value = match value {
            Value::String(text) => match clean(Some(&text), MAX_VALUE) {
                Some(text) => Value::String(text),
                None => return,
            },
            Value::Number(_) | Value::Bool(_) => value,
            Value::Null => return,
            other => Value::String(other.to_string().chars().take(MAX_VALUE).collect()),
        };
        self.properties.insert(key.to_string(), value);
    }
}

/// A full name split into first and last at its first space.
pub fn split_name(full: &str) -> (Option<&str>, Option<&str>) {
    match full.trim().split_once(' ') {
        Some((first, last)) => (Some(first), Some(last.trim())),
        None => (Some(full.trim()), None),
    }
}

fn clean(text: Option<&str>, max: usize) -> Option<String> {
    let text: String = text?.replace('\0', "").trim().chars().take(max).collect();
    (!text.is_empty()).then_some(text)
}

/// The property key a platform's field name becomes: lower case, runs of other characters as
/// `_`, starting with a letter or `_`, at most 50 characters; `None` when nothing is left.
pub fn property_key(name: &str) -> Option<String> {
    let mut key = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c.to_ascii_lowercase());
        } else if !key.ends_with('_') && !key.is_empty() {
            key.push('_');
        }
    }
    let key = key.trim_end_matches('_');
    if key.is_empty() {
        return None;
    }
    let key = if key.starts_with(|c: char| c.is_ascii_digit()) { format!("_{key}") } else { key.to_string() };
    Some(key.chars().take(MAX_KEY).collect())
}

/// The JSON value of a cell for a property of `kind`; `None` when it does not fit.
pub fn typed(text: &str, kind: &str) -> Option<Value> {
    let text = text.trim();
    match kind {
        "number" => text.parse::<f64>().ok().filter(|n| n.is_finite()).and_then(|n| {
            if n.fract() == 0.0 && n.abs() < 9.0e15 { Some(Value::from(n as i64)) } else { serde_json::Number::from_f64(n).map(Value::Number) }
        }),
        "boolean" => boolean(text).map(Value::Bool),
        _ => Some(Value::String(text.to_string())),
    }
}

/// `true`/`false` as spreadsheets write them.
pub fn boolean(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" | "y" => Some(true),
        "false" | "no" | "0" | "n" => Some(false),
        _ => None,
    }
}

/// The type of a JSON value as a property (`None` for null, arrays and objects).
pub fn kind_of(value: &Value) -> Option<&'static str> {
    match value {
        Value::String(_) => Some("string"),
        Value::Number(_) => Some("number"),
        Value::Bool(_) => Some("boolean"),
        _ => None,
    }
}

/// A timestamp as the platforms write them: RFC 3339, PostgreSQL's text
/// (`2025-11-30 20:41:40.84216+00`), Go's (`2024-03-01 10:00:00.123456 +0000 UTC`), or a
/// naive `2024-03-01 10:00:00` taken as UTC.
pub fn timestamp(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    let text = text.trim_end_matches(" UTC");
    for format in ["%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%.f %z"] {
        if let Ok(at) = DateTime::parse_from_str(text, format) {
            return Some(at.with_timezone(&Utc));
        }
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").ok().map(|at| at.and_utc())
}

/// What a read found besides contacts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Found {
    /// Property key to its type (`string`, `number` or `boolean`).
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// Topic name to its default subscription.
    #[serde(default)]
    pub topics: BTreeMap<String, String>,
    /// Segment names.
    #[serde(default)]
    pub segments: BTreeSet<String>,
    /// Templates, to come over as drafts.
    #[serde(default)]
    pub templates: Vec<FoundTemplate>,
    /// Sending domains the team had there (listed; a domain is added and verified in Herald).
    #[serde(default)]
    pub domains: Vec<String>,
}

/// A template found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FoundTemplate {
    pub name: String,
    pub subject: Option<String>,
    pub html: Option<String>,
    pub text: Option<String>,
}

impl Found {
    /// Notes a property's type; a key seen with two types is kept as a string.
    pub fn property(&mut self, key: &str, kind: &str) {
        let entry = self.properties.entry(key.to_string()).or_insert_with(|| kind.to_string());
        if entry != kind {
            *entry = "string".into();
        }
    }
}

/// The review of a migration: what will arrive and what it will cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Review {
    /// Distinct addresses read.
    pub contacts: i64,
    /// Of those, addresses the team does not have yet.
    pub new_contacts: i64,
    /// Of those, addresses the team has (merged: empty fields filled, nothing overwritten).
    pub existing_contacts: i64,
    /// Addresses that arrive unsubscribed.
    pub unsubscribed: i64,
    /// Suppressions to write, by origin.
    pub suppressions: BTreeMap<String, i64>,
    /// Records that failed already (bad addresses).
    pub failed: i64,
    /// Properties: key, type, and whether the team lacks it.
    pub properties: Vec<(String, String, bool)>,
    /// Topics: name, and whether the team lacks it.
    pub topics: Vec<(String, bool)>,
    /// Segments: name, and whether the team lacks it.
    pub segments: Vec<(String, bool)>,
    /// Template names (they arrive as drafts).
    pub templates: Vec<String>,
    /// Sending domains found.
    pub domains: Vec<String>,
    /// Billable contacts after the move.
    pub billable_contacts_after: i64,
    /// The contacts the plan includes (`None`: no allowance).
    pub plan_contacts: Option<i64>,
    /// The monthly contact overage the move causes, in cents.
    pub monthly_overage_cents: i64,
    /// The team's contact limit (`None`: none).
    pub contact_limit: Option<i64>,
    /// Why the plan refuses the move, when it does.
    pub refused: Option<String>,
}
