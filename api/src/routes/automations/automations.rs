//! Automations: a graph of steps from one trigger, written as immutable versions, and the runs
//! that carry one contact each through the version they started on.

use schema::status as stored;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices, IdText, Nullable, Required};
use crate::http::paging::page_request;
use crate::routes::{Deleted, Tag, Updated, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::automation::{self, Graph};
use schema::store::automations::{self, Automation, Run, StepRecord};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use uuid::Uuid;
use crate::routes::automations::graph::{ConnectionIn, ConnectionType, StepIn, StepType, check_graph};

pub struct AutomationsApi;

crate::choices! {
    /// Whether an automation enrols contacts.
    AutomationStatus = &["enabled", "disabled"];
    /// Where a run is.
    RunStatus = &["running", "completed", "failed", "cancelled"];
    /// Where a run is at one step: `pending` (not reached yet), `waiting` (a delay until its
    /// time), `completed`, `failed`, or `skipped` (a branch not taken, or the run ended first).
    RunStepStatus = &["pending", "waiting", "completed", "failed", "skipped"];
}

/// Body of `POST /automations`.
#[derive(Object, Deserialize)]
pub struct CreateAutomation {
    /// 1 to 200 characters.
    #[oai(validator(max_length = 200))]
    pub name: Required<String>,
    /// `disabled` when absent.
    pub status: Option<Choice<AutomationStatus>>,
    /// Exactly one `trigger`, at most 150 steps.
    #[oai(validator(max_items = 150))]
    pub steps: Required<Vec<StepIn>>,
    /// How the steps lead to one another: each `from` and `to` is a step key.
    pub connections: Required<Vec<ConnectionIn>>,
}

/// Body of `PATCH /automations/{automation_id}`.
#[derive(Object, Deserialize)]
pub struct UpdateAutomation {
    /// 1 to 200 characters.
    #[oai(validator(max_length = 200))]
    pub name: Option<String>,
    /// Gates new enrolment only; live runs go on.
    pub status: Option<Choice<AutomationStatus>>,
    /// With `connections`: the next version, published at once. In-flight runs keep theirs.
    #[oai(validator(max_items = 150))]
    pub steps: Option<Vec<StepIn>>,
    /// With `steps`: the next version's connections.
    pub connections: Option<Vec<ConnectionIn>>,
}

/// `{ object: "automation", id }`.
#[derive(Object)]
pub struct AutomationRef {
    /// Always `automation`.
    pub object: String,
    /// The automation's id.
    pub id: String,
}

/// `{ object: "automation", id, status: "disabled" }`: a stopped automation.
#[derive(Object)]
pub struct Stopped {
    /// Always `automation`.
    pub object: String,
    /// The automation's id.
    pub id: String,
    /// Always `disabled` once stopped.
    pub status: Choice<AutomationStatus>,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Created (version 1).
    #[oai(status = 201)]
    Created(Json<AutomationRef>),
}

/// An automation and its current version.
#[derive(Object)]
pub struct AutomationView {
    /// Always `automation`.
    pub object: String,
    /// The automation's id.
    pub id: String,
    /// The automation's name.
    pub name: String,
    /// Whether the automation enrols contacts.
    pub status: Choice<AutomationStatus>,
    /// The current version's number.
    pub version: i32,
    /// The trigger's event name.
    pub trigger: String,
    /// The current version's steps. Absent in lists.
    #[oai(skip_serializing_if_is_none)]
    pub steps: Option<Vec<StepView>>,
    /// The current version's connections. Absent in lists.
    #[oai(skip_serializing_if_is_none)]
    pub connections: Option<Vec<ConnectionView>>,
    /// Per step reached, how many of the latest 10,000 runs reached it and where it stands for
    /// them. Absent in lists.
    #[oai(skip_serializing_if_is_none)]
    pub step_counts: Option<Vec<StepCountView>>,
    /// When the automation was created.
    pub created_at: DateTime<Utc>,
    /// When the automation was last changed.
    pub updated_at: DateTime<Utc>,
}

/// How many of the latest runs reached a step, and where it stands for them.
#[derive(Object)]
pub struct StepCountView {
    /// The step's key.
    pub key: String,
    /// Runs that reached the step.
    pub entered: i64,
    /// Runs for which the step is done.
    pub completed: i64,
    /// Runs waiting in the step (a delay until its time).
    pub waiting: i64,
    /// Runs whose step failed.
    pub failed: i64,
}

impl From<schema::store::automation_counts::StepCount> for StepCountView {
    fn from(c: schema::store::automation_counts::StepCount) -> Self {
        StepCountView { key: c.key, entered: c.entered, completed: c.completed, waiting: c.waiting, failed: c.failed }
    }
}

/// A step as stored.
#[derive(Object)]
pub struct StepView {
    /// The step's key, unique within the version.
    pub key: String,
    /// What the step does.
    #[oai(rename = "type")]
    pub kind: Choice<StepType>,
    /// The type's settings, as written.
    pub config: BTreeMap<String, Value>,
}

/// A connection as stored.
#[derive(Object)]
pub struct ConnectionView {
    /// The step key it leaves.
    pub from: String,
    /// The step key it enters.
    pub to: String,
    /// How the step leads to the next.
    #[oai(rename = "type")]
    pub kind: Choice<ConnectionType>,
}

/// A page of automations.
#[derive(Object)]
pub struct AutomationList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<AutomationView>,
}

/// A run.
#[derive(Object)]
pub struct RunView {
    /// Always `automation_run`.
    pub object: String,
    /// The run's id.
    pub id: String,
    /// The automation's id.
    pub automation_id: String,
    /// Where the run is.
    pub status: Choice<RunStatus>,
    /// The version the run started on and keeps.
    pub version: i32,
    /// The contact the run carries.
    pub contact_id: String,
    /// What enrolled the contact.
    pub trigger: RunTrigger,
    /// The recorded custom event; `null` for a built-in trigger.
    pub event_id: Nullable<String>,
    /// Why the run failed; `null` otherwise.
    pub error: Nullable<String>,
    /// When the run started.
    pub created_at: DateTime<Utc>,
    /// When the run started (the same instant as `created_at`: a run starts as it is made).
    pub started_at: DateTime<Utc>,
    /// When it completed, failed or was cancelled; `null` while running.
    pub completed_at: Nullable<DateTime<Utc>>,
    /// On retrieve: every step of the version in graph order from the trigger (depth first,
    /// `condition_met` before `condition_not_met`). Absent in lists.
    #[oai(skip_serializing_if_is_none)]
    pub steps: Option<Vec<RunStepView>>,
}

/// What enrolled a run's contact (the shape the Resend SDKs read).
#[derive(Object)]
pub struct RunTrigger {
    /// The trigger's event name: a custom event's, or a built-in `svc:` one.
    pub event_name: String,
    /// The event's data as the run received it: a custom event's payload, or what a built-in
    /// trigger says (such as `{ contact_id, segment_id }` for `svc:segment.entered`).
    pub payload: std::collections::BTreeMap<String, serde_json::Value>,
}

/// Where a run is at one step.
#[derive(Object)]
pub struct RunStepView {
    /// The step's key.
    pub key: String,
    /// What the step does.
    #[oai(rename = "type")]
    pub kind: Choice<StepType>,
    /// Where the run is at this step.
    pub status: Choice<RunStepStatus>,
    /// When the run reached the step; `null` before it did.
    pub started_at: Nullable<DateTime<Utc>>,
    /// When the step finished; `null` until it has.
    pub completed_at: Nullable<DateTime<Utc>>,
    /// What the step did: `{ branch }` for a condition, `{ email_id }` for a send, `{ until }`
    /// for a delay, `{ reason }` for a failure or a skipped send; `null` before it ran.
    pub outcome: Nullable<BTreeMap<String, Value>>,
    /// The same as `outcome` (the field the Resend SDKs read).
    pub output: Nullable<BTreeMap<String, Value>>,
    /// The failure's reason when the step failed; `null` otherwise.
    pub error: Nullable<String>,
    /// When the run reached the step (as `started_at`; the field the Resend SDKs read).
    pub created_at: Nullable<DateTime<Utc>>,
}

/// A page of runs.
#[derive(Object)]
pub struct RunList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<RunView>,
}

#[poem_openapi::OpenApi(tag = "Tag::Automations")]
impl AutomationsApi {
    /// Create an automation (version 1). The whole graph is checked at once: a problem with a
    /// step, including a template, segment, topic, property or custom event that does not
    /// resolve, is `422 validation_error` with one `errors[]` entry per step key.
    #[oai(path = "/automations", method = "post", operation_id = "create-automation")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateAutomation>) -> ApiResult<CreateResponse> {
        let body = body.0;
        let name = check_name(body.name.0.as_deref().ok_or_else(|| ApiError::missing_field("name"))?)?;
        let status = check_status(body.status)?.unwrap_or(stored::AutomationStatus::Disabled);
        let steps = body.steps.0.ok_or_else(|| ApiError::missing_field("steps"))?;
        let connections = body.connections.0.ok_or_else(|| ApiError::missing_field("connections"))?;
        let mut tx = state.pool.begin().await?;
        let (trigger, steps, connections) = check_graph(&mut tx, caller.team_id, steps, connections).await?;
        let id = automations::insert(&mut tx, caller.team_id, name, status, &trigger, &steps, &connections).await?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(AutomationRef { object: "automation".into(), id: id.to_string() })))
    }

    /// List the team's automations, newest first, without their graphs.
    #[oai(path = "/automations", method = "get", operation_id = "list-automations")]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this id.
        before: Query<Option<IdText>>,
        /// Only automations with this status.
        status: Query<Option<Choice<AutomationStatus>>>,
    ) -> ApiResult<Json<AutomationList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let status = match status.0 {
            Some(text) => Some(
                stored::AutomationStatus::parse(text.as_str())
                    .ok_or_else(|| ApiError::invalid_parameter("status", format!("must be enabled or disabled, not {:?}", text.as_str())))?,
            ),
            None => None,
        };
        let page = automations::list(&mut *state.pool.acquire().await?, caller.team_id, &page, status).await?;
        Ok(Json(AutomationList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(|a| view(a, false)).collect() }))
    }

    /// Retrieve an automation with its current version's steps and connections.
    #[oai(path = "/automations/:automation_id", method = "get", operation_id = "get-automation")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, automation_id: Path<String>) -> ApiResult<Json<AutomationView>> {
        let mut conn = state.pool.acquire().await?;
        let automation = found(&mut conn, caller.team_id, &automation_id.0, false).await?;
        let counts = schema::store::automation_counts::latest(&mut conn, caller.team_id, automation.id).await?;
        Ok(Json(AutomationView { step_counts: Some(counts.into_iter().map(StepCountView::from).collect()), ..view(automation, true) }))
    }

    /// Rename, enable or disable an automation; with `steps` and `connections` (both), write
    /// the next version and publish it. Runs in flight keep the version they started on.
    #[oai(path = "/automations/:automation_id", method = "patch", operation_id = "update-automation")]
    async fn update(&self, state: Data<&AppState>, caller: Data<&Caller>, automation_id: Path<String>, body: Body<UpdateAutomation>) -> ApiResult<Json<Updated>> {
        let body = body.0;
        let name = body.name.as_deref().map(check_name).transpose()?;
        let status = check_status(body.status)?;
        let graph = match (body.steps, body.connections) {
            (Some(steps), Some(connections)) => Some((steps, connections)),
            (None, None) => None,
            (Some(_), None) => return Err(ApiError::missing_field("connections")),
            (None, Some(_)) => return Err(ApiError::missing_field("steps")),
        };
        let mut tx = state.pool.begin().await?;
        let automation = found(&mut tx, caller.team_id, &automation_id.0, true).await?;
        let checked = match graph {
            Some((steps, connections)) => Some(check_graph(&mut tx, caller.team_id, steps, connections).await?),
            None => None,
        };
        let graph = checked.as_ref().map(|(t, s, c)| (t, s, c));
        automations::update(&mut tx, &automation, name, status, graph).await?;
        tx.commit().await?;
        Ok(Json(Updated { object: "automation".into(), id: automation.id.to_string() }))
    }

    /// Copy an automation's current version into a new, disabled automation named "<name>
    /// (copy)" at version 1. The graph is checked again as on create: a template, segment or
    /// event deleted since is `422 validation_error`.
    #[oai(path = "/automations/:automation_id/duplicate", method = "post", operation_id = "duplicate-automation")]
    async fn duplicate(&self, state: Data<&AppState>, caller: Data<&Caller>, automation_id: Path<String>) -> ApiResult<CreateResponse> {
        let mut tx = state.pool.begin().await?;
        let automation = found(&mut tx, caller.team_id, &automation_id.0, false).await?;
        let steps: Vec<StepIn> = serde_json::from_value(automation.steps).map_err(anyhow::Error::from)?;
        let connections: Vec<ConnectionIn> = serde_json::from_value(automation.connections).map_err(anyhow::Error::from)?;
        let (trigger, steps, connections) = check_graph(&mut tx, caller.team_id, steps, connections).await?;
        let name: String = format!("{} (copy)", automation.name).chars().take(200).collect();
        let id = automations::insert(&mut tx, caller.team_id, &name, stored::AutomationStatus::Disabled, &trigger, &steps, &connections).await?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(AutomationRef { object: "automation".into(), id: id.to_string() })))
    }

    /// Stop an automation: it is disabled and every running run is cancelled.
    #[oai(path = "/automations/:automation_id/stop", method = "post", operation_id = "stop-automation")]
    async fn stop(&self, state: Data<&AppState>, caller: Data<&Caller>, automation_id: Path<String>) -> ApiResult<Json<Stopped>> {
        let mut tx = state.pool.begin().await?;
        let automation = found(&mut tx, caller.team_id, &automation_id.0, true).await?;
        automations::stop(&mut tx, automation.id, false).await?;
        tx.commit().await?;
        Ok(Json(Stopped { object: "automation".into(), id: automation.id.to_string(), status: Choice::new("disabled") }))
    }

    /// Delete an automation: running runs are cancelled, and it answers 404 from then on.
    #[oai(path = "/automations/:automation_id", method = "delete", operation_id = "delete-automation")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, automation_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let mut tx = state.pool.begin().await?;
        let automation = found(&mut tx, caller.team_id, &automation_id.0, true).await?;
        automations::stop(&mut tx, automation.id, true).await?;
        tx.commit().await?;
        Ok(Json(Deleted { object: "automation".into(), id: automation.id.to_string(), deleted: true }))
    }

    /// List an automation's runs, newest first.
    #[oai(path = "/automations/:automation_id/runs", method = "get", operation_id = "list-automation-runs")]
    #[allow(clippy::too_many_arguments)]
    async fn runs(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        automation_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this id.
        before: Query<Option<IdText>>,
        /// A comma-separated list of `running`, `completed`, `failed`, `cancelled`; any other
        /// member is `422 invalid_parameter` naming it. Empty: every status.
        status: Query<Option<String>>,
    ) -> ApiResult<Json<RunList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let statuses = run_statuses(status.0.as_deref())?;
        let mut conn = state.pool.acquire().await?;
        let automation = found(&mut conn, caller.team_id, &automation_id.0, false).await?;
        let page = automations::runs(&mut conn, automation.id, &page, &statuses).await?;
        Ok(Json(RunList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(|r| run_view(r, None)).collect() }))
    }

    /// Retrieve a run with every step of its version in graph order, each with its state,
    /// times and outcome.
    #[oai(path = "/automations/:automation_id/runs/:run_id", method = "get", operation_id = "get-automation-run")]
    async fn run(&self, state: Data<&AppState>, caller: Data<&Caller>, automation_id: Path<String>, run_id: Path<String>) -> ApiResult<Json<RunView>> {
        let mut conn = state.pool.acquire().await?;
        let automation = found(&mut conn, caller.team_id, &automation_id.0, false).await?;
        let run_id = path_id(&run_id.0, "Run")?;
        let run = automations::run(&mut conn, automation.id, run_id).await?.ok_or_else(|| ApiError::not_found("Run"))?;
        let (steps, connections) = automations::version(&mut conn, automation.id, run.version).await?.ok_or_else(|| ApiError::not_found("Run"))?;
        let graph = automation::parse(steps.as_array().map_or(&[], Vec::as_slice), connections.as_array().map_or(&[], Vec::as_slice), None)
            .map_err(|_| anyhow::anyhow!("a stored version of automation {} does not parse", automation.id))?;
        let records = automations::step_records(&mut conn, run.id).await?;
        let steps = run_steps(&graph, &run, records);
        Ok(Json(run_view(run, Some(steps))))
    }
}

async fn found(conn: &mut sqlx::PgConnection, team_id: Uuid, raw: &str, lock: bool) -> ApiResult<Automation> {
    let id = path_id(raw, "Automation")?;
    automations::get(conn, team_id, id, lock).await?.ok_or_else(|| ApiError::not_found("Automation"))
}

fn check_name(name: &str) -> ApiResult<&str> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(ApiError::invalid_field("name", "must be 1 to 200 characters"));
    }
    Ok(name)
}

fn check_status(status: Option<Choice<AutomationStatus>>) -> ApiResult<Option<stored::AutomationStatus>> {
    match status.as_ref().map(Choice::as_str) {
        None => Ok(None),
        Some(text) => stored::AutomationStatus::parse(text)
            .map(Some)
            .ok_or_else(|| ApiError::invalid_field("status", format!("must be enabled or disabled, not {text:?}"))),
    }
}

fn run_statuses(raw: Option<&str>) -> ApiResult<Vec<stored::RunStatus>> {
    let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else { return Ok(Vec::new()) };
    raw.split(',')
        .map(str::trim)
        .map(|member| {
            stored::RunStatus::parse(member).ok_or_else(|| {
                ApiError::invalid_parameter("status", format!("`{member}` is not a run status; use {}", RunStatus::VALUES.join(", ")))
            })
        })
        .collect()
}

fn view(automation: Automation, with_graph: bool) -> AutomationView {
    let (steps, connections) = if with_graph {
        let steps = automation.steps.as_array().cloned().unwrap_or_default().into_iter().map(|s| StepView {
            key: s["key"].as_str().unwrap_or_default().to_string(),
            kind: Choice::new(s["type"].as_str().unwrap_or_default()),
            config: s["config"].as_object().map(|m| m.clone().into_iter().collect()).unwrap_or_default(),
        });
        let connections = automation.connections.as_array().cloned().unwrap_or_default().into_iter().map(|c| ConnectionView {
            from: c["from"].as_str().unwrap_or_default().to_string(),
            to: c["to"].as_str().unwrap_or_default().to_string(),
            kind: Choice::new(c["type"].as_str().unwrap_or("default")),
        });
        (Some(steps.collect()), Some(connections.collect()))
    } else {
        (None, None)
    };
    AutomationView {
        object: "automation".into(),
        id: automation.id.to_string(),
        name: automation.name,
        status: Choice::new(automation.status.as_str()),
        version: automation.current_version,
        trigger: automation.trigger_event,
        steps,
        connections,
        step_counts: None,
        created_at: automation.created_at,
        updated_at: automation.updated_at,
    }
}

fn run_view(run: Run, steps: Option<Vec<RunStepView>>) -> RunView {
    RunView {
        object: "automation_run".into(),
        id: run.id.to_string(),
        automation_id: run.automation_id.to_string(),
        status: Choice::new(run.status.as_str()),
        version: run.version,
        contact_id: run.contact_id.to_string(),
        trigger: RunTrigger { event_name: run.trigger_event, payload: run.event_data.as_object().map(|m| m.clone().into_iter().collect()).unwrap_or_default() },
        event_id: run.event_id.map(|id| id.to_string()).into(),
        error: run.error.into(),
        created_at: run.created_at,
        started_at: run.created_at,
        completed_at: run.completed_at.into(),
        steps,
    }
}

/// Every step of the run's version in graph order, with what the run recorded at it.
fn run_steps(graph: &Graph, run: &Run, mut records: Vec<StepRecord>) -> Vec<RunStepView> {
    graph
        .order()
        .into_iter()
        .map(|step| {
            let record = records.iter().position(|r| r.key == step.key).map(|i| records.swap_remove(i));
            let (status, started_at, completed_at, outcome) = match record {
                Some(r) => (r.status, Some(r.started_at), r.completed_at, r.outcome.as_object().map(|m| m.clone().into_iter().collect())),
                None if run.status == stored::RunStatus::Running => ("pending".to_string(), None, None, None),
                None => ("skipped".to_string(), None, None, None),
            };
            let error = (status == "failed")
                .then(|| outcome.as_ref().and_then(|o: &BTreeMap<String, Value>| o.get("reason")).and_then(Value::as_str).map(str::to_string))
                .flatten();
            RunStepView {
                key: step.key.clone(),
                kind: Choice::new(step.kind.clone()),
                status: Choice::new(status),
                started_at: started_at.into(),
                completed_at: completed_at.into(),
                output: outcome.clone().into(),
                outcome: outcome.into(),
                error: error.into(),
                created_at: started_at.into(),
            }
        })
        .collect()
}
