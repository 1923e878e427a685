//! Topics (retired, not deleted, so names free up while old choices stay explained) and
//! contacts' topic choices.

use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A live topic.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Topic {
    pub id: Uuid,
    pub team_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub default_subscription: String,
    pub visibility: String,
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, team_id, name, description, default_subscription, visibility, created_at";

/// A new topic.
pub struct NewTopic<'a> {
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub default_subscription: &'a str,
    pub visibility: &'a str,
}

/// Inserts a topic; `None` when a live topic of the team has the name (any case).
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, topic: &NewTopic<'_>) -> sqlx::Result<Option<Topic>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO topics (id, team_id, name, description, default_subscription, visibility) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (team_id, lower(name)) WHERE deleted_at IS NULL DO NOTHING RETURNING {COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(topic.name)
    .bind(topic.description)
    .bind(topic.default_subscription)
    .bind(topic.visibility)
    .fetch_optional(conn)
    .await
}

/// One live topic of the team.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Topic>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM topics WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The team's live topics, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<Topic>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM topics WHERE deleted_at IS NULL AND team_id = "));
    query.push_bind(team_id);
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// What a topic update changes (`None` leaves a field alone; `description: Some(None)` clears).
pub struct Change<'a> {
    pub name: Option<&'a str>,
    pub description: Option<Option<&'a str>>,
    pub visibility: Option<&'a str>,
}

/// Applies a change; `None` when the topic is not the team's live one. A name another live
/// topic has fails with the database's unique violation.
pub async fn update(conn: &mut PgConnection, team_id: Uuid, id: Uuid, change: &Change<'_>) -> sqlx::Result<Option<Topic>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE topics SET name = COALESCE($3, name),
             description = CASE WHEN $4 THEN $5 ELSE description END,
             visibility = COALESCE($6, visibility)
         WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING {COLUMNS}"
    )))
    .bind(team_id)
    .bind(id)
    .bind(change.name)
    .bind(change.description.is_some())
    .bind(change.description.flatten())
    .bind(change.visibility)
    .fetch_optional(conn)
    .await
}

/// Retires a topic; whether it was the team's live one.
pub async fn retire(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE topics SET deleted_at = now() WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL")
        .bind(team_id)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A live topic with a contact's own choice, if any.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Choice {
    #[sqlx(flatten)]
    pub topic: Topic,
    pub own: Option<String>,
}

impl Choice {
    /// The subscription in effect: the contact's own choice, else the topic's default
    /// (`unsubscribed` is applied by callers).
    pub fn effective(&self) -> &str {
        self.own.as_deref().unwrap_or(&self.topic.default_subscription)
    }
}

/// Every live topic of the team with the contact's own choice.
pub async fn choices(conn: &mut PgConnection, team_id: Uuid, contact_id: Uuid) -> sqlx::Result<Vec<Choice>> {
    sqlx::query_as(
        "SELECT t.id, t.team_id, t.name, t.description, t.default_subscription, t.visibility, t.created_at, ct.subscription AS own
         FROM topics t LEFT JOIN contact_topics ct ON ct.topic_id = t.id AND ct.contact_id = $2
         WHERE t.team_id = $1 AND t.deleted_at IS NULL ORDER BY t.id",
    )
    .bind(team_id)
    .bind(contact_id)
    .fetch_all(conn)
    .await
}

/// The topics the contact opted out of.
pub async fn opted_out(conn: &mut PgConnection, contact_id: Uuid) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar("SELECT topic_id FROM contact_topics WHERE contact_id = $1 AND subscription = 'opt_out'").bind(contact_id).fetch_all(conn).await
}

/// Records a contact's choices (topic, `opt_in`/`opt_out`); answers the ones that changed. A
/// topic the contact is newly subscribed to starts the `svc:topic.subscribed` runs it triggers.
pub async fn choose(conn: &mut PgConnection, contact_id: Uuid, choices: &[(Uuid, String)]) -> sqlx::Result<Vec<(Uuid, String)>> {
    if choices.is_empty() {
        return Ok(Vec::new());
    }
    let topics: Vec<Uuid> = choices.iter().map(|(t, _)| *t).collect();
    let subscriptions: Vec<&str> = choices.iter().map(|(_, s)| s.as_str()).collect();
    sqlx::query_as(
        "WITH c AS (SELECT * FROM unnest($2::uuid[], $3::text[]) AS c(topic_id, subscription)),
         before AS (SELECT topic_id, subscription FROM contact_topics WHERE contact_id = $1),
         written AS (
             INSERT INTO contact_topics (contact_id, topic_id, subscription)
             SELECT $1, topic_id, subscription FROM c
             ON CONFLICT (contact_id, topic_id) DO UPDATE SET subscription = excluded.subscription, updated_at = now()
             RETURNING topic_id, subscription
         )
         , changed AS (
             SELECT w.topic_id, w.subscription, COALESCE(b.subscription, t.default_subscription) AS effective_before
             FROM written w LEFT JOIN before b ON b.topic_id = w.topic_id JOIN topics t ON t.id = w.topic_id
             WHERE b.subscription IS DISTINCT FROM w.subscription
         )
         , runs AS (
             INSERT INTO automation_runs (id, team_id, automation_id, version, contact_id, trigger_event, event_data)
             SELECT herald_uuid_v7(), a.team_id, a.id, a.current_version, $1, a.trigger_event,
                    jsonb_build_object('contact_id', $1::uuid, 'topic_id', ch.topic_id)
             FROM changed ch JOIN topics t ON t.id = ch.topic_id
             JOIN automations a ON a.team_id = t.team_id AND a.trigger_event = 'svc:topic.subscribed' AND a.status = 'enabled'
                  AND a.deleted_at IS NULL AND (a.trigger_topic_id IS NULL OR a.trigger_topic_id = ch.topic_id)
             WHERE ch.subscription = 'opt_in' AND ch.effective_before <> 'opt_in'
         )
         SELECT topic_id, subscription FROM changed",
    )
    .bind(contact_id)
    .bind(&topics)
    .bind(&subscriptions)
    .fetch_all(conn)
    .await
}

/// Which of these ids are the team's live topics.
pub async fn live_ids(conn: &mut PgConnection, team_id: Uuid, ids: &[Uuid]) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar("SELECT id FROM topics WHERE team_id = $1 AND id = ANY($2) AND deleted_at IS NULL")
        .bind(team_id)
        .bind(ids)
        .fetch_all(conn)
        .await
}
