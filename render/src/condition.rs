//! The one condition vocabulary, shared by segment filters (compiled to SQL in `schema`) and
//! show-when rules (decided per contact here): the operators, the kinds of value, which operators
//! each field takes, whether a value fits its kind, and the limits.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// At most this many conditions in one filter or rule.
pub const MAX_CONDITIONS: usize = 20;
/// At most this many values in an `in` list.
pub const MAX_IN_VALUES: usize = 1000;

/// A condition's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Equal (strings ignore case).
    Eq,
    /// Not equal.
    Neq,
    /// A string holds the value (ignoring case).
    Contains,
    /// One of a list of values.
    In,
    /// Has a value (`true`) or has none (`false`).
    Exists,
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Gte,
    /// Less than.
    Lt,
    /// Less than or equal.
    Lte,
}

impl Op {
    /// The operator named `name` (`eq`, `neq`, `contains`, `in`, `exists`, `gt`, `gte`, `lt`, `lte`).
    pub fn parse(name: &str) -> Option<Op> {
        Some(match name {
            "eq" => Op::Eq,
            "neq" => Op::Neq,
            "contains" => Op::Contains,
            "in" => Op::In,
            "exists" => Op::Exists,
            "gt" => Op::Gt,
            "gte" => Op::Gte,
            "lt" => Op::Lt,
            "lte" => Op::Lte,
            _ => return None,
        })
    }
}

/// The kind of value a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Text.
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// An RFC 3339 time or a `YYYY-MM-DD` date.
    Date,
    /// A trigger event's or a repeat item's value: a string, number or boolean.
    Any,
}

impl Kind {
    /// A declared property's kind from its type name (`string` when unknown).
    pub fn of_property(type_name: &str) -> Kind {
        match type_name {
            "number" => Kind::Number,
            "boolean" => Kind::Boolean,
            "date" => Kind::Date,
            _ => Kind::String,
        }
    }

    /// How errors name the kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Number => "number",
            Kind::Boolean => "boolean",
            Kind::Date => "date (RFC 3339 or YYYY-MM-DD)",
            Kind::Any => "string, number or boolean",
        }
    }

    /// Whether `value` is a value of this kind.
    pub fn fits(self, value: &Value) -> bool {
        match self {
            Kind::String => value.is_string(),
            Kind::Number => value.is_number(),
            Kind::Boolean => value.is_boolean(),
            Kind::Date => value.as_str().and_then(instant).is_some(),
            Kind::Any => value.is_string() || value.is_number() || value.is_boolean(),
        }
    }
}

/// What a condition reads, as far as its operators go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The contact's address.
    Email,
    /// `first_name` or `last_name`.
    Name,
    /// Whether the contact unsubscribed from everything.
    Unsubscribed,
    /// When the contact was created.
    CreatedAt,
    /// A declared property of the kind.
    Property(Kind),
    /// A trigger event's or a repeat item's field: every operator.
    Free,
}

/// The operators a field takes (document A's table for contact fields and properties).
pub fn operators(field: Field) -> &'static [&'static str] {
    match field {
        Field::Email => &["eq", "neq", "contains", "in"],
        Field::Name | Field::Property(Kind::String) => &["eq", "neq", "contains", "exists", "in"],
        Field::Unsubscribed => &["eq"],
        Field::CreatedAt => &["gt", "gte", "lt", "lte"],
        Field::Property(Kind::Number) => &["eq", "neq", "gt", "gte", "lt", "lte", "in", "exists"],
        Field::Property(_) => &["eq", "neq", "exists"],
        Field::Free => &["eq", "neq", "contains", "in", "exists", "gt", "gte", "lt", "lte"],
    }
}

/// Whether `value` is an `in` list for `kind`: 1 to [`MAX_IN_VALUES`] values that fit it.
pub fn in_list_fits(kind: Kind, value: &Value) -> bool {
    value.as_array().is_some_and(|items| !items.is_empty() && items.len() <= MAX_IN_VALUES && items.iter().all(|v| kind.fits(v)))
}

/// An RFC 3339 time, or a date (its midnight UTC).
pub fn instant(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let text = text.trim();
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(time.to_utc());
    }
    Some(chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?.and_hms_opt(0, 0, 0)?.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_in_list_holds_one_to_a_thousand_values_of_its_kind() {
        assert!(in_list_fits(Kind::Number, &json!([1, 2])));
        assert!(!in_list_fits(Kind::Number, &json!([])));
        assert!(!in_list_fits(Kind::Number, &json!([1, "2"])));
        assert!(in_list_fits(Kind::String, &Value::Array(vec![json!("a"); MAX_IN_VALUES])));
        assert!(!in_list_fits(Kind::String, &Value::Array(vec![json!("a"); MAX_IN_VALUES + 1])));
    }

    #[test]
    fn each_field_takes_its_own_operators() {
        assert_eq!(operators(Field::Unsubscribed), ["eq"]);
        assert!(!operators(Field::Property(Kind::Boolean)).contains(&"in"));
        assert!(operators(Field::Free).contains(&"gt"));
    }
}
