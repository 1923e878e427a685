//! API keys: create (the token is shown once), list, rename, revoke.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::paging::{page_request, search_text};
use crate::http::fields::{IdText, Nullable, Search};
use crate::routes::{Deleted, Tag, Updated, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Enum, Object};
use schema::domain::DomainStatus;
use schema::model::{InboxAccess, KeyStatus, Permission};
use schema::store::api_keys::{self, ListFilter, NewApiKey, StatusFilter};
use serde::Deserialize;
use uuid::Uuid;

pub struct ApiKeysApi;

/// Longest key name.
const MAX_NAME: usize = 255;

/// Body of `POST /api-keys`.
#[derive(Object, Deserialize)]
pub struct CreateApiKey {
    /// Name of the key, up to 255 characters.
    #[oai(validator(min_length = 1, max_length = 255, pattern = r"\S"))]
    pub name: String,
    /// `full_access` (default) or `sending_access`; fixed at creation.
    pub permission: Option<Permission>,
    /// Pins a `sending_access` key to one verified domain; fixed at creation.
    pub domain_id: Option<IdText>,
    /// Inbox access; above `none` needs a team admin signed in to the dashboard: the request
    /// carries, besides the key, an admin's session cookie and its `X-CSRF-Token`.
    pub inbox_access: Option<InboxAccess>,
    /// Channels (up to 100 ids) the key's Inbox access is limited to; needs a signed-in team admin.
    #[oai(validator(max_items = 100))]
    pub inbox_channel_ids: Option<Vec<String>>,
}

/// The new key. The token is never shown again.
#[derive(Object)]
pub struct CreatedApiKey {
    /// The key's id.
    pub id: String,
    /// The bearer token, starting `rk_`.
    pub token: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// The key was created.
    #[oai(status = 201)]
    Created(Json<CreatedApiKey>),
}

/// Body of `PATCH /api-keys/{api_key_id}`.
#[derive(Object, Deserialize)]
pub struct UpdateApiKey {
    /// New name, up to 255 characters.
    #[oai(validator(min_length = 1, max_length = 255, pattern = r"\S"))]
    pub name: Option<String>,
    /// Lowering to `none` clears the channel limit; raising needs a signed-in team admin (the
    /// session cookie and `X-CSRF-Token` of an admin of the key's team on the same request).
    pub inbox_access: Option<InboxAccess>,
    /// Up to 100 channel ids; any change needs a signed-in team admin; null lifts the limit.
    #[oai(validator(max_items = 100))]
    #[serde(default)]
    pub inbox_channel_ids: MaybeUndefined<Vec<String>>,
    /// Not in the document: refused unless it equals the current value (clients in the wild repeat it).
    #[oai(skip)]
    pub permission: Option<Permission>,
    /// Not in the document: refused unless it equals the current value (clients in the wild repeat it).
    #[oai(skip)]
    #[serde(default)]
    pub domain_id: MaybeUndefined<String>,
}

/// An API key (never its token).
#[derive(Object)]
pub struct ApiKeyItem {
    /// The key's id.
    pub id: String,
    /// Name of the key.
    pub name: String,
    /// When the key was created.
    pub created_at: DateTime<Utc>,
    /// Last authenticated use, refreshed at most once a minute.
    pub last_used_at: Nullable<DateTime<Utc>>,
    /// What the key may reach.
    pub permission: Permission,
    /// The domain a `sending_access` key is pinned to.
    pub domain_id: Nullable<String>,
    /// Leading characters of the token.
    pub key_prefix: String,
    /// The key's lifecycle state.
    pub status: KeyStatus,
    /// The request log of the last use.
    pub last_used_request_log_id: Nullable<String>,
    /// The key's level of access to the support Inbox.
    pub inbox_access: InboxAccess,
    /// Channels the Inbox access is limited to; null means every open unrestricted channel.
    pub inbox_channel_ids: Nullable<Vec<String>>,
}

/// A page of API keys.
#[derive(Object)]
pub struct ApiKeyList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<ApiKeyItem>,
}

/// Which keys to list by status.
#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum StatusQuery {
    /// Every key that is not revoked, suspended ones included (default).
    Active,
    /// Revoked keys only.
    Revoked,
    /// Every key.
    All,
}

#[poem_openapi::OpenApi(tag = "Tag::ApiKeys")]
impl ApiKeysApi {
    /// Create an API key. The token is returned only in this response.
    #[oai(path = "/api-keys", method = "post", operation_id = "create-api-key")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateApiKey>) -> ApiResult<CreateResponse> {
        let body = body.0;
        let name = key_name(&body.name)?;
        let permission = body.permission.unwrap_or(Permission::FullAccess);
        let domain_id = match (&body.domain_id, permission) {
            (None, _) => None,
            (Some(_), Permission::FullAccess) => {
                return Err(ApiError::invalid_field("domain_id", "only a `sending_access` key can be pinned to a domain"));
            }
            (Some(raw), Permission::SendingAccess) => {
                Some(schema::ids::parse_id(raw).ok_or_else(|| ApiError::invalid_field("domain_id", "must be a domain id"))?)
            }
        };
        let inbox_access = body.inbox_access.unwrap_or(InboxAccess::None);
        if (inbox_access != InboxAccess::None || body.inbox_channel_ids.is_some()) && caller.signed_in_admin.is_none() {
            return Err(needs_admin());
        }
        let channels = body.inbox_channel_ids.as_deref().map(channel_ids).transpose()?;
        let token = schema::secret::mint("rk_");
        let id = schema::ids::new_id();
        let mut tx = state.pool.begin().await?;
        if let Some(domain_id) = domain_id {
            match schema::store::domains::status_for_share(&mut tx, caller.team_id, domain_id).await? {
                None => return Err(ApiError::not_found("Domain")),
                Some(DomainStatus::Verified) => {}
                Some(_) => return Err(ApiError::not_allowed("A key can only be pinned to a verified domain of the team.")),
            }
        }
        api_keys::insert(
            &mut tx,
            &NewApiKey {
                id,
                team_id: caller.team_id,
                name: &name,
                permission,
                domain_id,
                token_hash: &token.hash,
                key_prefix: &token.prefix,
                inbox_access,
                inbox_channel_ids: channels.as_deref(),
            },
        )
        .await?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(CreatedApiKey { id: id.to_string(), token: token.plaintext })))
    }

    /// List the team's API keys, newest first.
    #[oai(path = "/api-keys", method = "get", operation_id = "list-api-keys")]
    #[allow(clippy::too_many_arguments)]
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
        /// `active` (default), `revoked` or `all`.
        status: Query<Option<StatusQuery>>,
        /// 1 to 255 characters, a case-insensitive substring of the name; `%` and `_` match literally.
        search: Query<Option<Search<MAX_NAME>>>,
        /// Only keys with this permission.
        permission: Query<Option<Permission>>,
        /// Only keys with this Inbox access.
        inbox_access: Query<Option<InboxAccess>>,
    ) -> ApiResult<Json<ApiKeyList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let filter = ListFilter {
            status: match status.0.unwrap_or(StatusQuery::Active) {
                StatusQuery::Active => StatusFilter::Active,
                StatusQuery::Revoked => StatusFilter::Revoked,
                StatusQuery::All => StatusFilter::All,
            },
            search: search_text(search.0)?,
            permission: permission.0,
            inbox_access: inbox_access.0,
        };
        let mut conn = state.pool.acquire().await?;
        let page = api_keys::list(&mut conn, caller.team_id, &filter, &page).await?;
        Ok(Json(ApiKeyList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(item).collect() }))
    }

    /// Rename a key or lower its Inbox access. A revoked key is 404.
    #[oai(path = "/api-keys/:api_key_id", method = "patch", operation_id = "update-api-key")]
    async fn update(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The key's id.
        api_key_id: Path<String>,
        body: Body<UpdateApiKey>,
    ) -> ApiResult<Json<Updated>> {
        let body = body.0;
        let id = path_id(&api_key_id.0, "API key")?;
        let name = body.name.as_deref().map(key_name).transpose()?;
        let admin = caller.signed_in_admin.is_some();
        if !body.inbox_channel_ids.is_undefined() && !admin {
            return Err(needs_admin());
        }
        let channels = match &body.inbox_channel_ids {
            MaybeUndefined::Undefined => None,
            MaybeUndefined::Null => Some(None),
            MaybeUndefined::Value(ids) => Some(Some(channel_ids(ids)?)),
        };

        let mut tx = state.pool.begin().await?;
        let key = api_keys::get(&mut tx, caller.team_id, id)
            .await?
            .filter(|key| key.status != KeyStatus::Revoked)
            .ok_or_else(|| ApiError::not_found("API key"))?;
        if body.inbox_access.is_some_and(|access| access > key.inbox_access) && !admin {
            return Err(needs_admin());
        }
        if body.permission.is_some_and(|permission| permission != key.permission) {
            return Err(ApiError::invalid_field("permission", "is fixed at creation"));
        }
        let pinned = key.domain_id.map(|d| d.to_string());
        if !body.domain_id.is_undefined() && body.domain_id.as_opt_ref() != Some(pinned.as_ref()) {
            return Err(ApiError::invalid_field("domain_id", "is fixed at creation"));
        }
        api_keys::update(&mut tx, caller.team_id, id, name.as_deref(), body.inbox_access, channels.as_ref().map(|c| c.as_deref()))
            .await?
            .ok_or_else(|| ApiError::not_found("API key"))?;
        tx.commit().await?;
        // A lowered Inbox access holds on the next request in every process.
        crate::http::key_cache::settle(&state.pool).await?;
        Ok(Json(Updated { object: "api_key".into(), id: id.to_string() }))
    }

    /// Revoke a key. Its row is kept; it answers `403 restricted_api_key` from the next request.
    ///
    /// The revoke answers once every serving process has dropped the key, so the next request
    /// is refused whichever process serves it.
    #[oai(path = "/api-keys/:api_key_id", method = "delete", operation_id = "delete-api-key")]
    async fn delete(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// The key's id.
        api_key_id: Path<String>,
    ) -> ApiResult<Json<Deleted>> {
        let id = path_id(&api_key_id.0, "API key")?;
        let mut conn = state.pool.acquire().await?;
        if !api_keys::revoke(&mut conn, caller.team_id, id).await? {
            return Err(ApiError::not_found("API key"));
        }
        crate::http::key_cache::settle(&state.pool).await?;
        Ok(Json(Deleted { object: "api_key".into(), id: id.to_string(), deleted: true }))
    }
}

/// A key name: trimmed, 1 to 255 characters.
fn key_name(raw: &str) -> ApiResult<String> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(ApiError::invalid_field("name", "must not be blank"));
    }
    if name.chars().count() > MAX_NAME {
        return Err(ApiError::invalid_field("name", "must be at most 255 characters"));
    }
    Ok(name.to_string())
}

fn needs_admin() -> ApiError {
    ApiError::new(ErrorKind::InvalidPermission, "Raising Inbox access or changing its channels needs a signed-in team admin: send the request with the key and, \
         on the same request, an admin's dashboard session cookie and its `X-CSRF-Token`.",
    )
}

/// Inbox channel ids: up to 100 distinct ids (`422 validation_error` otherwise).
fn channel_ids(ids: &[String]) -> ApiResult<Vec<Uuid>> {
    if ids.len() > 100 {
        return Err(ApiError::refused_field("inbox_channel_ids", "at most 100 channels"));
    }
    let mut parsed = ids
        .iter()
        .map(|id| schema::ids::parse_id(id).ok_or_else(|| ApiError::refused_field("inbox_channel_ids", format!("{id:?} is not a channel id"))))
        .collect::<ApiResult<Vec<Uuid>>>()?;
    parsed.sort();
    parsed.dedup();
    Ok(parsed)
}

fn item(key: api_keys::ApiKey) -> ApiKeyItem {
    ApiKeyItem {
        id: key.id.to_string(),
        name: key.name,
        created_at: key.created_at,
        last_used_at: key.last_used_at.into(),
        permission: key.permission,
        domain_id: key.domain_id.map(|d| d.to_string()).into(),
        key_prefix: key.key_prefix,
        status: key.status,
        last_used_request_log_id: key.last_used_request_log_id.map(|d| d.to_string()).into(),
        inbox_access: key.inbox_access,
        inbox_channel_ids: key.inbox_channel_ids.map(|ids| ids.iter().map(Uuid::to_string).collect()).into(),
    }
}
