//! Custom event definitions (soft-deleted, so names free up) and recorded event sends, which
//! enrol the contact in every enabled automation the event triggers in the same statement.

use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A live definition.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Definition {
    pub id: Uuid,
    pub name: String,
    pub schema: Option<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, name, schema, created_at, updated_at";

/// How a path names a definition.
#[derive(Debug, Clone)]
pub enum Key {
    Id(Uuid),
    Name(String),
}

/// Inserts a definition; `None` when a live one of the team holds the name.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, name: &str, schema: Option<&Value>) -> sqlx::Result<Option<Definition>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO event_definitions (id, team_id, name, schema) VALUES ($1, $2, $3, $4)
         ON CONFLICT (team_id, name) WHERE deleted_at IS NULL DO NOTHING RETURNING {COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(name)
    .bind(schema)
    .fetch_optional(conn)
    .await
}

fn push_key(query: &mut QueryBuilder<sqlx::Postgres>, key: &Key) {
    match key {
        Key::Id(id) => query.push(" AND id = ").push_bind(*id),
        Key::Name(name) => query.push(" AND name = ").push_bind(name.clone()),
    };
}

/// One live definition of the team.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, key: &Key) -> sqlx::Result<Option<Definition>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM event_definitions WHERE deleted_at IS NULL AND team_id = "));
    query.push_bind(team_id);
    push_key(&mut query, key);
    query.build_query_as().fetch_optional(conn).await
}

/// The team's live definitions, newest first; `search` matches names case-insensitively.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest, search: Option<&str>) -> sqlx::Result<Page<Definition>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM event_definitions WHERE deleted_at IS NULL AND team_id = "));
    query.push_bind(team_id);
    if let Some(search) = search {
        query.push(" AND name ILIKE ").push_bind(super::like_pattern(search));
    }
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// Replaces a definition's schema.
pub async fn set_schema(conn: &mut PgConnection, team_id: Uuid, key: &Key, schema: Option<&Value>) -> sqlx::Result<Option<Definition>> {
    let mut query = QueryBuilder::new("UPDATE event_definitions SET schema = ");
    query.push_bind(schema).push(", updated_at = now() WHERE deleted_at IS NULL AND team_id = ").push_bind(team_id);
    push_key(&mut query, key);
    query.push(format!(" RETURNING {COLUMNS}"));
    query.build_query_as().fetch_optional(conn).await
}

/// Deletes a definition (its name is free again); the id it had, if it was live.
pub async fn delete(conn: &mut PgConnection, team_id: Uuid, key: &Key) -> sqlx::Result<Option<Uuid>> {
    let mut query = QueryBuilder::new("UPDATE event_definitions SET deleted_at = now() WHERE deleted_at IS NULL AND team_id = ");
    query.push_bind(team_id);
    push_key(&mut query, key);
    query.push(" RETURNING id");
    query.build_query_scalar().fetch_optional(conn).await
}

/// What an event send needs, read in one statement: the live definition named `name` (id and
/// schema) and the contact (by id or address).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SendTarget {
    pub definition_id: Option<Uuid>,
    pub schema: Option<Value>,
    pub contact_id: Option<Uuid>,
}

pub async fn target(conn: &mut PgConnection, team_id: Uuid, name: &str, contact: &super::contacts::Key) -> sqlx::Result<SendTarget> {
    let (id, email) = match contact {
        super::contacts::Key::Id(id) => (Some(*id), None),
        super::contacts::Key::Email(email) => (None, Some(email.as_str())),
    };
    sqlx::query_as(
        "SELECT d.id AS definition_id, d.schema,
                (SELECT c.id FROM contacts c WHERE c.team_id = $1 AND (c.id = $3 OR c.email = $4)) AS contact_id
         FROM (SELECT 1) AS one LEFT JOIN event_definitions d ON d.team_id = $1 AND d.name = $2 AND d.deleted_at IS NULL",
    )
    .bind(team_id)
    .bind(name)
    .bind(id)
    .bind(email)
    .fetch_one(conn)
    .await
}

/// An event send as recorded, and the runs it started.
#[derive(Debug, Clone)]
pub struct Fired {
    pub event_id: Uuid,
    /// `(run id, automation id)`.
    pub runs: Vec<(Uuid, Uuid)>,
}

/// Records an event send and starts one run of every enabled automation it triggers, in one
/// statement.
pub async fn fire(conn: &mut PgConnection, team_id: Uuid, definition_id: Uuid, name: &str, contact_id: Uuid, payload: &Value) -> sqlx::Result<Fired> {
    let event_id = crate::ids::new_id();
    let runs: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "WITH ev AS (
             INSERT INTO custom_events (id, team_id, definition_id, name, contact_id, payload) VALUES ($1, $2, $3, $4, $5, $6)
         )
         INSERT INTO automation_runs (id, team_id, automation_id, version, contact_id, trigger_event, event_id, event_data)
         SELECT herald_uuid_v7(), a.team_id, a.id, a.current_version, $5, $4, $1, $6
         FROM automations a WHERE a.team_id = $2 AND a.trigger_event = $4 AND a.status = 'enabled' AND a.deleted_at IS NULL
         RETURNING id, automation_id",
    )
    .bind(event_id)
    .bind(team_id)
    .bind(definition_id)
    .bind(name)
    .bind(contact_id)
    .bind(payload)
    .fetch_all(conn)
    .await?;
    Ok(Fired { event_id, runs })
}

/// Which of these names are the team's live definitions.
pub async fn live_names(conn: &mut PgConnection, team_id: Uuid, names: &[String]) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT name FROM event_definitions WHERE team_id = $1 AND name = ANY($2) AND deleted_at IS NULL")
        .bind(team_id)
        .bind(names)
        .fetch_all(conn)
        .await
}
