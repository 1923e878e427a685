//! Job payloads and `enqueue`: a job is committed by the caller's transaction or not at all.
//! Jobs carry ids, not data; their handlers (in the `jobs` crate) reload state.

use apalis_postgres::PgTaskId as TaskId;
use apalis_postgres::PostgresStorage;
use serde::{Serialize, de::DeserializeOwned};
use sqlx::{PgConnection, PgPool};
use std::time::{Duration, SystemTime};

/// A job type: its payload, its named queue and how many times it may run.
pub trait Job: Serialize + DeserializeOwned + Send + Sync + Unpin + 'static {
    /// The queue (`apalis.jobs.job_type`).
    const QUEUE: &'static str;
    /// Total runs before the job is left failed.
    const MAX_ATTEMPTS: usize;
}

/// Removes request logs past their team's retention and idempotency records past 24 hours.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Housekeeping {
    /// The schedule period that started this run (for operators reading the queue).
    pub period: chrono::DateTime<chrono::Utc>,
}

impl Job for Housekeeping {
    const QUEUE: &'static str = "housekeeping";
    const MAX_ATTEMPTS: usize = 5;
}

/// Rechecks every domain's DNS records and every pending claim (hourly).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct DomainSweep {
    /// The schedule period that started this run.
    pub period: chrono::DateTime<chrono::Utc>,
}

impl Job for DomainSweep {
    const QUEUE: &'static str = "domain_sweep";
    const MAX_ATTEMPTS: usize = 5;
}

/// Delivers one email to each of its pending recipients (and reruns for delayed ones).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Deliver {
    pub email_id: uuid::Uuid,
}

impl Job for Deliver {
    const QUEUE: &'static str = "deliver";
    /// Runs that fail on Herald's side (the database down); SMTP retries are new jobs.
    const MAX_ATTEMPTS: usize = 25;
}

/// Two hours after an ambiguous submission: fails the recipients no later event resolved.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct ResolveAmbiguous {
    pub email_id: uuid::Uuid,
}

impl Job for ResolveAmbiguous {
    const QUEUE: &'static str = "resolve_ambiguous";
    const MAX_ATTEMPTS: usize = 25;
}

/// Processes one CSV import of contacts, in batches; a rerun resumes after the rows done.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct ImportContacts {
    pub import_id: uuid::Uuid,
}

impl Job for ImportContacts {
    const QUEUE: &'static str = "import_contacts";
    const MAX_ATTEMPTS: usize = 25;
}

/// Billing's work: a verified Stripe event kept in `stripe_events` applied once, a team's plan
/// change that waited for its period's end applied if still due, or a closed period's usage
/// reported. Rare, so one queue, polled.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub enum BillingJob {
    StripeEvent { event_id: String },
    PlanChange { team_id: uuid::Uuid },
    /// A closed period's usage (kept in `billing_usage_reports`) reported to Stripe.
    ReportUsage { team_id: uuid::Uuid, period_start: chrono::DateTime<chrono::Utc> },
}

impl Job for BillingJob {
    const QUEUE: &'static str = "billing";
    const MAX_ATTEMPTS: usize = 25;
}

/// Writes one export of a team's contacts or suppressions, a page at a time; a rerun resumes
/// after the last page committed. Rare, so polled.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct ExportJob {
    pub export_id: uuid::Uuid,
}

impl Job for ExportJob {
    const QUEUE: &'static str = "exports";
    const MAX_ATTEMPTS: usize = 25;
}

/// Moves a migration on: reads its source into chunks and works out the review, or applies
/// the chunks once started; a rerun resumes after the last page or batch committed. Rare, so
/// polled.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct MigrationJob {
    pub migration_id: uuid::Uuid,
}

impl Job for MigrationJob {
    const QUEUE: &'static str = "migrations";
    const MAX_ATTEMPTS: usize = 25;
}

/// Fans a broadcast out into one email per recipient, a page at a time; a rerun resumes after
/// the last page committed.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct SendBroadcast {
    pub broadcast_id: uuid::Uuid,
}

impl Job for SendBroadcast {
    const QUEUE: &'static str = "send_broadcast";
    const MAX_ATTEMPTS: usize = 25;
}

/// Delivers the emails of one page of a broadcast's fan-out: one job per page rather than one
/// per email, so the fan-out writes one job row where it would write hundreds. Each email is
/// delivered exactly as a [`Deliver`] job would; a rerun (a dead worker) never resends what a
/// run already submitted.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct DeliverPage {
    pub email_ids: Vec<uuid::Uuid>,
}

impl Job for DeliverPage {
    const QUEUE: &'static str = "deliver_page";
    const MAX_ATTEMPTS: usize = 25;
}

/// Every queue Herald runs, for operators.
pub const QUEUES: &[&str] = &[
    Housekeeping::QUEUE,
    DomainSweep::QUEUE,
    Deliver::QUEUE,
    DeliverPage::QUEUE,
    ResolveAmbiguous::QUEUE,
    ImportContacts::QUEUE,
    BillingJob::QUEUE,
    SendBroadcast::QUEUE,
    ExportJob::QUEUE,
    MigrationJob::QUEUE,
];

/// Why a stored payload of `queue` does not parse as that queue's job, if it does not (a payload
/// an older or newer Herald wrote): such a job can never run, and fetching it ends its worker.
pub fn payload_error(queue: &str, payload: &[u8]) -> Option<String> {
    fn check<J: Job>(payload: &[u8]) -> Option<String> {
        serde_json::from_slice::<J>(payload).err().map(|e| e.to_string())
    }
    match queue {
        Housekeeping::QUEUE => check::<Housekeeping>(payload),
        DomainSweep::QUEUE => check::<DomainSweep>(payload),
        Deliver::QUEUE => check::<Deliver>(payload),
        DeliverPage::QUEUE => check::<DeliverPage>(payload),
        ResolveAmbiguous::QUEUE => check::<ResolveAmbiguous>(payload),
        ImportContacts::QUEUE => check::<ImportContacts>(payload),
        BillingJob::QUEUE => check::<BillingJob>(payload),
        SendBroadcast::QUEUE => check::<SendBroadcast>(payload),
        ExportJob::QUEUE => check::<ExportJob>(payload),
        MigrationJob::QUEUE => check::<MigrationJob>(payload),
        other => Some(format!("no queue is named {other}")),
    }
}

/// When a job first runs. Waits are counted on PostgreSQL's clock, not this process's, so a
/// process whose clock is off (a jump, a drifting host) neither delays nor hurries its jobs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunAt {
    /// As soon as a worker is free.
    Now,
    /// This long after the enqueueing transaction began.
    After(Duration),
    /// At a moment the team chose (a scheduled send or broadcast).
    At(SystemTime),
}

/// Enqueues `job` to run now, inside the caller's transaction.
pub async fn enqueue<J: Job>(conn: &mut PgConnection, job: &J) -> Result<TaskId, EnqueueError> {
    enqueue_when(conn, job, RunAt::Now).await
}

/// Enqueues `job` to run at `run_at`, a moment the team chose, inside the caller's transaction.
pub async fn enqueue_at<J: Job>(conn: &mut PgConnection, job: &J, run_at: SystemTime) -> Result<TaskId, EnqueueError> {
    enqueue_when(conn, job, RunAt::At(run_at)).await
}

/// Enqueues `job` after `delay`.
pub async fn enqueue_after<J: Job>(conn: &mut PgConnection, job: &J, delay: Duration) -> Result<TaskId, EnqueueError> {
    enqueue_when(conn, job, RunAt::After(delay)).await
}

async fn enqueue_when<J: Job>(conn: &mut PgConnection, job: &J, when: RunAt) -> Result<TaskId, EnqueueError> {
    let id = TaskId::from_ulid(ulid::Ulid::generate());
    insert::<J>(conn, vec![(id.clone(), job, when)]).await?;
    Ok(id)
}

/// Enqueues many jobs of one type in one statement, each at its own time.
pub async fn enqueue_many<J: Job>(conn: &mut PgConnection, jobs: &[(J, RunAt)]) -> Result<(), EnqueueError> {
    if jobs.is_empty() {
        return Ok(());
    }
    insert::<J>(conn, jobs.iter().map(|(job, when)| (TaskId::from_ulid(ulid::Ulid::generate()), job, *when)).collect()).await
}

/// One insert for `jobs`, in the table and shape apalis reads (its own `push_tasks`, with the
/// run time taken from PostgreSQL's clock where it is relative).
async fn insert<J: Job>(conn: &mut PgConnection, jobs: Vec<(TaskId, &J, RunAt)>) -> Result<(), EnqueueError> {
    let (mut ids, mut payloads, mut moments, mut waits) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (id, job, when) in jobs {
        ids.push(id.to_string());
        payloads.push(serde_json::to_vec(job).map_err(|e| EnqueueError(e.to_string()))?);
        let (at, wait) = match when {
            RunAt::Now => (None, 0.0),
            RunAt::After(delay) => (None, delay.as_secs_f64()),
            RunAt::At(at) => (Some(chrono::DateTime::<chrono::Utc>::from(at)), 0.0),
        };
        moments.push(at);
        waits.push(wait);
    }
    sqlx::query(
        "INSERT INTO apalis.jobs (id, job_type, job, status, attempts, max_attempts, run_at, priority)
         SELECT id, $2, job, 'Pending', 0, $3, coalesce(at, now() + make_interval(secs => wait)), 0
           FROM unnest($1::text[], $4::bytea[], $5::timestamptz[], $6::float8[]) AS j(id, job, at, wait)",
    )
    .bind(&ids)
    .bind(J::QUEUE)
    .bind(J::MAX_ATTEMPTS as i32)
    .bind(&payloads)
    .bind(&moments)
    .bind(&waits)
    .execute(conn)
    .await
    .map_err(|e| EnqueueError(e.to_string()))?;
    Ok(())
}

/// Enqueueing failed (the caller's transaction should roll back).
#[derive(Debug, thiserror::Error)]
#[error("enqueueing a job failed: {0}")]
pub struct EnqueueError(String);

/// Creates the job queue's tables (schema `apalis`) and the index `GET /metrics` counts
/// unfinished jobs with. Idempotent.
pub async fn setup(pool: &PgPool) -> anyhow::Result<()> {
    PostgresStorage::setup(pool).await?;
    crate::store::metrics::create_job_index(pool).await?;
    crate::store::jobs::guard_queue_tables(pool).await?;
    Ok(())
}
