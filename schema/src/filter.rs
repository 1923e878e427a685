//! Segment filters: a tree of groups (`all`, `any`, `not`) over conditions, validated against the
//! team's declared properties and topics, and compiled to one SQL condition over `contacts c`.
//!
//! A condition is `{ field, op, value }` or `{ topic, subscription }`. Groups nest at most three
//! deep and a filter holds at most 20 conditions. `not` matches when none of its items match.
//!
//! `created_at` also compares with an age, `"<n> <minutes|hours|days|weeks> ago"` (up to ten
//! years): such a filter is time-based, its members changing as time passes (see
//! [`Node::is_time_based`] and [`Node::push_sql_at`]).

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;
use sqlx::{Postgres, QueryBuilder};
use std::collections::HashMap;
use uuid::Uuid;

/// Deepest group nesting.
pub const MAX_DEPTH: usize = 3;
pub use render::condition::{Kind, MAX_CONDITIONS, MAX_IN_VALUES, Op};
use render::condition::{Field, instant as date, operators as field_operators};

/// What a filter is checked against: the team's property types and topic defaults.
#[derive(Debug, Default, Clone)]
pub struct Catalog {
    /// Property key to `string`, `number` or `boolean`.
    pub properties: HashMap<String, String>,
    /// Topic id to its `default_subscription` (retired topics included).
    pub topics: HashMap<Uuid, String>,
}

/// A bad part of a filter: where (`filter.all[0].op`) and why.
pub type Problem = (String, String);

/// A checked filter, ready to compile.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    All(Vec<Node>),
    Any(Vec<Node>),
    Not(Vec<Node>),
    Field { target: Target, op: Op, value: Value },
    /// Effective subscription to a topic: `opt_in` or not.
    Topic { id: Uuid, opt_in: bool, default_opt_in: bool },
}

/// The longest age a `created_at` condition may name.
const MAX_AGE_DAYS: i64 = 3650;

/// The age an `"<n> <unit> ago"` value names: more than zero and at most ten years.
pub fn age(value: &Value) -> Option<TimeDelta> {
    let phrase = value.as_str()?.trim().to_ascii_lowercase();
    let age = crate::when::parse_duration(phrase.strip_suffix(" ago")?)?;
    (age > TimeDelta::zero() && age <= TimeDelta::days(MAX_AGE_DAYS)).then_some(age)
}

/// Whether a filter as sent names an age anywhere (read before it is checked, to mark the
/// segment time-based when it is stored).
pub fn names_an_age(filter: &Value) -> bool {
    match filter {
        Value::Object(map) => {
            (map.get("field").and_then(Value::as_str) == Some("created_at") && map.get("value").is_some_and(|v| age(v).is_some()))
                || map.values().any(names_an_age)
        }
        Value::Array(items) => items.iter().any(names_an_age),
        _ => false,
    }
}

/// What a field condition reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Email,
    Name(&'static str),
    Unsubscribed,
    CreatedAt,
    Property { key: String, kind: Kind },
}

/// The SQL comparison of an ordering operator (` = ` for the rest).
fn comparison(op: Op) -> &'static str {
    match op {
        Op::Gt => " > ",
        Op::Gte => " >= ",
        Op::Lt => " < ",
        Op::Lte => " <= ",
        _ => " = ",
    }
}

/// The operators of a field, as document A's table lists them.
fn operators(target: &Target) -> &'static [&'static str] {
    field_operators(match target {
        Target::Email => Field::Email,
        Target::Name(_) => Field::Name,
        Target::Unsubscribed => Field::Unsubscribed,
        Target::CreatedAt => Field::CreatedAt,
        Target::Property { kind, .. } => Field::Property(*kind),
    })
}

/// Checks a filter; every bad condition is one problem. With `strict` false (reading a stored
/// filter) a property or topic that no longer exists is compiled as one no contact has.
pub fn parse(filter: &Value, catalog: &Catalog, strict: bool) -> Result<Node, Vec<Problem>> {
    let mut parser = Parser { catalog, strict, problems: Vec::new(), conditions: 0 };
    let node = parser.node(filter, "filter", 0);
    if parser.conditions > MAX_CONDITIONS {
        parser.problems.push(("filter".into(), format!("has {} conditions; at most {MAX_CONDITIONS}", parser.conditions)));
    }
    match node {
        Some(node) if parser.problems.is_empty() => Ok(node),
        _ => Err(parser.problems),
    }
}

/// The property keys and topic ids a filter names, so that only those are looked up.
pub fn references(filter: &Value) -> (Vec<String>, Vec<Uuid>) {
    let (mut keys, mut topics) = (Vec::new(), Vec::new());
    fn walk(value: &Value, keys: &mut Vec<String>, topics: &mut Vec<Uuid>) {
        match value {
            Value::Object(map) => {
                if let Some(key) = map.get("field").and_then(Value::as_str).and_then(|f| f.strip_prefix("properties.")) {
                    keys.push(key.to_string());
                }
                if let Some(id) = map.get("topic").and_then(Value::as_str).and_then(crate::ids::parse_id) {
                    topics.push(id);
                }
                map.values().for_each(|v| walk(v, keys, topics));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, keys, topics)),
            _ => {}
        }
    }
    walk(filter, &mut keys, &mut topics);
    (keys, topics)
}

struct Parser<'a> {
    catalog: &'a Catalog,
    strict: bool,
    problems: Vec<Problem>,
    conditions: usize,
}

impl Parser<'_> {
    fn problem(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push((path.to_string(), message.into()));
    }

    /// A group (`depth` groups enclose it) or, inside a group, a condition.
    fn node(&mut self, value: &Value, path: &str, depth: usize) -> Option<Node> {
        let Some(map) = value.as_object() else {
            self.problem(path, "must be an object: a group (all, any, not) or a condition");
            return None;
        };
        let group = ["all", "any", "not"].into_iter().find(|g| map.contains_key(*g));
        if let Some(group) = group {
            if map.len() != 1 {
                self.problem(path, "a group has exactly one key: all, any or not");
                return None;
            }
            if depth >= MAX_DEPTH {
                self.problem(path, format!("groups nest at most {MAX_DEPTH} deep"));
                return None;
            }
            let path = format!("{path}.{group}");
            let Some(items) = map[group].as_array().filter(|items| !items.is_empty()) else {
                self.problem(&path, "must be a non-empty array");
                return None;
            };
            let nodes: Vec<Option<Node>> = items.iter().enumerate().map(|(i, item)| self.node(item, &format!("{path}[{i}]"), depth + 1)).collect();
            let nodes: Option<Vec<Node>> = nodes.into_iter().collect();
            return nodes.map(|mut nodes| {
                // Cheap tests first: PostgreSQL evaluates them in order and stops early.
                nodes.sort_by_key(Node::cost);
                match group {
                    "all" => Node::All(nodes),
                    "any" => Node::Any(nodes),
                    _ => Node::Not(nodes),
                }
            });
        }
        if depth == 0 {
            self.problem(path, "must be a group: { all: [...] }, { any: [...] } or { not: [...] }");
            return None;
        }
        self.conditions += 1;
        if map.contains_key("topic") { self.topic(map, path) } else { self.field(map, path) }
    }

    fn topic(&mut self, map: &serde_json::Map<String, Value>, path: &str) -> Option<Node> {
        let id = map.get("topic").and_then(Value::as_str).and_then(crate::ids::parse_id);
        let default = id.and_then(|id| self.catalog.topics.get(&id));
        let opt_in = match map.get("subscription").and_then(Value::as_str) {
            Some("opt_in") => true,
            Some("opt_out") => false,
            _ => {
                self.problem(&format!("{path}.subscription"), "must be opt_in or opt_out");
                return None;
            }
        };
        let (Some(id), default) = (id, default) else {
            self.problem(&format!("{path}.topic"), "is not one of the team's topics");
            return None;
        };
        if default.is_none() && self.strict {
            self.problem(&format!("{path}.topic"), "is not one of the team's topics");
            return None;
        }
        Some(Node::Topic { id, opt_in, default_opt_in: default.is_some_and(|d| d == "opt_in") })
    }

    fn field(&mut self, map: &serde_json::Map<String, Value>, path: &str) -> Option<Node> {
        let Some(field) = map.get("field").and_then(Value::as_str) else {
            self.problem(path, "a condition is { field, op, value } or { topic, subscription }");
            return None;
        };
        let value = map.get("value").cloned().unwrap_or(Value::Null);
        let target = match field {
            "email" => Target::Email,
            "first_name" => Target::Name("first_name"),
            "last_name" => Target::Name("last_name"),
            "unsubscribed" => Target::Unsubscribed,
            "created_at" => Target::CreatedAt,
            other => match other.strip_prefix("properties.") {
                Some(key) => match self.catalog.properties.get(key).map(String::as_str) {
                    Some(kind) => Target::Property { key: key.to_string(), kind: Kind::of_property(kind) },
                    None if !self.strict => Target::Property { key: key.to_string(), kind: kind_of(&value) },
                    None => {
                        self.problem(&format!("{path}.field"), format!("`{key}` is not a declared contact property"));
                        return None;
                    }
                },
                None => {
                    self.problem(&format!("{path}.field"), "must be email, first_name, last_name, unsubscribed, created_at or properties.<key>");
                    return None;
                }
            },
        };
        let op_name = map.get("op").and_then(Value::as_str).unwrap_or_default();
        let allowed = operators(&target);
        let Some(op) = Op::parse(op_name).filter(|_| allowed.contains(&op_name)) else {
            self.problem(&format!("{path}.op"), format!("`{op_name}` does not apply to {field}; use one of {}", allowed.join(", ")));
            return None;
        };
        let kind = match &target {
            Target::Email | Target::Name(_) => Kind::String,
            Target::Unsubscribed => Kind::Boolean,
            Target::CreatedAt => Kind::Date,
            Target::Property { kind, .. } => *kind,
        };
        let value = match op {
            Op::Exists => match value {
                Value::Null => Value::Bool(true),
                Value::Bool(_) => value,
                _ => {
                    self.problem(&format!("{path}.value"), "exists takes true, false or no value");
                    return None;
                }
            },
            Op::In => match value.as_array() {
                Some(items) if !items.is_empty() && items.len() <= MAX_IN_VALUES && items.iter().all(|v| fits(kind, v)) => value,
                _ => {
                    self.problem(&format!("{path}.value"), format!("in takes an array of 1 to {MAX_IN_VALUES} {} values", kind.name()));
                    return None;
                }
            },
            _ if fits(kind, &value) => value,
            _ if matches!(target, Target::CreatedAt) && age(&value).is_some() => value,
            _ if matches!(target, Target::CreatedAt) => {
                self.problem(&format!("{path}.value"), "must be a date (ISO 8601) or an age such as `3 days ago` (minutes to ten years)");
                return None;
            }
            _ => {
                let limit = if kind == Kind::String { format!(" of at most {} characters", crate::model::MAX_PROPERTY_TEXT) } else { String::new() };
                self.problem(&format!("{path}.value"), format!("must be a {} value{limit}", kind.name()));
                return None;
            }
        };
        Some(Node::Field { target, op, value })
    }
}

fn kind_of(value: &Value) -> Kind {
    match value.as_array().and_then(|items| items.first()).unwrap_or(value) {
        Value::Number(_) => Kind::Number,
        Value::Bool(_) => Kind::Boolean,
        _ => Kind::String,
    }
}

/// Whether `value` fits `kind`, a string being at most a property's length.
fn fits(kind: Kind, value: &Value) -> bool {
    kind.fits(value) && (kind != Kind::String || value.as_str().is_some_and(|s| s.chars().count() <= crate::model::MAX_PROPERTY_TEXT))
}


impl Node {
    /// A rank of how much a test costs per contact: columns, then properties, then groups and
    /// topic lookups.
    fn cost(&self) -> u8 {
        match self {
            Node::Field { target: Target::Email | Target::Name(_) | Target::Unsubscribed | Target::CreatedAt, .. } => 0,
            Node::Field { target: Target::Property { kind: Kind::String | Kind::Boolean | Kind::Date, .. }, .. } => 1,
            Node::Field { .. } => 2,
            Node::All(_) | Node::Any(_) | Node::Not(_) => 3,
            Node::Topic { .. } => 4,
        }
    }

    /// Whether the filter names an age (`created_at` `"3 days ago"`): its members change as
    /// time passes, not only when contacts do.
    pub fn is_time_based(&self) -> bool {
        match self {
            Node::All(nodes) | Node::Any(nodes) | Node::Not(nodes) => nodes.iter().any(Node::is_time_based),
            Node::Field { target: Target::CreatedAt, value, .. } => age(value).is_some(),
            _ => false,
        }
    }

    /// Appends this filter as one SQL condition over the contact `c`, ages counted from now.
    /// String comparisons ignore case; a missing value never equals anything and always
    /// differs (`neq` matches).
    pub fn push_sql(&self, query: &mut QueryBuilder<Postgres>) {
        self.push_sql_at(query, None);
    }

    /// As [`Node::push_sql`], ages counted from `at` (now when `None`): the filter as it read
    /// at that moment, over today's contacts.
    pub fn push_sql_at(&self, query: &mut QueryBuilder<Postgres>, at: Option<DateTime<Utc>>) {
        match self {
            Node::All(nodes) => push_group(query, nodes, " AND ", "", at),
            Node::Any(nodes) => push_group(query, nodes, " OR ", "", at),
            Node::Not(nodes) => push_group(query, nodes, " OR ", "NOT ", at),
            Node::Topic { id, opt_in, default_opt_in } => {
                query.push("(NOT c.unsubscribed AND COALESCE((SELECT ct.subscription = 'opt_in' FROM contact_topics ct WHERE ct.contact_id = c.id AND ct.topic_id = ");
                query.push_bind(*id).push("), ").push_bind(*default_opt_in).push("))");
                if !opt_in {
                    query.push(" IS NOT TRUE");
                }
            }
            Node::Field { target, op, value } => push_condition(query, target, *op, value, at),
        }
    }
}

fn push_group(query: &mut QueryBuilder<Postgres>, nodes: &[Node], joiner: &str, prefix: &str, at: Option<DateTime<Utc>>) {
    query.push(prefix).push("(");
    for (i, node) in nodes.iter().enumerate() {
        if i > 0 {
            query.push(joiner);
        }
        node.push_sql_at(query, at);
    }
    query.push(")");
}

/// Pushes the SQL expression a field condition reads (text for strings, numeric for numbers).
fn push_expression(query: &mut QueryBuilder<Postgres>, target: &Target) {
    match target {
        Target::Email => query.push("c.email"),
        Target::Name(column) => query.push("c.").push(*column),
        Target::Unsubscribed => query.push("c.unsubscribed"),
        Target::CreatedAt => query.push("c.created_at"),
        Target::Property { key, kind: Kind::Number } => {
            query.push("(CASE WHEN jsonb_typeof(c.properties -> ").push_bind(key.clone());
            query.push(") = 'number' THEN (c.properties ->> ").push_bind(key.clone()).push(")::numeric END)")
        }
        Target::Property { key, kind: Kind::Boolean | Kind::Date } => query.push("(c.properties -> ").push_bind(key.clone()).push(")"),
        Target::Property { key, kind: Kind::String | Kind::Any } => query.push("(c.properties ->> ").push_bind(key.clone()).push(")"),
    };
}

fn push_value(query: &mut QueryBuilder<Postgres>, target: &Target, value: &Value, at: Option<DateTime<Utc>>) {
    match (target, value) {
        (Target::CreatedAt, value) if age(value).is_some() => {
            let seconds = age(value).map_or(0, |age| age.num_seconds());
            match at {
                Some(at) => query.push("(").push_bind(at).push("::timestamptz"),
                None => query.push("(now()"),
            };
            query.push(" - make_interval(secs => ").push_bind(seconds as f64).push("))")
        }
        (Target::CreatedAt, Value::String(text)) => query.push_bind(date(text)),
        (Target::Property { kind: Kind::Boolean | Kind::Date, .. }, value) => query.push_bind(value.clone()).push("::jsonb"),
        (_, Value::String(text)) => query.push("lower(").push_bind(text.clone()).push(")"),
        (_, Value::Bool(flag)) => query.push_bind(*flag),
        (_, Value::Number(number)) => query.push_bind(number.as_f64()).push("::numeric"),
        _ => query.push("NULL"),
    };
}

fn push_condition(query: &mut QueryBuilder<Postgres>, target: &Target, op: Op, value: &Value, at: Option<DateTime<Utc>>) {
    // Addresses are stored lower-case already.
    let text = matches!(target, Target::Name(_) | Target::Property { kind: Kind::String, .. });
    let lhs = |query: &mut QueryBuilder<Postgres>| {
        if text {
            query.push("lower(");
            push_expression(query, target);
            query.push(")");
        } else {
            push_expression(query, target);
        }
    };
    query.push("(");
    match op {
        Op::Exists => {
            push_expression(query, target);
            query.push(if value == &Value::Bool(false) { " IS NULL" } else { " IS NOT NULL" });
        }
        Op::Contains => {
            lhs(query);
            query.push(" LIKE ").push_bind(crate::store::like_pattern(&value.as_str().unwrap_or_default().to_lowercase()));
        }
        Op::In => {
            lhs(query);
            query.push(" IN (");
            for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                if i > 0 {
                    query.push(", ");
                }
                push_value(query, target, item, at);
            }
            query.push(")");
        }
        Op::Neq => {
            lhs(query);
            query.push(" IS DISTINCT FROM ");
            push_value(query, target, value, at);
        }
        _ => {
            lhs(query);
            query.push(comparison(op));
            push_value(query, target, value, at);
        }
    }
    query.push(")");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalog() -> Catalog {
        let mut catalog = Catalog::default();
        catalog.properties.insert("plan".into(), "string".into());
        catalog.properties.insert("age".into(), "number".into());
        catalog
    }

    fn problems(filter: Value) -> Vec<Problem> {
        parse(&filter, &catalog(), true).unwrap_err()
    }

    #[test]
    fn each_bad_condition_is_one_problem_at_its_path() {
        let found = problems(json!({ "all": [
            { "field": "email", "op": "gt", "value": "a" },
            { "field": "properties.age", "op": "contains", "value": 3 },
            { "field": "properties.missing", "op": "eq", "value": 1 },
            { "field": "unsubscribed", "op": "eq", "value": "yes" },
            { "field": "created_at", "op": "gt", "value": "2026-01-01" }
        ] }));
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["filter.all[0].op", "filter.all[1].op", "filter.all[2].field", "filter.all[3].value"]);
    }

    #[test]
    fn groups_nest_three_deep_and_hold_twenty_conditions() {
        let leaf = json!({ "field": "email", "op": "eq", "value": "a@b.c" });
        assert!(parse(&json!({ "all": [{ "any": [{ "not": [leaf] }] }] }), &catalog(), true).is_ok());
        let found = problems(json!({ "all": [{ "any": [{ "not": [{ "all": [leaf] }] }] }] }));
        assert_eq!(found[0].0, "filter.all[0].any[0].not[0]");
        let many: Vec<Value> = (0..21).map(|_| leaf.clone()).collect();
        assert_eq!(problems(json!({ "any": many }))[0].0, "filter");
    }

    #[test]
    fn created_at_compares_with_an_age_and_such_a_filter_is_time_based() {
        assert_eq!(age(&json!("3 days ago")), Some(TimeDelta::days(3)));
        assert_eq!(age(&json!("90 Minutes ago")), Some(TimeDelta::minutes(90)));
        for bad in [json!("3 days"), json!("0 days ago"), json!("3651 days ago"), json!("soon ago"), json!(3)] {
            assert_eq!(age(&bad), None, "{bad}");
        }
        let aged = json!({ "any": [{ "field": "email", "op": "contains", "value": "x" }, { "not": [{ "field": "created_at", "op": "lt", "value": "1 week ago" }] }] });
        assert!(names_an_age(&aged));
        assert!(parse(&aged, &catalog(), true).unwrap().is_time_based());
        let dated = json!({ "all": [{ "field": "created_at", "op": "lt", "value": "2026-01-01" }] });
        assert!(!names_an_age(&dated));
        assert!(!parse(&dated, &catalog(), true).unwrap().is_time_based());
    }

    #[test]
    fn a_stored_filter_naming_a_deleted_property_still_compiles() {
        let filter = json!({ "all": [{ "field": "properties.gone", "op": "gt", "value": 3 }] });
        assert!(parse(&filter, &Catalog::default(), true).is_err());
        assert!(parse(&filter, &Catalog::default(), false).is_ok());
    }
}
