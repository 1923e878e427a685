//! Topics, and each contact's topic choices (its own choice, else the topic's default;
//! `unsubscribed` overrides every topic). Every choice writes a consent record.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::paging::{page_of, page_request};
use crate::http::fields::{Choice, Choices, IdText, Nullable};
use crate::routes::audience::refs::{contact_key};
use crate::routes::audience::consent::Origin;
use crate::routes::{Deleted, Tag, Updated, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Object};
use schema::store::automations::SegmentWatch;
use schema::store::contacts::{self};
use schema::store::topics::{self, NewTopic, Topic};
use serde::Deserialize;
use crate::routes::audience::consent::{OptOuts, TopicChoice, apply_choices};
use crate::routes::audience::consent::{Subscription};

pub struct TopicsApi;

crate::choices! {
    /// `public` (listed on every contact's preference page) or `private`.
    Visibility = &["public", "private"];
}

/// Body of `POST /topics`.
#[derive(Object, Deserialize)]
pub struct CreateTopic {
    /// Up to 50 characters, unique among the team's live topics.
    #[oai(validator(min_length = 1, max_length = 50, pattern = r"\S"))]
    pub name: String,
    /// `opt_in` or `opt_out`; fixed at creation.
    pub default_subscription: Choice<Subscription>,
    /// Up to 200 characters.
    #[oai(validator(max_length = 200))]
    pub description: Option<String>,
    /// `public` (listed on every contact's preference page) or `private` (default).
    pub visibility: Option<Choice<Visibility>>,
}

/// Body of `PATCH /topics/{id}`.
#[derive(Object, Deserialize)]
pub struct UpdateTopic {
    /// Up to 50 characters, unique among the team's live topics.
    #[oai(validator(min_length = 1, max_length = 50, pattern = r"\S"))]
    pub name: Option<String>,
    /// Up to 200 characters; `null` clears it.
    #[serde(default)]
    #[oai(validator(max_length = 200))]
    pub description: MaybeUndefined<String>,
    /// `public` (listed on every contact's preference page) or `private`.
    pub visibility: Option<Choice<Visibility>>,
    /// Not in the document: fixed at creation, so sending it is `422 invalid_parameter`.
    #[oai(skip)]
    pub default_subscription: Option<serde_json::Value>,
}

/// `{ object: "topic", id }`.
#[derive(Object)]
pub struct TopicRef {
    /// Always `topic`.
    pub object: String,
    /// The topic's id.
    pub id: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Created.
    #[oai(status = 201)]
    Created(Json<TopicRef>),
}

/// A topic.
#[derive(Object)]
pub struct TopicView {
    /// Always `topic`.
    pub object: String,
    /// The topic's id.
    pub id: String,
    /// The topic's name, unique among the team's live topics.
    pub name: String,
    /// The topic's description, or `null` when it has none.
    pub description: Nullable<String>,
    /// The subscription of a contact who has not chosen; fixed at creation.
    pub default_subscription: Choice<Subscription>,
    /// Whether the topic is listed on every contact's preference page.
    pub visibility: Choice<Visibility>,
    /// When the topic was created.
    pub created_at: DateTime<Utc>,
}

/// A page of topics.
#[derive(Object)]
pub struct TopicList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<TopicView>,
}

/// A topic and a contact's effective subscription to it.
#[derive(Object)]
pub struct ContactTopic {
    /// The topic's id.
    pub id: String,
    /// The topic's name.
    pub name: String,
    /// The topic's description, or `null` when it has none.
    pub description: Nullable<String>,
    /// The effective subscription: the contact's own choice, else the topic's default;
    /// `opt_out` for every topic while the contact is unsubscribed.
    pub subscription: Choice<Subscription>,
    /// When the topic was created (as the Resend SDKs read it).
    pub created_at: DateTime<Utc>,
}

/// A contact's topics.
#[derive(Object)]
pub struct ContactTopicList {
    /// Always `list`.
    pub object: String,
    /// Whether more topics follow this page.
    pub has_more: bool,
    /// Every live topic of the team, with the contact's subscription.
    pub data: Vec<ContactTopic>,
}

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl TopicsApi {
    /// Create a topic. A live topic with the same name is `422 invalid_parameter`.
    #[oai(path = "/topics", method = "post", operation_id = "create-topic")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateTopic>) -> ApiResult<CreateResponse> {
        let body = body.0;
        check_name(&body.name)?;
        check_description(body.description.as_deref())?;
        if !Subscription::allows(&body.default_subscription) {
            return Err(ApiError::invalid_field("default_subscription", "must be opt_in or opt_out"));
        }
        let visibility = body.visibility.unwrap_or_else(|| "private".into());
        check_visibility(&visibility)?;
        let new = NewTopic {
            name: body.name.trim(),
            description: body.description.as_deref(),
            default_subscription: &body.default_subscription,
            visibility: &visibility,
        };
        let created = topics::insert(&mut *state.pool.acquire().await?, caller.team_id, &new).await?;
        let created = created.ok_or_else(name_taken)?;
        Ok(CreateResponse::Created(Json(TopicRef { object: "topic".into(), id: created.id.to_string() })))
    }

    /// List the team's topics, newest first.
    #[oai(path = "/topics", method = "get", operation_id = "list-topics")]
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
    ) -> ApiResult<Json<TopicList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let page = topics::list(&mut *state.pool.acquire().await?, caller.team_id, &page).await?;
        Ok(Json(TopicList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(view).collect() }))
    }

    /// Retrieve a topic.
    #[oai(path = "/topics/:topic_id", method = "get", operation_id = "get-topic")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, topic_id: Path<String>) -> ApiResult<Json<TopicView>> {
        let id = path_id(&topic_id.0, "Topic")?;
        let found = topics::get(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
        Ok(Json(view(found.ok_or_else(|| ApiError::not_found("Topic"))?)))
    }

    /// Rename a topic or change its description or visibility (`default_subscription` is fixed).
    #[oai(path = "/topics/:topic_id", method = "patch", operation_id = "update-topic")]
    async fn update(&self, state: Data<&AppState>, caller: Data<&Caller>, topic_id: Path<String>, body: Body<UpdateTopic>) -> ApiResult<Json<Updated>> {
        let id = path_id(&topic_id.0, "Topic")?;
        let body = body.0;
        if body.default_subscription.is_some() {
            return Err(ApiError::invalid_parameter("default_subscription", "is fixed at creation"));
        }
        if let Some(name) = &body.name {
            check_name(name)?;
        }
        if let Some(visibility) = &body.visibility {
            check_visibility(visibility)?;
        }
        let description = match &body.description {
            MaybeUndefined::Undefined => None,
            MaybeUndefined::Null => Some(None),
            MaybeUndefined::Value(text) => {
                check_description(Some(text))?;
                Some(Some(text.as_str()))
            }
        };
        let change = topics::Change { name: body.name.as_deref().map(str::trim), description, visibility: body.visibility.as_deref() };
        let updated = match topics::update(&mut *state.pool.acquire().await?, caller.team_id, id, &change).await {
            Err(error) if error.as_database_error().is_some_and(|e| e.is_unique_violation()) => return Err(name_taken()),
            other => other?,
        };
        let updated = updated.ok_or_else(|| ApiError::not_found("Topic"))?;
        Ok(Json(Updated { object: "topic".into(), id: updated.id.to_string() }))
    }

    /// Retire a topic: it answers 404 from then on and its name is free again.
    #[oai(path = "/topics/:topic_id", method = "delete", operation_id = "delete-topic")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, topic_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let id = path_id(&topic_id.0, "Topic")?;
        if !topics::retire(&mut *state.pool.acquire().await?, caller.team_id, id).await? {
            return Err(ApiError::not_found("Topic"));
        }
        Ok(Json(Deleted { object: "topic".into(), id: id.to_string(), deleted: true }))
    }

    /// A contact's effective subscription to every live topic.
    #[oai(path = "/contacts/:contact/topics", method = "get", operation_id = "list-contact-topics")]
    async fn contact_topics(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        contact: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<ContactTopicList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let mut conn = state.pool.acquire().await?;
        let contact = contacts::find(&mut conn, caller.team_id, &contact_key(&contact.0)?, false).await?;
        let contact = contact.ok_or_else(|| ApiError::not_found("Contact"))?;
        let choices = page_of(topics::choices(&mut conn, caller.team_id, contact.id).await?, |c| c.topic.id, &page)?;
        let data = choices
            .data
            .into_iter()
            .map(|choice| ContactTopic {
                id: choice.topic.id.to_string(),
                subscription: if contact.unsubscribed { "opt_out" } else { choice.effective() }.into(),
                name: choice.topic.name,
                description: choice.topic.description.into(),
                created_at: choice.topic.created_at,
            })
            .collect();
        Ok(Json(ContactTopicList { object: "list".into(), has_more: choices.has_more, data }))
    }

    /// Record a contact's topic choices (a bare array of `{ id, subscription }`); each change
    /// writes a consent record and starts the `svc:segment.entered` runs of the segments the
    /// contact enters. Not a `contact.updated` event.
    #[oai(path = "/contacts/:contact/topics", method = "patch", operation_id = "update-contact-topics")]
    async fn update_contact_topics(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        contact: Path<String>,
        body: Body<Vec<TopicChoice>>,
    ) -> ApiResult<Json<Updated>> {
        let key = contact_key(&contact.0)?;
        let mut tx = state.pool.begin().await?;
        let contact = contacts::find(&mut tx, caller.team_id, &key, true).await?.ok_or_else(|| ApiError::not_found("Contact"))?;
        let watch = SegmentWatch::before(&mut tx, caller.team_id, Some(contact.id)).await?;
        apply_choices(&mut tx, &contact, &body.0, "topics", &Origin::api(), OptOuts::Changeable).await?;
        if let Some(watch) = watch {
            watch.enrol_entered(&mut tx, contact.id).await?;
        }
        tx.commit().await?;
        Ok(Json(Updated { object: "contact".into(), id: contact.id.to_string() }))
    }
}

fn name_taken() -> ApiError {
    ApiError::invalid_parameter("name", "a live topic already has this name")
}

fn check_name(name: &str) -> ApiResult<()> {
    let length = name.trim().chars().count();
    if length == 0 || length > 50 {
        return Err(ApiError::invalid_field("name", "must be 1 to 50 characters"));
    }
    Ok(())
}

fn check_description(description: Option<&str>) -> ApiResult<()> {
    if description.is_some_and(|d| d.chars().count() > 200) {
        return Err(ApiError::invalid_field("description", "must be at most 200 characters"));
    }
    Ok(())
}

fn check_visibility(visibility: &str) -> ApiResult<()> {
    if !Visibility::allows(visibility) {
        return Err(ApiError::invalid_field("visibility", "must be public or private"));
    }
    Ok(())
}

fn view(topic: Topic) -> TopicView {
    TopicView {
        object: "topic".into(),
        id: topic.id.to_string(),
        name: topic.name,
        description: topic.description.into(),
        default_subscription: topic.default_subscription.into(),
        visibility: topic.visibility.into(),
        created_at: topic.created_at,
    }
}
