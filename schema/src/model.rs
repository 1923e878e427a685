//! Value types shared by the API and the store. Enums are stored as their snake_case names.

use poem_openapi::Enum;
use serde::{Deserialize, Serialize};

/// What an API key may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, Serialize, Deserialize, sqlx::Type)]
#[oai(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum Permission {
    /// Every endpoint, including creating and revoking keys.
    FullAccess,
    /// Sending only; may be pinned to one domain.
    SendingAccess,
}

/// An API key's level of access to the support Inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Enum, Serialize, Deserialize, sqlx::Type)]
#[oai(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum InboxAccess {
    /// No Inbox access (default).
    None,
    /// May create conversations.
    Create,
    /// May read conversations.
    Read,
    /// May read and write conversations.
    Write,
}

impl InboxAccess {
    /// Whether this access reaches an Inbox operation needing `level`: `read` is reached by
    /// read and write access, `create` (opening a conversation) by create and write access,
    /// `write` by write access only.
    pub fn reaches(self, level: &str) -> bool {
        match level {
            "read" => matches!(self, InboxAccess::Read | InboxAccess::Write),
            "create" => matches!(self, InboxAccess::Create | InboxAccess::Write),
            _ => self == InboxAccess::Write,
        }
    }
}

/// Lifecycle state of an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, Serialize, Deserialize, sqlx::Type)]
#[oai(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum KeyStatus {
    /// Usable.
    Active,
    /// Refused with `403 suspended_api_key`.
    Suspended,
    /// Refused with `403 restricted_api_key`; the row is kept for audit.
    Revoked,
}

/// A team's risk state; `suspended` stops every key of the team.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, Serialize, Deserialize, sqlx::Type)]
#[oai(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum RiskState {
    /// In good standing.
    Normal,
    /// Being looked at by an operator; sending continues.
    UnderReview,
    /// Every key of the team answers `403 suspended_api_key`.
    Suspended,
}

/// Name of a sending tier (0 to 3).
pub fn tier_name(tier: i16) -> &'static str {
    match tier {
        0 => "new",
        1 => "verified",
        2 => "paid",
        _ => "trusted",
    }
}

/// What unlocks the next sending tier, or `None` at the top.
pub fn next_unlock(tier: i16) -> Option<&'static str> {
    match tier {
        0 => Some("verify_domain"),
        1 => Some("add_payment_method"),
        2 => Some("operator_review"),
        _ => None,
    }
}

/// Longest text a contact property holds (a value, a fallback, a filter's comparison value).
pub const MAX_PROPERTY_TEXT: usize = 2000;

/// The contact property type (`string`, `number`, `boolean`) a JSON value has, if any.
pub fn property_kind(value: &serde_json::Value) -> Option<&'static str> {
    match value {
        serde_json::Value::String(_) => Some("string"),
        serde_json::Value::Number(_) => Some("number"),
        serde_json::Value::Bool(_) => Some("boolean"),
        _ => None,
    }
}

/// The contact property type named `name` (`string` for anything else).
pub fn property_type(name: &str) -> &'static str {
    match name {
        "number" => "number",
        "boolean" => "boolean",
        _ => "string",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tier_names_what_unlocks_the_next() {
        assert_eq!((tier_name(0), next_unlock(0)), ("new", Some("verify_domain")));
        assert_eq!((tier_name(1), next_unlock(1)), ("verified", Some("add_payment_method")));
        assert_eq!((tier_name(3), next_unlock(3)), ("trusted", None));
    }

    #[test]
    fn inbox_access_levels_are_ordered() {
        assert!(InboxAccess::None < InboxAccess::Read && InboxAccess::Read < InboxAccess::Write);
    }
}
