//! Automation graphs: steps and connections parsed into a [`Graph`], with every rule of
//! document A that needs no database (one trigger, reachability, no cycles, at most 150 steps,
//! unique keys, edge rules, step configs, unavailable types). References to the team's
//! templates, segments, topics, properties and events are listed for the caller to resolve.
//!
//! A version is stored as it was sent and parsed again where it runs, so parsing a stored
//! version must not depend on the time: only writes check how far out a delay reaches.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// Most steps in a version.
pub const MAX_STEPS: usize = 150;
/// Furthest a delay reaches.
pub const MAX_DELAY_DAYS: i64 = 30;
/// Longest step key.
pub const MAX_KEY: usize = 100;

/// Built-in trigger names, besides the `svc:email.*` family ([`EMAIL_TRIGGERS`]).
pub const BUILT_IN_TRIGGERS: &[&str] = &["svc:contact.created", "svc:topic.subscribed", "svc:segment.entered"];
/// The `svc:email.*` triggers: one per email event about a sent email.
pub const EMAIL_TRIGGERS: &[&str] = &[
    "svc:email.sent",
    "svc:email.scheduled",
    "svc:email.delivered",
    "svc:email.delivery_delayed",
    "svc:email.bounced",
    "svc:email.complained",
    "svc:email.opened",
    "svc:email.clicked",
    "svc:email.failed",
    "svc:email.suppressed",
    "svc:email.canceled",
];

/// Step types a graph may use.
pub const STEP_TYPES: &[&str] = &["trigger", "send_email", "delay", "condition", "contact_update", "add_to_segment", "topic_update"];
/// Step types named by the spec but not available in this release.
pub const UNAVAILABLE_STEPS: &[&str] = &["wait_for_event", "contact_delete"];
/// Connection types a graph may use.
pub const CONNECTION_TYPES: &[&str] = &["default", "condition_met", "condition_not_met"];
/// Connection types named by the spec but not available in this release.
pub const UNAVAILABLE_CONNECTIONS: &[&str] = &["timeout", "event_received"];

/// A problem with a graph: the step key (or `steps`, `connections[i]`) and why.
pub type Problem = (String, String);

/// What a step does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Starts the run; `segment_id` (for `svc:segment.entered`) and `topic_id` (for
    /// `svc:topic.subscribed`) narrow what enrols.
    Trigger { event_name: String, segment_id: Option<Uuid>, topic_id: Option<Uuid> },
    /// Sends a published template (id or alias) to the contact.
    SendEmail { template: String, variables: Map<String, Value>, from: Option<String>, subject: Option<String>, reply_to: Vec<String> },
    Delay(Delay),
    /// A segment filter over the contact (see [`crate::filter`]).
    Condition(Value),
    ContactUpdate(ContactChange),
    AddToSegment(Uuid),
    /// Opts the contact in (`true`) or out of a topic.
    TopicUpdate { topic_id: Uuid, opt_in: bool },
}

/// How long a delay parks a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Delay {
    Seconds(i64),
    Until(DateTime<Utc>),
}

impl Delay {
    /// When a run parked at `from` goes on.
    pub fn due(&self, from: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            Delay::Seconds(s) => from + chrono::TimeDelta::seconds(*s),
            Delay::Until(at) => *at,
        }
    }
}

/// What a `contact_update` step sets (absent fields stay).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContactChange {
    pub first_name: Option<Option<String>>,
    pub last_name: Option<Option<String>>,
    pub unsubscribed: Option<bool>,
    pub properties: Map<String, Value>,
}

/// How one step leads to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Branch {
    Default,
    Met,
    NotMet,
}

impl Branch {
    pub fn name(self) -> &'static str {
        match self {
            Branch::Default => "default",
            Branch::Met => "condition_met",
            Branch::NotMet => "condition_not_met",
        }
    }
}

/// One step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub key: String,
    pub kind: String,
    pub action: Action,
}

/// A valid graph.
#[derive(Debug, Clone)]
pub struct Graph {
    pub steps: Vec<Step>,
    /// `(from, branch) -> to`, by step index.
    edges: HashMap<(usize, Branch), usize>,
    trigger: usize,
}

impl Graph {
    pub fn trigger(&self) -> &Step {
        &self.steps[self.trigger]
    }

    pub fn step(&self, key: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.key == key)
    }

    /// The step after `key` along `branch`; `None` ends the run.
    pub fn next(&self, key: &str, branch: Branch) -> Option<&Step> {
        let from = self.steps.iter().position(|s| s.key == key)?;
        self.edges.get(&(from, branch)).map(|&to| &self.steps[to])
    }

    /// Every step in graph order from the trigger: depth first, `condition_met` before
    /// `condition_not_met`, each step once.
    pub fn order(&self) -> Vec<&Step> {
        let mut seen = vec![false; self.steps.len()];
        let mut order = Vec::new();
        let mut stack = vec![self.trigger];
        while let Some(at) = stack.pop() {
            if std::mem::replace(&mut seen[at], true) {
                continue;
            }
            order.push(&self.steps[at]);
            for branch in [Branch::NotMet, Branch::Met, Branch::Default] {
                if let Some(&to) = self.edges.get(&(at, branch)) {
                    stack.push(to);
                }
            }
        }
        order
    }

    /// The trigger's event name.
    pub fn event_name(&self) -> &str {
        match &self.trigger().action {
            Action::Trigger { event_name, .. } => event_name,
            _ => unreachable!("the trigger step is a trigger"),
        }
    }
}

/// Whether `name` is a built-in trigger.
pub fn is_built_in(name: &str) -> bool {
    BUILT_IN_TRIGGERS.contains(&name) || EMAIL_TRIGGERS.contains(&name)
}

/// Parses and checks a graph. `now` is the time of a write, against which delays are checked;
/// a stored version is parsed with `None`.
pub fn parse(steps: &[Value], connections: &[Value], now: Option<DateTime<Utc>>) -> Result<Graph, Vec<Problem>> {
    let mut problems: Vec<Problem> = Vec::new();
    if steps.len() > MAX_STEPS {
        problems.push(("steps".into(), format!("has {} steps; at most {MAX_STEPS}", steps.len())));
    }
    let (parsed, keys) = parse_steps(steps, now, &mut problems);
    let (edges, broken) = parse_connections(connections, &parsed, &keys, &mut problems);
    let triggers = check_shape(&parsed, &edges, broken, &mut problems);
    if problems.is_empty() {
        Ok(Graph { steps: parsed, edges, trigger: triggers[0] })
    } else {
        Err(problems)
    }
}

/// Each step's key and settings; a step whose settings are refused is still a node (at
/// `usize::MAX`), so that edges to it are not reported as unknown too.
fn parse_steps(steps: &[Value], now: Option<DateTime<Utc>>, problems: &mut Vec<Problem>) -> (Vec<Step>, HashMap<String, usize>) {
    let mut parsed: Vec<Step> = Vec::new();
    let mut keys: HashMap<String, usize> = HashMap::new();
    for (i, raw) in steps.iter().enumerate() {
        let key = raw.get("key").and_then(Value::as_str).map(str::to_string);
        let Some(key) = key.filter(|k| !k.trim().is_empty() && k.chars().count() <= MAX_KEY) else {
            problems.push((format!("steps[{i}].key"), format!("is required: a string of 1 to {MAX_KEY} characters")));
            continue;
        };
        if keys.contains_key(&key) {
            problems.push((key.clone(), "the key is used by more than one step".into()));
            continue;
        }
        let kind = raw.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        let config = raw.get("config").cloned().unwrap_or(Value::Null);
        match action(&kind, &config, now) {
            Ok(action) => {
                keys.insert(key.clone(), parsed.len());
                parsed.push(Step { key, kind, action });
            }
            Err(why) => {
                // Still a node, so edges to it are not reported as unknown too.
                keys.insert(key.clone(), usize::MAX);
                problems.push((key, why));
            }
        }
    }
    (parsed, keys)
}

/// The connections as edges, each checked against the steps it joins; `broken` when one joins a
/// step whose settings were refused (the graph's shape is then not judged).
fn parse_connections(
    connections: &[Value],
    parsed: &[Step],
    keys: &HashMap<String, usize>,
    problems: &mut Vec<Problem>,
) -> (HashMap<(usize, Branch), usize>, bool) {
    let mut edges: HashMap<(usize, Branch), usize> = HashMap::new();
    let mut broken = false;
    for (i, raw) in connections.iter().enumerate() {
        let end = |field: &str| raw.get(field).and_then(Value::as_str).map(str::to_string);
        let kind = raw.get("type").and_then(Value::as_str).unwrap_or("default");
        let (Some(from), Some(to)) = (end("from"), end("to")) else {
            problems.push((format!("connections[{i}]"), "needs `from` and `to` step keys".into()));
            continue;
        };
        let branch = match kind {
            "default" => Branch::Default,
            "condition_met" => Branch::Met,
            "condition_not_met" => Branch::NotMet,
            other if UNAVAILABLE_CONNECTIONS.contains(&other) => {
                problems.push((from, format!("`{other}` connections are not available in this release")));
                continue;
            }
            other => {
                problems.push((format!("connections[{i}].type"), format!("`{other}` is not a connection type; use {}", CONNECTION_TYPES.join(", "))));
                continue;
            }
        };
        let (Some(&f), Some(&t)) = (keys.get(&from), keys.get(&to)) else {
            let missing = if keys.contains_key(&from) { to } else { from };
            problems.push((format!("connections[{i}]"), format!("names `{missing}`, which is not a step")));
            continue;
        };
        if f == usize::MAX {
            broken = true;
            continue;
        }
        let from_step = &parsed[f];
        let is_condition = from_step.kind == "condition";
        if is_condition && branch == Branch::Default {
            problems.push((from.clone(), "a condition's connections are `condition_met` and `condition_not_met`, never `default`".into()));
            continue;
        }
        if !is_condition && branch != Branch::Default {
            problems.push((from.clone(), format!("only a condition has `{}` connections", branch.name())));
            continue;
        }
        if t == usize::MAX {
            broken = true;
            continue;
        }
        if parsed[t].kind == "trigger" {
            problems.push((to.clone(), "nothing connects into the trigger".into()));
            continue;
        }
        if f == t {
            problems.push((from.clone(), "connects to itself (a cycle)".into()));
            continue;
        }
        if edges.insert((f, branch), t).is_some() {
            let what = if is_condition { format!("more than one `{}` connection", branch.name()) } else { "more than one outgoing connection".into() };
            problems.push((from.clone(), what));
        }
    }
    (edges, broken)
}

/// The graph's shape: exactly one trigger, every step reachable from it, no cycle. Answers the
/// triggers' positions.
fn check_shape(parsed: &[Step], edges: &HashMap<(usize, Branch), usize>, broken: bool, problems: &mut Vec<Problem>) -> Vec<usize> {
    let triggers: Vec<usize> = parsed.iter().enumerate().filter(|(_, s)| s.kind == "trigger").map(|(i, _)| i).collect();
    match triggers.len() {
        1 => {}
        0 if !broken => problems.push(("steps".into(), "exactly one step must be a trigger; there is none".into())),
        0 => {}
        _ => {
            for &i in &triggers {
                problems.push((parsed[i].key.clone(), format!("exactly one step may be a trigger; there are {}", triggers.len())));
            }
        }
    }
    if triggers.len() == 1 && !broken {
        let trigger = triggers[0];
        // Reachability from the trigger.
        let mut seen = vec![false; parsed.len()];
        let mut stack = vec![trigger];
        while let Some(at) = stack.pop() {
            if std::mem::replace(&mut seen[at], true) {
                continue;
            }
            stack.extend(edges.iter().filter(|((f, _), _)| *f == at).map(|(_, &t)| t));
        }
        for (i, step) in parsed.iter().enumerate() {
            if !seen[i] {
                problems.push((step.key.clone(), "is not reachable from the trigger".into()));
            }
        }
        for key in cycle_members(parsed.len(), &edges) {
            problems.push((parsed[key].key.clone(), "is on a cycle; the graph must be acyclic".into()));
        }
    }
    triggers
}

/// The steps whose own settings parse (whatever the graph's shape), so that a refused graph's
/// references can be checked in the same answer.
pub fn steps(steps: &[Value]) -> Vec<Step> {
    steps
        .iter()
        .filter_map(|raw| {
            let key = raw.get("key").and_then(Value::as_str)?.to_string();
            let kind = raw.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
            let action = action(&kind, raw.get("config").unwrap_or(&Value::Null), None).ok()?;
            Some(Step { key, kind, action })
        })
        .collect()
}

/// The steps that lie on a cycle (three-colour depth-first search).
fn cycle_members(count: usize, edges: &HashMap<(usize, Branch), usize>) -> Vec<usize> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (&(f, _), &t) in edges {
        next[f].push(t);
    }
    let mut state = vec![0u8; count];
    let mut on_cycle = HashSet::new();
    for start in 0..count {
        if state[start] != 0 {
            continue;
        }
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = 1;
        while let Some(&mut (at, ref mut i)) = path.last_mut() {
            if let Some(&to) = next[at].get(*i) {
                *i += 1;
                match state[to] {
                    0 => {
                        state[to] = 1;
                        path.push((to, 0));
                    }
                    1 => {
                        let from = path.iter().position(|(n, _)| *n == to).unwrap_or(0);
                        on_cycle.extend(path[from..].iter().map(|(n, _)| *n));
                    }
                    _ => {}
                }
            } else {
                state[at] = 2;
                path.pop();
            }
        }
    }
    let mut members: Vec<usize> = on_cycle.into_iter().collect();
    members.sort_unstable();
    members
}

fn action(kind: &str, config: &Value, now: Option<DateTime<Utc>>) -> Result<Action, String> {
    let empty = Map::new();
    let map = match config {
        Value::Object(map) => map,
        Value::Null => &empty,
        _ => return Err("`config` must be an object".into()),
    };
    match kind {
        "trigger" => trigger(map),
        "send_email" => send_email(map),
        "delay" => delay(map, now),
        "condition" => Ok(Action::Condition(condition_filter(config)?)),
        "contact_update" => contact_update(map),
        "add_to_segment" => Ok(Action::AddToSegment(config_id(map, "segment_id")?)),
        "topic_update" => {
            let topic_id = config_id(map, "topic_id")?;
            let opt_in = match config_text(map, "subscription").as_deref() {
                Some("opt_in") => true,
                Some("opt_out") => false,
                _ => return Err("`config.subscription` must be opt_in or opt_out".into()),
            };
            Ok(Action::TopicUpdate { topic_id, opt_in })
        }
        other if UNAVAILABLE_STEPS.contains(&other) => Err(format!("`{other}` steps are not available in this release")),
        other => Err(format!("`{other}` is not a step type; use {}", STEP_TYPES.join(", "))),
    }
}

/// A text field of a step's config.
fn config_text(map: &Map<String, Value>, field: &str) -> Option<String> {
    map.get(field).and_then(Value::as_str).map(str::to_string)
}

/// An id field of a step's config.
fn config_id(map: &Map<String, Value>, field: &str) -> Result<Uuid, String> {
    map.get(field).and_then(Value::as_str).and_then(crate::ids::parse_id).ok_or_else(|| format!("`config.{field}` must be an id"))
}

/// An id field of a step's config that may be absent or null.
fn optional_config_id(map: &Map<String, Value>, field: &str) -> Result<Option<Uuid>, String> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => config_id(map, field).map(Some),
    }
}

/// A trigger step: a custom event or a built-in `svc:` trigger, optionally narrowed to a
/// segment or a topic.
fn trigger(map: &Map<String, Value>) -> Result<Action, String> {
    let event_name = config_text(map, "event_name").filter(|n| !n.is_empty()).ok_or("`config.event_name` is required")?;
    let segment_id = optional_config_id(map, "segment_id")?;
    let topic_id = optional_config_id(map, "topic_id")?;
    if event_name == "svc:segment.entered" && segment_id.is_none() {
        return Err("`svc:segment.entered` needs `config.segment_id`: the segment whose new members enrol".into());
    }
    if event_name.starts_with("svc:") && !is_built_in(&event_name) {
        return Err(format!("`{event_name}` is not a built-in trigger; use a custom event or one of {}, svc:email.*", BUILT_IN_TRIGGERS.join(", ")));
    }
    Ok(Action::Trigger { event_name, segment_id, topic_id })
}

/// A `send_email` step: a template with its variables, and optional sender, subject and
/// reply-to overrides.
fn send_email(map: &Map<String, Value>) -> Result<Action, String> {
    let template = map.get("template").ok_or("`config.template` is required: { id, variables }")?;
    let key = template.get("id").and_then(Value::as_str).filter(|s| !s.trim().is_empty()).ok_or("`config.template.id` is required")?;
    let variables = match template.get("variables") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(v)) => v.clone(),
        Some(_) => return Err("`config.template.variables` must be an object".into()),
    };
    let reply_to = match map.get("reply_to") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().map(|v| v.as_str().map(str::to_string)).collect::<Option<_>>().ok_or("`config.reply_to` must be addresses")?,
        Some(_) => return Err("`config.reply_to` must be an address or a list of them".into()),
    };
    Ok(Action::SendEmail {
        template: key.trim().to_string(),
        variables,
        from: config_text(map, "from"),
        subject: config_text(map, "subject"),
        reply_to,
    })
}

/// A delay: a duration or an instant, at most [`MAX_DELAY_DAYS`] out.
fn delay(map: &Map<String, Value>, now: Option<DateTime<Utc>>) -> Result<Action, String> {
    let delay = match (map.get("duration"), map.get("until")) {
        (Some(duration), None) => Delay::Seconds(duration_seconds(duration)?),
        (None, Some(until)) => Delay::Until(
            until
                .as_str()
                .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
                .map(|t| t.with_timezone(&Utc))
                .ok_or("`config.until` must be an ISO 8601 instant with a zone")?,
        ),
        _ => return Err("a delay takes exactly one of `config.duration` ('<n> days') and `config.until`".into()),
    };
    let limit = chrono::TimeDelta::days(MAX_DELAY_DAYS);
    match (&delay, now) {
        (Delay::Seconds(s), _) if *s > limit.num_seconds() => Err(format!("a delay reaches at most {MAX_DELAY_DAYS} days out")),
        (Delay::Until(at), Some(now)) if *at > now + limit => Err(format!("a delay reaches at most {MAX_DELAY_DAYS} days out")),
        _ => Ok(Action::Delay(delay)),
    }
}

/// A `contact_update` step: names, the unsubscribe flag and literal property values.
fn contact_update(map: &Map<String, Value>) -> Result<Action, String> {
    let mut change = ContactChange::default();
    for (field, value) in map {
        match field.as_str() {
            "first_name" | "last_name" => {
                let name = match value {
                    Value::Null => None,
                    Value::String(s) if s.chars().count() <= 200 => Some(s.clone()),
                    _ => return Err(format!("`config.{field}` must be text of at most 200 characters or null")),
                };
                if field == "first_name" { change.first_name = Some(name) } else { change.last_name = Some(name) }
            }
            "unsubscribed" => change.unsubscribed = Some(value.as_bool().ok_or("`config.unsubscribed` must be true or false")?),
            "properties" => {
                change.properties = value.as_object().cloned().ok_or("`config.properties` must be an object of literal values")?;
                if let Some((key, _)) = change.properties.iter().find(|(_, v)| v.is_array() || v.is_object()) {
                    return Err(format!("`config.properties.{key}` must be a string, number, boolean or null"));
                }
            }
            other => return Err(format!("`config.{other}` is not a contact field; use first_name, last_name, unsubscribed or properties")),
        }
    }
    if change == ContactChange::default() {
        return Err("a contact update sets at least one of first_name, last_name, unsubscribed, properties".into());
    }
    Ok(Action::ContactUpdate(change))
}

/// `'<n> days'` (also seconds, minutes, hours, weeks; singular or plural) or a number of
/// seconds.
fn duration_seconds(value: &Value) -> Result<i64, String> {
    let bad = || "`config.duration` must read '<n> days' (or seconds, minutes, hours, weeks)".to_string();
    if let Some(n) = value.as_i64() {
        return if n >= 0 { Ok(n) } else { Err(bad()) };
    }
    let text = value.as_str().ok_or_else(bad)?.trim().to_ascii_lowercase();
    let (n, unit) = text.split_once(char::is_whitespace).ok_or_else(bad)?;
    let n: i64 = n.parse().ok().filter(|n| *n >= 0).ok_or_else(bad)?;
    let unit = unit.trim().trim_end_matches('s');
    let seconds = match unit {
        "second" => 1,
        "minute" => 60,
        "hour" => 3600,
        "day" => 86_400,
        "week" => 7 * 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(seconds).ok_or_else(bad)
}

/// A condition's rule tree as a segment filter. Rules are `{ type: 'rule', field, operator,
/// value }` (a bare field other than the contact's own is a property), groups `{ type: 'and' |
/// 'or' | 'not', rules: [...] }`; the segment filter's own forms are accepted too. A single
/// rule at the top is wrapped in a group.
pub fn condition_filter(config: &Value) -> Result<Value, String> {
    fn node(value: &Value) -> Value {
        let Some(map) = value.as_object() else { return value.clone() };
        let group = match map.get("type").and_then(Value::as_str) {
            Some("and") => Some("all"),
            Some("or") => Some("any"),
            Some("not") => Some("not"),
            _ => None,
        };
        if let Some(group) = group {
            let rules = map.get("rules").and_then(Value::as_array).map(|r| r.iter().map(node).collect::<Vec<_>>()).unwrap_or_default();
            return json!({ group: rules });
        }
        if let Some(key) = ["all", "any", "not"].into_iter().find(|g| map.contains_key(*g)) {
            let items = map[key].as_array().map(|r| r.iter().map(node).collect::<Vec<_>>()).unwrap_or_default();
            return json!({ key: items });
        }
        if map.get("type").and_then(Value::as_str) == Some("rule") || map.contains_key("operator") {
            let field = map.get("field").and_then(Value::as_str).unwrap_or_default();
            let field = match field {
                "email" | "first_name" | "last_name" | "unsubscribed" | "created_at" => field.to_string(),
                f if f.starts_with("properties.") => f.to_string(),
                f => format!("properties.{f}"),
            };
            let mut rule = json!({ "field": field, "op": map.get("operator").or(map.get("op")).cloned().unwrap_or(Value::Null) });
            if let Some(v) = map.get("value") {
                rule["value"] = v.clone();
            }
            return rule;
        }
        value.clone()
    }
    if !config.is_object() {
        return Err("`config` must be a rule tree: { type: 'rule', field, operator, value } or a group".into());
    }
    let tree = node(config);
    let is_group = tree.as_object().is_some_and(|m| m.len() == 1 && ["all", "any", "not"].iter().any(|g| m.contains_key(*g)));
    Ok(if is_group { tree } else { json!({ "all": [tree] }) })
}

/// Parses a custom event's payload date: an ISO 8601 calendar date or a zoned instant, each
/// naming a real day.
pub fn is_event_date(text: &str) -> bool {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok() || DateTime::parse_from_rfc3339(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(key: &str, kind: &str, config: Value) -> Value {
        json!({ "key": key, "type": kind, "config": config })
    }

    fn edge(from: &str, to: &str, kind: &str) -> Value {
        json!({ "from": from, "to": to, "type": kind })
    }

    fn trigger() -> Value {
        step("start", "trigger", json!({ "event_name": "signed.up" }))
    }

    fn keys(problems: &[Problem]) -> Vec<&str> {
        problems.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn a_branching_graph_is_ordered_met_branch_first() {
        let steps = vec![
            trigger(),
            step("check", "condition", json!({ "type": "rule", "field": "plan", "operator": "eq", "value": "pro" })),
            step("no", "contact_update", json!({ "first_name": "x" })),
            step("yes", "delay", json!({ "duration": "2 days" })),
        ];
        let connections = vec![edge("start", "check", "default"), edge("check", "no", "condition_not_met"), edge("check", "yes", "condition_met")];
        let graph = parse(&steps, &connections, Some(Utc::now())).unwrap();
        let order: Vec<&str> = graph.order().iter().map(|s| s.key.as_str()).collect();
        assert_eq!(order, ["start", "check", "yes", "no"]);
        assert_eq!(graph.next("check", Branch::Met).unwrap().key, "yes");
        assert_eq!(graph.next("yes", Branch::Default), None);
        assert_eq!(graph.step("yes").unwrap().action, Action::Delay(Delay::Seconds(2 * 86_400)));
    }

    #[test]
    fn two_triggers_an_unreachable_step_and_a_cycle_are_each_reported_by_key() {
        let steps = vec![trigger(), step("again", "trigger", json!({ "event_name": "x" })), step("a", "delay", json!({ "duration": "1 day" })), step("b", "delay", json!({ "duration": "1 day" }))];
        let problems = parse(&steps, &[edge("start", "a", "default")], None).unwrap_err();
        assert_eq!(keys(&problems), ["start", "again"]);
        let steps = vec![trigger(), step("a", "delay", json!({ "duration": "1 day" })), step("b", "delay", json!({ "duration": "1 day" })), step("lost", "delay", json!({ "duration": "1 day" }))];
        let problems = parse(&steps, &[edge("start", "a", "default"), edge("a", "b", "default"), edge("b", "a", "default")], None).unwrap_err();
        assert_eq!(keys(&problems), ["lost", "a", "b"]);
    }

    #[test]
    fn edge_rules_delays_and_unavailable_types_are_refused() {
        let steps = vec![trigger(), step("check", "condition", json!({ "field": "email", "operator": "contains", "value": "@" })), step("far", "delay", json!({ "duration": "31 days" })), step("wait", "wait_for_event", json!({}))];
        let connections = vec![edge("start", "check", "default"), edge("check", "far", "default"), edge("start", "wait", "timeout")];
        let problems = parse(&steps, &connections, Some(Utc::now())).unwrap_err();
        let found: Vec<(&str, &str)> = problems.iter().map(|(k, m)| (k.as_str(), m.as_str())).collect();
        assert!(found.iter().any(|(k, m)| *k == "far" && m.contains("30 days")), "{found:?}");
        assert!(found.iter().any(|(k, m)| *k == "wait" && m.contains("not available")), "{found:?}");
        assert!(found.iter().any(|(k, m)| *k == "check" && m.contains("never `default`")), "{found:?}");
        assert!(found.iter().any(|(k, m)| *k == "start" && m.contains("timeout")), "{found:?}");
    }

    #[test]
    fn a_stored_until_parses_whenever_it_is_read_but_a_write_checks_it() {
        let far = (Utc::now() + chrono::TimeDelta::days(40)).to_rfc3339();
        let steps = vec![trigger(), step("d", "delay", json!({ "until": far }))];
        let connections = vec![edge("start", "d", "default")];
        assert!(parse(&steps, &connections, Some(Utc::now())).is_err());
        assert!(parse(&steps, &connections, None).is_ok());
    }

    #[test]
    fn one_hundred_fifty_one_steps_are_too_many() {
        let mut steps = vec![trigger()];
        let mut connections = Vec::new();
        let mut previous = "start".to_string();
        for i in 0..150 {
            let key = format!("s{i}");
            steps.push(step(&key, "delay", json!({ "duration": "1 day" })));
            connections.push(edge(&previous, &key, "default"));
            previous = key;
        }
        let problems = parse(&steps, &connections, None).unwrap_err();
        assert_eq!(keys(&problems), ["steps"]);
        steps.pop();
        connections.pop();
        assert!(parse(&steps, &connections, None).is_ok());
    }

    #[test]
    fn condition_rules_become_segment_filters() {
        let tree = json!({ "type": "or", "rules": [{ "type": "rule", "field": "plan", "operator": "eq", "value": "pro" }, { "type": "rule", "field": "email", "operator": "contains", "value": "@x" }] });
        assert_eq!(
            condition_filter(&tree).unwrap(),
            json!({ "any": [{ "field": "properties.plan", "op": "eq", "value": "pro" }, { "field": "email", "op": "contains", "value": "@x" }] })
        );
    }

    #[test]
    fn event_dates_name_real_days() {
        assert!(is_event_date("2026-02-28"));
        assert!(is_event_date("2026-02-28T10:00:00+02:00"));
        assert!(!is_event_date("2026-02-30"));
        assert!(!is_event_date("2026-02-28T10:00:00"));
        assert!(!is_event_date("tomorrow"));
    }
}
