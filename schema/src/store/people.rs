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

/// The live session whose cookie token hashes to `token_hash`. The role is read through the
/// membership, so a person removed from the team keeps the session but not the team.
pub async fn session(conn: &mut PgConnection, token_hash: &[u8]) -> sqlx::Result<Option<Session>> {
    sqlx::query_as(
        "SELECT s.id, s.person_id, p.email, p.name, p.email_verified_at, m.team_id, t.name AS team_name, m.role, s.csrf_token, s.expires_at
         FROM sessions s JOIN people p ON p.id = s.person_id
         LEFT JOIN memberships m ON m.team_id = s.team_id AND m.person_id = s.person_id
         LEFT JOIN teams t ON t.id = m.team_id
         WHERE s.token_hash = $1 AND s.expires_at > now()",
    )
    .bind(token_hash)
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
