//! CSV imports of contacts: the upload is checked (a CSV file with every mapped column) and
//! stored with its job in one transaction, then processed in the background in batches.

use schema::status as stored;
use crate::http::error::{ApiError, ApiResult};
use crate::http::paging::page_request;
use crate::http::fields::{Choice, Choices, IdText, Nullable, Required};
use crate::routes::audience::refs::{MAX_PROPERTIES, valid_key};
use crate::routes::audience::refs::segment_ids;
use crate::routes::audience::consent::{TopicChoice, checked_choices};
use crate::routes::{FailedRow, Tag, failed_rows, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::multipart::Upload;
use poem_openapi::{ApiResponse, Multipart, Object};
use schema::import::{self, Positions};
use schema::jobs::{ImportContacts, enqueue};
use schema::store::contacts;
use schema::store::imports::{self, ColumnMap, Import, NewImport, PropertyColumn};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};

pub struct ContactImportsApi;

crate::choices! {
    /// An import's status: `queued`, `in_progress`, `completed` or `failed`.
    ImportStatus = &["queued", "in_progress", "completed", "failed"];
    /// What an import does with an address that is already a contact: `skip` or `upsert`.
    OnConflict = &["skip", "upsert"];
}

/// Largest file accepted.
pub const MAX_FILE_BYTES: usize = 50 * 1024 * 1024;

/// The multipart form of `POST /contacts/imports`.
#[derive(Multipart)]
pub struct ImportForm {
    /// The CSV file (up to 50 MB), its first row naming the columns.
    pub file: Required<Upload>,
    /// JSON: `{ email, first_name, last_name, unsubscribed }` mapped to column names, and
    /// `properties` mapping each key to a column name or `{ column, type }` (`string` default,
    /// `number`, `boolean`). Without it, columns named `email`, `first_name`, `last_name` and
    /// `unsubscribed` are used.
    pub column_map: Option<String>,
    /// `skip` (default) leaves existing addresses alone; `upsert` updates them.
    pub on_conflict: Option<Choice<OnConflict>>,
    /// JSON array of `{ id }`: segments every imported contact joins.
    pub segments: Option<String>,
    /// JSON array of `{ id, subscription }`: topic choices for every imported contact.
    pub topics: Option<String>,
}

/// `{ object: "contact_import", id }`.
#[derive(Object)]
pub struct ImportRef {
    /// Always `contact_import`.
    pub object: String,
    /// The import's id.
    pub id: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Accepted: the import is queued.
    #[oai(status = 201)]
    Created(Json<ImportRef>),
}

/// Rows counted so far.
#[derive(Object)]
pub struct Counts {
    /// Data rows in the file (known once processing starts).
    pub total: i64,
    /// Contacts created.
    pub created: i64,
    /// Rows that updated an existing contact on `upsert`, a repeated address in the file included.
    pub updated: i64,
    /// Rows left alone on `skip`: an address already a contact, or one repeated in the file.
    pub skipped: i64,
    /// Rows that failed (`failed_rows` lists the first 1,000).
    pub failed: i64,
}

/// A contact import.
#[derive(Object)]
pub struct ImportView {
    /// Always `contact_import`.
    pub object: String,
    /// The import's id.
    pub id: String,
    /// `queued`, `in_progress`, `completed` or `failed`.
    pub status: String,
    /// When the file was uploaded.
    pub created_at: DateTime<Utc>,
    /// When processing completed or failed, or `null` until then.
    pub completed_at: Nullable<DateTime<Utc>>,
    /// Rows counted so far.
    pub counts: Counts,
    /// Why the import failed, when it did.
    #[oai(skip_serializing_if_is_none)]
    pub error: Option<String>,
    /// The first 1,000 failed rows (retrieve only).
    #[oai(skip_serializing_if_is_none)]
    pub failed_rows: Option<Vec<FailedRow>>,
}

/// A page of imports.
#[derive(Object)]
pub struct ImportList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<ImportView>,
}

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl ContactImportsApi {
    /// Import contacts from a CSV file. Answers at once; rows are processed in the background
    /// in batches (an `in_progress` import already holds some contacts). A row with no usable
    /// address, a value of the wrong type, or past the plan's contact limit fails; the first
    /// 1,000 failures are kept. No per-contact events are sent.
    #[oai(path = "/contacts/imports", method = "post", operation_id = "create-contact-import")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, form: ImportForm) -> ApiResult<CreateResponse> {
        let upload = form.file.0.ok_or_else(|| ApiError::missing_field("file"))?;
        if upload.size() > MAX_FILE_BYTES {
            return Err(too_large());
        }
        let file = upload.into_vec().await.map_err(|_| ApiError::invalid_field("file", "could not be read"))?;
        if file.len() > MAX_FILE_BYTES {
            return Err(too_large());
        }
        let header = import::header(&file).map_err(|why| ApiError::refused(format!("The file {why}.")).with_error("file", why))?;
        let on_conflict = form.on_conflict.map_or_else(|| "skip".to_string(), Choice::into_string);
        if !OnConflict::allows(&on_conflict) {
            return Err(ApiError::invalid_parameter("on_conflict", "must be skip or upsert"));
        }
        let column_map = match form.column_map {
            Some(raw) => parse_column_map(&raw)?,
            None => default_column_map(&header),
        };
        if let Err(missing) = Positions::find(&column_map, &header) {
            let error = ApiError::refused("The file lacks columns that column_map names.");
            return Err(missing.into_iter().fold(error, |e, (path, column)| e.with_error(path, format!("column `{column}` is not in the file"))));
        }
        let segments = json_array(form.segments.as_deref(), "segments")?;
        let topic_choices = json_array(form.topics.as_deref(), "topics")?;

        let mut tx = state.pool.begin().await?;
        contacts::lock_limit(&mut tx, caller.team_id).await?;
        let segment_ids = segment_ids(&mut tx, caller.team_id, &segments, "segments").await?;
        let topics = check_topics(&mut tx, caller.team_id, topic_choices).await?;
        declare_properties(&mut tx, caller.team_id, &column_map).await?;
        let new = NewImport { on_conflict: &on_conflict, column_map: &column_map, segment_ids: &segment_ids, topics, file: &file };
        let id = imports::insert(&mut tx, caller.team_id, &new).await?;
        enqueue(&mut tx, &ImportContacts { import_id: id }).await.map_err(anyhow::Error::from)?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(ImportRef { object: "contact_import".into(), id: id.to_string() })))
    }

    /// List the team's imports, newest first.
    #[oai(path = "/contacts/imports", method = "get", operation_id = "list-contact-imports")]
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
        /// Only imports in this status.
        status: Query<Option<Choice<ImportStatus>>>,
    ) -> ApiResult<Json<ImportList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let status = match status.0.as_deref() {
            Some(text) => Some(stored::ImportStatus::parse(text).ok_or_else(|| ApiError::invalid_parameter("status", "must be queued, in_progress, completed or failed"))?),
            None => None,
        };
        let page = imports::list(&mut *state.pool.acquire().await?, caller.team_id, status, &page).await?;
        Ok(Json(ImportList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(|i| view(i, false)).collect() }))
    }

    /// Retrieve an import: its status, counts and the first 1,000 failed rows.
    #[oai(path = "/contacts/imports/:import_id", method = "get", operation_id = "get-contact-import")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, import_id: Path<String>) -> ApiResult<Json<ImportView>> {
        let id = path_id(&import_id.0, "Contact import")?;
        let found = imports::get(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
        Ok(Json(view(found.ok_or_else(|| ApiError::not_found("Contact import"))?, true)))
    }
}

fn too_large() -> ApiError {
    ApiError::refused("The file is larger than 50 MB.").with_error("file", "must be at most 50 MB")
}

/// A JSON text part that must hold an array (absent: empty).
fn json_array(raw: Option<&str>, path: &str) -> ApiResult<Vec<Value>> {
    match raw.map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok(Vec::new()),
        Some(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(Value::Array(items)) => Ok(items),
            _ => Err(ApiError::invalid_parameter(path, "must be a JSON array")),
        },
    }
}

/// Reads `column_map`; `email` is required.
fn parse_column_map(raw: &str) -> ApiResult<ColumnMap> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(raw) else {
        return Err(ApiError::invalid_parameter("column_map", "must be a JSON object"));
    };
    let column = |field: &str| -> ApiResult<Option<String>> {
        match map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(name)) if !name.trim().is_empty() => Ok(Some(name.trim().to_string())),
            Some(_) => Err(ApiError::invalid_parameter(&format!("column_map.{field}"), "must be a column name")),
        }
    };
    let email = column("email")?.ok_or_else(|| ApiError::missing_field("column_map.email"))?;
    let mut properties = BTreeMap::new();
    match map.get("properties") {
        None | Some(Value::Null) => {}
        Some(Value::Object(entries)) => {
            for (key, entry) in entries {
                let path = format!("column_map.properties.{key}");
                if !valid_key(key) {
                    return Err(ApiError::invalid_parameter(&path, "is not a valid key: a letter or _, then letters, digits or _, at most 50"));
                }
                let (column, kind) = match entry {
                    Value::String(column) => (column.clone(), "string".to_string()),
                    Value::Object(spec) => (
                        spec.get("column").and_then(Value::as_str).unwrap_or_default().to_string(),
                        spec.get("type").and_then(Value::as_str).unwrap_or("string").to_string(),
                    ),
                    _ => (String::new(), String::new()),
                };
                if column.trim().is_empty() || !matches!(kind.as_str(), "string" | "number" | "boolean") {
                    return Err(ApiError::invalid_parameter(&path, "must be a column name or { column, type } with type string, number or boolean"));
                }
                properties.insert(key.clone(), PropertyColumn { column: column.trim().to_string(), kind });
            }
        }
        Some(_) => return Err(ApiError::invalid_parameter("column_map.properties", "must be an object")),
    }
    Ok(ColumnMap { email, first_name: column("first_name")?, last_name: column("last_name")?, unsubscribed: column("unsubscribed")?, properties })
}

/// Without `column_map`: the columns named like the fields (any case); `email` is expected.
fn default_column_map(header: &[String]) -> ColumnMap {
    let named = |field: &str| header.iter().find(|h| h.eq_ignore_ascii_case(field)).cloned();
    ColumnMap {
        email: named("email").unwrap_or_else(|| "email".into()),
        first_name: named("first_name"),
        last_name: named("last_name"),
        unsubscribed: named("unsubscribed"),
        properties: BTreeMap::new(),
    }
}

/// Checks the topic choices sent with an import; answers them as stored.
async fn check_topics(conn: &mut sqlx::PgConnection, team_id: uuid::Uuid, choices: Vec<Value>) -> ApiResult<Value> {
    let choices: Vec<TopicChoice> = serde_json::from_value(Value::Array(choices))
        .map_err(|_| ApiError::invalid_parameter("topics", "must be a JSON array of { id, subscription }"))?;
    let checked = checked_choices(conn, team_id, &choices, "topics").await?;
    Ok(Value::Array(checked.into_iter().map(|(id, subscription)| json!({ "id": id, "subscription": subscription })).collect()))
}

/// Declares the mapped properties not yet declared; a key declared with another type is
/// `422 invalid_parameter`, and the 100-property cap holds.
async fn declare_properties(conn: &mut sqlx::PgConnection, team_id: uuid::Uuid, map: &ColumnMap) -> ApiResult<()> {
    let declared: HashMap<String, String> = contacts::properties(conn, team_id).await?.into_iter().map(|p| (p.key, p.kind)).collect();
    let mut new_keys: Vec<(String, &'static str)> = Vec::new();
    for (key, column) in &map.properties {
        match declared.get(key) {
            Some(kind) if *kind != column.kind => {
                return Err(ApiError::invalid_parameter(&format!("column_map.properties.{key}"), format!("is declared as a {kind}")));
            }
            Some(_) => {}
            None => new_keys.push((key.clone(), schema::model::property_type(&column.kind))),
        }
    }
    if declared.len() + new_keys.len() > MAX_PROPERTIES {
        return Err(ApiError::refused(format!("A team has at most {MAX_PROPERTIES} contact properties."))
            .with_error("column_map.properties", "would pass the 100-property limit"));
    }
    contacts::declare(conn, team_id, &new_keys).await?;
    Ok(())
}

fn view(import: Import, full: bool) -> ImportView {
    let failed_rows = full.then(|| failed_rows(&import.failures));
    ImportView {
        object: "contact_import".into(),
        id: import.id.to_string(),
        status: import.status.as_str().into(),
        created_at: import.created_at,
        completed_at: import.completed_at.into(),
        counts: Counts { total: import.total, created: import.created, updated: import.updated, skipped: import.skipped, failed: import.failed },
        error: import.error,
        failed_rows,
    }
}
