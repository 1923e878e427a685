//! Automations, their immutable versions, and runs: enrolment by built-in triggers, the
//! executor's claim and progress writes, and what the run routes read.

use crate::page::{Page, PageRequest};
use crate::status::{AutomationStatus, RunStatus};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A live automation with its current version.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Automation {
    pub id: Uuid,
    pub team_id: Uuid,
    pub name: String,
    pub status: AutomationStatus,
    pub current_version: i32,
    pub trigger_event: String,
    pub steps: Value,
    pub connections: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const SELECT: &str = "SELECT a.id, a.team_id, a.name, a.status, a.current_version, a.trigger_event, v.steps, v.connections, a.created_at, a.updated_at
     FROM automations a JOIN automation_versions v ON v.automation_id = a.id AND v.version = a.current_version
     WHERE a.deleted_at IS NULL AND a.team_id = ";

/// A version's trigger, as enrolment reads it.
#[derive(Debug, Clone)]
pub struct Trigger {
    pub event_name: String,
    pub segment_id: Option<Uuid>,
    pub topic_id: Option<Uuid>,
}

/// Inserts an automation and its version 1.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, name: &str, status: AutomationStatus, trigger: &Trigger, steps: &Value, connections: &Value) -> sqlx::Result<Uuid> {
    let id = crate::ids::new_id();
    sqlx::query(
        "WITH a AS (
             INSERT INTO automations (id, team_id, name, status, current_version, trigger_event, trigger_segment_id, trigger_topic_id)
             VALUES ($1, $2, $3, $4, 1, $5, $6, $7) RETURNING id
         )
         INSERT INTO automation_versions (automation_id, version, steps, connections) SELECT id, 1, $8, $9 FROM a",
    )
    .bind(id)
    .bind(team_id)
    .bind(name)
    .bind(status)
    .bind(&trigger.event_name)
    .bind(trigger.segment_id)
    .bind(trigger.topic_id)
    .bind(steps)
    .bind(connections)
    .execute(conn)
    .await?;
    Ok(id)
}

/// One live automation of the team, locked for a change when `lock`.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid, lock: bool) -> sqlx::Result<Option<Automation>> {
    let mut query = QueryBuilder::new(SELECT);
    query.push_bind(team_id).push(" AND a.id = ").push_bind(id);
    if lock {
        query.push(" FOR UPDATE OF a");
    }
    query.build_query_as().fetch_optional(conn).await
}

/// The team's live automations, newest first, optionally of one status.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest, status: Option<AutomationStatus>) -> sqlx::Result<Page<Automation>> {
    let mut query = QueryBuilder::new(SELECT);
    query.push_bind(team_id);
    if let Some(status) = status {
        query.push(" AND a.status = ").push_bind(status);
    }
    page.push_to(&mut query, "a.id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// Changes the name and status; with a graph, writes the next version and makes it current.
pub async fn update(
    conn: &mut PgConnection,
    automation: &Automation,
    name: Option<&str>,
    status: Option<AutomationStatus>,
    graph: Option<(&Trigger, &Value, &Value)>,
) -> sqlx::Result<i32> {
    let version = automation.current_version + i32::from(graph.is_some());
    if let Some((_, steps, connections)) = graph {
        sqlx::query("INSERT INTO automation_versions (automation_id, version, steps, connections) VALUES ($1, $2, $3, $4)")
            .bind(automation.id)
            .bind(version)
            .bind(steps)
            .bind(connections)
            .execute(&mut *conn)
            .await?;
    }
    let trigger = graph.map(|(t, _, _)| t);
    sqlx::query(
        "UPDATE automations SET name = COALESCE($2, name), status = COALESCE($3, status), current_version = $4,
                trigger_event = COALESCE($5, trigger_event),
                trigger_segment_id = CASE WHEN $6 THEN $7 ELSE trigger_segment_id END,
                trigger_topic_id = CASE WHEN $6 THEN $8 ELSE trigger_topic_id END,
                segment_clock_at = CASE WHEN ($3 = 'enabled' AND status <> 'enabled') OR ($6 AND $7 IS DISTINCT FROM trigger_segment_id)
                                        THEN now() ELSE segment_clock_at END,
                updated_at = now()
         WHERE id = $1",
    )
    .bind(automation.id)
    .bind(name)
    .bind(status)
    .bind(version)
    .bind(trigger.map(|t| t.event_name.clone()))
    .bind(trigger.is_some())
    .bind(trigger.and_then(|t| t.segment_id))
    .bind(trigger.and_then(|t| t.topic_id))
    .execute(conn)
    .await?;
    Ok(version)
}

/// Disables an automation (and deletes it when `delete`) and cancels its running runs.
pub async fn stop(conn: &mut PgConnection, id: Uuid, delete: bool) -> sqlx::Result<u64> {
    sqlx::query("UPDATE automations SET status = 'disabled', deleted_at = CASE WHEN $2 THEN now() ELSE deleted_at END, updated_at = now() WHERE id = $1")
        .bind(id)
        .bind(delete)
        .execute(&mut *conn)
        .await?;
    let cancelled = sqlx::query(
        "UPDATE automation_runs SET status = 'cancelled', step = NULL, completed_at = now(), updated_at = now()
         WHERE automation_id = $1 AND status = 'running'",
    )
    .bind(id)
    .execute(conn)
    .await?;
    Ok(cancelled.rows_affected())
}

/// One version of an automation (stored as sent).
pub async fn version(conn: &mut PgConnection, automation_id: Uuid, version: i32) -> sqlx::Result<Option<(Value, Value)>> {
    sqlx::query_as("SELECT steps, connections FROM automation_versions WHERE automation_id = $1 AND version = $2")
        .bind(automation_id)
        .bind(version)
        .fetch_optional(conn)
        .await
}

/// A run as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Run {
    pub id: Uuid,
    pub team_id: Uuid,
    pub automation_id: Uuid,
    pub version: i32,
    pub contact_id: Uuid,
    pub trigger_event: String,
    pub event_id: Option<Uuid>,
    pub event_data: Value,
    pub status: RunStatus,
    pub step: Option<String>,
    pub due_at: DateTime<Utc>,
    pub attempts: i32,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

const RUN_COLUMNS: &str =
    "id, team_id, automation_id, version, contact_id, trigger_event, event_id, event_data, status, step, due_at, attempts, error, created_at, completed_at";

impl Run {
    /// The `data` of `automation.run.*` events.
    pub fn event_data(&self, status: RunStatus, error: Option<&str>, completed_at: Option<DateTime<Utc>>) -> Value {
        serde_json::json!({
            "id": self.id,
            "object": "automation_run",
            "automation_id": self.automation_id,
            "version": self.version,
            "contact_id": self.contact_id,
            "trigger": self.trigger_event,
            "event_id": self.event_id,
            "status": status,
            "error": error,
            "created_at": self.created_at,
            "completed_at": completed_at,
        })
    }
}

/// A page of an automation's runs, newest first, optionally of some statuses.
pub async fn runs(conn: &mut PgConnection, automation_id: Uuid, page: &PageRequest, statuses: &[RunStatus]) -> sqlx::Result<Page<Run>> {
    let mut query = QueryBuilder::new(format!("SELECT {RUN_COLUMNS} FROM automation_runs WHERE automation_id = "));
    query.push_bind(automation_id);
    if !statuses.is_empty() {
        query.push(" AND status = ANY(").push_bind(statuses.iter().map(|s| s.as_str()).collect::<Vec<_>>()).push(")");
    }
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// One run of an automation.
pub async fn run(conn: &mut PgConnection, automation_id: Uuid, run_id: Uuid) -> sqlx::Result<Option<Run>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {RUN_COLUMNS} FROM automation_runs WHERE automation_id = $1 AND id = $2")))
        .bind(automation_id)
        .bind(run_id)
        .fetch_optional(conn)
        .await
}

/// What one executed step recorded.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StepRecord {
    pub key: String,
    pub status: String,
    pub started_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    pub outcome: Value,
}

/// The steps a run has executed (or is waiting in).
pub async fn step_records(conn: &mut PgConnection, run_id: Uuid) -> sqlx::Result<Vec<StepRecord>> {
    sqlx::query_as("SELECT key, status, started_at, completed_at, outcome FROM automation_run_steps WHERE run_id = $1")
        .bind(run_id)
        .fetch_all(conn)
        .await
}

/// Claims up to `limit` due running runs for this transaction, longest due first (skipping
/// those another executor holds).
pub async fn claim_due(conn: &mut PgConnection, limit: i64) -> sqlx::Result<Vec<Run>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {RUN_COLUMNS} FROM automation_runs WHERE status = 'running' AND due_at <= now()
         ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED"
    )))
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Locks one run by id for this transaction, waiting for another executor's step to end.
pub async fn lock(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Run>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {RUN_COLUMNS} FROM automation_runs WHERE id = $1 FOR UPDATE")))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Whether any run is due now (the executor's idle probe).
pub async fn any_due(conn: &mut PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM automation_runs WHERE status = 'running' AND due_at <= now())")
        .fetch_one(conn)
        .await
}

/// Records what a step did (a delay's second visit completes its waiting record and adds to
/// its outcome); [`progress`] without moving any run.
pub async fn record_step(conn: &mut PgConnection, run_id: Uuid, key: &str, status: &str, outcome: &Value, completed: bool) -> sqlx::Result<()> {
    progress(conn, &[StepWrite { run_id, key, status, outcome, completed }], &[]).await?;
    Ok(())
}

/// A step's record: `completed` sets its completion time.
pub struct StepWrite<'a> {
    pub run_id: Uuid,
    pub key: &'a str,
    pub status: &'a str,
    pub outcome: &'a Value,
    pub completed: bool,
}

/// Where a step leaves its run: at `next` from its due time, or completed when `next` is `None`.
pub struct RunMove<'a> {
    pub run_id: Uuid,
    pub next: Option<(&'a str, DateTime<Utc>)>,
}

/// Records what steps did (at most one record per run and key; a record already there takes
/// the new status and completion time and adds to its outcome) and, in the same statement,
/// moves each run to its next step at its due time or completes it. Answers the runs it
/// completed, with when.
pub async fn progress(conn: &mut PgConnection, records: &[StepWrite<'_>], moves: &[RunMove<'_>]) -> sqlx::Result<Vec<(Uuid, DateTime<Utc>)>> {
    sqlx::query_as(
        "WITH s AS (
             INSERT INTO automation_run_steps (run_id, key, status, outcome, completed_at)
             SELECT r, k, st, o, CASE WHEN c THEN now() END FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::bool[]) AS x(r, k, st, o, c)
             ON CONFLICT (run_id, key) DO UPDATE SET status = excluded.status, outcome = automation_run_steps.outcome || excluded.outcome,
                                                     completed_at = excluded.completed_at
         ), moved AS (
             UPDATE automation_runs r SET
                 status = CASE WHEN m.next IS NULL THEN 'completed' ELSE r.status END,
                 step = m.next,
                 due_at = COALESCE(m.due_at, r.due_at),
                 completed_at = CASE WHEN m.next IS NULL THEN now() END,
                 attempts = 0, updated_at = now()
             FROM unnest($6::uuid[], $7::text[], $8::timestamptz[]) AS m(id, next, due_at)
             WHERE r.id = m.id
             RETURNING r.id, r.completed_at
         )
         SELECT id, completed_at FROM moved WHERE completed_at IS NOT NULL",
    )
    .bind(records.iter().map(|r| r.run_id).collect::<Vec<_>>())
    .bind(records.iter().map(|r| r.key).collect::<Vec<_>>())
    .bind(records.iter().map(|r| r.status).collect::<Vec<_>>())
    .bind(records.iter().map(|r| r.outcome.clone()).collect::<Vec<_>>())
    .bind(records.iter().map(|r| r.completed).collect::<Vec<_>>())
    .bind(moves.iter().map(|m| m.run_id).collect::<Vec<_>>())
    .bind(moves.iter().map(|m| m.next.map(|(step, _)| step)).collect::<Vec<_>>())
    .bind(moves.iter().map(|m| m.next.map(|(_, due_at)| due_at)).collect::<Vec<_>>())
    .fetch_all(conn)
    .await
}

/// Ends a run `completed` or `failed` (with the reason); answers when.
pub async fn finish(conn: &mut PgConnection, run_id: Uuid, status: RunStatus, error: Option<&str>) -> sqlx::Result<DateTime<Utc>> {
    sqlx::query_scalar(
        "UPDATE automation_runs SET status = $2, error = $3, step = NULL, completed_at = now(), updated_at = now() WHERE id = $1 RETURNING completed_at",
    )
    .bind(run_id)
    .bind(status)
    .bind(error)
    .fetch_one(conn)
    .await
}

/// After a failed attempt at a step: counts it and sets when to try again, `wait` from now on
/// PostgreSQL's clock.
pub async fn retry_after(conn: &mut PgConnection, run_id: Uuid, wait: std::time::Duration) -> sqlx::Result<i32> {
    sqlx::query_scalar(
        "UPDATE automation_runs SET attempts = attempts + 1, due_at = now() + make_interval(secs => $2), updated_at = now() WHERE id = $1 RETURNING attempts",
    )
    .bind(run_id)
    .bind(wait.as_secs_f64())
    .fetch_one(conn)
    .await
}

/// Starts one run of every enabled automation of the team that `trigger` names, for each
/// contact, with the trigger's `data`. `segment_id` and `topic_id` are what the trigger is
/// about (an automation that names one enrols only for it). Answers how many started.
pub async fn enrol(
    conn: &mut PgConnection,
    team_id: Uuid,
    trigger: &str,
    contact_ids: &[Uuid],
    data: &Value,
    segment_id: Option<Uuid>,
    topic_id: Option<Uuid>,
) -> sqlx::Result<u64> {
    if contact_ids.is_empty() {
        return Ok(0);
    }
    let done = sqlx::query(
        "INSERT INTO automation_runs (id, team_id, automation_id, version, contact_id, trigger_event, event_data)
         SELECT herald_uuid_v7(), a.team_id, a.id, a.current_version, c, a.trigger_event, $4
         FROM automations a CROSS JOIN unnest($3::uuid[]) AS c
         WHERE a.team_id = $1 AND a.trigger_event = $2 AND a.status = 'enabled' AND a.deleted_at IS NULL
           AND (a.trigger_segment_id IS NULL OR a.trigger_segment_id = $5)
           AND (a.trigger_topic_id IS NULL OR a.trigger_topic_id = $6)",
    )
    .bind(team_id)
    .bind(trigger)
    .bind(contact_ids)
    .bind(data)
    .bind(segment_id)
    .bind(topic_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// The segments that enabled `svc:segment.entered` automations of the team watch.
pub async fn watched_segments(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT DISTINCT trigger_segment_id FROM automations
         WHERE team_id = $1 AND trigger_event = 'svc:segment.entered' AND status = 'enabled' AND deleted_at IS NULL AND trigger_segment_id IS NOT NULL",
    )
    .bind(team_id)
    .fetch_all(conn)
    .await
}

/// `svc:segment.entered` around a change to contacts: which watched segments held them
/// before, so that [`SegmentWatch::enrol_entered`] can start runs for the ones they entered.
/// Only the segments an enabled automation watches are evaluated, and none when no automation
/// watches any (one indexed read). Before and after are one statement each, whatever the
/// number of contacts.
pub struct SegmentWatch {
    team_id: Uuid,
    memberships: Vec<super::segments::Membership>,
    before: std::collections::HashSet<(Uuid, Uuid)>,
}

impl SegmentWatch {
    /// Reads the watched segments and which of them hold the contact now (`None`: a contact
    /// about to be created). `None` when nothing watches.
    pub async fn before(conn: &mut PgConnection, team_id: Uuid, contact_id: Option<Uuid>) -> sqlx::Result<Option<SegmentWatch>> {
        let watched = watched_segments(conn, team_id).await?;
        Self::of(conn, team_id, contact_id.as_slice(), watched).await
    }

    /// As [`SegmentWatch::before`] for several contacts (those about to be created left out),
    /// with the watched segments already read.
    pub async fn of(conn: &mut PgConnection, team_id: Uuid, contact_ids: &[Uuid], watched: Vec<Uuid>) -> sqlx::Result<Option<SegmentWatch>> {
        if watched.is_empty() {
            return Ok(None);
        }
        let segments = super::segments::by_ids(conn, team_id, &watched).await?;
        let memberships = super::segments::memberships(conn, &segments).await?;
        let before = super::segments::holding_many(conn, contact_ids, &memberships).await?.into_iter().collect();
        Ok(Some(SegmentWatch { team_id, memberships, before }))
    }

    /// After the change: starts runs for each watched segment the contact has entered.
    pub async fn enrol_entered(self, conn: &mut PgConnection, contact_id: Uuid) -> sqlx::Result<u64> {
        self.enrol_entered_by(conn, &[contact_id]).await
    }

    /// After the change: starts runs for each watched segment each contact has entered, in
    /// one statement.
    pub async fn enrol_entered_by(self, conn: &mut PgConnection, contact_ids: &[Uuid]) -> sqlx::Result<u64> {
        let after = super::segments::holding_many(conn, contact_ids, &self.memberships).await?;
        let entered: Vec<(Uuid, Uuid)> = after.into_iter().filter(|pair| !self.before.contains(pair)).collect();
        enrol_entered_pairs(conn, self.team_id, &entered).await
    }
}

/// Starts the `svc:segment.entered` runs of `(contact, segment)` entries, each with its
/// `{ contact_id, segment_id }`, in one statement.
async fn enrol_entered_pairs(conn: &mut PgConnection, team_id: Uuid, entered: &[(Uuid, Uuid)]) -> sqlx::Result<u64> {
    if entered.is_empty() {
        return Ok(0);
    }
    let contacts: Vec<Uuid> = entered.iter().map(|(contact, _)| *contact).collect();
    let segments: Vec<Uuid> = entered.iter().map(|(_, segment)| *segment).collect();
    let done = sqlx::query(
        "INSERT INTO automation_runs (id, team_id, automation_id, version, contact_id, trigger_event, event_data)
         SELECT herald_uuid_v7(), a.team_id, a.id, a.current_version, p.contact_id, a.trigger_event,
                jsonb_build_object('contact_id', p.contact_id, 'segment_id', p.segment_id)
         FROM unnest($2::uuid[], $3::uuid[]) AS p(contact_id, segment_id)
         JOIN automations a ON a.team_id = $1 AND a.trigger_event = 'svc:segment.entered' AND a.status = 'enabled'
                           AND a.deleted_at IS NULL AND a.trigger_segment_id = p.segment_id",
    )
    .bind(team_id)
    .bind(&contacts)
    .bind(&segments)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
