//! The contact import job: reads the uploaded CSV and writes contacts in batches of
//! [`BATCH_ROWS`], each batch and the import's progress in one transaction, so a worker that
//! dies mid-import leaves a job that resumes after the last committed batch. No per-contact
//! events are emitted.

use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use schema::import::{self, Fields, Positions};
use schema::jobs::ImportContacts;
use schema::store::contacts;
use schema::store::imports::{self, Import, Progress, Row};
use schema::store::segments;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// Rows written per transaction.
pub const BATCH_ROWS: usize = 5_000;

/// The job handler.
pub async fn handle(job: ImportContacts, pool: Data<PgPool>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    match run(&pool, job.import_id).await {
        Ok(()) => Ok(()),
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Processes an import from where it stopped.
pub async fn run(pool: &PgPool, import_id: Uuid) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let Some(import) = imports::for_job(&mut conn, import_id).await? else { return Ok(()) };
    if matches!(import.status.as_str(), "completed" | "failed") {
        return Ok(());
    }
    let Some(file) = imports::file(&mut conn, import_id).await? else {
        imports::finish(&mut conn, import_id, Some("the uploaded file is gone")).await?;
        return Ok(());
    };
    let positions = match import::header(&file) {
        Err(why) => Err(format!("the file {why}")),
        Ok(header) => Positions::find(&import.column_map, &header).map_err(|missing| {
            let columns: Vec<String> = missing.into_iter().map(|(_, column)| format!("`{column}`")).collect();
            format!("the file has no column {}", columns.join(", "))
        }),
    };
    let positions = match positions {
        Ok(positions) => positions,
        Err(reason) => {
            imports::finish(&mut conn, import_id, Some(&reason)).await?;
            return Ok(());
        }
    };
    let total = import::reader(&file).byte_records().count() as i64;
    imports::start(&mut conn, import_id, total).await?;
    // Properties the upload declared stay declared even if one was deleted meanwhile.
    let keys: Vec<(String, &'static str)> = import.column_map.properties.iter().map(|(k, p)| (k.clone(), import::property_type(&p.kind))).collect();
    contacts::declare(&mut conn, import.team_id, &keys).await?;
    drop(conn);

    let topics: Vec<(Uuid, String)> = serde_json::from_value::<Vec<Value>>(import.topics.clone())?
        .iter()
        .filter_map(|t| Some((t.get("id")?.as_str()?.parse().ok()?, t.get("subscription")?.as_str()?.to_string())))
        .collect();
    let mut records = import::reader(&file).into_byte_records().skip(import.rows_done as usize);
    let mut row_number = import.rows_done + 1;
    loop {
        let mut batch = Vec::with_capacity(BATCH_ROWS);
        for record in records.by_ref().take(BATCH_ROWS) {
            // Rows are numbered as a spreadsheet shows them: the header is row 1.
            row_number += 1;
            batch.push((row_number, record?));
        }
        if batch.is_empty() {
            break;
        }
        write_batch(pool, &import, &positions, &topics, &batch).await?;
    }
    imports::finish(&mut *pool.acquire().await?, import_id, None).await?;
    Ok(())
}

/// Writes one batch and its progress in one transaction.
async fn write_batch(pool: &PgPool, import: &Import, at: &Positions, topics: &[(Uuid, String)], batch: &[(i64, csv::ByteRecord)]) -> anyhow::Result<()> {
    let mut progress = Progress { rows: batch.len() as i64, ..Progress::default() };
    let mut read: Vec<(i64, Fields)> = Vec::with_capacity(batch.len());
    for (row, record) in batch {
        match import::fields(record, at) {
            Ok(fields) => read.push((*row, fields)),
            Err((email, failure)) => fail(&mut progress, *row, &email, failure.reason, &failure.message),
        }
    }
    let mut tx = pool.begin().await?;
    let limit = contacts::lock_limit(&mut tx, import.team_id).await?;
    let mut room = match limit {
        Some(limit) => (limit as i64 - contacts::count(&mut tx, import.team_id).await?).max(0),
        None => i64::MAX,
    };
    let declared: HashMap<String, String> = contacts::properties(&mut tx, import.team_id).await?.into_iter().map(|p| (p.key, p.kind)).collect();
    let emails: Vec<String> = read.iter().map(|(_, f)| f.email.clone()).collect();
    let existing = imports::existing(&mut tx, import.team_id, &emails).await?;
    let upsert = import.on_conflict == "upsert";

    let (mut new_rows, mut updates): (Vec<Row>, Vec<Row>) = (Vec::new(), Vec::new());
    // Address to (is new, index) for rows already taken in this batch.
    let mut seen: HashMap<String, (bool, usize)> = HashMap::new();
    let mut unsubscribes: Vec<(Uuid, String)> = Vec::new();
    for (row, fields) in read {
        if let Some((key, kind)) = fields.properties.iter().find_map(|(k, v)| mismatched(&declared, k, v).map(|kind| (k.clone(), kind))) {
            fail(&mut progress, row, &fields.email, "type_mismatch", &format!("{key} must be a {kind}"));
            continue;
        }
        if let Some((is_new, index)) = seen.get(&fields.email).copied() {
            if !upsert {
                progress.skipped += 1;
                continue;
            }
            let target = if is_new { &mut new_rows[index] } else { &mut updates[index] };
            if fields.unsubscribed == Some(true) && !target.unsubscribed {
                unsubscribes.push((target.id, target.email.clone()));
            }
            merge(target, fields);
            progress.updated += 1;
            continue;
        }
        match existing.get(&fields.email) {
            Some(found) if upsert => {
                if fields.unsubscribed == Some(true) && !found.unsubscribed {
                    unsubscribes.push((found.id, fields.email.clone()));
                }
                seen.insert(fields.email.clone(), (false, updates.len()));
                updates.push(row_of(found.id, fields));
                progress.updated += 1;
            }
            Some(_) => progress.skipped += 1,
            None if room <= 0 => fail(&mut progress, row, &fields.email, "contact_limit", "Contact limit reached."),
            None => {
                room -= 1;
                let created = row_of(schema::ids::new_id(), fields);
                if created.unsubscribed {
                    unsubscribes.push((created.id, created.email.clone()));
                }
                seen.insert(created.email.clone(), (true, new_rows.len()));
                new_rows.push(created);
                progress.created += 1;
            }
        }
    }
    let written: HashSet<Uuid> = imports::insert_contacts(&mut tx, import.team_id, &new_rows).await?.into_iter().collect();
    // An address created by someone else since the lookup is left to them.
    let raced: HashSet<Uuid> = new_rows.iter().map(|r| r.id).filter(|id| !written.contains(id)).collect();
    progress.created -= raced.len() as i64;
    progress.skipped += raced.len() as i64;
    imports::update_contacts(&mut tx, &updates).await?;
    let touched: Vec<(Uuid, String)> =
        new_rows.iter().filter(|r| !raced.contains(&r.id)).chain(updates.iter()).map(|r| (r.id, r.email.clone())).collect();
    unsubscribes.retain(|(id, _)| !raced.contains(id));
    imports::record_unsubscribes(&mut tx, import.team_id, &unsubscribes).await?;
    imports::choose_topics(&mut tx, import.team_id, &touched, topics).await?;
    let ids: Vec<Uuid> = touched.iter().map(|(id, _)| *id).collect();
    segments::add_members(&mut tx, &import.segment_ids, &ids).await?;
    imports::record_progress(&mut tx, import.id, &progress).await?;
    tx.commit().await?;
    Ok(())
}

/// The declared type a value does not have, if it does not.
fn mismatched<'a>(declared: &'a HashMap<String, String>, key: &str, value: &Value) -> Option<&'a str> {
    let kind = declared.get(key)?;
    let fits = match kind.as_str() {
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => value.is_string(),
    };
    (!fits).then_some(kind.as_str())
}

fn fail(progress: &mut Progress, row: i64, email: &str, reason: &str, message: &str) {
    progress.failed += 1;
    if progress.failures.len() < imports::MAX_FAILURES {
        progress.failures.push(json!({ "row": row, "email": email, "reason": reason, "message": message }));
    }
}

fn row_of(id: Uuid, fields: Fields) -> Row {
    Row {
        id,
        email: fields.email,
        first_name: fields.first_name,
        last_name: fields.last_name,
        unsubscribed: fields.unsubscribed == Some(true),
        properties: fields.properties,
    }
}

/// A later row for the same address: its cells win, `unsubscribed` never goes back.
fn merge(target: &mut Row, fields: Fields) {
    target.first_name = fields.first_name.or(target.first_name.take());
    target.last_name = fields.last_name.or(target.last_name.take());
    target.unsubscribed |= fields.unsubscribed == Some(true);
    target.properties.extend(fields.properties);
}
