//! The Inbox's channels and who reaches them. A key reaches the open shared channels it is
//! limited to (every unrestricted one when it has no limit); a person reaches the open shared
//! channels that are unrestricted, that they are a member of, or every one when they are an
//! admin, and (by the dashboard session only) their own personal channel.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

/// Who is asking, as far as channels go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// An API key, limited to `channel_ids` (`None`: every open unrestricted channel).
    Key { channel_ids: Option<Vec<Uuid>> },
    /// A person of the team; `personal` when signed in to the dashboard (a token never reaches
    /// a personal channel).
    Person { person_id: Uuid, admin: bool, personal: bool },
}

impl Reach {
    /// Appends ` AND <channel alias> is reachable` to a query whose WHERE clause is open.
    pub fn push(&self, query: &mut QueryBuilder<Postgres>, alias: &str) {
        query.push(format!(" AND NOT {alias}.closed"));
        match self {
            Reach::Key { channel_ids: None } => {
                query.push(format!(" AND {alias}.personal_person_id IS NULL AND NOT {alias}.restricted"));
            }
            Reach::Key { channel_ids: Some(ids) } => {
                query.push(format!(" AND {alias}.personal_person_id IS NULL AND {alias}.id = ANY(")).push_bind(ids.clone()).push(")");
            }
            Reach::Person { person_id, admin, personal } => {
                query.push(format!(" AND (({alias}.personal_person_id IS NULL AND (NOT {alias}.restricted OR "));
                query.push_bind(*admin);
                query.push(format!(" OR EXISTS (SELECT 1 FROM inbox_channel_members m WHERE m.channel_id = {alias}.id AND m.person_id = "));
                query.push_bind(*person_id).push(")))");
                if *personal {
                    query.push(format!(" OR {alias}.personal_person_id = ")).push_bind(*person_id);
                }
                query.push(")");
            }
        }
    }

    /// Appends ` AND <column> is a reachable channel of the team`, the channels resolved once
    /// into an array: a list or search then walks the conversations' own indexes in order
    /// instead of joining channels first (the planner cannot know how many a reach keeps).
    pub fn push_among(&self, query: &mut QueryBuilder<Postgres>, team_id: Uuid, column: &str) {
        query.push(format!(" AND {column} = ANY(ARRAY(SELECT r.id FROM inbox_channels r WHERE r.team_id = ")).push_bind(team_id);
        self.push(query, "r");
        query.push("))");
    }
}

/// A channel.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Channel {
    pub id: Uuid,
    pub team_id: Uuid,
    pub domain_id: Uuid,
    pub address: String,
    pub name: String,
    pub restricted: bool,
    pub personal_person_id: Option<Uuid>,
    pub closed: bool,
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str = "c.id, c.team_id, c.domain_id, c.address, c.name, c.restricted, c.personal_person_id, c.closed, c.created_at";

/// A new channel.
pub struct NewChannel<'a> {
    pub domain_id: Uuid,
    pub address: &'a str,
    pub name: &'a str,
    pub restricted: bool,
    pub personal_person_id: Option<Uuid>,
}

/// Inserts a channel; `None` when the team has a channel at the address already.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, new: &NewChannel<'_>) -> sqlx::Result<Option<Channel>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO inbox_channels AS c (id, team_id, domain_id, address, name, restricted, personal_person_id) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (team_id, address) DO NOTHING RETURNING {COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(new.domain_id)
    .bind(new.address)
    .bind(new.name)
    .bind(new.restricted)
    .bind(new.personal_person_id)
    .fetch_optional(conn)
    .await
}

/// One of the team's channels that `reach` reaches (`None` reaches every one: an admin's setup).
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid, reach: Option<&Reach>) -> sqlx::Result<Option<Channel>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM inbox_channels c WHERE c.team_id = "));
    query.push_bind(team_id).push(" AND c.id = ").push_bind(id);
    if let Some(reach) = reach {
        reach.push(&mut query, "c");
    }
    query.build_query_as().fetch_optional(conn).await
}

/// The team's channel at `address` (bare, lower-case) that `reach` reaches.
pub async fn by_address(conn: &mut PgConnection, team_id: Uuid, address: &str, reach: &Reach) -> sqlx::Result<Option<Channel>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM inbox_channels c WHERE c.team_id = "));
    query.push_bind(team_id).push(" AND c.address = ").push_bind(address.to_string());
    reach.push(&mut query, "c");
    query.build_query_as().fetch_optional(conn).await
}

/// The channels `reach` reaches, oldest first (a team has few).
pub async fn list(conn: &mut PgConnection, team_id: Uuid, reach: &Reach) -> sqlx::Result<Vec<Channel>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM inbox_channels c WHERE c.team_id = "));
    query.push_bind(team_id);
    reach.push(&mut query, "c");
    query.push(" ORDER BY c.id");
    query.build_query_as().fetch_all(conn).await
}

/// What a channel update changes (`None` leaves a field alone).
pub struct Change<'a> {
    pub name: Option<&'a str>,
    pub restricted: Option<bool>,
    pub closed: Option<bool>,
}

/// Applies a change to one of the team's channels; `None` when there is no such channel.
pub async fn update(conn: &mut PgConnection, team_id: Uuid, id: Uuid, change: &Change<'_>) -> sqlx::Result<Option<Channel>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE inbox_channels c SET name = COALESCE($3, name), restricted = COALESCE($4, restricted), closed = COALESCE($5, closed), updated_at = now()
         WHERE c.team_id = $1 AND c.id = $2 RETURNING {COLUMNS}"
    )))
    .bind(team_id)
    .bind(id)
    .bind(change.name)
    .bind(change.restricted)
    .bind(change.closed)
    .fetch_optional(conn)
    .await
}

/// Replaces a channel's members with `person_ids`; answers the ids that are not members of the
/// channel's team (nothing is written then).
pub async fn set_members(conn: &mut PgConnection, team_id: Uuid, channel_id: Uuid, person_ids: &[Uuid]) -> sqlx::Result<Vec<Uuid>> {
    let strangers: Vec<Uuid> = sqlx::query_scalar(
        "SELECT w.person_id FROM unnest($2::uuid[]) AS w(person_id) WHERE NOT EXISTS (SELECT 1 FROM memberships m WHERE m.team_id = $1 AND m.person_id = w.person_id)",
    )
    .bind(team_id)
    .bind(person_ids)
    .fetch_all(&mut *conn)
    .await?;
    if !strangers.is_empty() {
        return Ok(strangers);
    }
    sqlx::query("DELETE FROM inbox_channel_members WHERE channel_id = $1 AND NOT (person_id = ANY($2))").bind(channel_id).bind(person_ids).execute(&mut *conn).await?;
    sqlx::query("INSERT INTO inbox_channel_members (channel_id, person_id) SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING")
        .bind(channel_id)
        .bind(person_ids)
        .execute(conn)
        .await?;
    Ok(Vec::new())
}

/// A teammate who can open a channel.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Teammate {
    pub person_id: Uuid,
    pub name: String,
    pub role: String,
}

/// The team's people who can open `channel`: everyone for an unrestricted channel, else its
/// members and the admins; only its owner for a personal one.
pub async fn teammates(conn: &mut PgConnection, channel: &Channel) -> sqlx::Result<Vec<Teammate>> {
    sqlx::query_as(
        "SELECT p.id AS person_id, p.name, m.role FROM memberships m JOIN people p ON p.id = m.person_id
         WHERE m.team_id = $1 AND CASE
             WHEN $3::uuid IS NOT NULL THEN p.id = $3
             WHEN $2 THEN m.role = 'admin' OR EXISTS (SELECT 1 FROM inbox_channel_members c WHERE c.channel_id = $4 AND c.person_id = p.id)
             ELSE true END
         ORDER BY p.name, p.id",
    )
    .bind(channel.team_id)
    .bind(channel.restricted)
    .bind(channel.personal_person_id)
    .bind(channel.id)
    .fetch_all(conn)
    .await
}

/// What an Inbox request needs to know before anything else: whether the team has an open
/// channel, and, for a key, its name and channel limit (`None` when the key is gone).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Setup {
    pub has_open_channel: bool,
    pub key_name: Option<String>,
    pub key_channel_ids: Option<Vec<Uuid>>,
}

/// Reads [`Setup`] for the team and (when a key asks) the key.
pub async fn setup(conn: &mut PgConnection, team_id: Uuid, key_id: Option<Uuid>) -> sqlx::Result<Setup> {
    sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM inbox_channels WHERE team_id = $1 AND NOT closed) AS has_open_channel,
                k.name AS key_name, k.inbox_channel_ids AS key_channel_ids
         FROM (SELECT 1) one LEFT JOIN api_keys k ON k.id = $2 AND k.team_id = $1",
    )
    .bind(team_id)
    .bind(key_id)
    .fetch_one(conn)
    .await
}

/// Whether `person_id` can open `channel` (see [`teammates`]).
pub async fn can_open(conn: &mut PgConnection, channel: &Channel, person_id: Uuid) -> sqlx::Result<bool> {
    Ok(teammates(conn, channel).await?.iter().any(|t| t.person_id == person_id))
}

/// Whether `folder_id` is a folder of `channel_id`.
pub async fn folder_of_channel(conn: &mut PgConnection, channel_id: Uuid, folder_id: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM inbox_folders WHERE id = $2 AND channel_id = $1)").bind(channel_id).bind(folder_id).fetch_one(conn).await
}

/// The ids among `label_ids` that are neither the team's team-wide labels nor `channel_id`'s.
pub async fn labels_outside(conn: &mut PgConnection, team_id: Uuid, channel_id: Uuid, label_ids: &[Uuid]) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT w.label_id FROM unnest($3::uuid[]) AS w(label_id)
         WHERE NOT EXISTS (SELECT 1 FROM inbox_labels l WHERE l.id = w.label_id AND l.team_id = $1 AND (l.channel_id IS NULL OR l.channel_id = $2))",
    )
    .bind(team_id)
    .bind(channel_id)
    .bind(label_ids)
    .fetch_all(conn)
    .await
}

/// The team's open channels at any of `addresses` (mail was accepted for them).
pub async fn open_channels_at(conn: &mut PgConnection, team_id: Uuid, addresses: &[String]) -> sqlx::Result<Vec<Channel>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM inbox_channels c WHERE c.team_id = $1 AND NOT c.closed AND c.address = ANY(SELECT lower(a) FROM unnest($2::text[]) AS a) ORDER BY c.id"
    )))
    .bind(team_id)
    .bind(addresses)
    .fetch_all(conn)
    .await
}

/// The open shared channel of the team with this id or address (bare, any case): what the
/// `inbox` send field names.
pub async fn for_sending(conn: &mut PgConnection, team_id: Uuid, raw: &str) -> sqlx::Result<Option<Channel>> {
    let id = crate::ids::parse_id(raw);
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM inbox_channels c WHERE c.team_id = $1 AND NOT c.closed AND c.personal_person_id IS NULL
           AND (c.id = $2 OR c.address = lower(trim($3)))"
    )))
    .bind(team_id)
    .bind(id)
    .bind(raw)
    .fetch_optional(conn)
    .await
}

/// Records sent emails that named a channel: `(email id, channel id, Message-ID)`.
pub async fn link_emails(conn: &mut PgConnection, team_id: Uuid, links: &[(Uuid, Uuid, String)]) -> sqlx::Result<()> {
    if links.is_empty() {
        return Ok(());
    }
    let emails: Vec<Uuid> = links.iter().map(|l| l.0).collect();
    let channels: Vec<Uuid> = links.iter().map(|l| l.1).collect();
    let message_ids: Vec<&str> = links.iter().map(|l| l.2.as_str()).collect();
    sqlx::query("INSERT INTO inbox_email_links (email_id, team_id, channel_id, message_id) SELECT e, $1, c, m FROM unnest($2::uuid[], $3::uuid[], $4::text[]) AS l(e, c, m)")
        .bind(team_id)
        .bind(&emails)
        .bind(&channels)
        .bind(&message_ids)
        .execute(conn)
        .await?;
    Ok(())
}

/// The sent email of the team that named `channel_id` and whose Message-ID is one of
/// `message_ids` (a customer answering it).
pub async fn linked_email(conn: &mut PgConnection, team_id: Uuid, channel_id: Uuid, message_ids: &[String]) -> sqlx::Result<Option<Uuid>> {
    if message_ids.is_empty() {
        return Ok(None);
    }
    sqlx::query_scalar("SELECT email_id FROM inbox_email_links WHERE team_id = $1 AND channel_id = $2 AND message_id = ANY($3) ORDER BY email_id DESC LIMIT 1")
        .bind(team_id)
        .bind(channel_id)
        .bind(message_ids)
        .fetch_optional(conn)
        .await
}
