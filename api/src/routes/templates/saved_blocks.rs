//! Saved blocks (a block or a whole section kept for reuse) and the starter library. A block
//! document references a saved block as `{ "type": "saved", "saved_block_id" }` (a block) or
//! `{ "saved_block_id" }` (a section) and embeds a copy on save; editing the saved block
//! recompiles every template version that uses it, deleting it leaves the copies unchanged.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Bounded, Choice, Choices, IdText, Nullable, Required};
use crate::http::paging::{keyed_page_request, page_by_key, page_request};
use crate::routes::{Deleted, Tag, path_id};
use crate::state::{AppState, Caller};
use crate::routes::templates::content::{self, VariableType};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::saved_blocks::{self, SavedBlock};
use serde::Deserialize;
use serde_json::Value;

pub struct SavedBlocksApi;

crate::choices! {
    /// What a saved block holds: one `block` or a whole `section`.
    SavedKind = &["block", "section"];
}

/// Body of `POST /saved-blocks`.
#[derive(Object, Deserialize)]
pub struct CreateSavedBlock {
    /// 1 to 200 characters.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"\S"))]
    pub name: Required<String>,
    /// `block` (default) or `section`.
    pub kind: Option<Choice<SavedKind>>,
    /// The block (`{ type, ... }`) or section (`{ columns: [...] }`) as in a block document.
    pub content: Required<Value>,
}

/// Body of `PATCH /saved-blocks/{id}`: every template version using it is recompiled.
#[derive(Object, Deserialize)]
pub struct UpdateSavedBlock {
    /// 1 to 200 characters.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"\S"))]
    pub name: Option<String>,
    /// The new content, of the same kind.
    pub content: Option<Value>,
}

/// A saved block.
#[derive(Object)]
pub struct SavedBlockView {
    /// Always `saved_block`.
    pub object: String,
    /// The saved block's id.
    pub id: String,
    /// The saved block's name.
    pub name: String,
    /// Whether it holds one block or a whole section.
    pub kind: Choice<SavedKind>,
    /// The block (`{ type, ... }`) or section (`{ columns: [...] }`) as in a block document.
    pub content: Value,
    /// When the saved block was created.
    pub created_at: DateTime<Utc>,
    /// When the saved block was last renamed or changed.
    pub updated_at: DateTime<Utc>,
}

/// `{ object: "saved_block", id }`.
#[derive(Object)]
pub struct SavedBlockRef {
    /// Always `saved_block`.
    pub object: String,
    /// The saved block's id.
    pub id: String,
}

/// The answer of an update: how many template versions were recompiled.
#[derive(Object)]
pub struct SavedBlockUpdated {
    /// Always `saved_block`.
    pub object: String,
    /// The saved block's id.
    pub id: String,
    /// Template versions (published or draft) recompiled with the new content.
    pub recompiled_versions: i64,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Created.
    #[oai(status = 201)]
    Created(Json<SavedBlockRef>),
}

/// A page of saved blocks.
#[derive(Object)]
pub struct SavedBlockList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<SavedBlockView>,
}

/// A starter's declared variable.
#[derive(Object)]
pub struct StarterVariable {
    /// The placeholder key, used as `{{key}}`.
    pub key: String,
    /// The variable's type.
    #[oai(rename = "type")]
    pub kind: Choice<VariableType>,
    /// What a send that leaves the variable out gets, or `null` when there is none.
    pub fallback_value: Nullable<Value>,
}

/// A starter: a block document to begin a template from (`POST /templates` with `starter`).
#[derive(Object)]
pub struct StarterView {
    /// Always `starter`.
    pub object: String,
    /// The starter's identifier, such as `password-reset`: send it as `starter` to `POST /templates`.
    pub slug: String,
    /// The starter's display name.
    pub name: String,
    /// What the starter is for.
    pub description: String,
    /// The subject line, which may use the variables.
    pub subject: String,
    /// The `{{key}}` variables the subject and document use, exactly.
    pub variables: Vec<StarterVariable>,
    /// The block document.
    pub document: Value,
}

/// The starter library.
#[derive(Object)]
pub struct StarterList {
    /// Always `list`.
    pub object: String,
    /// Whether more starters follow this page.
    pub has_more: bool,
    /// The starters of the library.
    pub data: Vec<StarterView>,
}

#[poem_openapi::OpenApi(tag = "Tag::Templates")]
impl SavedBlocksApi {
    /// Save a block or a section for reuse in templates.
    #[oai(path = "/saved-blocks", method = "post", operation_id = "create-saved-block")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateSavedBlock>) -> ApiResult<CreateResponse> {
        let body = body.0;
        let name = check_name(body.name.0.as_deref().ok_or_else(|| ApiError::missing_field("name"))?)?;
        let content = body.content.0.ok_or_else(|| ApiError::missing_field("content"))?;
        let kind = body.kind.map_or_else(|| "block".to_string(), Choice::into_string);
        if !SavedKind::allows(&kind) {
            return Err(ApiError::invalid_field("kind", "must be block or section"));
        }
        let mut tx = state.pool.begin().await?;
        content::check_saved_block(&mut tx, caller.team_id, &kind, &content).await?;
        let saved = saved_blocks::insert(&mut tx, caller.team_id, &name, &kind, &content).await?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(SavedBlockRef { object: "saved_block".into(), id: saved.id.to_string() })))
    }

    /// List the team's saved blocks, newest first.
    #[oai(path = "/saved-blocks", method = "get", operation_id = "list-saved-blocks")]
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
    ) -> ApiResult<Json<SavedBlockList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let page = saved_blocks::list(&mut *state.pool.acquire().await?, caller.team_id, &page).await?;
        Ok(Json(SavedBlockList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(view).collect() }))
    }

    /// Retrieve a saved block.
    #[oai(path = "/saved-blocks/:saved_block_id", method = "get", operation_id = "get-saved-block")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, saved_block_id: Path<String>) -> ApiResult<Json<SavedBlockView>> {
        let id = path_id(&saved_block_id.0, "Saved block")?;
        let found = saved_blocks::get(&mut *state.pool.acquire().await?, caller.team_id, id, false).await?;
        Ok(Json(view(found.ok_or_else(|| ApiError::not_found("Saved block"))?)))
    }

    /// Rename a saved block or change its content; a content change recompiles every template
    /// version (published or draft) that uses it, in the same transaction.
    #[oai(path = "/saved-blocks/:saved_block_id", method = "patch", operation_id = "update-saved-block")]
    async fn update(&self, state: Data<&AppState>, caller: Data<&Caller>, saved_block_id: Path<String>, body: Body<UpdateSavedBlock>) -> ApiResult<Json<SavedBlockUpdated>> {
        let id = path_id(&saved_block_id.0, "Saved block")?;
        let body = body.0;
        let name = body.name.as_deref().map(check_name).transpose()?;
        let mut tx = state.pool.begin().await?;
        let current = saved_blocks::get(&mut tx, caller.team_id, id, true).await?.ok_or_else(|| ApiError::not_found("Saved block"))?;
        if let Some(content) = &body.content {
            content::check_saved_block(&mut tx, caller.team_id, &current.kind, content).await?;
        }
        saved_blocks::update(&mut tx, caller.team_id, id, name.as_deref(), body.content.as_ref()).await?;
        let recompiled = match body.content {
            Some(_) => content::recompile_users(&mut tx, caller.team_id, id).await?,
            None => 0,
        };
        tx.commit().await?;
        Ok(Json(SavedBlockUpdated { object: "saved_block".into(), id: id.to_string(), recompiled_versions: recompiled as i64 }))
    }

    /// Delete a saved block. Templates keep the copy they embed.
    #[oai(path = "/saved-blocks/:saved_block_id", method = "delete", operation_id = "delete-saved-block")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, saved_block_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let id = path_id(&saved_block_id.0, "Saved block")?;
        if !saved_blocks::delete(&mut *state.pool.acquire().await?, caller.team_id, id).await? {
            return Err(ApiError::not_found("Saved block"));
        }
        Ok(Json(Deleted { object: "saved_block".into(), id: id.to_string(), deleted: true }))
    }

    /// The starter library: block documents to begin a template from.
    #[oai(path = "/starters", method = "get", operation_id = "list-starters")]
    async fn starters(
        &self,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after the one with this slug, in the list's order.
        after: Query<Option<Bounded<1, 2048>>>,
        /// Return the items before the one with this slug, in the list's order.
        before: Query<Option<Bounded<1, 2048>>>,
    ) -> ApiResult<Json<StarterList>> {
        let page = keyed_page_request(limit.0, after.0.map(|k| k.0), before.0.map(|k| k.0))?;
        let starters = page_by_key(render::starters::all().iter().collect(), |s| s.slug.to_string(), &page)?;
        let data = starters
            .data
            .into_iter()
            .map(|s| StarterView {
                object: "starter".into(),
                slug: s.slug.into(),
                name: s.name.into(),
                description: s.description.into(),
                subject: s.subject.into(),
                variables: s
                    .variables
                    .iter()
                    .map(|v| StarterVariable { key: v.key.into(), kind: Choice::new(v.kind), fallback_value: Nullable(v.fallback.clone().filter(|f| !f.is_null())) })
                    .collect(),
                document: s.document.clone(),
            })
            .collect();
        Ok(Json(StarterList { object: "list".into(), has_more: starters.has_more, data }))
    }
}

fn check_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(ApiError::invalid_field("name", "must be 1 to 200 characters"));
    }
    Ok(name.to_string())
}

fn view(saved: SavedBlock) -> SavedBlockView {
    SavedBlockView {
        object: "saved_block".into(),
        id: saved.id.to_string(),
        name: saved.name,
        kind: Choice::new(saved.kind),
        content: saved.content,
        created_at: saved.created_at,
        updated_at: saved.updated_at,
    }
}
