//! Show-when rules: `{"match":"all"|"any","conditions":[...]}` over contact fields and
//! properties, topics, segments, the trigger event and the current repeat item.

use crate::catalog::Catalog;
use crate::condition::{Field, Kind, MAX_CONDITIONS, MAX_IN_VALUES, Op, in_list_fits, operators};
use crate::merge::Path;
use crate::{Contact, Problem};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// A compiled rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Rule {
    /// `true` for `any`, `false` for `all`.
    #[serde(rename = "a", default, skip_serializing_if = "std::ops::Not::not")]
    any: bool,
    #[serde(rename = "c")]
    conditions: Vec<Condition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Condition {
    #[serde(rename = "f")]
    Field(Target, Op, Value),
    #[serde(rename = "t")]
    Topic(Uuid, bool),
    #[serde(rename = "s")]
    Segment(Uuid, bool),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
enum Target {
    Email,
    FirstName,
    LastName,
    Unsubscribed,
    CreatedAt,
    Property(String),
    Event(Path),
    Item(Path),
}

impl TryFrom<String> for Target {
    type Error = String;
    fn try_from(text: String) -> Result<Target, String> {
        Ok(match text.as_str() {
            "email" => Target::Email,
            "first_name" => Target::FirstName,
            "last_name" => Target::LastName,
            "unsubscribed" => Target::Unsubscribed,
            "created_at" => Target::CreatedAt,
            other => {
                if let Some(key) = other.strip_prefix("properties.").filter(|k| !k.is_empty()) {
                    Target::Property(key.to_string())
                } else if let Some(path) = other.strip_prefix("event.").and_then(Path::parse) {
                    Target::Event(path)
                } else if let Some(path) = other.strip_prefix("item.").and_then(Path::parse) {
                    Target::Item(path)
                } else {
                    return Err(format!("`{text}` is not a field"));
                }
            }
        })
    }
}

impl From<Target> for String {
    fn from(target: Target) -> String {
        match target {
            Target::Email => "email".into(),
            Target::FirstName => "first_name".into(),
            Target::LastName => "last_name".into(),
            Target::Unsubscribed => "unsubscribed".into(),
            Target::CreatedAt => "created_at".into(),
            Target::Property(key) => format!("properties.{key}"),
            Target::Event(path) => format!("event.{}", String::from(path)),
            Target::Item(path) => format!("item.{}", String::from(path)),
        }
    }
}

/// The field a target is, for its operators.
fn field_of(target: &Target, kind: Kind) -> Field {
    match target {
        Target::Email => Field::Email,
        Target::FirstName | Target::LastName => Field::Name,
        Target::Unsubscribed => Field::Unsubscribed,
        Target::CreatedAt => Field::CreatedAt,
        Target::Property(_) => Field::Property(kind),
        Target::Event(_) | Target::Item(_) => Field::Free,
    }
}

/// Lower-cases strings (comparisons ignore case) and turns dates into epoch seconds.
fn prepare(kind: Kind, value: Value) -> Value {
    match value {
        Value::String(text) if kind == Kind::Date => {
            crate::format::parse_instant(&text).map(|t| Value::from(t.timestamp())).unwrap_or(Value::Null)
        }
        Value::String(text) => Value::String(text.to_lowercase()),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| prepare(kind, v)).collect()),
        other => other,
    }
}

/// Reads and checks a `show_when` rule; every bad part is one problem under `path`.
pub(crate) fn parse(value: &Value, path: &str, catalog: &Catalog, in_repeat: bool, problems: &mut Vec<Problem>) -> Option<Rule> {
    let Some(map) = value.as_object() else {
        problems.push(Problem::new(path, "must be an object { match, conditions }"));
        return None;
    };
    let any = match map.get("match").and_then(Value::as_str) {
        None | Some("all") => false,
        Some("any") => true,
        Some(_) => {
            problems.push(Problem::new(format!("{path}.match"), "must be all or any"));
            false
        }
    };
    let Some(list) = map.get("conditions").and_then(Value::as_array) else {
        problems.push(Problem::new(format!("{path}.conditions"), "must be a list of conditions"));
        return None;
    };
    if list.is_empty() || list.len() > MAX_CONDITIONS {
        problems.push(Problem::new(
            format!("{path}.conditions"),
            format!("must hold 1 to {MAX_CONDITIONS} conditions"),
        ));
    }
    let before = problems.len();
    let conditions: Vec<Condition> = list
        .iter()
        .enumerate()
        .filter_map(|(i, c)| condition(c, &format!("{path}.conditions[{i}]"), catalog, in_repeat, problems))
        .collect();
    (problems.len() == before).then_some(Rule { any, conditions })
}

fn condition(value: &Value, path: &str, catalog: &Catalog, in_repeat: bool, problems: &mut Vec<Problem>) -> Option<Condition> {
    let Some(map) = value.as_object() else {
        problems.push(Problem::new(path, "a condition is an object"));
        return None;
    };
    let id = |key: &str, known: &std::collections::HashSet<Uuid>, what: &str, problems: &mut Vec<Problem>| {
        let id = map.get(key).and_then(Value::as_str).and_then(|s| Uuid::parse_str(s).ok());
        match id {
            Some(id) if known.contains(&id) => Some(id),
            _ => {
                problems.push(Problem::new(format!("{path}.{key}"), format!("is not one of the team's {what}")));
                None
            }
        }
    };
    if map.contains_key("topic") {
        let opt_in = match map.get("subscription").and_then(Value::as_str) {
            Some("opt_in") => Some(true),
            Some("opt_out") => Some(false),
            _ => {
                problems.push(Problem::new(format!("{path}.subscription"), "must be opt_in or opt_out"));
                None
            }
        };
        let id = id("topic", &catalog.topics, "topics", problems);
        return Some(Condition::Topic(id?, opt_in?));
    }
    if map.contains_key("segment") {
        let member = match map.get("member") {
            None => Some(true),
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                problems.push(Problem::new(format!("{path}.member"), "must be true or false"));
                None
            }
        };
        let id = id("segment", &catalog.segments, "segments", problems);
        return Some(Condition::Segment(id?, member?));
    }
    let Some(field) = map.get("field").and_then(Value::as_str) else {
        problems.push(Problem::new(
            path,
            "a condition is { field, op, value }, { topic, subscription } or { segment, member }",
        ));
        return None;
    };
    let Ok(target) = Target::try_from(field.to_string()) else {
        problems.push(Problem::new(
            format!("{path}.field"),
            "must be email, first_name, last_name, unsubscribed, created_at, properties.<key>, event.<key> or item.<key>",
        ));
        return None;
    };
    let kind = match &target {
        Target::Email | Target::FirstName | Target::LastName => Kind::String,
        Target::Unsubscribed => Kind::Boolean,
        Target::CreatedAt => Kind::Date,
        Target::Property(key) => match catalog.properties.get(key).map(String::as_str) {
            Some("number") => Kind::Number,
            Some("boolean") => Kind::Boolean,
            Some("date") => Kind::Date,
            Some(_) => Kind::String,
            None => {
                problems.push(Problem::new(format!("{path}.field"), format!("`{key}` is not a declared contact property")));
                return None;
            }
        },
        Target::Event(_) => Kind::Any,
        Target::Item(_) if in_repeat => Kind::Any,
        Target::Item(_) => {
            problems.push(Problem::new(format!("{path}.field"), "item.<key> can only be used inside a repeat group"));
            return None;
        }
    };
    let op_name = map.get("op").and_then(Value::as_str).unwrap_or_default();
    let allowed = operators(field_of(&target, kind));
    let Some(op) = Op::parse(op_name).filter(|_| allowed.contains(&op_name)) else {
        problems.push(Problem::new(
            format!("{path}.op"),
            format!("`{op_name}` does not apply to {field}; use one of {}", allowed.join(", ")),
        ));
        return None;
    };
    let value = map.get("value").cloned().unwrap_or(Value::Null);
    let ok = match op {
        Op::Exists => value.is_null() || value.is_boolean(),
        Op::In => in_list_fits(kind, &value),
        Op::Contains => value.is_string(),
        Op::Gt | Op::Gte | Op::Lt | Op::Lte if kind == Kind::Any => value.is_number() || value.is_string(),
        _ => kind.fits(&value),
    };
    if !ok {
        let message = match op {
            Op::Exists => "exists takes true, false or no value".to_string(),
            Op::In => format!("in takes a list of 1 to {MAX_IN_VALUES} {} values", kind.name()),
            Op::Contains => "contains takes a string".to_string(),
            _ => format!("must be a {} value", kind.name()),
        };
        problems.push(Problem::new(format!("{path}.value"), message));
        return None;
    }
    let value = if op == Op::Exists { Value::Bool(value.as_bool().unwrap_or(true)) } else { prepare(kind, value) };
    Some(Condition::Field(target, op, value))
}

/// The outcome of one condition for one contact.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Truth {
    Yes,
    No,
    /// What the condition names is absent from the context (deleted since): the block is hidden.
    Absent,
}

impl From<bool> for Truth {
    fn from(b: bool) -> Truth {
        if b { Truth::Yes } else { Truth::No }
    }
}

impl Rule {
    /// Whether the rule holds for this contact, event and item. A condition over something absent
    /// from the context hides the block whatever `match` says.
    pub(crate) fn holds(&self, contact: Option<&Contact>, event: Option<&Map<String, Value>>, item: Option<&Map<String, Value>>) -> bool {
        let mut any_yes = false;
        let mut all_yes = true;
        for condition in &self.conditions {
            match condition.truth(contact, event, item) {
                Truth::Absent => return false,
                Truth::Yes => any_yes = true,
                Truth::No => {
                    if !self.any {
                        return false;
                    }
                    all_yes = false;
                }
            }
        }
        if self.any { any_yes } else { all_yes }
    }
}

impl Condition {
    fn truth(&self, contact: Option<&Contact>, event: Option<&Map<String, Value>>, item: Option<&Map<String, Value>>) -> Truth {
        match self {
            Condition::Topic(id, opt_in) => match contact.and_then(|c| c.topics.get(id)) {
                Some(subscribed) => (subscribed == opt_in).into(),
                None => Truth::Absent,
            },
            Condition::Segment(id, member) => match contact.and_then(|c| c.segments.get(id)) {
                Some(inside) => (inside == member).into(),
                None => Truth::Absent,
            },
            Condition::Field(target, op, expected) => {
                let owned;
                let actual: Option<&Value> = match target {
                    Target::Event(path) => match event {
                        Some(event) => path.lookup(event),
                        None => return Truth::Absent,
                    },
                    Target::Item(path) => match item {
                        Some(item) => path.lookup(item),
                        None => return Truth::Absent,
                    },
                    _ => {
                        let Some(contact) = contact else { return Truth::Absent };
                        match target {
                            Target::Email => {
                                owned = Value::String(contact.email.clone());
                                Some(&owned)
                            }
                            Target::FirstName | Target::LastName => {
                                let name = if *target == Target::FirstName { &contact.first_name } else { &contact.last_name };
                                match name {
                                    Some(name) => {
                                        owned = Value::String(name.clone());
                                        Some(&owned)
                                    }
                                    // A name is a column: missing never equals, always differs.
                                    None => return missing_name(*op, expected),
                                }
                            }
                            Target::Unsubscribed => {
                                owned = Value::Bool(contact.unsubscribed);
                                Some(&owned)
                            }
                            Target::CreatedAt => match contact.created_at {
                                Some(t) => {
                                    owned = Value::from(t.timestamp());
                                    Some(&owned)
                                }
                                None => return Truth::No,
                            },
                            Target::Property(key) => contact.properties.get(key),
                            Target::Event(_) | Target::Item(_) => None,
                        }
                    }
                };
                let actual = actual.filter(|v| !v.is_null());
                match (op, actual) {
                    (Op::Exists, found) => (found.is_some() == (expected == &Value::Bool(true))).into(),
                    (_, None) => Truth::Absent,
                    (_, Some(actual)) => compare(*op, actual, expected).into(),
                }
            }
        }
    }
}

fn missing_name(op: Op, expected: &Value) -> Truth {
    match op {
        Op::Neq => Truth::Yes,
        Op::Exists => (expected == &Value::Bool(false)).into(),
        _ => Truth::No,
    }
}

fn equal(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::String(a), Value::String(b)) => {
            if a.is_ascii() { a.eq_ignore_ascii_case(b) } else { a.to_lowercase() == *b }
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::Number(b)) => a.trim().parse::<f64>().ok() == b.as_f64(),
        (Value::Bool(a), Value::Bool(b)) => a == b,
        _ => false,
    }
}

fn order(actual: &Value, expected: &Value) -> Option<std::cmp::Ordering> {
    match (actual, expected) {
        (Value::Number(a), Value::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Value::String(a), Value::Number(b)) => a.trim().parse::<f64>().ok()?.partial_cmp(&b.as_f64()?),
        (Value::String(a), Value::String(b)) => {
            match (crate::format::parse_instant(a), crate::format::parse_instant(b)) {
                (Some(a), Some(b)) => Some(a.cmp(&b)),
                _ => Some(a.to_lowercase().as_str().cmp(b.as_str())),
            }
        }
        _ => None,
    }
}

fn compare(op: Op, actual: &Value, expected: &Value) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    match op {
        Op::Eq => equal(actual, expected),
        Op::Neq => !equal(actual, expected),
        Op::In => expected.as_array().is_some_and(|items| items.iter().any(|e| equal(actual, e))),
        Op::Contains => match (actual, expected.as_str()) {
            (Value::String(a), Some(b)) => a.to_lowercase().contains(b),
            (Value::Array(items), Some(_)) => items.iter().any(|a| equal(a, expected)),
            _ => false,
        },
        Op::Gt => order(actual, expected) == Some(Greater),
        Op::Gte => matches!(order(actual, expected), Some(Greater | Equal)),
        Op::Lt => order(actual, expected) == Some(Less),
        Op::Lte => matches!(order(actual, expected), Some(Less | Equal)),
        Op::Exists => true,
    }
}
