//! Segments (retired, not deleted, so names free up), their explicit members, and membership:
//! the filter compiled to SQL and evaluated on every read, never stored.

use crate::filter::{self, Catalog, Node, Problem};
use crate::page::{Page, PageRequest};
use crate::store::contacts::{COLUMNS as CONTACT_COLUMNS, Contact};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

/// A live segment.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Segment {
    pub id: Uuid,
    pub team_id: Uuid,
    pub name: String,
    pub filter: Option<Value>,
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, team_id, name, filter, created_at";

/// Inserts a segment; `None` when a live segment of the team has the name (any case).
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, name: &str, filter: Option<&Value>) -> sqlx::Result<Option<Segment>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO segments (id, team_id, name, filter, time_based) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (team_id, lower(name)) WHERE deleted_at IS NULL DO NOTHING RETURNING {COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(name)
    .bind(filter)
    .bind(filter.is_some_and(filter::names_an_age))
    .fetch_optional(conn)
    .await
}

/// One live segment of the team.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Segment>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM segments WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The team's live segments, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<Segment>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM segments WHERE deleted_at IS NULL AND team_id = "));
    query.push_bind(team_id);
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// Every live segment of the team, oldest first.
pub async fn all(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Vec<Segment>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM segments WHERE team_id = $1 AND deleted_at IS NULL ORDER BY id")))
        .bind(team_id)
        .fetch_all(conn)
        .await
}

/// Renames a segment; `None` when it is not the team's live one. A name another live segment
/// has fails with the database's unique violation.
pub async fn rename(conn: &mut PgConnection, team_id: Uuid, id: Uuid, name: &str) -> sqlx::Result<Option<Segment>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE segments SET name = $3 WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING {COLUMNS}"
    )))
    .bind(team_id)
    .bind(id)
    .bind(name)
    .fetch_optional(conn)
    .await
}

/// Retires a segment and drops its explicit members; whether it was the team's live one.
pub async fn retire(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "WITH retired AS (UPDATE segments SET deleted_at = now() WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING id)
         , gone AS (DELETE FROM segment_members WHERE segment_id IN (SELECT id FROM retired))
         SELECT count(*) FROM retired",
    )
    .bind(team_id)
    .bind(id)
    .fetch_one(conn)
    .await?;
    Ok(sqlx::Row::get::<i64, _>(&done, 0) == 1)
}

/// Which of these ids are the team's live segments.
pub async fn live_ids(conn: &mut PgConnection, team_id: Uuid, ids: &[Uuid]) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar("SELECT id FROM segments WHERE team_id = $1 AND id = ANY($2) AND deleted_at IS NULL")
        .bind(team_id)
        .bind(ids)
        .fetch_all(conn)
        .await
}

/// Adds contacts to segments explicitly (every pair; existing memberships stay).
pub async fn add_members(conn: &mut PgConnection, segment_ids: &[Uuid], contact_ids: &[Uuid]) -> sqlx::Result<()> {
    if segment_ids.is_empty() || contact_ids.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO segment_members (segment_id, contact_id)
         SELECT s, c FROM unnest($1::uuid[]) AS s CROSS JOIN unnest($2::uuid[]) AS c ON CONFLICT DO NOTHING",
    )
    .bind(segment_ids)
    .bind(contact_ids)
    .execute(conn)
    .await?;
    Ok(())
}

/// Removes an explicit membership; whether there was one.
pub async fn remove_member(conn: &mut PgConnection, segment_id: Uuid, contact_id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM segment_members WHERE segment_id = $1 AND contact_id = $2")
        .bind(segment_id)
        .bind(contact_id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// The team's properties and topics that these filters name, as filters are checked against.
/// A new filter (`strict`) may name only live topics; a stored one also compiles with retired
/// ones.
async fn catalog<'a>(conn: &mut PgConnection, team_id: Uuid, filters: impl IntoIterator<Item = &'a Value>, strict: bool) -> sqlx::Result<Catalog> {
    let (mut keys, mut topic_ids) = (Vec::new(), Vec::new());
    for filter in filters {
        let (k, t) = filter::references(filter);
        keys.extend(k);
        topic_ids.extend(t);
    }
    let properties: Vec<(String, String)> = sqlx::query_as("SELECT key, type FROM contact_properties WHERE team_id = $1 AND key = ANY($2)")
        .bind(team_id)
        .bind(&keys)
        .fetch_all(&mut *conn)
        .await?;
    let topics: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT id, default_subscription FROM topics WHERE team_id = $1 AND id = ANY($2) AND (deleted_at IS NULL OR NOT $3)")
            .bind(team_id)
            .bind(&topic_ids)
            .bind(strict)
            .fetch_all(&mut *conn)
            .await?;
    Ok(Catalog { properties: properties.into_iter().collect(), topics: topics.into_iter().collect() })
}

/// Checks a new filter against the team's properties and topics.
pub async fn check_filter(conn: &mut PgConnection, team_id: Uuid, value: &Value) -> sqlx::Result<Result<Node, Vec<Problem>>> {
    let catalog = catalog(conn, team_id, [value], true).await?;
    Ok(filter::parse(value, &catalog, true))
}

/// A segment's membership, ready to put in a query.
#[derive(Debug, Clone)]
pub struct Membership {
    pub segment_id: Uuid,
    pub filter: Option<Node>,
}

/// Compiles stored segments' memberships (all of one team), reading the catalog once. A
/// property or topic gone since compiles as one no contact has.
pub async fn memberships(conn: &mut PgConnection, segments: &[Segment]) -> sqlx::Result<Vec<Membership>> {
    let Some(first) = segments.first() else { return Ok(Vec::new()) };
    let catalog = catalog(conn, first.team_id, segments.iter().filter_map(|s| s.filter.as_ref()), false).await?;
    Ok(segments
        .iter()
        .map(|segment| Membership {
            segment_id: segment.id,
            filter: segment.filter.as_ref().and_then(|value| filter::parse(value, &catalog, false).ok()),
        })
        .collect())
}

/// Compiles a stored segment's membership.
pub async fn membership(conn: &mut PgConnection, segment: &Segment) -> sqlx::Result<Membership> {
    Ok(memberships(conn, std::slice::from_ref(segment)).await?.remove(0))
}

impl Membership {
    /// The members among contacts `c` with ids after `after` (a page of a walk by id):
    /// `(filter OR explicitly added) AND c.id > after`. The bound is repeated on the explicit
    /// members, so the join starts at the cursor instead of reading every earlier member.
    pub fn push_members_after(&self, query: &mut QueryBuilder<Postgres>, after: Option<Uuid>) {
        self.push_bounded(query, after);
        if let Some(after) = after {
            query.push(" AND c.id > ").push_bind(after);
        }
    }

    /// `(filter OR explicitly added)` over the contact `c`.
    fn push_sql(&self, query: &mut QueryBuilder<Postgres>) {
        self.push_bounded(query, None);
    }

    fn push_bounded(&self, query: &mut QueryBuilder<Postgres>, after: Option<Uuid>) {
        query.push("(");
        if let Some(filter) = &self.filter {
            filter.push_sql(query);
            query.push(" OR ");
        }
        query.push("EXISTS (SELECT 1 FROM segment_members m WHERE m.segment_id = ").push_bind(self.segment_id);
        query.push(" AND m.contact_id = c.id");
        if let Some(after) = after {
            query.push(" AND m.contact_id > ").push_bind(after);
        }
        query.push("))");
    }
}

/// A page of a segment's members, newest first.
pub async fn members(conn: &mut PgConnection, team_id: Uuid, membership: &Membership, page: &PageRequest) -> sqlx::Result<Page<Contact>> {
    let mut query = QueryBuilder::new(format!("SELECT {CONTACT_COLUMNS} FROM contacts c WHERE c.team_id = "));
    query.push_bind(team_id).push(" AND ");
    membership.push_sql(&mut query);
    page.push_to(&mut query, "c.id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// How many of the team's contacts a checked filter matches now.
pub async fn count_matching(conn: &mut PgConnection, team_id: Uuid, filter: &Node) -> sqlx::Result<i64> {
    let mut query = QueryBuilder::new("SELECT count(*) FROM contacts c WHERE c.team_id = ");
    query.push_bind(team_id).push(" AND ");
    filter.push_sql(&mut query);
    query.build_query_scalar().fetch_one(conn).await
}

/// How many contacts a segment has now.
pub async fn count_members(conn: &mut PgConnection, team_id: Uuid, membership: &Membership) -> sqlx::Result<i64> {
    let mut query = QueryBuilder::new("SELECT count(*) FROM contacts c WHERE c.team_id = ");
    query.push_bind(team_id).push(" AND ");
    membership.push_sql(&mut query);
    query.build_query_scalar().fetch_one(conn).await
}

/// Which of these memberships hold the contact, in one statement.
pub async fn holding(conn: &mut PgConnection, contact_id: Uuid, memberships: &[Membership]) -> sqlx::Result<Vec<Uuid>> {
    Ok(holding_many(conn, &[contact_id], memberships).await?.into_iter().map(|(_, segment_id)| segment_id).collect())
}

/// Which of these memberships hold each of the contacts, as `(contact, segment)` pairs in
/// contact order then the memberships' order, in one statement.
pub async fn holding_many(conn: &mut PgConnection, contact_ids: &[Uuid], memberships: &[Membership]) -> sqlx::Result<Vec<(Uuid, Uuid)>> {
    if memberships.is_empty() || contact_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut query = QueryBuilder::new("SELECT c.id, s.id FROM contacts c CROSS JOIN LATERAL (VALUES ");
    for (i, membership) in memberships.iter().enumerate() {
        if i > 0 {
            query.push(", ");
        }
        query.push("(").push_bind(membership.segment_id).push("::uuid, ").push(i as i64).push(", ");
        membership.push_sql(&mut query);
        query.push(")");
    }
    query.push(") AS s(id, position, member) WHERE c.id = ANY(").push_bind(contact_ids).push(") AND s.member ORDER BY c.id, s.position");
    query.build_query_as().fetch_all(conn).await
}

/// The team's live segments among `ids`.
pub async fn by_ids(conn: &mut PgConnection, team_id: Uuid, ids: &[Uuid]) -> sqlx::Result<Vec<Segment>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM segments WHERE team_id = $1 AND id = ANY($2) AND deleted_at IS NULL ORDER BY id")))
        .bind(team_id)
        .bind(ids)
        .fetch_all(conn)
        .await
}

/// Whether a filter (checked when it was written) holds for the contact now. A property or
/// topic gone since compiles as one no contact has.
pub async fn filter_holds(conn: &mut PgConnection, team_id: Uuid, contact_id: Uuid, filter: &Value) -> sqlx::Result<bool> {
    let catalog = catalog(conn, team_id, [filter], false).await?;
    let Ok(node) = filter::parse(filter, &catalog, false) else { return Ok(false) };
    let mut query = QueryBuilder::new("SELECT EXISTS (SELECT 1 FROM contacts c WHERE c.team_id = ");
    query.push_bind(team_id).push(" AND c.id = ").push_bind(contact_id).push(" AND ");
    node.push_sql(&mut query);
    query.push(")");
    query.build_query_scalar().fetch_one(conn).await
}

/// The `data` of `contact.*` events for contacts of one team: each contact as it is, with
/// `segment_ids` (every live segment holding it now, by filter or by membership, in the
/// segments' order) and `audience_id` (the first of them, or `""` when none), the fields the Resend SDKs
/// read. Three statements whatever the number of contacts; one when the team has no segment.
pub async fn contact_event_data(conn: &mut PgConnection, contacts: &[Contact]) -> sqlx::Result<Vec<Value>> {
    let Some(first) = contacts.first() else { return Ok(Vec::new()) };
    let segments = all(conn, first.team_id).await?;
    let memberships = memberships(conn, &segments).await?;
    let ids: Vec<Uuid> = contacts.iter().map(|c| c.id).collect();
    let held = holding_many(conn, &ids, &memberships).await?;
    Ok(contacts
        .iter()
        .map(|contact| {
            let segment_ids: Vec<Uuid> = held.iter().filter(|(c, _)| *c == contact.id).map(|(_, s)| *s).collect();
            let mut data = contact.event_data();
            data["audience_id"] = serde_json::json!(segment_ids.first().map_or_else(String::new, Uuid::to_string));
            data["segment_ids"] = serde_json::json!(segment_ids);
            data
        })
        .collect())
}
