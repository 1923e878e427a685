//! API keys. Tokens are never stored, only their SHA-256.

use crate::model::{InboxAccess, KeyStatus, Permission};
use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A key about to be stored.
pub struct NewApiKey<'a> {
    pub id: Uuid,
    pub team_id: Uuid,
    pub name: &'a str,
    pub permission: Permission,
    pub domain_id: Option<Uuid>,
    pub token_hash: &'a [u8],
    pub key_prefix: &'a str,
    pub inbox_access: InboxAccess,
    /// Channels the Inbox access is limited to; `None` is no limit.
    pub inbox_channel_ids: Option<&'a [Uuid]>,
}

/// A key as listed (never its token).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApiKey {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub permission: Permission,
    pub domain_id: Option<Uuid>,
    pub key_prefix: String,
    pub status: KeyStatus,
    pub last_used_request_log_id: Option<Uuid>,
    pub inbox_access: InboxAccess,
    pub inbox_channel_ids: Option<Vec<Uuid>>,
}

/// Which keys a list shows by status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFilter {
    /// Every key that is not revoked (suspended included).
    Active,
    Revoked,
    All,
}

/// Filters of `GET /api-keys`.
pub struct ListFilter {
    pub status: StatusFilter,
    pub search: Option<String>,
    pub permission: Option<Permission>,
    pub inbox_access: Option<InboxAccess>,
}

const COLUMNS: &str = "id, name, created_at, last_used_at, permission, domain_id, key_prefix, status,
    last_used_request_log_id, inbox_access, inbox_channel_ids";

pub async fn insert(conn: &mut PgConnection, key: &NewApiKey<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO api_keys (id, team_id, name, permission, domain_id, token_hash, key_prefix, inbox_access, inbox_channel_ids)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(key.id)
    .bind(key.team_id)
    .bind(key.name)
    .bind(key.permission)
    .bind(key.domain_id)
    .bind(key.token_hash)
    .bind(key.key_prefix)
    .bind(key.inbox_access)
    .bind(key.inbox_channel_ids)
    .execute(conn)
    .await?;
    Ok(())
}

/// One key of the team, revoked or not.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<ApiKey>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM api_keys WHERE team_id = $1 AND id = $2")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

pub async fn list(
    conn: &mut PgConnection,
    team_id: Uuid,
    filter: &ListFilter,
    page: &PageRequest,
) -> sqlx::Result<Page<ApiKey>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM api_keys WHERE team_id = "));
    query.push_bind(team_id);
    match filter.status {
        StatusFilter::Active => {
            query.push(" AND status <> 'revoked'");
        }
        StatusFilter::Revoked => {
            query.push(" AND status = 'revoked'");
        }
        StatusFilter::All => {}
    }
    if let Some(search) = &filter.search {
        query.push(" AND name ILIKE ").push_bind(super::like_pattern(search));
    }
    if let Some(permission) = filter.permission {
        query.push(" AND permission = ").push_bind(permission);
    }
    if let Some(inbox_access) = filter.inbox_access {
        query.push(" AND inbox_access = ").push_bind(inbox_access);
    }
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// Changes a live key's name, Inbox access and channel limit (`channels`: `Some` sets the limit,
/// `Some(None)` lifts it; lowering the access to `none` clears it). `None` when the key is
/// missing, another team's, or revoked.
pub async fn update(
    conn: &mut PgConnection,
    team_id: Uuid,
    id: Uuid,
    name: Option<&str>,
    inbox_access: Option<InboxAccess>,
    channels: Option<Option<&[Uuid]>>,
) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar(
        "UPDATE api_keys SET
             name = COALESCE($3, name),
             inbox_access = COALESCE($4, inbox_access),
             inbox_channel_ids = CASE WHEN $4 = 'none' THEN NULL WHEN $5 THEN $6 ELSE inbox_channel_ids END
         WHERE team_id = $1 AND id = $2 AND status <> 'revoked'
         RETURNING id",
    )
    .bind(team_id)
    .bind(id)
    .bind(name)
    .bind(inbox_access)
    .bind(channels.is_some())
    .bind(channels.flatten())
    .fetch_optional(conn)
    .await
}

/// Revokes a live key, keeping the row. `false` when missing, another team's, or already revoked.
pub async fn revoke(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE api_keys SET status = 'revoked', revoked_at = now()
         WHERE team_id = $1 AND id = $2 AND status <> 'revoked'",
    )
    .bind(team_id)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Suspends or reinstates a key (operators).
pub async fn set_status(conn: &mut PgConnection, id: Uuid, status: KeyStatus) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE api_keys SET status = $2 WHERE id = $1")
        .bind(id)
        .bind(status)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// How many live (not revoked) keys are pinned to a domain.
pub async fn live_pinned_to(conn: &mut PgConnection, team_id: Uuid, domain_id: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM api_keys WHERE team_id = $1 AND domain_id = $2 AND status <> 'revoked'")
        .bind(team_id)
        .bind(domain_id)
        .fetch_one(conn)
        .await
}
