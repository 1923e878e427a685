//! Applying a started migration: once, the properties, topics, segments and draft templates it
//! found; then its chunks in order, a batch per transaction with the count of chunks applied,
//! so a rerun goes on after the last batch committed. Nothing here sends mail: imported
//! contacts start no automation (their `contact.created` events say `source: migration`, which
//! the automation trigger skips) and join no broadcast already sending (a send resolves only
//! contacts older than its start).

use schema::migrate::{Found, Item};
use schema::store::events::{self, NewEvent};
use schema::store::imports::{self, Row};
use schema::store::migrations::{self, Applied, Consent, Migration, Named};
use schema::store::suppressions::{self, NewSuppression};
use schema::store::topics::{self, NewTopic};
use schema::store::{contacts, segments, templates};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// Chunks applied per transaction (a chunk holds up to 1,000 items).
const BATCH_CHUNKS: i64 = 10;

/// Applies what is left; answers what it did.
pub async fn run(pool: &PgPool, id: Uuid) -> anyhow::Result<&'static str> {
    loop {
        let mut tx = pool.begin().await?;
        let Some(m) = migrations::lock(&mut tx, id).await? else { return Ok("gone") };
        if m.status != "running" {
            return Ok("stopped");
        }
        if m.cursor["prepared"] != json!(true) {
            prepare(&mut tx, &m).await?;
            migrations::mark_prepared(&mut tx, id).await?;
            tx.commit().await?;
            continue;
        }
        let batch = migrations::chunks(&mut tx, id, m.chunks_applied, BATCH_CHUNKS).await?;
        if batch.is_empty() {
            tx.commit().await?;
            migrations::finish(&mut *pool.acquire().await?, id, None).await?;
            return Ok("completed");
        }
        let applied = write_batch(&mut tx, &m, batch).await?;
        migrations::record_applied(&mut tx, id, &applied).await?;
        tx.commit().await?;
    }
}

/// Declares the properties (a key the team has with another type keeps its type), and makes
/// the topics, segments and draft templates the team lacks.
async fn prepare(conn: &mut PgConnection, m: &Migration) -> anyhow::Result<()> {
    let found: &Found = &m.found.0;
    let declared: HashSet<String> = contacts::properties(conn, m.team_id).await?.into_iter().map(|p| p.key).collect();
    let room = 100usize.saturating_sub(declared.len());
    let new: Vec<(String, &'static str)> =
        found.properties.iter().filter(|(k, _)| !declared.contains(*k)).take(room).map(|(k, t)| (k.clone(), schema::model::property_type(t))).collect();
    contacts::declare(conn, m.team_id, &new).await?;
    let topics_held = migrations::names(conn, m.team_id, Named::Topics).await?;
    for (name, default) in &found.topics {
        if !topics_held.contains_key(&name.to_lowercase()) {
            let topic = NewTopic { name, description: Some("Moved in by a migration."), default_subscription: default, visibility: "private" };
            topics::insert(conn, m.team_id, &topic).await?;
        }
    }
    let segments_held = migrations::names(conn, m.team_id, Named::Segments).await?;
    for name in &found.segments {
        if !segments_held.contains_key(&name.to_lowercase()) {
            segments::insert(conn, m.team_id, name, None).await?;
        }
    }
    for t in &found.templates {
        templates::insert(conn, m.team_id, &t.name, None, &draft(t)).await?;
    }
    Ok(())
}

/// A template as a draft: its HTML and text as written, with no placeholders compiled (the
/// platforms' placeholder syntaxes differ from Herald's; a person edits them before publishing).
fn draft(t: &schema::migrate::FoundTemplate) -> templates::Content {
    let compiled = render::Compiled::from_parts(None, None, None).map(|c| serde_json::to_value(c).unwrap_or(Value::Null)).unwrap_or(Value::Null);
    templates::Content {
        from_address: None,
        subject: t.subject.clone(),
        reply_to: None,
        html: t.html.clone(),
        text: t.text.clone(),
        variables: json!([]),
        document: None,
        brand_overrides: None,
        compiled,
        saved_block_ids: Vec::new(),
    }
}

/// Writes one batch of chunks; answers its counts.
async fn write_batch(tx: &mut PgConnection, m: &Migration, batch: Vec<Vec<Item>>) -> anyhow::Result<Applied> {
    let mut applied = Applied { chunks: batch.len() as i32, ..Applied::default() };
    let declared: HashMap<String, String> = contacts::properties(tx, m.team_id).await?.into_iter().map(|p| (p.key, p.kind)).collect();
    // One item per address: a later record of the same address merges into the first.
    let mut items: Vec<Item> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut again: HashSet<String> = HashSet::new();
    for mut item in batch.into_iter().flatten() {
        item.properties.retain(|k, v| declared.get(k).is_some_and(|kind| schema::migrate::kind_of(v) == Some(kind.as_str())));
        if item.again {
            again.insert(item.email.clone());
        }
        match at.get(&item.email) {
            Some(&i) => merge(&mut items[i], item),
            None => {
                at.insert(item.email.clone(), items.len());
                items.push(item);
            }
        }
    }
    let emails: Vec<String> = items.iter().map(|i| i.email.clone()).collect();
    let mut existing = imports::existing(tx, m.team_id, &emails).await?;
    let limit = contacts::lock_limit(tx, m.team_id).await?;
    let mut room = match limit {
        Some(limit) => (i64::from(limit) - contacts::count(tx, m.team_id).await?).max(0),
        None => i64::MAX,
    };
    let topic_ids = migrations::names(tx, m.team_id, Named::Topics).await?;
    let mut fresh: Vec<Row> = Vec::new();
    let mut opted_in: Vec<bool> = Vec::new();
    let mut kept: Vec<Item> = Vec::with_capacity(items.len());
    for item in items {
        if !existing.contains_key(&item.email) {
            if room == 0 {
                fail(&mut applied, &item, "contact_limit", "Contact limit reached.");
                continue;
            }
            room -= 1;
            fresh.push(row(schema::ids::new_id(), &item));
            opted_in.push(item.topics.iter().any(|(name, choice)| choice == "opt_in" && topic_ids.contains_key(&name.to_lowercase())));
        }
        kept.push(item);
    }
    // Suppressions first: a contact made after its address is suppressed is born not billable,
    // where one made before would be written twice (its flag rechecked by the suppression).
    let suppress: Vec<NewSuppression> =
        kept.iter().filter_map(|item| Some(NewSuppression { team_id: m.team_id, email: item.email.clone(), origin: origin(item.suppression.as_deref()?), source_id: None })).collect();
    applied.suppressed = suppressions::add(tx, &suppress).await?.into_iter().filter(|(_, added)| *added).count() as i64;
    let created: HashSet<Uuid> = imports::insert_contacts(tx, m.team_id, fresh.iter(), &opted_in).await?.into_iter().collect();
    let created_ids: HashMap<String, Uuid> = fresh.iter().filter(|r| created.contains(&r.id)).map(|r| (r.email.clone(), r.id)).collect();
    // Addresses created meanwhile by someone else are merged like the others.
    let raced: Vec<String> = fresh.iter().filter(|r| !created.contains(&r.id)).map(|r| r.email.clone()).collect();
    if !raced.is_empty() {
        existing.extend(imports::existing(tx, m.team_id, &raced).await?);
    }
    let mut merged: Vec<Row> = Vec::new();
    let mut ids: HashMap<String, Uuid> = created_ids.clone();
    for item in &kept {
        if let Some(found) = existing.get(&item.email) {
            ids.insert(item.email.clone(), found.id);
            merged.push(row(found.id, item));
        }
    }
    migrations::merge_contacts(tx, &merged).await?;
    applied.created = created_ids.len() as i64;
    applied.updated = merged.iter().filter(|r| !again.contains(&r.email)).count() as i64;

    let segment_ids = migrations::names(tx, m.team_id, Named::Segments).await?;
    let source = format!("migration:{}", m.source);
    let mut consents: Vec<Consent> = Vec::new();
    let mut pairs: Vec<(Uuid, Uuid)> = Vec::new();
    for item in &kept {
        let Some(&contact_id) = ids.get(&item.email) else { continue };
        let consent = |topic_id, choice| Consent { contact_id, email: item.email.clone(), topic_id, choice, ip: item.consent_ip.clone(), at: item.consent_at };
        // The opt-in's time and IP go on the topic choices it made; a record of its own only
        // when it made none (one record per choice, not two).
        let chose_topics = item.topics.keys().any(|name| topic_ids.contains_key(&name.to_lowercase()));
        if item.unsubscribed {
            consents.push(consent(None, "unsubscribed"));
        } else if item.consent_at.is_some() && !chose_topics {
            consents.push(consent(None, "subscribed"));
        }
        for (name, choice) in &item.topics {
            if let Some(&topic_id) = topic_ids.get(&name.to_lowercase()) {
                consents.push(consent(Some(topic_id), if choice == "opt_in" { "opt_in" } else { "opt_out" }));
            }
        }
        pairs.extend(item.segments.iter().filter_map(|n| segment_ids.get(&n.to_lowercase())).map(|&s| (s, contact_id)));
    }
    migrations::consents(tx, m.team_id, &source, &consents).await?;
    migrations::join_segments(tx, &pairs).await?;
    announce(tx, m.team_id, created_ids.values().copied().collect()).await?;
    Ok(applied)
}

/// `contact.created` for each contact made, with `source: migration`, when an endpoint
/// listens (the events exist for webhooks; no automation starts from them).
async fn announce(tx: &mut PgConnection, team_id: Uuid, ids: Vec<Uuid>) -> anyhow::Result<()> {
    if ids.is_empty() || !migrations::hears_contact_created(tx, team_id).await? {
        return Ok(());
    }
    let made = migrations::contacts_by_id(tx, &ids).await?;
    let events: Vec<NewEvent> = segments::contact_event_data(tx, &made)
        .await?
        .into_iter()
        .map(|mut data| {
            data["source"] = json!("migration");
            NewEvent { team_id, event_type: "contact.created", data, email_id: None }
        })
        .collect();
    events::emit(tx, &events).await?;
    Ok(())
}

/// A later record of an address: it fills what the first left empty, adds its topics,
/// segments and suppression, and an unsubscribe always wins.
fn merge(into: &mut Item, item: Item) {
    into.first_name = into.first_name.take().or(item.first_name);
    into.last_name = into.last_name.take().or(item.last_name);
    for (k, v) in item.properties {
        into.properties.entry(k).or_insert(v);
    }
    into.unsubscribed |= item.unsubscribed;
    into.suppression = into.suppression.take().or(item.suppression);
    for (topic, choice) in item.topics {
        let entry = into.topics.entry(topic).or_insert_with(|| choice.clone());
        if choice == "opt_out" {
            *entry = choice;
        }
    }
    into.segments.extend(item.segments);
    into.consent_at = into.consent_at.or(item.consent_at);
    into.consent_ip = into.consent_ip.take().or(item.consent_ip);
    into.again &= item.again;
}

/// A suppression's origin in Herald: bounces and complaints keep theirs; the rest (a
/// platform's blocklist, a manual cleaning) are `manual`.
fn origin(found: &str) -> &'static str {
    match found {
        "bounce" => "bounce",
        "complaint" => "complaint",
        _ => "manual",
    }
}

fn row(id: Uuid, item: &Item) -> Row {
    Row {
        id,
        email: item.email.clone(),
        first_name: item.first_name.clone(),
        last_name: item.last_name.clone(),
        unsubscribed: item.unsubscribed,
        properties: item.properties.clone(),
    }
}

fn fail(applied: &mut Applied, item: &Item, reason: &str, message: &str) {
    applied.failed += 1;
    if applied.failures.len() < migrations::MAX_FAILURES {
        applied.failures.push(json!({ "row": item.row, "email": item.email, "reason": reason, "message": message }));
    }
}

