//! `POST /exports`, `GET /exports`, `GET /exports/{id}`: a team's contacts (every property,
//! topic choice and latest consent) or suppressions as CSV, written by a job and downloaded
//! through a signed link that needs no credential.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices, IdText, Nullable};
use crate::http::paging::page_request;
use crate::routes::{Tag, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::payload::{Binary, Json, PlainText};
use poem_openapi::param::{Path, Query};
use poem_openapi::{ApiResponse, Object};
use schema::jobs::{ExportJob, enqueue};
use schema::store::exports::{self, Export};
use serde::Deserialize;

pub struct ExportsApi;

crate::choices! {
    /// What to export: `contacts` (every field, property, topic choice and latest consent) or
    /// `suppressions`.
    ExportKind = &["contacts", "suppressions"];
    /// `queued`, `running`, `completed` or `failed`.
    ExportStatus = &["queued", "running", "completed", "failed"];
}

/// How long a download link works.
const LINK_SECONDS: i64 = 3600;

/// What to export.
#[derive(Object, Deserialize)]
pub struct NewExport {
    /// `contacts` or `suppressions`.
    pub kind: Choice<ExportKind>,
}

/// An export.
#[derive(Object)]
pub struct ExportView {
    /// Always `export`.
    pub object: String,
    /// The export's id.
    pub id: String,
    /// What it holds.
    pub kind: Choice<ExportKind>,
    /// Where it stands.
    pub status: Choice<ExportStatus>,
    /// Rows written so far (the header not counted).
    pub rows: i64,
    /// Bytes written so far.
    pub bytes: i64,
    /// Why it failed, or `null`.
    pub error: Nullable<String>,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When it completed or failed, or `null`.
    pub completed_at: Nullable<DateTime<Utc>>,
    /// The CSV's signed download link (no credential needed) once completed, else `null`.
    pub download_url: Nullable<String>,
    /// When the link stops working, or `null`.
    pub download_expires_at: Nullable<DateTime<Utc>>,
}

/// A page of exports.
#[derive(Object)]
pub struct ExportList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<ExportView>,
}

#[derive(ApiResponse)]
pub enum Created {
    /// Queued.
    #[oai(status = 201)]
    Created(Json<ExportView>),
}

#[derive(ApiResponse)]
pub enum CsvDownload {
    /// The CSV.
    #[oai(status = 200)]
    Ok(Binary<Vec<u8>>, #[oai(header = "content-type")] String, #[oai(header = "content-disposition")] String, #[oai(header = "cache-control")] String),
    /// No completed export for this link, or the link expired.
    #[oai(status = 404)]
    NotFound(PlainText<String>),
}

fn view(state: &AppState, e: Export) -> ExportView {
    let link = (e.status == "completed").then(|| {
        let expires = Utc::now() + chrono::TimeDelta::seconds(LINK_SECONDS);
        let token = schema::tracking::export_token(&state.link_key, e.id, expires.timestamp());
        (format!("{}/exports/download/{token}", state.config.public_url.trim_end_matches('/')), expires)
    });
    ExportView {
        object: "export".into(),
        id: e.id.to_string(),
        kind: Choice::new(if e.kind == "contacts" { "contacts" } else { "suppressions" }),
        status: Choice::new(match e.status.as_str() {
            "queued" => "queued",
            "running" => "running",
            "completed" => "completed",
            _ => "failed",
        }),
        rows: e.rows,
        bytes: e.bytes,
        error: Nullable(e.error),
        created_at: e.created_at,
        completed_at: Nullable(e.completed_at),
        download_url: Nullable(link.as_ref().map(|(url, _)| url.clone())),
        download_expires_at: Nullable(link.map(|(_, at)| at)),
    }
}

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl ExportsApi {
    /// Export the team's contacts or suppressions as CSV (`full_access`). A job writes it; the
    /// export shows a signed download link once `completed`. The contacts CSV is taken back by
    /// `POST /contacts/imports`.
    #[oai(path = "/exports", method = "post", operation_id = "create-export")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<NewExport>) -> ApiResult<Created> {
        let kind = body.0.kind;
        if !ExportKind::allows(kind.as_str()) {
            return Err(ApiError::refused_field("kind", format!("must be one of {}", ExportKind::VALUES.join(", "))));
        }
        let mut tx = state.pool.begin().await?;
        let export = exports::insert(&mut tx, schema::ids::new_id(), caller.team_id, kind.as_str()).await?;
        enqueue(&mut tx, &ExportJob { export_id: export.id }).await.map_err(anyhow::Error::from)?;
        tx.commit().await?;
        Ok(Created::Created(Json(view(&state, export))))
    }

    /// List the team's exports of the last seven days, newest first.
    #[oai(path = "/exports", method = "get", operation_id = "list-exports")]
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
    ) -> ApiResult<Json<ExportList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let page = exports::list(&mut *state.pool.acquire().await?, caller.team_id, &page).await?;
        Ok(Json(ExportList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(|e| view(&state, e)).collect() }))
    }

    /// Retrieve an export, with its download link once completed.
    #[oai(path = "/exports/:export_id", method = "get", operation_id = "get-export")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, export_id: Path<String>) -> ApiResult<Json<ExportView>> {
        let id = path_id(&export_id.0, "Export")?;
        let found = exports::get(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
        Ok(Json(view(&state, found.ok_or_else(|| ApiError::not_found("Export"))?)))
    }

    /// Download a completed export's CSV through the link its export shows (no credential).
    #[oai(path = "/exports/download/:token", method = "get", operation_id = "download-export", tag = "Tag::Pages")]
    async fn download(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<CsvDownload> {
        let found = match schema::tracking::verify_export(&state.link_key, &token.0, Utc::now().timestamp()) {
            Some(id) => exports::file(&mut *state.pool.acquire().await?, id).await?.map(|f| (id, f)),
            None => None,
        };
        let Some((id, (kind, bytes))) = found else { return Ok(CsvDownload::NotFound(PlainText("Not found".into()))) };
        Ok(CsvDownload::Ok(Binary(bytes), "text/csv; charset=utf-8".into(), format!("attachment; filename=\"{kind}-{id}.csv\""), "private, no-store".into()))
    }
}
