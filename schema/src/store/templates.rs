//! Templates and their versions. A template's newest version is its current one: an open draft
//! (edited in place) or its published version (never edited: an update opens the next draft).
//! Deleted templates keep their rows, because sent emails name their versions, but free their
//! alias.

use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A live template with its current version's content.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Template {
    pub id: Uuid,
    pub name: String,
    pub alias: Option<String>,
    pub current_version: i32,
    pub published_version: Option<i32>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[sqlx(flatten)]
    pub content: Content,
    pub published_at: Option<DateTime<Utc>>,
}

/// One version as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Version {
    pub version: i32,
    #[sqlx(flatten)]
    pub content: Content,
    pub published_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The versioned content of a template.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct Content {
    pub from_address: Option<String>,
    pub subject: Option<String>,
    pub reply_to: Option<Vec<String>>,
    pub html: Option<String>,
    pub text: Option<String>,
    /// `[{ key, type, fallback_value }]`.
    pub variables: Value,
    /// The block document of a visual template.
    pub document: Option<Value>,
    pub brand_overrides: Option<Value>,
    /// The renderer's compiled form.
    pub compiled: Value,
    pub saved_block_ids: Vec<Uuid>,
}

const CONTENT: &str = "v.from_address, v.subject, v.reply_to, v.html, v.text, v.variables, v.document, v.brand_overrides, v.compiled, v.saved_block_ids";

fn template_select() -> String {
    format!(
        "SELECT t.id, t.name, t.alias, t.current_version, t.published_version, t.created_at, t.updated_at, {CONTENT}, v.published_at
         FROM templates t JOIN template_versions v ON v.template_id = t.id AND v.version = t.current_version
         WHERE t.deleted_at IS NULL AND t.team_id = "
    )
}

/// How a path names a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Id(Uuid),
    Alias(String),
}

impl Key {
    /// An id when the text is one, else an alias.
    pub fn parse(text: &str) -> Key {
        match crate::ids::parse_id(text) {
            Some(id) => Key::Id(id),
            None => Key::Alias(text.to_string()),
        }
    }
}

/// Inserts a template with its draft version 1; `None` when a live template of the team holds
/// the alias.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, name: &str, alias: Option<&str>, content: &Content) -> sqlx::Result<Option<Uuid>> {
    let id = crate::ids::new_id();
    let inserted = sqlx::query(
        "INSERT INTO templates (id, team_id, name, alias) VALUES ($1, $2, $3, $4)
         ON CONFLICT (team_id, alias) WHERE deleted_at IS NULL AND alias IS NOT NULL DO NOTHING",
    )
    .bind(id)
    .bind(team_id)
    .bind(name)
    .bind(alias)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 0 {
        return Ok(None);
    }
    insert_version(conn, team_id, id, 1, content).await?;
    Ok(Some(id))
}

async fn insert_version(conn: &mut PgConnection, team_id: Uuid, id: Uuid, version: i32, c: &Content) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO template_versions (template_id, version, team_id, from_address, subject, reply_to, html, text, variables,
             document, brand_overrides, compiled, saved_block_ids)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(id)
    .bind(version)
    .bind(team_id)
    .bind(&c.from_address)
    .bind(&c.subject)
    .bind(&c.reply_to)
    .bind(&c.html)
    .bind(&c.text)
    .bind(&c.variables)
    .bind(&c.document)
    .bind(&c.brand_overrides)
    .bind(&c.compiled)
    .bind(&c.saved_block_ids)
    .execute(conn)
    .await?;
    Ok(())
}

/// One live template of the team by id or alias, with its current version. `lock` takes the
/// row for update.
pub async fn find(conn: &mut PgConnection, team_id: Uuid, key: &Key, lock: bool) -> sqlx::Result<Option<Template>> {
    let mut query = QueryBuilder::new(template_select());
    query.push_bind(team_id);
    match key {
        Key::Id(id) => query.push(" AND t.id = ").push_bind(*id),
        Key::Alias(alias) => query.push(" AND t.alias = ").push_bind(alias.clone()),
    };
    if lock {
        query.push(" FOR UPDATE OF t");
    }
    query.build_query_as().fetch_optional(conn).await
}

/// The team's live templates, newest first; `search` matches name or alias (literally).
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest, search: Option<&str>) -> sqlx::Result<Page<Template>> {
    let mut query = QueryBuilder::new(template_select());
    query.push_bind(team_id);
    if let Some(search) = search {
        let pattern = super::like_pattern(search);
        query.push(" AND (t.name ILIKE ").push_bind(pattern.clone()).push(" OR t.alias ILIKE ").push_bind(pattern).push(")");
    }
    page.push_to(&mut query, "t.id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// Renames a template or changes its alias (`Some(None)` clears it). `false` when another
/// live template holds the alias.
pub async fn rename(conn: &mut PgConnection, id: Uuid, name: Option<&str>, alias: Option<Option<&str>>) -> sqlx::Result<bool> {
    let result = sqlx::query(
        "UPDATE templates SET name = COALESCE($2, name), alias = CASE WHEN $3 THEN $4 ELSE alias END, updated_at = now()
         WHERE id = $1 AND NOT EXISTS (
             SELECT 1 FROM templates o WHERE $3 AND $4 IS NOT NULL AND o.team_id = templates.team_id AND o.alias = $4
                 AND o.deleted_at IS NULL AND o.id <> $1)",
    )
    .bind(id)
    .bind(name)
    .bind(alias.is_some())
    .bind(alias.flatten())
    .execute(conn)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Saves content as the template's draft: edits the open draft in place, or, when the current
/// version is published, opens the next version. Answers the draft's number.
pub async fn save_draft(conn: &mut PgConnection, team_id: Uuid, template: &Template, content: &Content) -> sqlx::Result<i32> {
    if template.published_at.is_none() {
        sqlx::query(
            "UPDATE template_versions SET from_address = $3, subject = $4, reply_to = $5, html = $6, text = $7, variables = $8,
                 document = $9, brand_overrides = $10, compiled = $11, saved_block_ids = $12, updated_at = now()
             WHERE template_id = $1 AND version = $2 AND published_at IS NULL",
        )
        .bind(template.id)
        .bind(template.current_version)
        .bind(&content.from_address)
        .bind(&content.subject)
        .bind(&content.reply_to)
        .bind(&content.html)
        .bind(&content.text)
        .bind(&content.variables)
        .bind(&content.document)
        .bind(&content.brand_overrides)
        .bind(&content.compiled)
        .bind(&content.saved_block_ids)
        .execute(&mut *conn)
        .await?;
        touch(conn, template.id, template.current_version).await?;
        return Ok(template.current_version);
    }
    let next = template.current_version + 1;
    insert_version(conn, team_id, template.id, next, content).await?;
    touch(conn, template.id, next).await?;
    Ok(next)
}

async fn touch(conn: &mut PgConnection, id: Uuid, current: i32) -> sqlx::Result<()> {
    sqlx::query("UPDATE templates SET current_version = $2, updated_at = now() WHERE id = $1").bind(id).bind(current).execute(conn).await?;
    Ok(())
}

/// Publishes the current version (a no-op when it already is).
pub async fn publish(conn: &mut PgConnection, template: &Template) -> sqlx::Result<()> {
    sqlx::query("UPDATE template_versions SET published_at = now() WHERE template_id = $1 AND version = $2 AND published_at IS NULL")
        .bind(template.id)
        .bind(template.current_version)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE templates SET published_version = current_version, updated_at = now() WHERE id = $1")
        .bind(template.id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Deletes a template (its alias is free from now on); `false` when it is not the team's.
pub async fn delete(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE templates SET deleted_at = now() WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL")
        .bind(team_id)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

const VERSION_COLUMNS: &str = "v.version, v.from_address, v.subject, v.reply_to, v.html, v.text, v.variables, v.document, v.brand_overrides,
     v.compiled, v.saved_block_ids, v.published_at, v.created_at, v.updated_at";

/// Every version of a template, newest first.
pub async fn versions(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Vec<Version>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {VERSION_COLUMNS} FROM template_versions v WHERE v.template_id = $1 ORDER BY v.version DESC")))
        .bind(id)
        .fetch_all(conn)
        .await
}

/// One version of a template.
pub async fn version(conn: &mut PgConnection, id: Uuid, version: i32) -> sqlx::Result<Option<Version>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {VERSION_COLUMNS} FROM template_versions v WHERE v.template_id = $1 AND v.version = $2")))
        .bind(id)
        .bind(version)
        .fetch_optional(conn)
        .await
}

/// A published template as a send uses it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Sendable {
    pub id: Uuid,
    pub alias: Option<String>,
    /// `None`: the template has only a draft.
    pub version: Option<i32>,
    pub from_address: Option<String>,
    pub subject: Option<String>,
    pub reply_to: Option<Vec<String>>,
    pub variables: Option<Value>,
    pub compiled: Option<Value>,
    pub has_html: bool,
    pub has_text: bool,
}

/// The published versions of the live templates named by `keys` (ids or aliases), in one
/// statement. A template with no published version answers with `version: None`.
pub async fn for_send(conn: &mut PgConnection, team_id: Uuid, keys: &[String]) -> sqlx::Result<Vec<Sendable>> {
    let ids: Vec<Uuid> = keys.iter().filter_map(|k| crate::ids::parse_id(k)).collect();
    sqlx::query_as(
        "SELECT t.id, t.alias, v.version, v.from_address, v.subject, v.reply_to, v.variables, v.compiled,
                v.html IS NOT NULL AS has_html, v.text IS NOT NULL AS has_text
         FROM templates t LEFT JOIN template_versions v ON v.template_id = t.id AND v.version = t.published_version
         WHERE t.team_id = $1 AND t.deleted_at IS NULL AND (t.id = ANY($2) OR t.alias = ANY($3))",
    )
    .bind(team_id)
    .bind(&ids)
    .bind(keys)
    .fetch_all(conn)
    .await
}

/// The versions (published or draft) of the team's live templates that use a saved block, to
/// recompile after it changes.
pub async fn using_saved_block(conn: &mut PgConnection, team_id: Uuid, block_id: Uuid) -> sqlx::Result<Vec<(Uuid, i32, Option<String>, Value, Option<Value>)>> {
    sqlx::query_as(
        "SELECT v.template_id, v.version, v.subject, v.document, v.brand_overrides
         FROM template_versions v JOIN templates t ON t.id = v.template_id
         WHERE v.team_id = $1 AND $2 = ANY(v.saved_block_ids) AND v.document IS NOT NULL AND t.deleted_at IS NULL
           AND (v.version = t.published_version OR v.version = t.current_version)",
    )
    .bind(team_id)
    .bind(block_id)
    .fetch_all(conn)
    .await
}

/// A version compiled again after a saved block it uses changed.
pub struct Recompiled<'a> {
    pub html: &'a str,
    pub text: &'a str,
    pub document: &'a Value,
    pub compiled: &'a Value,
    pub saved_block_ids: &'a [Uuid],
}

/// Writes a recompiled version.
pub async fn recompiled(conn: &mut PgConnection, template_id: Uuid, version: i32, r: &Recompiled<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE template_versions SET html = $3, text = $4, document = $5, compiled = $6, saved_block_ids = $7, updated_at = now()
         WHERE template_id = $1 AND version = $2",
    )
    .bind(template_id)
    .bind(version)
    .bind(r.html)
    .bind(r.text)
    .bind(r.document)
    .bind(r.compiled)
    .bind(r.saved_block_ids)
    .execute(conn)
    .await?;
    Ok(())
}

/// What a block document's references are checked against.
#[derive(Debug, Default)]
pub struct CatalogFacts {
    /// Declared property key and type.
    pub properties: Vec<(String, String)>,
    /// Live topics.
    pub topics: Vec<Uuid>,
    /// Live segments.
    pub segments: Vec<Uuid>,
}

/// The team's declared properties, live topics and live segments, in one statement.
pub async fn catalog_facts(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<CatalogFacts> {
    let (keys, types, topics, segments): (Vec<String>, Vec<String>, Vec<Uuid>, Vec<Uuid>) = sqlx::query_as(
        "SELECT COALESCE((SELECT array_agg(key ORDER BY key) FROM contact_properties WHERE team_id = $1), '{}'),
                COALESCE((SELECT array_agg(type ORDER BY key) FROM contact_properties WHERE team_id = $1), '{}'),
                COALESCE((SELECT array_agg(id) FROM topics WHERE team_id = $1 AND deleted_at IS NULL), '{}'),
                COALESCE((SELECT array_agg(id) FROM segments WHERE team_id = $1 AND deleted_at IS NULL), '{}')",
    )
    .bind(team_id)
    .fetch_one(conn)
    .await?;
    Ok(CatalogFacts { properties: keys.into_iter().zip(types).collect(), topics, segments })
}
