//! The automation executor: runs are rows, not sleeping tasks. Each executor task claims a
//! batch of due running runs (`FOR UPDATE SKIP LOCKED`), executes each one's current step and
//! records the steps and the runs' progress in the same transaction. A crash rolls the steps
//! back with their progress, so a restarted worker repeats no step that committed and skips
//! none that did not. A step that fails sends its batch back to be advanced run by run, each
//! in a transaction of its own. A delay moves the run's `due_at` and lets it go; a probe wakes
//! idle tasks when runs fall due.

use crate::compose::{Addressee, Composer, Origin, Sender, property_fallbacks, template_defaults};
use chrono::Utc;
use render::Compiled;
use schema::automation::{self, Action, Branch, ContactChange, Graph, Step};
use schema::email::Mailbox;
use schema::status::RunStatus;
use schema::jobs::{Deliver, DeliverPage};
use schema::store::automations::{self, Run, RunMove, SegmentWatch, StepWrite};
use schema::store::contacts::{self, Consent, Contact, ContactFields, Property};
use schema::store::emails;
use schema::store::events::{self, NewEvent};
use schema::store::templates::Sendable;
use schema::store::{segments, sending, templates, topics, usage};
use serde_json::{Map, Value, json};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use uuid::Uuid;

/// How the executor runs.
#[derive(Debug, Clone)]
pub struct AutomationSettings {
    /// `HERALD_PUBLIC_URL`, for unsubscribe links.
    pub public_url: String,
    /// `HERALD_AUTOMATION_CONCURRENCY`: executor tasks in this process, each advancing a batch.
    pub concurrency: usize,
    /// Whether this is a development server, where the development sender may send.
    pub development: bool,
}

/// How often an idle executor looks for due runs.
const PROBE: Duration = Duration::from_millis(100);
/// How long one round of the executor's probe may take before readiness calls it stuck.
pub const ROUND_BOUND: Duration = Duration::from_secs(60);
/// Failed attempts at one step (the database down, a render error) before the run fails.
const MAX_ATTEMPTS: i32 = 8;

/// Versions parsed once per process (a version never changes).
#[derive(Default)]
struct Graphs(Mutex<HashMap<(Uuid, i32), Arc<Graph>>>);

impl Graphs {
    async fn get(&self, conn: &mut PgConnection, automation_id: Uuid, version: i32) -> anyhow::Result<Arc<Graph>> {
        if let Some(graph) = self.0.lock().expect("not poisoned").get(&(automation_id, version)) {
            return Ok(graph.clone());
        }
        let (steps, connections) = automations::version(conn, automation_id, version)
            .await?
            .ok_or_else(|| anyhow::anyhow!("automation {automation_id} has no version {version}"))?;
        let graph = automation::parse(steps.as_array().map_or(&[], Vec::as_slice), connections.as_array().map_or(&[], Vec::as_slice), None)
            .map_err(|problems| anyhow::anyhow!("version {version} of automation {automation_id} does not parse: {problems:?}"))?;
        let graph = Arc::new(graph);
        let mut cache = self.0.lock().expect("not poisoned");
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert((automation_id, version), graph.clone());
        Ok(graph)
    }
}

/// How many emails of a team's quota a process takes at once for its sending steps.
const LEASE: i32 = 32;

/// Quota leases: each sending step takes one email from its team's lease for the day, and a
/// lease is taken from the team's counter [`LEASE`] at a time in a short transaction of its own
/// ([`usage::lease`], which grants only what the caps leave), on a connection of the executor's
/// own (so a batch holding a connection of the shared pool never waits for another). Counting each email in its step's
/// transaction would hold the team's counter row locked until that commit, so one team's
/// sending steps would run one after another. What a process has not handed out when it stops
/// is given back; a process that dies keeps at most `LEASE - 1` per team counted but unsent.
#[derive(Default)]
struct Leases(Mutex<HashMap<(Uuid, chrono::NaiveDate), i32>>);

impl Leases {
    /// Takes one email of the team's quota for today; `false` when the quota is used up.
    async fn take(&self, pool: &PgPool, team_id: Uuid) -> anyhow::Result<bool> {
        let now = Utc::now();
        let key = (team_id, now.date_naive());
        if let Some(left) = self.0.lock().expect("not poisoned").get_mut(&key).filter(|left| **left > 0) {
            *left -= 1;
            return Ok(true);
        }
        let mut tx = pool.begin().await?;
        let granted = usage::lease(&mut tx, usage::Count { team_id, emails: LEASE, now }).await?;
        tx.commit().await?;
        if granted == 0 {
            return Ok(false);
        }
        *self.0.lock().expect("not poisoned").entry(key).or_default() += granted - 1;
        Ok(true)
    }

    /// Puts back one email a step took but did not commit.
    fn put_back(&self, team_id: Uuid, day: chrono::NaiveDate) {
        *self.0.lock().expect("not poisoned").entry((team_id, day)).or_default() += 1;
    }

    /// Gives every unused email back to its team's counter (at shutdown).
    async fn give_back(&self, pool: &PgPool) -> anyhow::Result<()> {
        let unused: Vec<_> = self.0.lock().expect("not poisoned").drain().filter(|(_, left)| *left > 0).collect();
        for ((team_id, day), left) in unused {
            let now = day.and_hms_opt(12, 0, 0).map(|t| t.and_utc()).unwrap_or_else(Utc::now);
            usage::add(&mut *pool.acquire().await?, usage::Count { team_id, emails: -left, now }).await?;
        }
        Ok(())
    }
}

/// What every task shares.
struct Executor {
    pool: PgPool,
    settings: AutomationSettings,
    graphs: Graphs,
    link_key: tokio::sync::OnceCell<Arc<[u8]>>,
    leases: Leases,
    /// The connections the leases are taken on (see [`Leases`]).
    lease_pool: PgPool,
}

/// Runs the executor until `shutdown` resolves; a step in progress finishes first.
pub async fn run(pool: PgPool, settings: AutomationSettings, shutdown: impl Future<Output = ()> + Send + 'static) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let lease_pool = sqlx::postgres::PgPoolOptions::new().max_connections(2).connect_lazy_with((*pool.connect_options()).clone());
    let executor = Arc::new(Executor { pool, settings, graphs: Graphs::default(), link_key: tokio::sync::OnceCell::new(), leases: Leases::default(), lease_pool });
    let wake = Arc::new(Notify::new());
    let probe = {
        let (executor, wake, stopped) = (executor.clone(), wake.clone(), stopped.clone());
        tokio::spawn(async move {
            while !*stopped.borrow() {
                tokio::time::sleep(PROBE).await;
                crate::supervise::beat("automations");
                let due = async { automations::any_due(&mut *executor.pool.acquire().await?).await }.await;
                match due {
                    Ok(true) => wake.notify_waiters(),
                    Ok(false) => {}
                    Err(error) => tracing::warn!(%error, "probing for due automation runs failed"),
                }
            }
        })
    };
    let tasks: Vec<_> = (0..executor.settings.concurrency.max(1))
        .map(|_| {
            let (executor, wake, stopped) = (executor.clone(), wake.clone(), stopped.clone());
            tokio::spawn(async move {
                while !*stopped.borrow() {
                    let notified = wake.notified();
                    match executor.step_once().await {
                        Ok(true) => continue,
                        Ok(false) => {}
                        Err(error) => tracing::error!(%error, "executing an automation step failed"),
                    }
                    let _ = tokio::time::timeout(Duration::from_secs(1), notified).await;
                }
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    probe.abort();
    if let Err(error) = executor.leases.give_back(&executor.lease_pool).await {
        tracing::warn!(%error, "giving back unused quota leases failed");
    }
}

/// Why a step did not complete.
enum StepError {
    /// It cannot succeed: the run fails with this reason.
    Fail(String),
    /// It may succeed later (the database, a render): tried again with backoff.
    Retry(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for StepError {
    fn from(error: E) -> Self {
        StepError::Retry(error.into())
    }
}

/// What a step did.
struct Done {
    flow: Flow,
    /// The step's record: `completed`, or `waiting` (a delay that parked the run).
    status: &'static str,
    outcome: Value,
    /// Whether it created an email (counted against the team's quota).
    sent: bool,
}

/// Where a step leaves the run.
enum Flow {
    /// Go on along this branch.
    Next(Branch),
    /// Parked until this time (a delay).
    Park(chrono::DateTime<Utc>),
}

/// How many due runs one executor task claims and advances in one transaction.
const BATCH: i64 = 32;

/// What the steps of one batch share: the writes they leave for its end (made in one statement
/// each before the commit: the events they emitted, the emails they created for delivery) and
/// the team facts they read once per batch (properties, watched segments, templates).
#[derive(Default)]
struct Batch {
    events: Vec<NewEvent>,
    deliveries: Vec<Uuid>,
    properties: HashMap<Uuid, Arc<Vec<Property>>>,
    watched: HashMap<Uuid, Vec<Uuid>>,
    templates: HashMap<(Uuid, String), Option<Arc<Sendable>>>,
}

impl Batch {
    /// The team's declared contact properties.
    async fn properties(&mut self, tx: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Arc<Vec<Property>>> {
        if let Some(properties) = self.properties.get(&team_id) {
            return Ok(properties.clone());
        }
        let properties = Arc::new(contacts::properties(tx, team_id).await?);
        self.properties.insert(team_id, properties.clone());
        Ok(properties)
    }

    /// `svc:segment.entered` around a change to the contact (see [`SegmentWatch`]).
    async fn watch(&mut self, tx: &mut PgConnection, team_id: Uuid, contact_id: Uuid) -> sqlx::Result<Option<SegmentWatch>> {
        let watched = match self.watched.get(&team_id) {
            Some(watched) => watched.clone(),
            None => {
                let watched = automations::watched_segments(tx, team_id).await?;
                self.watched.insert(team_id, watched.clone());
                watched
            }
        };
        SegmentWatch::of(tx, team_id, &[contact_id], watched).await
    }

    /// The template `key` names, when it is live (with `version: None` when it has no
    /// published version).
    async fn template(&mut self, tx: &mut PgConnection, team_id: Uuid, key: &str) -> sqlx::Result<Option<Arc<Sendable>>> {
        let cache_key = (team_id, key.to_string());
        if let Some(template) = self.templates.get(&cache_key) {
            return Ok(template.clone());
        }
        let found = templates::for_send(tx, team_id, std::slice::from_ref(&cache_key.1)).await?.into_iter().next().map(Arc::new);
        self.templates.insert(cache_key, found.clone());
        Ok(found)
    }

    async fn write(self, tx: &mut PgConnection) -> anyhow::Result<()> {
        events::emit(tx, &self.events).await?;
        match self.deliveries.as_slice() {
            [] => {}
            [email_id] => {
                schema::jobs::enqueue(tx, &Deliver { email_id: *email_id }).await?;
            }
            email_ids => {
                schema::jobs::enqueue(tx, &DeliverPage { email_ids: email_ids.to_vec() }).await?;
            }
        }
        Ok(())
    }
}

/// One run's step done in a batch's transaction: its records (the trigger's too when the step
/// started the run) and where it leaves the run.
struct Advanced {
    run_id: Uuid,
    team_id: Uuid,
    records: Vec<(String, &'static str, Value, bool)>,
    next: Option<(String, chrono::DateTime<Utc>)>,
    sent: bool,
}

impl Advanced {
    /// The failed step and the run's trigger (when this attempt started the run), for a
    /// failure found after the step ran.
    fn failure_keys(&self, run: &Run) -> (Option<String>, Option<String>) {
        let key = self.records.last().map(|r| r.0.clone());
        let trigger = run.step.is_none().then(|| self.records.first().map(|r| r.0.clone())).flatten();
        (key, trigger)
    }
}

/// A step that did not complete: which step, whether the attempt was the run's first (the
/// trigger's key), and why.
struct Failure {
    key: Option<String>,
    trigger: Option<String>,
    error: StepError,
}

impl Executor {
    /// Claims up to [`BATCH`] due runs and advances each by one step, all in one transaction:
    /// every step's writes commit with its run's progress. When any step fails, the batch rolls
    /// back and each of its runs is advanced alone, where a failure is that run's own. `false`
    /// when none was due.
    async fn step_once(&self) -> anyhow::Result<bool> {
        let mut tx = self.pool.begin().await?;
        let mut runs = automations::claim_due(&mut tx, BATCH).await?;
        if runs.is_empty() {
            return Ok(false);
        }
        // Contacts are locked in one order by every batch, so two batches never deadlock.
        runs.sort_by_key(|run| run.contact_id);
        if let Err(failed) = self.advance(tx, &runs).await? {
            if runs.len() == 1 {
                self.failed_attempt(&runs[0], failed.key.as_deref(), failed.trigger.as_deref(), failed.error).await?;
            } else {
                for run in &runs {
                    self.advance_alone(run.id).await?;
                }
            }
        }
        Ok(true)
    }

    /// Advances one run by one step in a transaction of its own, if it is still due.
    async fn advance_alone(&self, run_id: Uuid) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        let Some(run) = automations::lock(&mut tx, run_id).await? else { return Ok(()) };
        if run.status != RunStatus::Running || run.due_at > Utc::now() {
            return Ok(());
        }
        if let Err(failed) = self.advance(tx, std::slice::from_ref(&run)).await? {
            self.failed_attempt(&run, failed.key.as_deref(), failed.trigger.as_deref(), failed.error).await?;
        }
        Ok(())
    }

    /// Executes the current step of every run of `runs` (locked by `tx`), records the steps
    /// and the runs' progress, counts the emails against the quota and commits. A step that
    /// fails rolls everything back and answers which one and why.
    async fn advance(&self, mut tx: sqlx::Transaction<'static, sqlx::Postgres>, runs: &[Run]) -> anyhow::Result<Result<(), Failure>> {
        let mut batch = Batch::default();
        let mut done = Vec::with_capacity(runs.len());
        for run in runs {
            match self.step(&mut tx, run, &mut batch).await {
                Ok(advanced) => done.push(advanced),
                Err(failed) => return Ok(Err(failed)),
            }
        }
        let records: Vec<_> = done
            .iter()
            .flat_map(|a| a.records.iter().map(|(key, status, outcome, completed)| StepWrite { run_id: a.run_id, key, status, outcome, completed: *completed }))
            .collect();
        let moves: Vec<_> = done.iter().map(|a| RunMove { run_id: a.run_id, next: a.next.as_ref().map(|(key, at)| (key.as_str(), *at)) }).collect();
        let completed = automations::progress(&mut tx, &records, &moves).await?;
        for (run_id, at) in completed {
            if let Some(run) = runs.iter().find(|r| r.id == run_id) {
                batch.events.push(run_event(run, "automation.run.completed", None, Some(at)));
            }
        }
        batch.write(&mut tx).await?;
        // The emails the steps created are counted from their teams' leases (see [`Leases`]).
        let day = Utc::now().date_naive();
        let mut taken: Vec<Uuid> = Vec::new();
        for advanced in done.iter().filter(|a| a.sent) {
            if !self.leases.take(&self.lease_pool, advanced.team_id).await? {
                drop(tx);
                for team_id in taken {
                    self.leases.put_back(team_id, day);
                }
                let run = runs.iter().find(|r| r.id == advanced.run_id).expect("a run of the batch");
                let (key, trigger) = advanced.failure_keys(run);
                return Ok(Err(Failure { key, trigger, error: StepError::Fail("the team's sending quota is used up".into()) }));
            }
            taken.push(advanced.team_id);
        }
        if let Err(error) = tx.commit().await {
            for team_id in taken {
                self.leases.put_back(team_id, day);
            }
            return Err(error.into());
        }
        Ok(Ok(()))
    }

    /// Executes the run's current step in `tx`. The trigger does no work of its own: it is
    /// recorded (and `automation.run.started` emitted) in the transaction of the run's first
    /// step, so a run's first commit already holds its first real step.
    async fn step(&self, tx: &mut PgConnection, run: &Run, batch: &mut Batch) -> Result<Advanced, Failure> {
        let graph = self.graphs.get(tx, run.automation_id, run.version).await.map_err(|error| Failure { key: None, trigger: None, error: StepError::Retry(error) })?;
        let mut step = match &run.step {
            None => graph.trigger(),
            Some(key) => graph.step(key).ok_or_else(|| Failure { key: None, trigger: None, error: StepError::Fail(format!("the version has no step `{key}`")) })?,
        };
        // The trigger, when this attempt starts the run (its record rolls back with a failed step).
        let trigger = run.step.is_none().then(|| step.key.clone());
        let mut records = Vec::new();
        loop {
            let done = self.execute(tx, run, step, batch).await.map_err(|error| Failure { key: Some(step.key.clone()), trigger: trigger.clone(), error })?;
            let next = match done.flow {
                Flow::Next(branch) => graph.next(&step.key, branch).map(|next| (next.key.clone(), Utc::now())),
                Flow::Park(until) => Some((step.key.clone(), until)),
            };
            records.push((step.key.clone(), done.status, done.outcome, done.status == "completed"));
            match next {
                Some((key, _)) if matches!(step.action, Action::Trigger { .. }) => {
                    step = graph.step(&key).expect("graph.next answers a step of the graph");
                }
                next => return Ok(Advanced { run_id: run.id, team_id: run.team_id, records, next, sent: done.sent }),
            }
        }
    }

    /// After a step's transaction rolled back: a permanent failure (or the last attempt) fails
    /// the run with its reason; otherwise the step is tried again later.
    /// `trigger` names the run's trigger when the attempt was its first: a run that fails there
    /// is recorded as started first.
    async fn failed_attempt(&self, run: &Run, key: Option<&str>, trigger: Option<&str>, error: StepError) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        let Some(locked) = automations::lock(&mut tx, run.id).await? else { return Ok(()) };
        if locked.status != RunStatus::Running || locked.step != run.step {
            return Ok(());
        }
        let reason = match error {
            StepError::Fail(reason) => Some(reason),
            StepError::Retry(error) if locked.attempts + 1 >= MAX_ATTEMPTS => Some(format!("the step kept failing: {error}")),
            StepError::Retry(error) => {
                tracing::warn!(%error, run_id = %run.id, "an automation step failed; trying again");
                let wait = std::time::Duration::from_secs(1 << locked.attempts.clamp(0, 10));
                automations::retry_after(&mut tx, run.id, wait).await?;
                None
            }
        };
        if let Some(reason) = reason {
            let mut emitted = Vec::new();
            if let Some(trigger) = trigger.filter(|t| key != Some(*t)) {
                automations::record_step(&mut tx, run.id, trigger, "completed", &json!({}), true).await?;
                emitted.push(run_event(run, "automation.run.started", None, None));
            }
            if let Some(key) = key {
                automations::record_step(&mut tx, run.id, key, "failed", &json!({ "reason": reason }), true).await?;
            }
            let at = automations::finish(&mut tx, run.id, RunStatus::Failed, Some(&reason)).await?;
            emitted.push(run_event(run, "automation.run.failed", Some(&reason), Some(at)));
            events::emit(&mut tx, &emitted).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Executes one step in the run's transaction; answers what it did (the caller records it
    /// with the run's progress).
    async fn execute(&self, tx: &mut PgConnection, run: &Run, step: &Step, batch: &mut Batch) -> Result<Done, StepError> {
        let mut sent = false;
        let (flow, outcome) = match &step.action {
            Action::Trigger { .. } => {
                batch.events.push(run_event(run, "automation.run.started", None, None));
                (Flow::Next(Branch::Default), json!({}))
            }
            Action::Delay(delay) => {
                let waiting = automations::step_records(tx, run.id).await?.into_iter().find(|r| r.key == step.key);
                let until = match &waiting {
                    Some(record) => delay.due(record.started_at),
                    None => delay.due(Utc::now()),
                };
                if until > Utc::now() && waiting.is_none() {
                    return Ok(Done { flow: Flow::Park(until), status: "waiting", outcome: json!({ "until": until }), sent: false });
                }
                (Flow::Next(Branch::Default), json!({ "until": until }))
            }
            Action::Condition(filter) => {
                let met = segments::filter_holds(tx, run.team_id, run.contact_id, filter).await?;
                let branch = if met { Branch::Met } else { Branch::NotMet };
                (Flow::Next(branch), json!({ "branch": branch.name() }))
            }
            Action::ContactUpdate(change) => {
                let contact = contact(tx, run).await?;
                update_contact(tx, &contact, change, batch).await?;
                (Flow::Next(Branch::Default), json!({}))
            }
            Action::AddToSegment(segment_id) => {
                let contact = contact(tx, run).await?;
                if segments::get(tx, run.team_id, *segment_id).await?.is_none() {
                    return Err(StepError::Fail("the segment was deleted".into()));
                }
                let watch = batch.watch(tx, run.team_id, contact.id).await?;
                segments::add_members(tx, &[*segment_id], &[contact.id]).await?;
                if let Some(watch) = watch {
                    watch.enrol_entered(tx, contact.id).await?;
                }
                (Flow::Next(Branch::Default), json!({}))
            }
            Action::TopicUpdate { topic_id, opt_in } => {
                let contact = contact(tx, run).await?;
                if topics::get(tx, run.team_id, *topic_id).await?.is_none() {
                    return Err(StepError::Fail("the topic was deleted".into()));
                }
                let choice = if *opt_in { "opt_in" } else { "opt_out" };
                let watch = batch.watch(tx, run.team_id, contact.id).await?;
                for (topic_id, _) in topics::choose(tx, contact.id, &[(*topic_id, choice.to_string())]).await? {
                    contacts::record_consent(tx, &consent(&contact, Some(topic_id), choice)).await?;
                }
                if let Some(watch) = watch {
                    watch.enrol_entered(tx, contact.id).await?;
                }
                (Flow::Next(Branch::Default), json!({ "subscription": choice }))
            }
            Action::SendEmail { template, variables, from, subject, reply_to } => {
                let contact = contact(tx, run).await?;
                let outcome = if contact.unsubscribed {
                    json!({ "skipped": true, "reason": "the contact unsubscribed from everything" })
                } else {
                    let mail = Mail { template, variables, from: from.as_deref(), subject: subject.as_deref(), reply_to };
                    let email_id = self.send_email(tx, run, &contact, &mail, batch).await?;
                    sent = true;
                    json!({ "email_id": email_id })
                };
                (Flow::Next(Branch::Default), outcome)
            }
        };
        Ok(Done { flow, status: "completed", outcome, sent })
    }

    /// Sends a published template to the contact through the ordinary path: the from-domain
    /// verified, the sandbox, suppressions (recorded as `email.suppressed`), the quota, the
    /// one-click unsubscribe headers, a delivery job. Answers the email's id.
    async fn send_email(&self, tx: &mut PgConnection, run: &Run, contact: &Contact, mail: &Mail<'_>, batch: &mut Batch) -> Result<Uuid, StepError> {
        let Some(template) = batch.template(tx, run.team_id, mail.template).await?.filter(|t| t.version.is_some()) else {
            return Err(StepError::Fail(format!("template `{}` was deleted or has no published version", mail.template)));
        };
        let from_header = mail.from.map(str::to_string).or(template.from_address.clone()).ok_or_else(|| StepError::Fail("no sender: neither the step nor the template names one".into()))?;
        let from = Mailbox::parse(&from_header).map_err(|e| StepError::Fail(format!("`from` is not an address: {e}")))?;
        let recipient = Mailbox::parse(&contact.email).map_err(|e| StepError::Fail(format!("the contact's address is not an address: {e}")))?;
        let facts = sending::context(tx, run.team_id, &[from.domain().to_string()], &[recipient.key()]).await?.ok_or_else(|| StepError::Fail("the team is gone".into()))?;
        let copy = facts.domains.iter().find(|d| d.name == from.domain());
        let domain = schema::store::domains::can_send(copy, self.settings.development).map_err(|why| StepError::Fail(why.explain(from.domain(), copy.map(|d| d.id))))?;
        let region = domain.region.as_str().to_string();
        if facts.sandbox_regions.contains(&region) && !domain.development && !schema::email::sandbox_allows(&recipient, &facts.verified_domains) {
            return Err(StepError::Fail(format!("the team's {region} region is in the sending sandbox and {} is outside it", contact.email)));
        }
        let suppressed = facts.suppressed.iter().find(|(email, _)| *email == recipient.key()).map(|(_, origin)| origin.clone());

        let compiled: Compiled = serde_json::from_value(template.compiled.clone().unwrap_or_default()).map_err(anyhow::Error::from)?;
        let compiled = match mail.subject {
            Some(subject) => {
                let line = Compiled::from_parts(Some(subject), None, None).map_err(|p| StepError::Fail(format!("the subject does not compile: {:?}", p.first())))?;
                compiled.with_subject_of(&line)
            }
            None => compiled,
        };
        let mut variables = template_defaults(template.variables.as_ref());
        variables.extend(mail.variables.clone());
        let fallbacks = property_fallbacks(&batch.properties(tx, run.team_id).await?);
        let link_key = self
            .link_key
            .get_or_try_init(|| async { schema::store::keys::get(tx, "links").await?.map(Arc::from).ok_or_else(|| anyhow::anyhow!("no link key yet")) })
            .await?;
        let reply_to = if mail.reply_to.is_empty() { template.reply_to.clone().unwrap_or_default() } else { mail.reply_to.to_vec() };
        let composer = Composer {
            team_id: run.team_id,
            compiled,
            has_html: template.has_html,
            has_text: template.has_text,
            template: template.version.map(|v| (template.id, v)),
            variables,
            fallbacks,
            sender: Sender::new(domain, from_header, from),
            reply_to,
            topic_id: None,
            link_key: link_key.clone(),
            public_url: self.settings.public_url.clone(),
        };
        let to = Addressee {
            contact_id: contact.id,
            email: contact.email.clone(),
            first_name: contact.first_name.clone(),
            last_name: contact.last_name.clone(),
            unsubscribed: contact.unsubscribed,
            created_at: contact.created_at,
            properties: contact.properties.as_object().cloned().unwrap_or_default(),
            topics: HashMap::new(),
            segments: HashMap::new(),
        };
        // The run that sent it; the `svc:email.*` triggers never feed an automation its own email.
        let tags = json!({ "automation_id": run.automation_id.to_string(), "automation_run_id": run.id.to_string() });
        let id = schema::ids::new_id();
        let email = composer.compose(id, to, run.event_data.as_object(), Origin { tags, broadcast_id: None, suppressed });
        // Counted by the caller as the step's last write (see [`Executor::step`]).
        emails::insert_many(tx, std::slice::from_ref(&email), None).await?;
        if email.all_suppressed() {
            batch.events.extend(email.suppressed_events());
        } else {
            batch.deliveries.push(id);
        }
        Ok(id)
    }
}

/// A `send_email` step's settings.
struct Mail<'a> {
    template: &'a str,
    variables: &'a Map<String, Value>,
    from: Option<&'a str>,
    subject: Option<&'a str>,
    reply_to: &'a [String],
}

/// The run's contact, locked; a contact erased since fails the run.
async fn contact(tx: &mut PgConnection, run: &Run) -> Result<Contact, StepError> {
    contacts::by_id(tx, run.contact_id, true)
        .await?
        .filter(|c| c.team_id == run.team_id)
        .ok_or_else(|| StepError::Fail("the contact was deleted".into()))
}

fn consent<'a>(contact: &'a Contact, topic_id: Option<Uuid>, choice: &'static str) -> Consent<'a> {
    Consent { team_id: contact.team_id, contact_id: contact.id, email: &contact.email, topic_id, choice, source: "automation", ip_address: None, user_agent: None }
}

/// A `contact_update` step: sets the given fields (a new property is declared, typed by its
/// value), records consent when `unsubscribed` changes, emits `contact.updated`, and starts the
/// `svc:segment.entered` runs of segments the contact enters.
async fn update_contact(tx: &mut PgConnection, contact: &Contact, change: &ContactChange, batch: &mut Batch) -> Result<(), StepError> {
    let watch = batch.watch(tx, contact.team_id, contact.id).await?;
    let declared = batch.properties(tx, contact.team_id).await?;
    let new: Vec<(String, &'static str)> = change
        .properties
        .iter()
        .filter(|(key, value)| !declared.iter().any(|p| &p.key == *key) && !value.is_null())
        .filter_map(|(key, value)| Some((key.clone(), schema::model::property_kind(value)?)))
        .collect();
    if !new.is_empty() {
        contacts::declare(tx, contact.team_id, &new).await?;
        batch.properties.remove(&contact.team_id);
    }
    let mut properties = contact.properties.as_object().cloned().unwrap_or_default();
    for (key, value) in &change.properties {
        if value.is_null() {
            properties.remove(key);
        } else {
            properties.insert(key.clone(), value.clone());
        }
    }
    let unsubscribed = change.unsubscribed.unwrap_or(contact.unsubscribed);
    let fields = ContactFields {
        email: contact.email.clone(),
        first_name: change.first_name.clone().unwrap_or(contact.first_name.clone()),
        last_name: change.last_name.clone().unwrap_or(contact.last_name.clone()),
        unsubscribed,
        properties: Value::Object(properties),
    };
    let after = contacts::update(tx, contact.id, &fields).await?;
    if unsubscribed != contact.unsubscribed {
        contacts::record_consent(tx, &consent(contact, None, if unsubscribed { "unsubscribed" } else { "subscribed" })).await?;
    }
    if let Some(watch) = watch {
        watch.enrol_entered(tx, contact.id).await?;
    }
    let data = segments::contact_event_data(tx, std::slice::from_ref(&after)).await?.remove(0);
    batch.events.push(NewEvent { team_id: contact.team_id, event_type: "contact.updated", data, email_id: None });
    Ok(())
}

/// An `automation.run.*` event of the run.
fn run_event(run: &Run, event_type: &'static str, error: Option<&str>, completed_at: Option<chrono::DateTime<Utc>>) -> NewEvent {
    let status = match event_type {
        "automation.run.completed" => RunStatus::Completed,
        "automation.run.failed" => RunStatus::Failed,
        _ => RunStatus::Running,
    };
    NewEvent { team_id: run.team_id, event_type, data: run.event_data(status, error, completed_at), email_id: None }
}
