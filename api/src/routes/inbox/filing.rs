//! Inbox labels (team-wide or one channel's) and folders (one channel's, nesting by parent;
//! a parent in another channel, or a move under itself, is refused).

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Nullable;
use crate::routes::inbox::actor::Actor;
use crate::routes::{Deleted, Tag, path_id};
use crate::state::{AppState, Caller};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Object};
use schema::store::inbox_filing::{self, Folder, Label};
use serde::Deserialize;
use uuid::Uuid;

pub struct InboxFilingApi;

/// Body of `POST /inbox/labels`.
#[derive(Object, Deserialize)]
pub struct CreateInboxLabel {
    /// 1 to 50 characters on one line.
    #[oai(validator(min_length = 1, max_length = 50, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"))]
    pub name: String,
    /// `#rrggbb` (default `#6b7280`).
    #[oai(validator(pattern = "^#[0-9a-fA-F]{6}$"))]
    pub colour: Option<String>,
    /// The channel the label belongs to; leave it out for a team-wide label.
    pub channel_id: Option<String>,
}

/// Body of `PATCH /inbox/labels/{label_id}`.
#[derive(Object, Deserialize)]
pub struct UpdateInboxLabel {
    /// 1 to 50 characters on one line.
    #[oai(validator(min_length = 1, max_length = 50, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"))]
    pub name: Option<String>,
    /// `#rrggbb`.
    #[oai(validator(pattern = "^#[0-9a-fA-F]{6}$"))]
    pub colour: Option<String>,
}

/// Body of `POST /inbox/folders`.
#[derive(Object, Deserialize)]
pub struct CreateInboxFolder {
    /// 1 to 100 characters on one line.
    #[oai(validator(min_length = 1, max_length = 100, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"))]
    pub name: String,
    /// The channel the folder files conversations of.
    pub channel_id: String,
    /// The folder it nests in (of the same channel), if any.
    pub parent_id: Option<String>,
}

/// Body of `PATCH /inbox/folders/{folder_id}`.
#[derive(Object, Deserialize)]
pub struct UpdateInboxFolder {
    /// 1 to 100 characters on one line.
    #[oai(validator(min_length = 1, max_length = 100, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"))]
    pub name: Option<String>,
    /// The folder it nests in (of the same channel, not itself or one under it); `null` makes it
    /// top-level.
    #[serde(default)]
    pub parent_id: MaybeUndefined<String>,
}

/// A label.
#[derive(Object)]
pub struct InboxLabel {
    /// Always `inbox_label`.
    pub object: String,
    /// The label's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its colour, `#rrggbb`.
    pub colour: String,
    /// Its channel, or `null` for a team-wide label.
    pub channel_id: Nullable<String>,
}

/// A folder.
#[derive(Object)]
pub struct InboxFolder {
    /// Always `inbox_folder`.
    pub object: String,
    /// The folder's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The folder it nests in, or `null`.
    pub parent_id: Nullable<String>,
    /// Its channel.
    pub channel_id: String,
}

/// The labels the caller sees.
#[derive(Object)]
pub struct InboxLabelList {
    /// Always `list`.
    pub object: String,
    /// Always false: every label is listed.
    pub has_more: bool,
    /// The labels, oldest first.
    pub data: Vec<InboxLabel>,
}

/// The folders the caller sees.
#[derive(Object)]
pub struct InboxFolderList {
    /// Always `list`.
    pub object: String,
    /// Always false: every folder is listed.
    pub has_more: bool,
    /// The folders, oldest first.
    pub data: Vec<InboxFolder>,
}

#[derive(ApiResponse)]
pub enum LabelCreated {
    /// Created.
    #[oai(status = 201)]
    Created(Json<InboxLabel>),
}

#[derive(ApiResponse)]
pub enum FolderCreated {
    /// Created.
    #[oai(status = 201)]
    Created(Json<InboxFolder>),
}

#[poem_openapi::OpenApi(tag = "Tag::Inbox")]
impl InboxFilingApi {
    /// The team-wide labels and those of the channels the caller reaches.
    #[oai(path = "/inbox/labels", method = "get", operation_id = "list-inbox-labels")]
    async fn labels(&self, state: Data<&AppState>, caller: Data<&Caller>) -> ApiResult<Json<InboxLabelList>> {
        let mut conn = state.pool.acquire().await?;
        let actor = Actor::of(&mut conn, &caller).await?;
        let labels = inbox_filing::labels(&mut conn, actor.team_id, &actor.reach, None).await?;
        Ok(Json(InboxLabelList { object: "list".into(), has_more: false, data: labels.into_iter().map(label_view).collect() }))
    }

    /// Add a label, team-wide or to a channel the caller reaches (access `write`).
    #[oai(path = "/inbox/labels", method = "post", operation_id = "create-inbox-label")]
    async fn create_label(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateInboxLabel>) -> ApiResult<LabelCreated> {
        let body = body.0;
        let name = one_line("name", &body.name, 50)?;
        let colour = colour(body.colour.as_deref())?.unwrap_or("#6b7280");
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let channel_id = match body.channel_id.as_deref() {
            Some(raw) => Some(actor.channel(&mut tx, raw).await?.ok_or_else(|| ApiError::not_found("Channel"))?.id),
            None => None,
        };
        let label = inbox_filing::add_label(&mut tx, actor.team_id, channel_id, &name, colour).await?;
        tx.commit().await?;
        Ok(LabelCreated::Created(Json(label_view(label))))
    }

    /// Rename or recolour a label (access `write`).
    #[oai(path = "/inbox/labels/:label_id", method = "patch", operation_id = "update-inbox-label")]
    async fn update_label(&self, state: Data<&AppState>, caller: Data<&Caller>, label_id: Path<String>, body: Body<UpdateInboxLabel>) -> ApiResult<Json<InboxLabel>> {
        let id = path_id(&label_id.0, "Label")?;
        let body = body.0;
        let name = body.name.as_deref().map(|n| one_line("name", n, 50)).transpose()?;
        let colour = colour(body.colour.as_deref())?;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let found = inbox_filing::labels(&mut tx, actor.team_id, &actor.reach, Some(id)).await?.into_iter().next().ok_or_else(|| ApiError::not_found("Label"))?;
        let label = inbox_filing::change_label(&mut tx, found.id, name.as_deref(), colour).await?;
        tx.commit().await?;
        Ok(Json(label_view(label)))
    }

    /// Delete a label; conversations lose it (access `write`).
    #[oai(path = "/inbox/labels/:label_id", method = "delete", operation_id = "delete-inbox-label")]
    async fn delete_label(&self, state: Data<&AppState>, caller: Data<&Caller>, label_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let id = path_id(&label_id.0, "Label")?;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let found = inbox_filing::labels(&mut tx, actor.team_id, &actor.reach, Some(id)).await?.into_iter().next().ok_or_else(|| ApiError::not_found("Label"))?;
        inbox_filing::delete_label(&mut tx, found.id).await?;
        tx.commit().await?;
        Ok(Json(Deleted { object: "inbox_label".into(), id: id.to_string(), deleted: true }))
    }

    /// The folders of the channels the caller reaches.
    #[oai(path = "/inbox/folders", method = "get", operation_id = "list-inbox-folders")]
    async fn folders(&self, state: Data<&AppState>, caller: Data<&Caller>) -> ApiResult<Json<InboxFolderList>> {
        let mut conn = state.pool.acquire().await?;
        let actor = Actor::of(&mut conn, &caller).await?;
        let folders = inbox_filing::folders(&mut conn, actor.team_id, &actor.reach, None).await?;
        Ok(Json(InboxFolderList { object: "list".into(), has_more: false, data: folders.into_iter().map(folder_view).collect() }))
    }

    /// Add a folder to a channel the caller reaches, top-level or under one of the channel's
    /// folders (access `write`); a parent of another channel is `422 invalid_parameter`.
    #[oai(path = "/inbox/folders", method = "post", operation_id = "create-inbox-folder")]
    async fn create_folder(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateInboxFolder>) -> ApiResult<FolderCreated> {
        let body = body.0;
        let name = one_line("name", &body.name, 100)?;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let channel = actor.channel(&mut tx, &body.channel_id).await?.ok_or_else(|| ApiError::not_found("Channel"))?;
        let parent = match body.parent_id.as_deref() {
            Some(raw) => Some(parent_in(&mut tx, &actor, channel.id, raw).await?),
            None => None,
        };
        let folder = inbox_filing::add_folder(&mut tx, actor.team_id, channel.id, parent, &name).await?;
        tx.commit().await?;
        Ok(FolderCreated::Created(Json(folder_view(folder))))
    }

    /// Rename a folder or move it under another of its channel's folders (access `write`); a
    /// move under itself or one of its own folders is `422 invalid_parameter`.
    #[oai(path = "/inbox/folders/:folder_id", method = "patch", operation_id = "update-inbox-folder")]
    async fn update_folder(&self, state: Data<&AppState>, caller: Data<&Caller>, folder_id: Path<String>, body: Body<UpdateInboxFolder>) -> ApiResult<Json<InboxFolder>> {
        let id = path_id(&folder_id.0, "Folder")?;
        let body = body.0;
        let name = body.name.as_deref().map(|n| one_line("name", n, 100)).transpose()?;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let found = inbox_filing::folders(&mut tx, actor.team_id, &actor.reach, Some(id)).await?.into_iter().next().ok_or_else(|| ApiError::not_found("Folder"))?;
        let parent = match &body.parent_id {
            MaybeUndefined::Undefined => None,
            MaybeUndefined::Null => Some(None),
            MaybeUndefined::Value(raw) => {
                let parent = parent_in(&mut tx, &actor, found.channel_id, raw).await?;
                if inbox_filing::is_within(&mut tx, parent, found.id).await? {
                    return Err(ApiError::invalid_parameter("parent_id", "a folder cannot nest in itself or in a folder under it"));
                }
                Some(Some(parent))
            }
        };
        let folder = inbox_filing::change_folder(&mut tx, found.id, name.as_deref(), parent).await?;
        tx.commit().await?;
        Ok(Json(folder_view(folder)))
    }

    /// Delete a folder and the folders under it; their conversations leave them (access
    /// `write`).
    #[oai(path = "/inbox/folders/:folder_id", method = "delete", operation_id = "delete-inbox-folder")]
    async fn delete_folder(&self, state: Data<&AppState>, caller: Data<&Caller>, folder_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let id = path_id(&folder_id.0, "Folder")?;
        let mut tx = state.pool.begin().await?;
        let actor = Actor::of(&mut tx, &caller).await?;
        let found = inbox_filing::folders(&mut tx, actor.team_id, &actor.reach, Some(id)).await?.into_iter().next().ok_or_else(|| ApiError::not_found("Folder"))?;
        inbox_filing::delete_folder(&mut tx, found.id).await?;
        tx.commit().await?;
        Ok(Json(Deleted { object: "inbox_folder".into(), id: id.to_string(), deleted: true }))
    }
}

/// A folder of `channel_id` the actor reaches, named as a parent.
async fn parent_in(conn: &mut sqlx::PgConnection, actor: &Actor, channel_id: Uuid, raw: &str) -> ApiResult<Uuid> {
    let id = schema::ids::parse_id(raw).ok_or_else(|| ApiError::invalid_parameter("parent_id", "must be a folder's id"))?;
    let parent = inbox_filing::folders(conn, actor.team_id, &actor.reach, Some(id)).await?.into_iter().next();
    match parent {
        Some(parent) if parent.channel_id == channel_id => Ok(parent.id),
        _ => Err(ApiError::invalid_parameter("parent_id", "must be a folder of the same channel")),
    }
}

fn one_line(path: &str, raw: &str, max: usize) -> ApiResult<String> {
    crate::http::input::one_line(raw, max).ok_or_else(|| ApiError::invalid_field(path, format!("must be 1 to {max} characters on one line")))
}

fn colour(raw: Option<&str>) -> ApiResult<Option<&str>> {
    match raw {
        Some(c) if !(c.len() == 7 && c.starts_with('#') && c[1..].chars().all(|h| h.is_ascii_hexdigit())) => Err(ApiError::invalid_field("colour", "must be #rrggbb")),
        other => Ok(other),
    }
}

fn label_view(label: Label) -> InboxLabel {
    InboxLabel { object: "inbox_label".into(), id: label.id.to_string(), name: label.name, colour: label.colour, channel_id: label.channel_id.map(|id| id.to_string()).into() }
}

fn folder_view(folder: Folder) -> InboxFolder {
    InboxFolder { object: "inbox_folder".into(), id: folder.id.to_string(), name: folder.name, parent_id: folder.parent_id.map(|id| id.to_string()).into(), channel_id: folder.channel_id.to_string() }
}
