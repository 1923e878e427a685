//! An automation's graph as clients send it (steps and connections), checked whole: one error
//! per step key, and every template, segment, topic and event it names checked to exist.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Choice;
use chrono::Utc;
use poem_openapi::Object;
use schema::automation::{self, Action, Problem};
use schema::store::automations::Trigger;
use schema::store::{contacts, custom_events, segments, templates, topics};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use uuid::Uuid;

crate::choices! {
    /// What a step does (`wait_for_event` and `contact_delete` are not available in this
    /// release and are refused).
    StepType = &["trigger", "send_email", "delay", "condition", "contact_update", "add_to_segment", "topic_update"];
    /// How a step leads to the next (`timeout` and `event_received` are not available in this
    /// release and are refused).
    ConnectionType = &["default", "condition_met", "condition_not_met"];
}

/// One step of a graph.
#[derive(Object, Deserialize, Clone)]
pub struct StepIn {
    /// Unique within the version, 1 to 100 characters.
    #[oai(validator(max_length = 100))]
    pub key: String,
    /// What the step does.
    #[serde(rename = "type")]
    #[oai(rename = "type")]
    pub kind: Choice<StepType>,
    /// The type's settings: `trigger` `{ event_name, segment_id?, topic_id? }`; `send_email`
    /// `{ template: { id, variables }, from?, subject?, reply_to? }`; `delay` `{ duration:
    /// '<n> days' }` or `{ until }` (at most 30 days out); `condition` a rule tree `{ type:
    /// 'rule', field, operator, value }` or `{ type: 'and' | 'or' | 'not', rules }`;
    /// `contact_update` `{ first_name?, last_name?, unsubscribed?, properties? }`;
    /// `add_to_segment` `{ segment_id }`; `topic_update` `{ topic_id, subscription: 'opt_in' |
    /// 'opt_out' }`.
    pub config: Option<BTreeMap<String, Value>>,
}

/// One connection of a graph.
#[derive(Object, Deserialize, Clone)]
pub struct ConnectionIn {
    /// The step key it leaves.
    pub from: String,
    /// The step key it enters.
    pub to: String,
    /// `default` when absent; a condition's are `condition_met` and `condition_not_met`.
    #[serde(rename = "type")]
    #[oai(rename = "type")]
    pub kind: Option<Choice<ConnectionType>>,
}

/// Checks a whole graph, shape and references, and answers its trigger and the steps and
/// connections as stored. Every problem is reported at once: one `errors[]` entry per step
/// key (a key's messages joined).
pub async fn check_graph(conn: &mut sqlx::PgConnection, team_id: Uuid, steps: Vec<StepIn>, connections: Vec<ConnectionIn>) -> ApiResult<(Trigger, Value, Value)> {
    let steps: Vec<Value> = steps
        .into_iter()
        .map(|s| json!({ "key": s.key, "type": s.kind.into_string(), "config": Value::Object(s.config.unwrap_or_default().into_iter().collect::<Map<_, _>>()) }))
        .collect();
    let connections: Vec<Value> = connections
        .into_iter()
        .map(|c| json!({ "from": c.from, "to": c.to, "type": c.kind.map_or_else(|| "default".to_string(), Choice::into_string) }))
        .collect();
    let parsed = automation::parse(&steps, &connections, Some(Utc::now()));
    let (mut problems, references) = match &parsed {
        Ok(graph) => (Vec::new(), check_references(conn, team_id, &graph.steps).await?),
        Err(problems) => (problems.clone(), check_references(conn, team_id, &automation::steps(&steps)).await?),
    };
    problems.extend(references);
    let graph = match parsed {
        Ok(graph) if problems.is_empty() => graph,
        _ => return Err(graph_error(problems)),
    };
    let Action::Trigger { event_name, segment_id, topic_id } = graph.trigger().action.clone() else { unreachable!("the trigger is a trigger") };
    Ok((Trigger { event_name, segment_id, topic_id }, Value::Array(steps), Value::Array(connections)))
}

pub fn graph_error(problems: Vec<Problem>) -> ApiError {
    let mut by_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut order = Vec::new();
    for (key, why) in problems {
        if !by_key.contains_key(&key) {
            order.push(key.clone());
        }
        by_key.entry(key).or_default().push(why);
    }
    let message = format!("The automation's graph has problems at {} step{}.", order.len(), if order.len() == 1 { "" } else { "s" });
    order.into_iter().fold(ApiError::refused(message), |error, key| {
        let why = by_key[&key].join("; ");
        error.with_error(key, why)
    })
}

/// The references of a graph that do not resolve on the team: published templates (with a
/// sender), segments, topics, declared properties in conditions and typed values in contact
/// updates, and the trigger's custom event.
pub async fn check_references(conn: &mut sqlx::PgConnection, team_id: Uuid, steps: &[automation::Step]) -> ApiResult<Vec<Problem>> {
    let mut problems = Vec::new();
    let template_keys: Vec<String> = steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::SendEmail { template, .. } => Some(template.clone()),
            _ => None,
        })
        .collect();
    let sendable = if template_keys.is_empty() { Vec::new() } else { templates::for_send(conn, team_id, &template_keys).await? };
    let mut segment_ids = Vec::new();
    let mut topic_ids = Vec::new();
    for step in steps {
        match &step.action {
            Action::AddToSegment(id) => segment_ids.push(*id),
            Action::Trigger { segment_id, topic_id, .. } => {
                segment_ids.extend(segment_id);
                topic_ids.extend(topic_id);
            }
            Action::TopicUpdate { topic_id, .. } => topic_ids.push(*topic_id),
            _ => {}
        }
    }
    let live_segments = segments::live_ids(conn, team_id, &segment_ids).await?;
    let live_topics = topics::live_ids(conn, team_id, &topic_ids).await?;
    let properties: BTreeMap<String, String> = contacts::properties(conn, team_id).await?.into_iter().map(|p| (p.key, p.kind)).collect();
    for step in steps {
        let key = step.key.clone();
        match &step.action {
            Action::Trigger { event_name, segment_id, topic_id } => {
                if !automation::is_built_in(event_name) && custom_events::live_names(conn, team_id, std::slice::from_ref(event_name)).await?.is_empty() {
                    problems.push((key.clone(), format!("`{event_name}` is not a custom event of the team (define it with POST /events)")));
                }
                if segment_id.is_some_and(|id| !live_segments.contains(&id)) {
                    problems.push((key.clone(), "`config.segment_id` is not one of the team's segments".into()));
                }
                if topic_id.is_some_and(|id| !live_topics.contains(&id)) {
                    problems.push((key, "`config.topic_id` is not one of the team's topics".into()));
                }
            }
            Action::SendEmail { template, from, .. } => {
                let found = sendable.iter().find(|t| t.id.to_string() == *template || t.alias.as_deref() == Some(template.as_str()));
                match found {
                    None => problems.push((key, format!("template `{template}` is not one of the team's templates"))),
                    Some(t) if t.version.is_none() => {
                        problems.push((key, format!("template `{template}` has only a draft; publish it first")))
                    }
                    Some(t) if from.is_none() && t.from_address.is_none() => {
                        problems.push((key, "neither the step (`config.from`) nor the template's published version names a sender".into()))
                    }
                    Some(_) => {}
                }
            }
            Action::Condition(filter) => {
                if let Err(found) = segments::check_filter(conn, team_id, filter).await? {
                    let why = found.into_iter().map(|(path, why)| format!("{}: {why}", path.replacen("filter", "config", 1))).collect::<Vec<_>>();
                    problems.push((key, why.join("; ")));
                }
            }
            Action::ContactUpdate(change) => {
                for (property, value) in &change.properties {
                    let Some(kind) = properties.get(property) else { continue };
                    let fits = match kind.as_str() {
                        "number" => value.is_number() || value.is_null(),
                        "boolean" => value.is_boolean() || value.is_null(),
                        _ => value.is_string() || value.is_null(),
                    };
                    if !fits {
                        problems.push((key.clone(), format!("`config.properties.{property}` must be a {kind}, the property's type")));
                    }
                }
            }
            Action::AddToSegment(id) if !live_segments.contains(id) => {
                problems.push((key, "`config.segment_id` is not one of the team's segments".into()))
            }
            Action::TopicUpdate { topic_id, .. } if !live_topics.contains(topic_id) => {
                problems.push((key, "`config.topic_id` is not one of the team's topics".into()))
            }
            _ => {}
        }
    }
    Ok(problems)
}
