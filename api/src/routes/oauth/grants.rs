//! The grants a team has given to OAuth clients: listed and revoked with a full-access key.

use crate::http::fields::IdText;
use crate::http::paging::{page_of, page_request};
use crate::http::error::{ApiError, ApiResult};
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::Object;
use schema::store::oauth;

pub struct GrantsApi;

#[poem_openapi::OpenApi(tag = "Tag::OAuth")]
impl GrantsApi {
    /// The team's live grants (a `full_access` key only; an OAuth token is refused whatever its
    /// scopes).
    #[oai(path = "/oauth/grants", method = "get", operation_id = "list-oauth-grants")]
    async fn grants(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<GrantList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let grants = page_of(oauth::grants(&mut *state.pool.acquire().await?, caller.team_id).await?, |g| g.id, &page)?;
        let has_more = grants.has_more;
        let data = grants
            .data
            .into_iter()
            .map(|g| GrantView {
                object: "oauth_grant".into(),
                id: g.id.to_string(),
                client_id: g.client_id,
                client_name: g.client_name,
                user_id: g.person_id.to_string(),
                user_email: g.email,
                scopes: g.scopes,
                created_at: g.created_at,
                updated_at: g.updated_at,
            })
            .collect();
        Ok(Json(GrantList { object: "list".into(), has_more, data }))
    }

    /// Revoke a grant: every token under it stops working on its next request.
    #[oai(path = "/oauth/grants/:grant_id", method = "delete", operation_id = "delete-oauth-grant")]
    async fn delete_grant(&self, state: Data<&AppState>, caller: Data<&Caller>, grant_id: Path<String>) -> ApiResult<Json<GrantDeleted>> {
        let id = crate::routes::path_id(&grant_id.0, "Grant")?;
        if !oauth::revoke_grant(&mut *state.pool.acquire().await?, caller.team_id, id).await? {
            return Err(ApiError::not_found("Grant"));
        }
        // Every process has dropped the grant's tokens before this answers.
        crate::http::key_cache::settle(&state.pool).await?;
        Ok(Json(GrantDeleted { object: "oauth_grant".into(), id: id.to_string(), deleted: true }))
    }
}

/// A grant: what a person allowed a client to do in the team.
#[derive(Object)]
pub struct GrantView {
    /// Always `oauth_grant`.
    pub object: String,
    /// The grant's id.
    pub id: String,
    /// The client's id (`rkoc_…`).
    pub client_id: String,
    /// The client's name, as shown on the consent page.
    pub client_name: String,
    /// The person whose access the client's tokens act with.
    pub user_id: String,
    /// The address of the person whose access the client's tokens act with.
    pub user_email: String,
    /// The scopes allowed.
    pub scopes: Vec<String>,
    /// When the person first allowed the client.
    pub created_at: DateTime<Utc>,
    /// When the grant last changed (a later consent adds its scopes).
    pub updated_at: DateTime<Utc>,
}

/// The team's live grants, newest first (the latest 500).
#[derive(Object)]
pub struct GrantList {
    /// Always `list`.
    pub object: String,
    /// Whether more grants follow this page.
    pub has_more: bool,
    /// The grants, newest first.
    pub data: Vec<GrantView>,
}

/// `{ object: 'oauth_grant', id, deleted: true }`.
#[derive(Object)]
pub struct GrantDeleted {
    /// Always `oauth_grant`.
    pub object: String,
    /// The grant's id.
    pub id: String,
    /// Always true.
    pub deleted: bool,
}
