//! What `GET /metrics` reads from PostgreSQL at scrape time. Every query is bounded by a backlog
//! (unfinished jobs, pending webhook deliveries), by a small table (contact imports), or by a
//! time window over the primary key (recent emails), so a scrape costs the same on a database
//! that has sent a billion emails as on a new one.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

/// Jobs of one queue in one state.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct JobCount {
    pub queue: String,
    /// `pending` (due), `scheduled` (pending, to run later), `queued` (fetched by a worker),
    /// `running`, `retrying` (failed with attempts left), `failed` (attempts spent), `killed`.
    pub state: String,
    pub count: i64,
}

/// Every state [`JobCount::state`] takes.
pub const JOB_STATES: &[&str] = &["pending", "scheduled", "queued", "running", "retrying", "failed", "killed"];

/// The partial index [`unfinished_jobs`] reads: apalis keeps every finished job (`Done`) in
/// `apalis.jobs`, so a count over the whole table would grow with every email ever sent.
/// Created after the job queue's tables (they are not Herald's migrations); idempotent.
pub async fn create_job_index(pool: &PgPool) -> sqlx::Result<()> {
    sqlx::query("CREATE INDEX IF NOT EXISTS herald_jobs_unfinished_idx ON apalis.jobs (job_type, status) WHERE status <> 'Done'")
        .execute(pool)
        .await?;
    Ok(())
}

/// Jobs not finished (`Done` jobs are not counted: see [`create_job_index`]), by queue and
/// state. Reads the partial index `herald_jobs_unfinished_idx`, so it costs the backlog plus the
/// failed and killed jobs still kept, not the table.
pub async fn unfinished_jobs(conn: &mut PgConnection) -> sqlx::Result<Vec<JobCount>> {
    sqlx::query_as(
        "SELECT job_type AS queue,
                CASE status
                    WHEN 'Pending' THEN CASE WHEN run_at > now() THEN 'scheduled' ELSE 'pending' END
                    WHEN 'Failed' THEN CASE WHEN attempts < max_attempts THEN 'retrying' ELSE 'failed' END
                    ELSE lower(status)
                END AS state,
                count(*) AS count
         FROM apalis.jobs WHERE status <> 'Done'
         GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .fetch_all(conn)
    .await
}

/// How many emails of a window have one latest status.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StatusCount {
    pub status: String,
    pub count: i64,
}

/// Every status [`recent_emails`] reports (`emails.last_event`).
pub const EMAIL_STATUSES: &[&str] =
    &["queued", "scheduled", "sent", "delivered", "delivery_delayed", "bounced", "complained", "failed", "canceled", "suppressed"];

/// Most emails [`recent_emails`] reads: the newest this many of the window are counted.
pub const RECENT_EMAILS_CAP: i64 = 100_000;

/// Emails created since `since`, by their latest status (`emails.last_event`). Ids are UUIDv7,
/// so the window is a range of the primary key; at most [`RECENT_EMAILS_CAP`] of the newest are
/// read, which bounds a scrape on a server sending more than that per window.
pub async fn recent_emails(conn: &mut PgConnection, since: DateTime<Utc>) -> sqlx::Result<Vec<StatusCount>> {
    sqlx::query_as(
        "SELECT last_event AS status, count(*) AS count
         FROM (SELECT last_event FROM emails WHERE id >= $1 ORDER BY id DESC LIMIT $2) recent
         GROUP BY 1 ORDER BY 1",
    )
    .bind(crate::ids::first_at(since))
    .bind(RECENT_EMAILS_CAP)
    .fetch_all(conn)
    .await
}

/// The webhook queue of enabled endpoints (a disabled endpoint's deliveries wait for it to be
/// enabled again and are not counted).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct WebhookBacklog {
    /// Deliveries not yet succeeded or failed, retries waiting included.
    pub pending: i64,
    /// Of those, the ones whose attempt is due now (or in flight).
    pub due: i64,
    /// How long the oldest due delivery has been due, in seconds; 0 when none is.
    pub oldest_due_seconds: f64,
}

/// Reads the webhook queue from the partial index on pending deliveries: the cost is the
/// backlog, not the delivery history.
pub async fn webhook_backlog(conn: &mut PgConnection) -> sqlx::Result<WebhookBacklog> {
    sqlx::query_as(
        "SELECT count(*) AS pending,
                count(*) FILTER (WHERE d.next_attempt_at <= now()) AS due,
                COALESCE(EXTRACT(EPOCH FROM now() - min(d.next_attempt_at) FILTER (WHERE d.next_attempt_at <= now())), 0)::float8
                    AS oldest_due_seconds
         FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.status = 'enabled'
         WHERE d.status = 'pending'",
    )
    .fetch_one(conn)
    .await
}

/// Every status a contact import takes.
pub const IMPORT_STATUSES: &[&str] = &["queued", "in_progress", "completed", "failed"];

/// Contact imports by status (one row per uploaded CSV: a small table).
pub async fn imports(conn: &mut PgConnection) -> sqlx::Result<Vec<StatusCount>> {
    sqlx::query_as("SELECT status, count(*) AS count FROM contact_imports GROUP BY 1 ORDER BY 1").fetch_all(conn).await
}
