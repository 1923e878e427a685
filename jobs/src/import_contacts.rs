//! The contact import job: reads the uploaded CSV and writes contacts in batches of
//! [`BATCH_ROWS`], each batch and the import's progress in one transaction, so a worker that
//! dies mid-import leaves a job that resumes after the last committed batch. No per-contact
//! events are emitted; contacts a batch brings into a segment an enabled automation watches
//! start its `svc:segment.entered` runs in the batch's transaction (two set-based reads).

use anyhow::Context;
use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use schema::import::{self, Fields, Positions};
use schema::jobs::ImportContacts;
use schema::store::automations::{self, SegmentWatch};
use schema::store::contacts;
use schema::store::imports::{self, Import, Progress, Row};
use schema::store::segments;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// Rows written per transaction.
pub const BATCH_ROWS: usize = 10_000;

/// The job handler.
pub async fn handle(job: ImportContacts, pool: Data<PgPool>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    match run(&pool, job.import_id).await.with_context(|| format!("importing contacts for import {}", job.import_id)) {
        Ok(()) => Ok(()),
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Processes an import from where it stopped.
pub async fn run(pool: &PgPool, import_id: Uuid) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let Some(import) = imports::for_job(&mut conn, import_id).await? else { return Ok(()) };
    if import.status.is_finished() {
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
    let keys: Vec<(String, &'static str)> = import.column_map.properties.iter().map(|(k, p)| (k.clone(), schema::model::property_type(&p.kind))).collect();
    contacts::declare(&mut conn, import.team_id, &keys).await?;
    let declared: HashMap<String, String> = contacts::properties(&mut conn, import.team_id).await?.into_iter().map(|p| (p.key, p.kind)).collect();
    drop(conn);

    let topics: Vec<(Uuid, String)> = serde_json::from_value::<Vec<Value>>(import.topics.clone())?
        .iter()
        .filter_map(|t| Some((t.get("id")?.as_str()?.parse().ok()?, t.get("subscription")?.as_str()?.to_string())))
        .collect();
    let upsert = import.on_conflict == "upsert";
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
        let read = read_batch(upsert, &positions, &declared, &batch);
        write_batch(pool, &import, &topics, read).await?;
    }
    imports::finish(&mut *pool.acquire().await?, import_id, None).await?;
    Ok(())
}

/// A batch read: one row per address, and the rows already failed or merged.
struct Read {
    rows: Vec<(i64, Row)>,
    progress: Progress,
}

/// Reads a batch's rows. A later row for an address merges into the first on `upsert`
/// (counted as an update) and is skipped on `skip`.
fn read_batch(upsert: bool, at: &Positions, declared: &HashMap<String, String>, batch: &[(i64, csv::ByteRecord)]) -> Read {
    let mut progress = Progress { rows: batch.len() as i64, ..Progress::default() };
    let mut rows: Vec<(i64, Row)> = Vec::with_capacity(batch.len());
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(batch.len());
    for (row, record) in batch {
        let fields = match import::fields(record, at) {
            Ok(fields) => fields,
            Err((email, failure)) => {
                fail(&mut progress, *row, &email, failure.reason, &failure.message);
                continue;
            }
        };
        if let Some((key, kind)) = fields.properties.iter().find_map(|(k, v)| mismatched(declared, k, v).map(|kind| (k.clone(), kind))) {
            fail(&mut progress, *row, &fields.email, "type_mismatch", &format!("{key} must be a {kind}"));
            continue;
        }
        match seen.get(&fields.email) {
            Some(&index) if upsert => {
                merge(&mut rows[index].1, fields);
                progress.updated += 1;
            }
            Some(_) => progress.skipped += 1,
            None => {
                seen.insert(fields.email.clone(), rows.len());
                rows.push((*row, row_of(schema::ids::new_id(), fields)));
            }
        }
    }
    Read { rows, progress }
}

/// Writes one batch and its progress in one transaction. New addresses are inserted in one
/// statement without a lookup first (the unique index finds the existing ones); only when the
/// plan's contact limit could be reached are addresses looked up before, so that the rows past
/// the limit fail in file order.
async fn write_batch(pool: &PgPool, import: &Import, topics: &[(Uuid, String)], read: Read) -> anyhow::Result<()> {
    let upsert = import.on_conflict == "upsert";
    let Read { rows, mut progress } = read;
    let mut tx = pool.begin().await?;
    let limit = contacts::lock_limit(&mut tx, import.team_id).await?;
    let room = match limit {
        Some(limit) => (limit as i64 - contacts::count(&mut tx, import.team_id).await?).max(0),
        None => i64::MAX,
    };
    let mut existing = HashMap::new();
    let candidates: Vec<Row> = if room >= rows.len() as i64 {
        rows.into_iter().map(|(_, row)| row).collect()
    } else {
        let emails: Vec<String> = rows.iter().map(|(_, r)| r.email.clone()).collect();
        existing = imports::existing(&mut tx, import.team_id, &emails).await?;
        let mut left = room;
        let mut kept = Vec::with_capacity(rows.len());
        for (row, candidate) in rows {
            if existing.contains_key(&candidate.email) {
                kept.push(candidate);
            } else if left > 0 {
                left -= 1;
                kept.push(candidate);
            } else {
                fail(&mut progress, row, &candidate.email, "contact_limit", "Contact limit reached.");
            }
        }
        kept
    };
    let fresh: Vec<&Row> = candidates.iter().filter(|r| !existing.contains_key(&r.email)).collect();
    // A contact the import opts in to a topic is born billable, rather than written again when
    // its topic choice rechecks the flag.
    let opting_in: Vec<Uuid> = topics.iter().filter(|(_, subscription)| subscription == "opt_in").map(|(id, _)| *id).collect();
    let opts_in = !opting_in.is_empty() && !schema::store::topics::live_ids(&mut tx, import.team_id, &opting_in).await?.is_empty();
    let opted_in = vec![opts_in; fresh.len()];
    let inserted: HashSet<Uuid> = imports::insert_contacts(&mut tx, import.team_id, fresh, &opted_in).await?.into_iter().collect();
    let (created, conflicts): (Vec<Row>, Vec<Row>) = candidates.into_iter().partition(|r| inserted.contains(&r.id));
    progress.created += created.len() as i64;

    // `svc:segment.entered`: which watched segments held the existing contacts before.
    let watched = automations::watched_segments(&mut tx, import.team_id).await?;
    let mut watch = None;
    let mut updates = Vec::new();
    let mut unsubscribes: Vec<(Uuid, String)> = created.iter().filter(|r| r.unsubscribed).map(|r| (r.id, r.email.clone())).collect();
    if upsert && !conflicts.is_empty() {
        let missing: Vec<String> = conflicts.iter().filter(|r| !existing.contains_key(&r.email)).map(|r| r.email.clone()).collect();
        if !missing.is_empty() {
            existing.extend(imports::existing(&mut tx, import.team_id, &missing).await?);
        }
        for mut row in conflicts {
            // Gone since: erased by someone else mid-import.
            let Some(found) = existing.get(&row.email) else {
                progress.skipped += 1;
                continue;
            };
            row.id = found.id;
            if row.unsubscribed && !found.unsubscribed {
                unsubscribes.push((row.id, row.email.clone()));
            }
            updates.push(row);
        }
        progress.updated += updates.len() as i64;
        let updated: Vec<Uuid> = updates.iter().map(|r| r.id).collect();
        watch = SegmentWatch::of(&mut tx, import.team_id, &updated, watched.clone()).await?;
        imports::update_contacts(&mut tx, &updates).await?;
    } else {
        progress.skipped += conflicts.len() as i64;
    }

    let touched: Vec<(Uuid, String)> = created.iter().chain(updates.iter()).map(|r| (r.id, r.email.clone())).collect();
    imports::record_unsubscribes(&mut tx, import.team_id, &unsubscribes).await?;
    imports::choose_topics(&mut tx, import.team_id, &touched, topics).await?;
    let ids: Vec<Uuid> = touched.iter().map(|(id, _)| *id).collect();
    segments::add_members(&mut tx, &import.segment_ids, &ids).await?;
    let watch = match watch {
        Some(watch) => Some(watch),
        None => SegmentWatch::of(&mut tx, import.team_id, &[], watched).await?,
    };
    if let Some(watch) = watch {
        watch.enrol_entered_by(&mut tx, &ids).await?;
    }
    progress.failures.sort_by_key(|f| f["row"].as_i64());
    imports::record_progress(&mut tx, import.id, &progress).await?;
    tx.commit().await?;
    Ok(())
}

/// The declared type a value does not have, if it does not.
fn mismatched<'a>(declared: &'a HashMap<String, String>, key: &str, value: &Value) -> Option<&'a str> {
    let kind = declared.get(key)?;
    (schema::model::property_kind(value) != Some(kind.as_str())).then_some(kind.as_str())
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
