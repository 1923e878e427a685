//! Writes an export of a team's contacts or suppressions as CSV, a page of rows per
//! transaction: each page appends its chunk and moves the export's cursor past it, so a worker
//! killed half-way leaves a rerun to go on after the last page committed, with no row twice.

use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use schema::jobs::ExportJob;
use schema::store::exports::{self, Export};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use uuid::Uuid;

/// Rows a page writes.
pub const PAGE: i64 = 5_000;

/// The exports queue's handler.
pub async fn handle(job: ExportJob, pool: Data<PgPool>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    match run(&pool, job.export_id).await {
        Ok(outcome) => {
            tracing::info!(export_id = %job.export_id, outcome, "export done");
            Ok(())
        }
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Writes the export's remaining pages; answers what it did.
pub async fn run(pool: &PgPool, export_id: Uuid) -> anyhow::Result<&'static str> {
    loop {
        let mut tx = pool.begin().await?;
        let Some(export) = exports::lock(&mut tx, export_id).await? else { return Ok("gone") };
        if matches!(export.status.as_str(), "completed" | "failed") {
            return Ok("already_done");
        }
        let done = page(&mut tx, &export).await?;
        tx.commit().await?;
        if done {
            return Ok("completed");
        }
    }
}

/// Writes one page (or finishes); true when the export is complete.
async fn page(tx: &mut PgConnection, export: &Export) -> anyhow::Result<bool> {
    let mut out = csv::WriterBuilder::new().from_writer(Vec::new());
    let (columns, count, last) = if export.kind == "contacts" {
        let (fresh, topics) = exports::contact_columns(tx, export.team_id).await?;
        let columns = export.columns.clone().unwrap_or(fresh);
        let topic_ids: HashMap<String, Uuid> = topics.into_iter().map(|(id, name)| (format!("topic:{name}"), id)).collect();
        let rows = exports::contact_page(tx, export.team_id, export.cursor, PAGE).await?;
        if export.chunks == 0 {
            out.write_record(&columns)?;
        }
        for row in &rows {
            let record: Vec<String> = columns.iter().map(|column| contact_field(row, column, &topic_ids)).collect();
            out.write_record(&record)?;
        }
        (columns, rows.len() as i64, rows.last().map(|r| r.id))
    } else {
        let columns: Vec<String> = ["email", "origin", "created_at"].map(String::from).to_vec();
        let rows = exports::suppression_page(tx, export.team_id, export.cursor, PAGE).await?;
        if export.chunks == 0 {
            out.write_record(&columns)?;
        }
        for row in &rows {
            out.write_record([row.email.as_str(), row.origin.as_str(), &row.created_at.to_rfc3339()])?;
        }
        (columns, rows.len() as i64, rows.last().map(|r| r.id))
    };
    let data = out.into_inner().map_err(|e| anyhow::anyhow!(e.to_string()))?;
    match last {
        Some(cursor) => {
            exports::append(tx, export, &columns, &data, count, cursor).await?;
            // A short page is the last: no second pass to find nothing.
            if count < PAGE {
                exports::finish(tx, export, &columns, None, None).await?;
            }
            Ok(count < PAGE)
        }
        None => {
            let header_only = (export.chunks == 0).then_some(data.as_slice());
            exports::finish(tx, export, &columns, header_only, None).await?;
            Ok(true)
        }
    }
}

/// One cell of a contacts export.
fn contact_field(row: &exports::ContactRow, column: &str, topics: &HashMap<String, Uuid>) -> String {
    let time = |t: &chrono::DateTime<chrono::Utc>| t.to_rfc3339();
    match column {
        "email" => row.email.clone(),
        "first_name" => row.first_name.clone().unwrap_or_default(),
        "last_name" => row.last_name.clone().unwrap_or_default(),
        "unsubscribed" => row.unsubscribed.to_string(),
        "created_at" => time(&row.created_at),
        "consent_source" => row.consent_source.clone().unwrap_or_default(),
        "consent_at" => row.consent_at.as_ref().map(time).unwrap_or_default(),
        topic if topic.starts_with("topic:") => topics.get(topic).and_then(|id| row.topics[id.to_string()].as_str()).unwrap_or_default().to_string(),
        key => match &row.properties[key] {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}
