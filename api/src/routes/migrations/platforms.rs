//! `POST /migrations` (a platform's credentials, or its export file), `GET /migrations`,
//! `GET /migrations/{id}`, `POST /migrations/{id}/start`, `POST /migrations/{id}/cancel`: an
//! audience moved in from Resend, Mailchimp or listmonk. A job reads the source and works out
//! the review; a person starts it; nothing is ever sent to the contacts it brings.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::fields::{Choice, Choices, IdText, Nullable, Required};
use crate::http::paging::page_request;
use crate::routes::{FailedRow, Tag, failed_rows, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use jobs::migrate::{Credentials, check_base_url, mailchimp_dc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::multipart::Upload;
use poem_openapi::{ApiRequest, ApiResponse, Multipart, Object};
use schema::jobs::{MigrationJob, enqueue};
use schema::migrate::files;
use schema::store::contacts;
use schema::store::migrations::{self, Migration};
use serde::Deserialize;

pub struct MigrationsApi;

crate::choices! {
    /// The platform moved from: `resend`, `mailchimp` or `listmonk`.
    MigrationSource = &["resend", "mailchimp", "listmonk"];
    /// How it is read: `api` (credentials) or `file` (an export file).
    MigrationMode = &["api", "file"];
    /// `connecting` (reading the source), `review` (waiting to be started), `running`,
    /// `completed`, `failed` or `canceled`.
    MigrationStatus = &["connecting", "review", "running", "completed", "failed", "canceled"];
}

/// Largest export file accepted.
pub const MAX_FILE_BYTES: usize = 50 * 1024 * 1024;

/// The platform's credentials, as it takes them.
#[derive(Object, Deserialize)]
pub struct PlatformCredentials {
    /// Resend: a full-access API key (`re_...`). Mailchimp: an API key, whose suffix names
    /// the data centre (`...-us6`).
    #[oai(validator(max_length = 500))]
    pub api_key: Option<String>,
    /// listmonk: the installation's address (`https://lists.example.com`).
    #[oai(validator(max_length = 2000))]
    pub base_url: Option<String>,
    /// listmonk: the API user's name.
    #[oai(validator(max_length = 200))]
    pub username: Option<String>,
    /// listmonk: the API user's token (or, before v4, the admin password).
    #[oai(validator(max_length = 500))]
    pub password: Option<String>,
}

/// A migration through the platform's API.
#[derive(Object, Deserialize)]
pub struct NewMigration {
    /// `resend`, `mailchimp` or `listmonk`.
    pub source: Choice<MigrationSource>,
    /// Kept sealed while the source is read, then erased; never answered or logged.
    pub credentials: PlatformCredentials,
}

/// A migration from an export file.
#[derive(Multipart)]
pub struct MigrationForm {
    /// `resend`, `mailchimp` or `listmonk`.
    pub source: Required<Choice<MigrationSource>>,
    /// A Resend contacts CSV (Herald's contacts export is one), a Mailchimp audience export
    /// ZIP, or a listmonk subscribers CSV; at most 50 MB.
    pub file: Required<Upload>,
}

#[derive(ApiRequest)]
pub enum MigrationRequest {
    /// An export file, as `multipart/form-data`.
    Multipart(MigrationForm),
    /// The platform's credentials, as JSON.
    Json(Body<NewMigration>),
}

/// What has been done so far.
#[derive(Object)]
pub struct MigrationCounts {
    /// Distinct addresses read from the source.
    pub total: i64,
    /// Contacts created.
    pub created: i64,
    /// Records merged into contacts the team had (or read twice).
    pub updated: i64,
    /// Suppressions written.
    pub suppressed: i64,
    /// Records that failed (`failed_items` lists the first 1,000).
    pub failed: i64,
}

/// A property that will arrive.
#[derive(Object)]
pub struct ReviewProperty {
    /// Its key.
    pub key: String,
    /// `string`, `number` or `boolean`.
    #[oai(rename = "type")]
    pub kind: String,
    /// Whether the team lacks it (it will be declared).
    pub new: bool,
}

/// A topic or segment that will arrive.
#[derive(Object)]
pub struct ReviewNamed {
    /// Its name.
    pub name: String,
    /// Whether the team lacks it (it will be made; otherwise the team's is used).
    pub new: bool,
}

/// Suppressions that will be written with one origin.
#[derive(Object)]
pub struct ReviewSuppressions {
    /// `bounce`, `complaint` or `manual`.
    pub origin: String,
    /// How many addresses.
    pub count: i64,
}

/// What will arrive.
#[derive(Object)]
pub struct ReviewContacts {
    /// Distinct addresses.
    pub total: i64,
    /// Addresses the team does not have.
    pub new: i64,
    /// Addresses the team has: empty fields are filled, nothing is overwritten, an unsubscribe
    /// always wins.
    pub existing: i64,
    /// Addresses that arrive unsubscribed.
    pub unsubscribed: i64,
    /// Records that failed already (no usable address).
    pub failed: i64,
}

/// What the move costs on the team's plan.
#[derive(Object)]
pub struct ReviewCost {
    /// Billable contacts after the move (every new subscribed, unsuppressed contact counted).
    pub billable_contacts_after: i64,
    /// The contacts the plan includes, or `null` for no allowance.
    pub plan_contacts: Nullable<i64>,
    /// The monthly contact overage the move adds, in cents (with pay-as-you-go).
    pub monthly_overage_cents: i64,
    /// The team's contact limit, or `null` for none.
    pub contact_limit: Nullable<i64>,
    /// Whether the plan refuses the move (starting it answers 422).
    pub refused: bool,
    /// Why, or `null`.
    pub reason: Nullable<String>,
}

/// What will arrive and what it will cost.
#[derive(Object)]
pub struct MigrationReview {
    /// The contacts.
    pub contacts: ReviewContacts,
    /// Properties (custom fields, merge fields, attributes).
    pub properties: Vec<ReviewProperty>,
    /// Topics (Resend topics, Mailchimp audiences, listmonk lists).
    pub topics: Vec<ReviewNamed>,
    /// Segments (Resend segments, Mailchimp tags).
    pub segments: Vec<ReviewNamed>,
    /// Suppressions by origin.
    pub suppressions: Vec<ReviewSuppressions>,
    /// Templates, which arrive as drafts.
    pub templates: Vec<String>,
    /// Sending domains found (add and verify them under `/domains`).
    pub domains: Vec<String>,
    /// What it costs.
    pub cost: ReviewCost,
}

/// A migration.
#[derive(Object)]
pub struct MigrationView {
    /// Always `migration`.
    pub object: String,
    /// The migration's id.
    pub id: String,
    /// The platform moved from.
    pub source: Choice<MigrationSource>,
    /// `api` or `file`.
    pub mode: Choice<MigrationMode>,
    /// Where it stands.
    pub status: Choice<MigrationStatus>,
    /// What has been done so far.
    pub counts: MigrationCounts,
    /// What will arrive and what it will cost, once read (from `review` on), else `null`.
    pub review: Nullable<MigrationReview>,
    /// Why it failed (the platform's answer when it refused), or `null`.
    pub error: Nullable<String>,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When it was started, or `null`.
    pub started_at: Nullable<DateTime<Utc>>,
    /// When it completed, failed or was canceled, or `null`.
    pub completed_at: Nullable<DateTime<Utc>>,
    /// The first 1,000 failed records (retrieve only).
    #[oai(skip_serializing_if_is_none)]
    pub failed_items: Option<Vec<FailedRow>>,
}

/// A page of migrations.
#[derive(Object)]
pub struct MigrationList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<MigrationView>,
}

#[derive(ApiResponse)]
pub enum Created {
    /// Accepted: the source is being read.
    #[oai(status = 201)]
    Created(Json<MigrationView>),
}

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl MigrationsApi {
    /// Move an audience in from Resend, Mailchimp or listmonk (`full_access`): JSON with the
    /// platform's credentials, or `multipart/form-data` with its export file. A job reads the
    /// source (status `connecting`); the migration then waits in `review` with what will arrive
    /// and what it will cost until started. Wrong credentials fail it with the platform's
    /// answer. Nothing is ever sent to the contacts it brings.
    #[oai(path = "/migrations", method = "post", operation_id = "create-migration")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, request: MigrationRequest) -> ApiResult<Created> {
        let (source, sealed, file) = match request {
            MigrationRequest::Json(body) => {
                let body = body.0;
                let source = checked_source(body.source.as_str())?;
                let sealed = seal(&state, source, body.credentials).await?;
                (source, Some(sealed), None)
            }
            MigrationRequest::Multipart(form) => {
                let source = checked_source(form.source.0.as_ref().ok_or_else(|| ApiError::missing_field("source"))?.as_str())?;
                let upload = form.file.0.ok_or_else(|| ApiError::missing_field("file"))?;
                (source, None, Some(read_file(source, upload).await?))
            }
        };
        let mut tx = state.pool.begin().await?;
        let id = migrations::insert(&mut tx, caller.team_id, source, sealed.as_deref(), file.as_deref()).await?;
        enqueue(&mut tx, &MigrationJob { migration_id: id }).await.map_err(anyhow::Error::from)?;
        let created = migrations::get(&mut tx, caller.team_id, id).await?.ok_or_else(|| anyhow::anyhow!("migration {id} vanished"))?;
        tx.commit().await?;
        Ok(Created::Created(Json(view(created, false))))
    }

    /// List the team's migrations, newest first.
    #[oai(path = "/migrations", method = "get", operation_id = "list-migrations")]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this id.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<MigrationList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let page = migrations::list(&mut *state.pool.acquire().await?, caller.team_id, &page).await?;
        Ok(Json(MigrationList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(|m| view(m, false)).collect() }))
    }

    /// Retrieve a migration: its status, counts, review and the first 1,000 failed records.
    #[oai(path = "/migrations/:migration_id", method = "get", operation_id = "get-migration")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, migration_id: Path<String>) -> ApiResult<Json<MigrationView>> {
        let id = path_id(&migration_id.0, "Migration")?;
        let found = migrations::get(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
        Ok(Json(view(found.ok_or_else(|| ApiError::not_found("Migration"))?, true)))
    }

    /// Start a migration in `review`: its contacts, consent, topics, segments, suppressions and
    /// draft templates are written in batches by a job that resumes where it stopped. Any other
    /// status is `409 resource_locked`; a plan that refuses the move is `422`.
    #[oai(path = "/migrations/:migration_id/start", method = "post", operation_id = "start-migration")]
    async fn start(&self, state: Data<&AppState>, caller: Data<&Caller>, migration_id: Path<String>) -> ApiResult<Json<MigrationView>> {
        let id = path_id(&migration_id.0, "Migration")?;
        let mut tx = state.pool.begin().await?;
        let found = migrations::get(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Migration"))?;
        if found.status != "review" {
            return Err(locked(&found));
        }
        let new_contacts = found.review.as_ref().map_or(0, |r| r.0.new_contacts);
        if let Some(limit) = contacts::lock_limit(&mut tx, caller.team_id).await? {
            let held = contacts::count(&mut tx, caller.team_id).await?;
            if held + new_contacts > i64::from(limit) {
                return Err(ApiError::refused(format!(
                    "The plan allows {limit} contacts; the team has {held} and the migration brings {new_contacts} new ones. Raise the plan (POST /billing/plan) first."
                )));
            }
        }
        let started = migrations::transition(&mut tx, caller.team_id, id, &["review"], "running").await?.ok_or_else(|| locked(&found))?;
        enqueue(&mut tx, &MigrationJob { migration_id: id }).await.map_err(anyhow::Error::from)?;
        tx.commit().await?;
        Ok(Json(view(started, false)))
    }

    /// Cancel a migration that has not ended: its credentials and what was read are erased;
    /// what a running one already wrote stays. An ended one is `409 resource_locked`.
    #[oai(path = "/migrations/:migration_id/cancel", method = "post", operation_id = "cancel-migration")]
    async fn cancel(&self, state: Data<&AppState>, caller: Data<&Caller>, migration_id: Path<String>) -> ApiResult<Json<MigrationView>> {
        let id = path_id(&migration_id.0, "Migration")?;
        let mut tx = state.pool.begin().await?;
        let found = migrations::get(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Migration"))?;
        let canceled = migrations::transition(&mut tx, caller.team_id, id, &["connecting", "review", "running"], "canceled").await?.ok_or_else(|| locked(&found))?;
        migrations::erase(&mut tx, id).await?;
        tx.commit().await?;
        Ok(Json(view(canceled, false)))
    }
}

fn locked(m: &Migration) -> ApiError {
    let what = match m.status.as_str() {
        "connecting" => "is still reading its source; it can start once in review",
        "running" => "is already running",
        "completed" => "has completed",
        "failed" => "has failed; create a new one",
        "canceled" => "was canceled; create a new one",
        _ => "cannot change now",
    };
    ApiError::new(ErrorKind::ResourceLocked, format!("The migration {what}."))
}

fn checked_source(source: &str) -> ApiResult<&'static str> {
    MigrationSource::VALUES
        .iter()
        .find(|s| **s == source)
        .copied()
        .ok_or_else(|| ApiError::refused_field("source", format!("must be one of {}", MigrationSource::VALUES.join(", "))))
}

/// Checks the credentials the source takes and seals them.
async fn seal(state: &AppState, source: &str, given: PlatformCredentials) -> ApiResult<Vec<u8>> {
    let Some(secret_key) = state.config.secret_key.as_deref() else {
        return Err(ApiError::refused(
            "Connecting another platform needs the operator to set HERALD_SECRET_KEY, which seals its credentials; an export file can be uploaded without it.",
        ));
    };
    let filled = |value: &Option<String>, field: &str| -> ApiResult<String> {
        value.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(String::from).ok_or_else(|| ApiError::missing_field(&format!("credentials.{field}")))
    };
    let credentials = match source {
        "listmonk" => {
            let base_url = filled(&given.base_url, "base_url")?;
            let (username, password) = (filled(&given.username, "username")?, filled(&given.password, "password")?);
            check_base_url(&base_url, state.config.migration_allow_private).await.map_err(|why| ApiError::refused_field("credentials.base_url", why))?;
            Credentials { api_key: None, base_url: Some(base_url), username: Some(username), password: Some(password) }
        }
        _ => {
            let api_key = filled(&given.api_key, "api_key")?;
            if source == "mailchimp" && mailchimp_dc(&api_key).is_none() {
                return Err(ApiError::invalid_parameter("credentials.api_key", "must end in its data centre, like -us6"));
            }
            Credentials { api_key: Some(api_key), base_url: None, username: None, password: None }
        }
    };
    let plain = serde_json::to_vec(&credentials).map_err(anyhow::Error::from)?;
    Ok(schema::secret::seal(secret_key, &plain))
}

/// Reads and checks an uploaded export file (a ZIP is unpacked in memory, within limits).
async fn read_file(source: &'static str, upload: Upload) -> ApiResult<Vec<u8>> {
    let too_large = || ApiError::refused("The file is larger than 50 MB.").with_error("file", "must be at most 50 MB");
    if upload.size() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let file = upload.into_vec().await.map_err(|_| ApiError::invalid_field("file", "could not be read"))?;
    if file.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let checked = tokio::task::spawn_blocking(move || files::check(source, &file).map(|()| file)).await.map_err(anyhow::Error::from)?;
    checked.map_err(|problem| problem.errors.into_iter().fold(ApiError::refused(problem.message), |e, (path, message)| e.with_error(path, message)))
}

fn view(m: Migration, full: bool) -> MigrationView {
    let failed_items = full.then(|| failed_rows(&m.failures));
    MigrationView {
        object: "migration".into(),
        id: m.id.to_string(),
        source: Choice::new(m.source),
        mode: Choice::new(m.mode),
        status: Choice::new(m.status),
        counts: MigrationCounts { total: m.total, created: m.created, updated: m.updated, suppressed: m.suppressed, failed: m.failed },
        review: Nullable(m.review.map(|r| review_view(r.0))),
        error: Nullable(m.error),
        created_at: m.created_at,
        started_at: Nullable(m.started_at),
        completed_at: Nullable(m.completed_at),
        failed_items,
    }
}

fn review_view(r: schema::migrate::Review) -> MigrationReview {
    let named = |items: Vec<(String, bool)>| items.into_iter().map(|(name, new)| ReviewNamed { name, new }).collect();
    MigrationReview {
        contacts: ReviewContacts { total: r.contacts, new: r.new_contacts, existing: r.existing_contacts, unsubscribed: r.unsubscribed, failed: r.failed },
        properties: r.properties.into_iter().map(|(key, kind, new)| ReviewProperty { key, kind, new }).collect(),
        topics: named(r.topics),
        segments: named(r.segments),
        suppressions: r.suppressions.into_iter().map(|(origin, count)| ReviewSuppressions { origin, count }).collect(),
        templates: r.templates,
        domains: r.domains,
        cost: ReviewCost {
            billable_contacts_after: r.billable_contacts_after,
            plan_contacts: Nullable(r.plan_contacts),
            monthly_overage_cents: r.monthly_overage_cents,
            contact_limit: Nullable(r.contact_limit),
            refused: r.refused.is_some(),
            reason: Nullable(r.refused),
        },
    }
}
