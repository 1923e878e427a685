//! Suppressions: addresses a team will not send to, each with an origin.

use crate::links::AddressLink;
use crate::page::{Page, PageRequest};
use crate::store::events::{self, NewEvent};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A suppressed address.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Suppression {
    pub id: Uuid,
    pub team_id: Uuid,
    pub email: String,
    pub origin: String,
    pub source_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
}

impl Suppression {
    /// The `data` of `suppression.added` and `suppression.removed`.
    pub fn event_data(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "email": self.email,
            "origin": self.origin,
            "source_id": self.source_id,
            "created_at": self.created_at,
        })
    }
}

/// The `suppression.added` events of the rows [`add`] added (not of those already there).
pub fn added_events(rows: &[(Suppression, bool)]) -> Vec<NewEvent> {
    rows.iter()
        .filter(|(_, added)| *added)
        .map(|(row, _)| NewEvent { team_id: row.team_id, event_type: "suppression.added", data: row.event_data(), email_id: None })
        .collect()
}

/// The one-click (or mailto) unsubscribe of a transactional send's `List-Unsubscribe`:
/// suppresses the link's address for the email's team with origin `unsubscribe` (the email
/// as its source) and emits `suppression.added` when it is new. `team_id`, when given, must be
/// the email's team. `None` when the email is not found (deleted, or another team's).
pub async fn unsubscribe_address(conn: &mut PgConnection, team_id: Option<Uuid>, link: &AddressLink) -> sqlx::Result<Option<Suppression>> {
    let found: Option<Uuid> = sqlx::query_scalar("SELECT team_id FROM emails WHERE id = $1").bind(link.email_id).fetch_optional(&mut *conn).await?;
    let Some(owner) = found.filter(|owner| team_id.is_none_or(|team| team == *owner)) else { return Ok(None) };
    let rows = add(conn, &[NewSuppression { team_id: owner, email: link.email.clone(), origin: "unsubscribe", source_id: Some(link.email_id) }]).await?;
    events::emit(conn, &added_events(&rows)).await?;
    Ok(rows.into_iter().next().map(|(row, _)| row))
}

/// One address to suppress.
#[derive(Debug, Clone)]
pub struct NewSuppression {
    pub team_id: Uuid,
    /// Bare, lower-case.
    pub email: String,
    pub origin: &'static str,
    pub source_id: Option<Uuid>,
}

/// Adds suppressions in one statement; an address already suppressed keeps its row. Returns
/// every row, with `true` for those this call added.
pub async fn add(conn: &mut PgConnection, new: &[NewSuppression]) -> sqlx::Result<Vec<(Suppression, bool)>> {
    if new.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = new.iter().map(|_| crate::ids::new_id()).collect();
    let teams: Vec<Uuid> = new.iter().map(|s| s.team_id).collect();
    let emails: Vec<&str> = new.iter().map(|s| s.email.as_str()).collect();
    let origins: Vec<&str> = new.iter().map(|s| s.origin).collect();
    let sources: Vec<Option<Uuid>> = new.iter().map(|s| s.source_id).collect();
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        suppression: Suppression,
        added: bool,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "WITH input AS (
             SELECT DISTINCT ON (team_id, email) * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::uuid[])
                 AS i(id, team_id, email, origin, source_id)
         ), added AS (
             INSERT INTO suppressions (id, team_id, email, origin, source_id) SELECT * FROM input
             ON CONFLICT (team_id, email) DO NOTHING
             RETURNING id, team_id, email, origin, source_id, created_at
         )
         SELECT id, team_id, email, origin, source_id, created_at, true AS added FROM added
         UNION ALL
         SELECT s.id, s.team_id, s.email, s.origin, s.source_id, s.created_at, false
         FROM suppressions s JOIN input i ON s.team_id = i.team_id AND s.email = i.email
         WHERE NOT EXISTS (SELECT 1 FROM added a WHERE a.team_id = s.team_id AND a.email = s.email)",
    )
    .bind(&ids)
    .bind(&teams)
    .bind(&emails)
    .bind(&origins)
    .bind(&sources)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|row| (row.suppression, row.added)).collect())
}

/// Filters of `GET /suppressions`.
#[derive(Debug, Default)]
pub struct ListFilter {
    pub origin: Option<String>,
    pub search: Option<String>,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
}

/// A page of the team's suppressions, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, filter: &ListFilter, page: &PageRequest) -> sqlx::Result<Page<Suppression>> {
    let mut query =
        QueryBuilder::new("SELECT id, team_id, email, origin, source_id, created_at FROM suppressions WHERE team_id = ");
    query.push_bind(team_id);
    if let Some(origin) = &filter.origin {
        query.push(" AND origin = ").push_bind(origin.clone());
    }
    if let Some(search) = &filter.search {
        query.push(" AND email ILIKE ").push_bind(super::like_pattern(search));
    }
    if let Some(start) = filter.start {
        query.push(" AND created_at >= ").push_bind(start);
    }
    if let Some(end) = filter.end {
        query.push(" AND created_at <= ").push_bind(end);
    }
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// A row named by its id or its address.
pub use crate::email::IdOrEmail as Key;

/// One suppression by id or address.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, key: &Key) -> sqlx::Result<Option<Suppression>> {
    let query = match key {
        Key::Id(id) => sqlx::query_as(
            "SELECT id, team_id, email, origin, source_id, created_at FROM suppressions WHERE team_id = $1 AND id = $2",
        )
        .bind(team_id)
        .bind(*id),
        Key::Email(email) => sqlx::query_as(
            "SELECT id, team_id, email, origin, source_id, created_at FROM suppressions WHERE team_id = $1 AND email = $2",
        )
        .bind(team_id)
        .bind(email.clone()),
    };
    query.fetch_optional(conn).await
}

/// Deletes the team's suppressions named by id or by address, in one statement; returns the
/// rows removed as they were (names that match none are absent).
pub async fn delete_many(conn: &mut PgConnection, team_id: Uuid, ids: &[Uuid], emails: &[String]) -> sqlx::Result<Vec<Suppression>> {
    sqlx::query_as(
        "DELETE FROM suppressions WHERE team_id = $1 AND (id = ANY($2) OR email = ANY($3))
         RETURNING id, team_id, email, origin, source_id, created_at",
    )
    .bind(team_id)
    .bind(ids)
    .bind(emails)
    .fetch_all(conn)
    .await
}

/// Deletes one suppression; returns it as it was.
pub async fn delete(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Suppression>> {
    sqlx::query_as(
        "DELETE FROM suppressions WHERE team_id = $1 AND id = $2 RETURNING id, team_id, email, origin, source_id, created_at",
    )
    .bind(team_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}
