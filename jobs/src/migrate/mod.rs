//! The migration job. In `connecting` it reads the source (the platform's API a page at a
//! time, or the uploaded file) into chunks, each page committed with the cursor past it, then
//! works out the review and erases the credentials and the file. Once started it applies the
//! chunks in batches ([`apply`]). Killed at any point, a rerun resumes after the last commit.

pub mod apply;
pub mod client;
pub mod sources;

use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use client::{Auth, Fault, Platform};
use schema::jobs::MigrationJob;
use schema::migrate::{Found, Review, files};
use schema::store::migrations::{self, Migration, PageRead};
use schema::store::{billing, contacts};
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Resend's API root.
pub const RESEND_API_BASE: &str = "https://api.resend.com";
/// Mailchimp's API root; `{dc}` is the data centre.
pub const MAILCHIMP_API_BASE: &str = "https://{dc}.api.mailchimp.com";
/// Items per chunk read from a file.
const FILE_CHUNK: usize = 1000;

/// What the job needs besides the database.
#[derive(Debug, Clone, Default)]
pub struct MigrationSettings {
    /// Opens the sealed credentials.
    pub secret_key: Option<String>,
    pub resend_api_base: String,
    pub mailchimp_api_base: String,
    /// Whether a listmonk `base_url` may reach private addresses.
    pub allow_private: bool,
}

/// The credentials a migration is given, as sealed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Credentials {
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
}

/// The data centre a Mailchimp key names (`…-us6` → `us6`).
pub fn mailchimp_dc(api_key: &str) -> Option<&str> {
    let (_, dc) = api_key.trim().rsplit_once('-')?;
    (!dc.is_empty() && dc.len() <= 10 && dc.chars().all(|c| c.is_ascii_alphanumeric())).then_some(dc)
}

/// The queue's handler.
pub async fn handle(job: MigrationJob, pool: Data<PgPool>, settings: Data<MigrationSettings>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    match run(&pool, &settings, job.migration_id).await {
        Ok(outcome) => {
            tracing::info!(migration_id = %job.migration_id, outcome, "migration step done");
            Ok(())
        }
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Moves the migration on from where it stands; answers what it did.
pub async fn run(pool: &PgPool, settings: &MigrationSettings, id: Uuid) -> anyhow::Result<&'static str> {
    let Some(m) = migrations::lock(&mut *pool.acquire().await?, id).await? else { return Ok("gone") };
    match m.status.as_str() {
        "connecting" => read(pool, settings, m).await,
        "running" => apply::run(pool, id).await,
        _ => Ok("nothing to do"),
    }
}

/// Reads the source into chunks, then the review.
async fn read(pool: &PgPool, settings: &MigrationSettings, m: Migration) -> anyhow::Result<&'static str> {
    if m.mode == "file" {
        return read_file(pool, m).await;
    }
    let platform = match platform(pool, settings, &m).await? {
        Ok(platform) => platform,
        Err(reason) => return fail(pool, m.id, &reason).await,
    };
    let mut cursor = m.cursor.clone();
    let mut found = m.found.0.clone();
    // Each page is stored while the next one is fetched.
    let mut pending = sources::step(&platform, &m.source, &mut cursor, &mut found).await;
    loop {
        let records = match pending {
            Ok(Some(records)) => records,
            Ok(None) => break,
            Err(Fault::Refused(reason)) => return fail(pool, m.id, &reason).await,
            Err(Fault::Unavailable(reason)) => anyhow::bail!(reason),
        };
        let (at, so_far) = (cursor.clone(), found.clone());
        let (stored, next) = tokio::join!(store_page(pool, m.id, records, &at, &so_far), sources::step(&platform, &m.source, &mut cursor, &mut found));
        if !stored? {
            return Ok("canceled");
        }
        pending = next;
    }
    review(pool, m.id).await
}

/// Stores one page read, unless the migration left `connecting` meanwhile (false then).
async fn store_page(pool: &PgPool, id: Uuid, records: Vec<Result<schema::migrate::Item, schema::migrate::Failed>>, cursor: &Value, found: &Found) -> anyhow::Result<bool> {
    let (items, failed): (Vec<_>, Vec<_>) = records.into_iter().partition(Result::is_ok);
    let items: Vec<_> = items.into_iter().filter_map(Result::ok).collect();
    let failures: Vec<Value> = failed.into_iter().filter_map(Result::err).map(|f| f.to_json()).collect();
    let mut tx = pool.begin().await?;
    let Some(m) = migrations::lock(&mut tx, id).await? else { return Ok(false) };
    if m.status != "connecting" {
        return Ok(false);
    }
    migrations::add_chunk(&mut tx, &m, &PageRead { items: &items, failures: &failures, cursor, found }).await?;
    tx.commit().await?;
    Ok(true)
}

/// The platform's client from the sealed credentials, or why there is none.
async fn platform(pool: &PgPool, settings: &MigrationSettings, m: &Migration) -> anyhow::Result<Result<Platform, String>> {
    let sealed = migrations::credentials(&mut *pool.acquire().await?, m.id).await?;
    let opened = sealed.zip(settings.secret_key.as_deref()).and_then(|(sealed, key)| schema::secret::open(key, &sealed));
    let Some(credentials) = opened.and_then(|plain| serde_json::from_slice::<Credentials>(&plain).ok()) else {
        return Ok(Err("the credentials could not be read (HERALD_SECRET_KEY changed?)".into()));
    };
    let key = credentials.api_key.clone().unwrap_or_default();
    Ok(match m.source.as_str() {
        "resend" => Ok(Platform::new("Resend", &settings.resend_api_base, Auth::Bearer(key))?),
        "mailchimp" => {
            let dc = mailchimp_dc(&key).unwrap_or("us1");
            Ok(Platform::new("Mailchimp", &settings.mailchimp_api_base.replace("{dc}", dc), Auth::Basic("herald".into(), key))?)
        }
        _ => {
            let base = credentials.base_url.clone().unwrap_or_default();
            match check_base_url(&base, settings.allow_private).await {
                Err(reason) => Err(reason),
                Ok(()) => Ok(Platform::new(
                    "listmonk",
                    &base,
                    Auth::Basic(credentials.username.clone().unwrap_or_default(), credentials.password.clone().unwrap_or_default()),
                )?),
            }
        }
    })
}

/// A listmonk `base_url`: http(s), and on a public address unless private ones are allowed.
pub async fn check_base_url(base: &str, allow_private: bool) -> Result<(), String> {
    let url = reqwest::Url::parse(base).map_err(|_| "base_url must be an http or https URL".to_string())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("base_url must be an http or https URL".into());
    }
    let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_string();
    schema::net::resolve_public(&host, url.port_or_known_default().unwrap_or(443), allow_private).await.map(|_| ())
}

/// Reads the uploaded file into chunks (all at once: a file is at most 50 MB).
async fn read_file(pool: &PgPool, m: Migration) -> anyhow::Result<&'static str> {
    if m.chunks_read == 0 {
        let Some(file) = migrations::file(&mut *pool.acquire().await?, m.id).await? else {
            return fail(pool, m.id, "the uploaded file is gone").await;
        };
        let source = m.source.clone();
        let read = tokio::task::spawn_blocking(move || {
            let mut found = Found::default();
            files::read(&source, &file, &mut found).map(|records| (records, found))
        })
        .await?;
        let (records, found) = match read {
            Ok(read) => read,
            Err(problem) => return fail(pool, m.id, &problem.message).await,
        };
        let mut tx = pool.begin().await?;
        let Some(mut locked) = migrations::lock(&mut tx, m.id).await? else { return Ok("gone") };
        if locked.status != "connecting" || locked.chunks_read > 0 {
            return Ok("already read");
        }
        let cursor = serde_json::json!({ "phase": "done" });
        for part in records.chunks(FILE_CHUNK) {
            let items: Vec<_> = part.iter().filter_map(|r| r.as_ref().ok().cloned()).collect();
            let failures: Vec<Value> = part.iter().filter_map(|r| r.as_ref().err()).map(|f| f.to_json()).collect();
            migrations::add_chunk(&mut tx, &locked, &PageRead { items: &items, failures: &failures, cursor: &cursor, found: &found }).await?;
            locked.chunks_read += i32::from(!items.is_empty());
        }
        if records.is_empty() {
            migrations::add_chunk(&mut tx, &locked, &PageRead { items: &[], failures: &[], cursor: &cursor, found: &found }).await?;
        }
        tx.commit().await?;
    }
    review(pool, m.id).await
}

/// Works out the review and moves the migration to `review`.
async fn review(pool: &PgPool, id: Uuid) -> anyhow::Result<&'static str> {
    let mut tx = pool.begin().await?;
    let Some(m) = migrations::lock(&mut tx, id).await? else { return Ok("gone") };
    if m.status != "connecting" {
        return Ok("canceled");
    }
    let review = work_out_review(&mut tx, &m).await?;
    migrations::to_review(&mut tx, id, &review, review.contacts).await?;
    tx.commit().await?;
    Ok("review")
}

/// What will arrive and what it will cost.
pub async fn work_out_review(conn: &mut PgConnection, m: &Migration) -> anyhow::Result<Review> {
    let (tally, suppressions) = migrations::tally(conn, m).await?;
    let found = &m.found.0;
    let declared: std::collections::HashMap<String, String> = contacts::properties(conn, m.team_id).await?.into_iter().map(|p| (p.key, p.kind)).collect();
    let topics = migrations::names(conn, m.team_id, migrations::Named::Topics).await?;
    let segments = migrations::names(conn, m.team_id, migrations::Named::Segments).await?;
    let bill = billing::read(conn, m.team_id, chrono::Utc::now()).await?;
    let limit: Option<i32> = contacts::lock_limit(conn, m.team_id).await?;
    let billable_after = tally.billable_now + tally.new_billable;
    let refused = limit.filter(|l| tally.contacts_now + tally.new_contacts > i64::from(*l)).map(|l| {
        format!("The plan allows {l} contacts; the team has {} and the migration brings {} new ones.", tally.contacts_now, tally.new_contacts)
    });
    Ok(Review {
        contacts: tally.contacts,
        new_contacts: tally.new_contacts,
        existing_contacts: tally.contacts - tally.new_contacts,
        unsubscribed: tally.unsubscribed,
        suppressions,
        failed: m.failed,
        properties: found.properties.iter().map(|(k, t)| (k.clone(), t.clone(), !declared.contains_key(k))).collect(),
        topics: found.topics.keys().map(|n| (n.clone(), !topics.contains_key(&n.to_lowercase()))).collect(),
        segments: found.segments.iter().map(|n| (n.clone(), !segments.contains_key(&n.to_lowercase()))).collect(),
        templates: found.templates.iter().map(|t| t.name.clone()).collect(),
        domains: found.domains.clone(),
        billable_contacts_after: billable_after,
        plan_contacts: bill.contact_limit.map(i64::from),
        monthly_overage_cents: billing::contact_overage_cents(billable_after, bill.contact_limit, bill.contact_overage_per_1000_cents, bill.pay_as_you_go)
            - billing::contact_overage_cents(tally.billable_now, bill.contact_limit, bill.contact_overage_per_1000_cents, bill.pay_as_you_go),
        contact_limit: limit.map(i64::from),
        refused,
    })
}

/// Fails the migration with `reason` (what it kept of the source goes).
async fn fail(pool: &PgPool, id: Uuid, reason: &str) -> anyhow::Result<&'static str> {
    migrations::finish(&mut *pool.acquire().await?, id, Some(reason)).await?;
    Ok("failed")
}
