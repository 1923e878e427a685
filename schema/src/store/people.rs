//! People: accounts, their memberships in teams, dashboard sessions, and failed sign-ins.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// An account as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Person {
    pub id: Uuid,
    pub email: String,
    pub name: String,
    pub password_hash: String,
    pub email_verified_at: Option<DateTime<Utc>>,
}

/// Inserts an account; `false` when the address already has one.
pub async fn insert(conn: &mut PgConnection, id: Uuid, email: &str, name: &str, password_hash: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("INSERT INTO people (id, email, name, password_hash) VALUES ($1, $2, $3, $4) ON CONFLICT (email) DO NOTHING")
        .bind(id)
        .bind(email)
        .bind(name)
        .bind(password_hash)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// The account of an address (bare, lower-case).
pub async fn by_email(conn: &mut PgConnection, email: &str) -> sqlx::Result<Option<Person>> {
    sqlx::query_as("SELECT id, email, name, password_hash, email_verified_at FROM people WHERE email = $1")
        .bind(email)
        .fetch_optional(conn)
        .await
}

/// Makes a person a member of a team with a role.
pub async fn add_member(conn: &mut PgConnection, team_id: Uuid, person_id: Uuid, role: &str) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) VALUES ($1, $2, $3)")
        .bind(team_id)
        .bind(person_id)
        .bind(role)
        .execute(conn)
        .await?;
    Ok(())
}

/// The team a person signs in to: the oldest of their memberships.
pub async fn first_team(conn: &mut PgConnection, person_id: Uuid) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar("SELECT team_id FROM memberships WHERE person_id = $1 ORDER BY created_at, team_id LIMIT 1")
        .bind(person_id)
        .fetch_optional(conn)
        .await
}

/// A live session with its person and the role in its current team.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Session {
    pub id: Uuid,
    pub person_id: Uuid,
    pub email: String,
    pub name: String,
    pub email_verified_at: Option<DateTime<Utc>>,
    pub team_id: Option<Uuid>,
    pub team_name: Option<String>,
    pub role: Option<String>,
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
}

/// A session with its person and the role in its current team (the membership is read on
/// every request, so a person removed from the team keeps the session but not the team).
const SESSION_SELECT: &str = "SELECT s.id, s.person_id, p.email, p.name, p.email_verified_at, m.team_id, t.name AS team_name, m.role, s.csrf_token, s.expires_at
     FROM sessions s JOIN people p ON p.id = s.person_id
     LEFT JOIN memberships m ON m.team_id = s.team_id AND m.person_id = s.person_id
     LEFT JOIN teams t ON t.id = m.team_id";

/// Opens a session (its token stored as `token_hash` only).
pub async fn open_session(
    conn: &mut PgConnection,
    person_id: Uuid,
    team_id: Option<Uuid>,
    token_hash: &[u8],
    csrf_token: &str,
    expires_at: DateTime<Utc>,
) -> sqlx::Result<Uuid> {
    let id = crate::ids::new_id();
    sqlx::query("INSERT INTO sessions (id, token_hash, person_id, team_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(id)
        .bind(token_hash)
        .bind(person_id)
        .bind(team_id)
        .bind(csrf_token)
        .bind(expires_at)
        .execute(conn)
        .await?;
    Ok(id)
}

/// The live session whose cookie token hashes to `token_hash`.
pub async fn session(conn: &mut PgConnection, token_hash: &[u8]) -> sqlx::Result<Option<Session>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{SESSION_SELECT} WHERE s.token_hash = $1 AND s.expires_at > now()")))
    .bind(token_hash)
    .fetch_optional(conn)
    .await
}

/// A live session by its id (after a change to it).
pub async fn session_by_id(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Session>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{SESSION_SELECT} WHERE s.id = $1 AND s.expires_at > now()")))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Ends a session.
pub async fn close_session(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM sessions WHERE id = $1").bind(id).execute(conn).await?;
    Ok(())
}

/// Failed sign-ins since `since`: for the address, and from the client address.
pub async fn failures(conn: &mut PgConnection, email: &str, ip_address: Option<&str>, since: DateTime<Utc>) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM sign_in_failures WHERE email = $1 AND created_at > $3),
                (SELECT count(*) FROM sign_in_failures WHERE ip_address = $2 AND created_at > $3)",
    )
    .bind(email)
    .bind(ip_address)
    .bind(since)
    .fetch_one(conn)
    .await
}

/// Records a failed sign-in.
pub async fn record_failure(conn: &mut PgConnection, email: &str, ip_address: Option<&str>) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO sign_in_failures (id, email, ip_address) VALUES ($1, $2, $3)")
        .bind(crate::ids::new_id())
        .bind(email)
        .bind(ip_address)
        .execute(conn)
        .await?;
    Ok(())
}

/// Forgets an address's failed sign-ins (after a right password).
pub async fn clear_failures(conn: &mut PgConnection, email: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM sign_in_failures WHERE email = $1").bind(email).execute(conn).await?;
    Ok(())
}

/// A member of a team.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Member {
    pub person_id: Uuid,
    pub email: String,
    pub name: String,
    pub role: String,
    pub joined_at: DateTime<Utc>,
}

/// The team's members, in the order they joined.
pub async fn members(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Vec<Member>> {
    sqlx::query_as(
        "SELECT p.id AS person_id, p.email, p.name, m.role, m.created_at AS joined_at
         FROM memberships m JOIN people p ON p.id = m.person_id WHERE m.team_id = $1 ORDER BY m.created_at, p.id",
    )
    .bind(team_id)
    .fetch_all(conn)
    .await
}

/// A team a person belongs to.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Membership {
    pub team_id: Uuid,
    pub team_name: String,
    pub role: String,
    pub joined_at: DateTime<Utc>,
}

/// The teams a person belongs to, in the order they joined.
pub async fn memberships(conn: &mut PgConnection, person_id: Uuid) -> sqlx::Result<Vec<Membership>> {
    sqlx::query_as(
        "SELECT m.team_id, t.name AS team_name, m.role, m.created_at AS joined_at
         FROM memberships m JOIN teams t ON t.id = m.team_id WHERE m.person_id = $1 ORDER BY m.created_at, m.team_id",
    )
    .bind(person_id)
    .fetch_all(conn)
    .await
}

/// Makes `team_id` the session's current team.
pub async fn switch_team(conn: &mut PgConnection, session_id: Uuid, team_id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE sessions SET team_id = $2 WHERE id = $1").bind(session_id).bind(team_id).execute(conn).await?;
    Ok(())
}
