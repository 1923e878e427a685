//! Request logs of the team: list with filters, and one log with its stored bodies.

use crate::http::error::{ApiError, ApiResult};
use crate::http::paging::{date_range, page_request, search_text};
use crate::http::fields::{IdText, Instant, Nullable, Search};
use crate::routes::{Tag, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use schema::store::request_logs::{self, ListFilter, RequestLog};

pub struct LogsApi;

/// A logged call.
#[derive(Object)]
pub struct LogItem {
    /// Always `log`.
    pub object: String,
    /// The log's id.
    pub id: String,
    /// When the request was answered.
    pub created_at: DateTime<Utc>,
    /// The route template, such as `/api-keys/{api_key_id}`.
    pub endpoint: String,
    /// The HTTP method.
    pub method: String,
    /// The HTTP status answered.
    pub response_status: i16,
    /// The User-Agent header as sent (empty when absent).
    pub user_agent: String,
    /// `api`, `dashboard` or `sdk:<name>`, read from the User-Agent.
    pub source: String,
    /// The `X-Request-Id` the answer carried (the log's id).
    pub request_id: String,
    /// Milliseconds from receiving the request to answering it.
    pub latency_ms: i32,
    /// The API key that made the request, or `null` when another credential did.
    pub api_key_id: Nullable<String>,
    /// The email the request created, when it created one.
    pub email_id: Nullable<String>,
}

/// A logged call with its stored bodies.
#[derive(Object)]
pub struct LogDetail {
    #[oai(flatten)]
    pub item: LogItem,
    /// The path as requested, with its query.
    pub path: String,
    /// The request body as stored: dropped when it named a password, token, secret or key;
    /// a send's content replaced by its size and digest.
    pub request_body: Nullable<serde_json::Value>,
    /// The response body as stored (kept for writes and failures), under the same rules.
    pub response_body: Nullable<serde_json::Value>,
}

/// A page of logs.
#[derive(Object)]
pub struct LogList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<LogItem>,
}

#[poem_openapi::OpenApi(tag = "Tag::Logs")]
impl LogsApi {
    /// List logs, newest first. Reading logs is itself logged.
    #[oai(path = "/logs", method = "get", operation_id = "list-logs")]
    #[allow(clippy::too_many_arguments)]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return logs after (older than) this log id.
        after: Query<Option<IdText>>,
        /// Return logs before (newer than) this log id.
        before: Query<Option<IdText>>,
        /// Only this response status.
        #[oai(validator(minimum(value = "100"), maximum(value = "599")))]
        status: Query<Option<i16>>,
        /// Only this source: `api`, `dashboard` or `sdk:<name>`.
        #[oai(validator(pattern = r"^(api|dashboard|sdk:[^\u0000-\u001F\u007F-\u009F]+)$"))]
        source: Query<Option<String>>,
        /// Every source but this one.
        #[oai(validator(pattern = r"^(api|dashboard|sdk:[^\u0000-\u001F\u007F-\u009F]+)$"))]
        exclude_source: Query<Option<String>>,
        /// Only this exact User-Agent.
        user_agent: Query<Option<String>>,
        /// 1 to 200 characters, case-insensitive, against the endpoint and the requested path.
        search: Query<Option<Search<200>>>,
        /// ISO 8601 instant, inclusive.
        start_date: Query<Option<Instant>>,
        /// ISO 8601 instant, inclusive.
        end_date: Query<Option<Instant>>,
    ) -> ApiResult<Json<LogList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let (start, end) = date_range(start_date.0, end_date.0, false)?;
        let filter = ListFilter {
            status: status.0,
            source: source.0.map(|s| source_name("source", s)).transpose()?,
            exclude_source: exclude_source.0.map(|s| source_name("exclude_source", s)).transpose()?,
            user_agent: user_agent.0,
            search: search_text(search.0)?,
            start,
            end,
        };
        let mut conn = state.pool.acquire().await?;
        let page = request_logs::list(&mut conn, caller.team_id, &filter, &page).await?;
        Ok(Json(LogList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(item).collect() }))
    }

    /// One log with its stored bodies. Another team's log is 404.
    #[oai(path = "/logs/:log_id", method = "get", operation_id = "get-log")]
    async fn get(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The log's id.
        log_id: Path<String>,
    ) -> ApiResult<Json<LogDetail>> {
        let id = path_id(&log_id.0, "Log")?;
        let mut conn = state.pool.acquire().await?;
        let mut log = request_logs::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Log"))?;
        let (path, request_body, response_body) = (std::mem::take(&mut log.path), log.request_body.take(), log.response_body.take());
        Ok(Json(LogDetail { item: item(log), path, request_body: request_body.into(), response_body: response_body.into() }))
    }
}

/// `api`, `dashboard` or `sdk:<name>`.
fn source_name(name: &str, raw: String) -> ApiResult<String> {
    let valid = raw == "api" || raw == "dashboard" || raw.strip_prefix("sdk:").is_some_and(|n| !n.is_empty());
    if valid { Ok(raw) } else { Err(ApiError::invalid_parameter(name, "must be `api`, `dashboard` or `sdk:<name>`")) }
}

fn item(log: RequestLog) -> LogItem {
    LogItem {
        object: "log".into(),
        id: log.id.to_string(),
        created_at: log.created_at,
        endpoint: log.endpoint,
        method: log.method,
        response_status: log.response_status,
        user_agent: log.user_agent,
        source: log.source,
        request_id: log.request_id,
        latency_ms: log.latency_ms,
        api_key_id: log.api_key_id.map(|id| id.to_string()).into(),
        email_id: log.email_id.map(|id| id.to_string()).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_calendar_date_is_not_an_instant() {
        assert_eq!(crate::http::paging::instant("start_date", "2026-11-21").unwrap_err().name, "invalid_parameter");
        assert!(crate::http::paging::instant("start_date", "2026-11-21T10:00:00Z").is_ok());
        assert!(crate::http::paging::instant("start_date", "2026-11-21T10:00:00+02:00").is_ok());
    }

    #[test]
    fn sources_are_api_dashboard_or_an_sdk() {
        assert!(source_name("source", "sdk:node".into()).is_ok());
        assert!(source_name("source", "sdk:".into()).is_err());
        assert!(source_name("source", "cli".into()).is_err());
    }
}
