//! Contacts, their declared properties, and consent records.

use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A contact as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Contact {
    pub id: Uuid,
    pub team_id: Uuid,
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub unsubscribed: bool,
    pub properties: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub const COLUMNS: &str = "id, team_id, email, first_name, last_name, unsubscribed, properties, created_at, updated_at";

impl Contact {
    /// The `data` of `contact.*` events: the contact as it is (or was, on delete).
    pub fn event_data(&self) -> Value {
        json!({
            "id": self.id,
            "email": self.email,
            "first_name": self.first_name,
            "last_name": self.last_name,
            "unsubscribed": self.unsubscribed,
            "properties": self.properties,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        })
    }
}

/// A row named by its id or its address.
pub use crate::email::IdOrEmail as Key;

/// A declared property.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Property {
    pub id: Uuid,
    pub key: String,
    #[sqlx(rename = "type")]
    pub kind: String,
    pub fallback_value: Option<Value>,
    pub created_at: DateTime<Utc>,
}

/// The team's declared properties.
pub async fn properties(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Vec<Property>> {
    sqlx::query_as("SELECT id, key, type, fallback_value, created_at FROM contact_properties WHERE team_id = $1 ORDER BY key")
        .bind(team_id)
        .fetch_all(conn)
        .await
}

/// Declares properties first seen in a write, typed by their values.
pub async fn declare(conn: &mut PgConnection, team_id: Uuid, new: &[(String, &'static str)]) -> sqlx::Result<()> {
    if new.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = new.iter().map(|_| crate::ids::new_id()).collect();
    let keys: Vec<&str> = new.iter().map(|(key, _)| key.as_str()).collect();
    let kinds: Vec<&str> = new.iter().map(|(_, kind)| *kind).collect();
    sqlx::query(
        "INSERT INTO contact_properties (id, team_id, key, type)
         SELECT id, $2, key, type FROM unnest($1::uuid[], $3::text[], $4::text[]) AS p(id, key, type)
         ON CONFLICT (team_id, key) DO NOTHING",
    )
    .bind(&ids)
    .bind(team_id)
    .bind(&keys)
    .bind(&kinds)
    .execute(conn)
    .await?;
    Ok(())
}

/// Locks the team row (serialises contact creates and property declarations) and returns its
/// contact limit (`None`: unlimited; see the `team_limits` view).
pub async fn lock_limit(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Option<i32>> {
    sqlx::query_scalar("SELECT l.contact_limit FROM teams t JOIN team_limits l ON l.team_id = t.id WHERE t.id = $1 FOR UPDATE OF t")
        .bind(team_id)
        .fetch_one(conn)
        .await
}

/// How many contacts the team has.
pub async fn count(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM contacts WHERE team_id = $1").bind(team_id).fetch_one(conn).await
}

/// One contact of the team by id or address, locked for a change when `lock`.
pub async fn find(conn: &mut PgConnection, team_id: Uuid, key: &Key, lock: bool) -> sqlx::Result<Option<Contact>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM contacts WHERE team_id = "));
    query.push_bind(team_id);
    match key {
        Key::Id(id) => query.push(" AND id = ").push_bind(*id),
        Key::Email(email) => query.push(" AND email = ").push_bind(email.clone()),
    };
    if lock {
        query.push(" FOR UPDATE");
    }
    query.build_query_as().fetch_optional(conn).await
}

/// A contact by id alone, for a signed link that names it; locked for a change when `lock`.
pub async fn by_id(conn: &mut PgConnection, id: Uuid, lock: bool) -> sqlx::Result<Option<Contact>> {
    let lock = if lock { " FOR UPDATE" } else { "" };
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM contacts WHERE id = $1{lock}")))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Sets a contact's global opt-out.
pub async fn set_unsubscribed(conn: &mut PgConnection, id: Uuid, unsubscribed: bool) -> sqlx::Result<()> {
    sqlx::query("UPDATE contacts SET unsubscribed = $2, updated_at = now() WHERE id = $1").bind(id).bind(unsubscribed).execute(conn).await?;
    Ok(())
}

/// A contact about to be written.
#[derive(Debug, Clone)]
pub struct ContactFields {
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub unsubscribed: bool,
    pub properties: Value,
}

/// Inserts a contact.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, fields: &ContactFields) -> sqlx::Result<Contact> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO contacts (id, team_id, email, first_name, last_name, unsubscribed, properties)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(&fields.email)
    .bind(&fields.first_name)
    .bind(&fields.last_name)
    .bind(fields.unsubscribed)
    .bind(&fields.properties)
    .fetch_one(conn)
    .await
}

/// Writes a contact's fields.
pub async fn update(conn: &mut PgConnection, id: Uuid, fields: &ContactFields) -> sqlx::Result<Contact> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE contacts SET email = $2, first_name = $3, last_name = $4, unsubscribed = $5, properties = $6, updated_at = now()
         WHERE id = $1 RETURNING {COLUMNS}"
    )))
    .bind(id)
    .bind(&fields.email)
    .bind(&fields.first_name)
    .bind(&fields.last_name)
    .bind(fields.unsubscribed)
    .bind(&fields.properties)
    .fetch_one(conn)
    .await
}

/// Erases a contact (its consent records stay, under the address's hash).
pub async fn delete(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM contacts WHERE id = $1").bind(id).execute(conn).await?;
    Ok(())
}

/// The team's contacts, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<Contact>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM contacts WHERE team_id = "));
    query.push_bind(team_id);
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// A consent record: a change of `unsubscribed` or a topic choice.
#[derive(Debug, Clone)]
pub struct Consent<'a> {
    pub team_id: Uuid,
    pub contact_id: Uuid,
    pub email: &'a str,
    pub topic_id: Option<Uuid>,
    /// `subscribed`, `unsubscribed`, `opt_in` or `opt_out`.
    pub choice: &'static str,
    /// `api`, `import`, `preference_page` or `one_click`.
    pub source: &'static str,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
}

/// Writes a consent record; the address is kept only as its SHA-256.
pub async fn record_consent(conn: &mut PgConnection, consent: &Consent<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO consent_records (id, team_id, contact_id, email_hash, topic_id, choice, source, ip_address, user_agent)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(crate::ids::new_id())
    .bind(consent.team_id)
    .bind(consent.contact_id)
    .bind(crate::secret::hash(consent.email))
    .bind(consent.topic_id)
    .bind(consent.choice)
    .bind(consent.source)
    .bind(&consent.ip_address)
    .bind(&consent.user_agent)
    .execute(conn)
    .await?;
    Ok(())
}

/// A consent record as read back (its address hash stays inside).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ConsentRecord {
    pub id: Uuid,
    pub topic_id: Option<Uuid>,
    pub choice: String,
    pub source: String,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A page of a contact's consent records, newest first.
pub async fn consents(conn: &mut PgConnection, team_id: Uuid, contact_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<ConsentRecord>> {
    let mut query = QueryBuilder::new("SELECT id, topic_id, choice, source, ip_address, user_agent, created_at FROM consent_records WHERE team_id = ");
    query.push_bind(team_id).push(" AND contact_id = ").push_bind(contact_id);
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// Declares a property; `None` when the key is already declared.
pub async fn insert_property(
    conn: &mut PgConnection,
    team_id: Uuid,
    key: &str,
    kind: &str,
    fallback_value: Option<&Value>,
) -> sqlx::Result<Option<Property>> {
    sqlx::query_as(
        "INSERT INTO contact_properties (id, team_id, key, type, fallback_value) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (team_id, key) DO NOTHING RETURNING id, key, type, fallback_value, created_at",
    )
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(key)
    .bind(kind)
    .bind(fallback_value)
    .fetch_optional(conn)
    .await
}

/// One declared property of the team.
pub async fn property(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Property>> {
    sqlx::query_as("SELECT id, key, type, fallback_value, created_at FROM contact_properties WHERE team_id = $1 AND id = $2")
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Sets (or clears) a property's fallback value.
pub async fn set_fallback(conn: &mut PgConnection, id: Uuid, fallback_value: Option<&Value>) -> sqlx::Result<()> {
    sqlx::query("UPDATE contact_properties SET fallback_value = $2 WHERE id = $1").bind(id).bind(fallback_value).execute(conn).await?;
    Ok(())
}

/// Removes a property and its values from every contact of the team.
pub async fn delete_property(conn: &mut PgConnection, team_id: Uuid, property: &Property) -> sqlx::Result<()> {
    sqlx::query("UPDATE contacts SET properties = properties - $2, updated_at = now() WHERE team_id = $1 AND properties ? $2")
        .bind(team_id)
        .bind(&property.key)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM contact_properties WHERE id = $1").bind(property.id).execute(conn).await?;
    Ok(())
}

/// Deletes up to `batch` consent records older than `years`; how many.
pub async fn purge_consents(conn: &mut PgConnection, years: i32, batch: i64) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM consent_records WHERE id IN (
             SELECT id FROM consent_records WHERE created_at < now() - make_interval(years => $1) LIMIT $2)",
    )
    .bind(years)
    .bind(batch)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// Billable contacts of the team `t`: not unsubscribed, not suppressed, and subscribed (by
/// their own choice or the default) to at least one live topic.
/// The team's billable contacts now, and the month's peak so far (counting now): both kept by
/// the database as contacts, topic choices, topics and suppressions change (see the migration
/// `billable_counter`, where the rule is written).
pub async fn billable(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT COALESCE(n.billable, 0), GREATEST(COALESCE(n.billable, 0), COALESCE(p.peak, 0)) FROM teams t
         LEFT JOIN billable_contact_counts n ON n.team_id = t.id
         LEFT JOIN billable_contact_peaks p ON p.team_id = t.id AND p.month = date_trunc('month', now())::date
         WHERE t.id = $1",
    )
    .bind(team_id)
    .fetch_one(conn)
    .await
}

/// Works out again every contact whose billable flag a race left stale (two writers touching
/// a contact and its suppression at once), moving the counts with it; how many were stale.
pub async fn reconcile_billable(conn: &mut PgConnection) -> sqlx::Result<u64> {
    let done = sqlx::query("UPDATE contacts c SET billable = NULL WHERE c.billable IS DISTINCT FROM contact_is_billable(c.team_id, c.id, c.email, c.unsubscribed)")
        .execute(conn)
        .await?;
    Ok(done.rows_affected())
}
