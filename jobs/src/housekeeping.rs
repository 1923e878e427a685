//! Housekeeping: request logs past their team's plan retention, idempotency records past
//! their 24-hour replay window, consent records past three years and import files seven days
//! after their import finished, and dropped received emails past their team's plan retention are
//! deleted; and contacts whose billable flag a race left stale are
//! worked out again (the counts and peaks move with every write; this only repairs).

use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use schema::jobs::Housekeeping;
use schema::store::{contacts, idempotency, imports, received, request_logs};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

/// Rows deleted per statement, so one run never holds a long lock.
const BATCH: i64 = 5_000;

/// What a run removed (kept as the job's result).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    pub request_logs: u64,
    pub idempotency_records: u64,
    pub consent_records: u64,
    pub import_files: u64,
    /// Received emails recorded as dropped, past their retention.
    pub dropped_received_emails: u64,
    /// Contacts whose billable flag was found stale and worked out again.
    pub billable_repairs: u64,
    /// AI assist's per-minute request windows past their minute.
    pub ai_request_windows: u64,
    /// Exports past their seven days.
    pub exports: u64,
    /// Migrations left in review past [`MIGRATION_REVIEW_DAYS`], canceled.
    pub expired_migrations: u64,
}

/// How long consent records are kept.
pub const CONSENT_YEARS: i32 = 3;
/// How long a migration may wait in review before it is canceled and what it read erased.
pub const MIGRATION_REVIEW_DAYS: i32 = 30;
/// How long an import's file is kept after the import finished.
pub const IMPORT_FILE_DAYS: i32 = 7;

/// The job handler.
pub async fn handle(_job: Housekeeping, pool: Data<PgPool>, id: PgTaskId, attempt: Attempt) -> Result<Report, BoxDynError> {
    match purge(&pool).await {
        Ok(report) => {
            tracing::info!(?report, "housekeeping done");
            Ok(report)
        }
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Deletes everything past its retention and repairs stale billable flags.
pub async fn purge(pool: &PgPool) -> anyhow::Result<Report> {
    let mut conn = pool.acquire().await?;
    let mut report = Report::default();
    loop {
        let deleted = request_logs::purge_expired(&mut conn, BATCH).await?;
        report.request_logs += deleted;
        if deleted < BATCH as u64 {
            break;
        }
    }
    report.idempotency_records = idempotency::purge_expired(&mut conn).await?;
    loop {
        let deleted = contacts::purge_consents(&mut conn, CONSENT_YEARS, BATCH).await?;
        report.consent_records += deleted;
        if deleted < BATCH as u64 {
            break;
        }
    }
    report.import_files = imports::purge_files(&mut conn, IMPORT_FILE_DAYS).await?;
    report.exports = schema::store::exports::purge(&mut conn).await?;
    report.expired_migrations = schema::store::migrations::expire_reviews(&mut conn, MIGRATION_REVIEW_DAYS).await?;
    loop {
        let deleted = received::delete_expired_dropped(&mut conn, BATCH).await?;
        report.dropped_received_emails += deleted;
        if deleted < BATCH as u64 {
            break;
        }
    }
    report.billable_repairs = contacts::reconcile_billable(&mut conn).await?;
    report.ai_request_windows = schema::store::ai::forget_windows(&mut conn, chrono::Utc::now() - chrono::TimeDelta::minutes(2)).await?;
    Ok(report)
}
