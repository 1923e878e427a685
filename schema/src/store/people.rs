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
    /// Set once the person has confirmed a TOTP authenticator: sign-in then asks for a code.
    pub totp_enabled_at: Option<DateTime<Utc>>,
}

/// Inserts an account (`from`: the client address of the sign-up); `false` when the address
/// already has one.
pub async fn insert(conn: &mut PgConnection, id: Uuid, email: &str, name: &str, password_hash: &str, from: Option<&str>) -> sqlx::Result<bool> {
    let done = sqlx::query("INSERT INTO people (id, email, name, password_hash, signed_up_from) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (email) DO NOTHING")
        .bind(id)
        .bind(email)
        .bind(name)
        .bind(password_hash)
        .bind(from)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Accounts signed up from a client address in the last hour.
pub async fn recent_sign_ups(conn: &mut PgConnection, from: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM people WHERE signed_up_from = $1 AND created_at > now() - interval '1 hour'")
        .bind(from)
        .fetch_one(conn)
        .await
}

/// The account of an address (bare, lower-case).
pub async fn by_email(conn: &mut PgConnection, email: &str) -> sqlx::Result<Option<Person>> {
    sqlx::query_as("SELECT id, email, name, password_hash, email_verified_at, totp_enabled_at FROM people WHERE email = $1")
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
    pub mfa_enabled: bool,
    pub team_id: Option<Uuid>,
    pub team_name: Option<String>,
    pub role: Option<String>,
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
}

/// A session with its person and the role in its current team (the membership is read on
/// every request, so a person removed from the team keeps the session but not the team).
const SESSION_SELECT: &str = "SELECT s.id, s.person_id, p.email, p.name, p.email_verified_at, p.totp_enabled_at IS NOT NULL AS mfa_enabled, m.team_id, t.name AS team_name, m.role, s.csrf_token, s.expires_at
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

/// A person by id.
pub async fn by_id(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Person>> {
    sqlx::query_as("SELECT id, email, name, password_hash, email_verified_at, totp_enabled_at FROM people WHERE id = $1")
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Marks the person's address as confirmed (a no-op when it already is).
pub async fn confirm_email(conn: &mut PgConnection, person_id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE people SET email_verified_at = coalesce(email_verified_at, now()), updated_at = now() WHERE id = $1")
        .bind(person_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Replaces the password and ends every session of the person.
pub async fn set_password(conn: &mut PgConnection, person_id: Uuid, password_hash: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE people SET password_hash = $2, updated_at = now() WHERE id = $1").bind(person_id).bind(password_hash).execute(&mut *conn).await?;
    sqlx::query("DELETE FROM sessions WHERE person_id = $1").bind(person_id).execute(conn).await?;
    Ok(())
}

/// Stores a mailed link's token for `purpose` (`verify_email`, `reset_password`).
pub async fn insert_token(conn: &mut PgConnection, person_id: Uuid, purpose: &str, token_hash: &[u8], expires_at: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO person_tokens (id, person_id, purpose, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(crate::ids::new_id())
        .bind(person_id)
        .bind(purpose)
        .bind(token_hash)
        .bind(expires_at)
        .execute(conn)
        .await?;
    Ok(())
}

/// Links of `purpose` mailed to the person since `since` (to cap how many one address gets).
pub async fn tokens_since(conn: &mut PgConnection, person_id: Uuid, purpose: &str, since: DateTime<Utc>) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM person_tokens WHERE person_id = $1 AND purpose = $2 AND created_at > $3")
        .bind(person_id)
        .bind(purpose)
        .bind(since)
        .fetch_one(conn)
        .await
}

/// The person of an unused, unexpired link of `purpose`, without using it.
pub async fn token_owner(conn: &mut PgConnection, purpose: &str, token_hash: &[u8]) -> sqlx::Result<Option<Person>> {
    sqlx::query_as(
        "SELECT p.id, p.email, p.name, p.password_hash, p.email_verified_at, p.totp_enabled_at FROM person_tokens t JOIN people p ON p.id = t.person_id
         WHERE t.token_hash = $1 AND t.purpose = $2 AND t.used_at IS NULL AND t.expires_at > now()",
    )
    .bind(token_hash)
    .bind(purpose)
    .fetch_optional(conn)
    .await
}

/// Uses a link of `purpose` once: answers its person, or `None` when it is unknown, used or
/// expired. Every other open link of the same purpose for that person is used up with it.
pub async fn use_token(conn: &mut PgConnection, purpose: &str, token_hash: &[u8]) -> sqlx::Result<Option<Uuid>> {
    let person: Option<Uuid> = sqlx::query_scalar(
        "UPDATE person_tokens SET used_at = now()
         WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now() RETURNING person_id",
    )
    .bind(token_hash)
    .bind(purpose)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(person_id) = person {
        sqlx::query("UPDATE person_tokens SET used_at = now() WHERE person_id = $1 AND purpose = $2 AND used_at IS NULL")
            .bind(person_id)
            .bind(purpose)
            .execute(conn)
            .await?;
    }
    Ok(person)
}

/// A person's membership in one team: their role, if they belong to it.
pub async fn role_in(conn: &mut PgConnection, team_id: Uuid, person_id: Uuid) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT role FROM memberships WHERE team_id = $1 AND person_id = $2")
        .bind(team_id)
        .bind(person_id)
        .fetch_optional(conn)
        .await
}

/// What changing or removing a member did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberChange {
    Done,
    /// The person is not a member of the team.
    NotMember,
    /// It would leave the team without an admin.
    LastAdmin,
}

/// Locks the team's memberships (so two changes cannot both remove "the other" admin) and
/// answers how many admins it has and the person's role.
async fn lock_members(conn: &mut PgConnection, team_id: Uuid, person_id: Uuid) -> sqlx::Result<(i64, Option<String>)> {
    let roles: Vec<(Uuid, String)> = sqlx::query_as("SELECT person_id, role FROM memberships WHERE team_id = $1 ORDER BY person_id FOR UPDATE")
        .bind(team_id)
        .fetch_all(conn)
        .await?;
    let admins = roles.iter().filter(|(_, role)| role == "admin").count() as i64;
    Ok((admins, roles.into_iter().find(|(id, _)| *id == person_id).map(|(_, role)| role)))
}

/// Gives a member another role; a team keeps at least one admin.
pub async fn set_role(conn: &mut PgConnection, team_id: Uuid, person_id: Uuid, role: &str) -> sqlx::Result<MemberChange> {
    match lock_members(conn, team_id, person_id).await? {
        (_, None) => return Ok(MemberChange::NotMember),
        (1, Some(current)) if current == "admin" && role != "admin" => return Ok(MemberChange::LastAdmin),
        _ => {}
    }
    sqlx::query("UPDATE memberships SET role = $3 WHERE team_id = $1 AND person_id = $2").bind(team_id).bind(person_id).bind(role).execute(conn).await?;
    Ok(MemberChange::Done)
}

/// Removes a member (their sessions in the team keep the person but lose the team); a team
/// keeps at least one admin.
pub async fn remove_member(conn: &mut PgConnection, team_id: Uuid, person_id: Uuid) -> sqlx::Result<MemberChange> {
    match lock_members(conn, team_id, person_id).await? {
        (_, None) => return Ok(MemberChange::NotMember),
        (1, Some(current)) if current == "admin" => return Ok(MemberChange::LastAdmin),
        _ => {}
    }
    sqlx::query("DELETE FROM memberships WHERE team_id = $1 AND person_id = $2").bind(team_id).bind(person_id).execute(&mut *conn).await?;
    sqlx::query("UPDATE sessions SET team_id = NULL WHERE person_id = $1 AND team_id = $2").bind(person_id).bind(team_id).execute(conn).await?;
    Ok(MemberChange::Done)
}

/// An invitation to a team.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Invitation {
    pub id: Uuid,
    pub team_id: Uuid,
    pub team_name: String,
    pub email: String,
    pub role: String,
    pub invited_by_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

const INVITATION_SELECT: &str = "SELECT i.id, i.team_id, t.name AS team_name, i.email, i.role, p.name AS invited_by_name,
            i.created_at, i.expires_at, i.accepted_at, i.revoked_at
     FROM invitations i JOIN teams t ON t.id = i.team_id LEFT JOIN people p ON p.id = i.invited_by";

/// Invites `email` to the team with a role; an open invitation of the same address is revoked
/// by it.
pub async fn invite(
    conn: &mut PgConnection,
    team_id: Uuid,
    email: &str,
    role: &str,
    invited_by: Option<Uuid>,
    token_hash: &[u8],
    expires_at: DateTime<Utc>,
) -> sqlx::Result<Invitation> {
    sqlx::query("UPDATE invitations SET revoked_at = now() WHERE team_id = $1 AND email = $2 AND accepted_at IS NULL AND revoked_at IS NULL")
        .bind(team_id)
        .bind(email)
        .execute(&mut *conn)
        .await?;
    let id = crate::ids::new_id();
    sqlx::query("INSERT INTO invitations (id, team_id, email, role, invited_by, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)")
        .bind(id)
        .bind(team_id)
        .bind(email)
        .bind(role)
        .bind(invited_by)
        .bind(token_hash)
        .bind(expires_at)
        .execute(&mut *conn)
        .await?;
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{INVITATION_SELECT} WHERE i.id = $1"))).bind(id).fetch_one(conn).await
}

/// The team's invitations, newest first.
pub async fn invitations(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Vec<Invitation>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{INVITATION_SELECT} WHERE i.team_id = $1 ORDER BY i.created_at DESC, i.id DESC LIMIT 500")))
        .bind(team_id)
        .fetch_all(conn)
        .await
}

/// Revokes one of the team's open invitations; `None` when the team has no such invitation.
pub async fn revoke_invitation(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Invitation>> {
    sqlx::query("UPDATE invitations SET revoked_at = coalesce(revoked_at, now()) WHERE team_id = $1 AND id = $2 AND accepted_at IS NULL")
        .bind(team_id)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{INVITATION_SELECT} WHERE i.team_id = $1 AND i.id = $2")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The invitation of a link, whatever its state (locked, when accepting it).
pub async fn invitation_by_token(conn: &mut PgConnection, token_hash: &[u8]) -> sqlx::Result<Option<Invitation>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{INVITATION_SELECT} WHERE i.token_hash = $1 FOR UPDATE OF i")))
        .bind(token_hash)
        .fetch_optional(conn)
        .await
}

/// Accepts an invitation: the person joins the team with its role (keeping a higher place they
/// already hold is not attempted: an existing membership takes the invitation's role).
pub async fn accept_invitation(conn: &mut PgConnection, invitation: &Invitation, person_id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE invitations SET accepted_at = now() WHERE id = $1").bind(invitation.id).execute(&mut *conn).await?;
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) VALUES ($1, $2, $3) ON CONFLICT (team_id, person_id) DO UPDATE SET role = excluded.role")
        .bind(invitation.team_id)
        .bind(person_id)
        .bind(&invitation.role)
        .execute(conn)
        .await?;
    Ok(())
}

/// A person's second factor: the sealed TOTP secret, when it is confirmed, and the last time
/// step a code was accepted for.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Totp {
    pub totp_secret: Option<Vec<u8>>,
    pub totp_enabled_at: Option<DateTime<Utc>>,
    pub totp_last_step: Option<i64>,
}

/// The person's TOTP state (locked: checking a code moves its last step).
pub async fn totp(conn: &mut PgConnection, person_id: Uuid) -> sqlx::Result<Totp> {
    sqlx::query_as("SELECT totp_secret, totp_enabled_at, totp_last_step FROM people WHERE id = $1 FOR UPDATE")
        .bind(person_id)
        .fetch_one(conn)
        .await
}

/// Starts an enrolment with a new sealed secret (replacing an unconfirmed one).
pub async fn begin_totp(conn: &mut PgConnection, person_id: Uuid, sealed: &[u8]) -> sqlx::Result<()> {
    sqlx::query("UPDATE people SET totp_secret = $2, totp_enabled_at = NULL, totp_last_step = NULL WHERE id = $1")
        .bind(person_id)
        .bind(sealed)
        .execute(conn)
        .await?;
    Ok(())
}

/// Records the time step of an accepted code, so it is not accepted again.
pub async fn spend_totp_step(conn: &mut PgConnection, person_id: Uuid, step: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE people SET totp_last_step = $2 WHERE id = $1").bind(person_id).bind(step).execute(conn).await?;
    Ok(())
}

/// Turns TOTP on with fresh recovery codes (stored as SHA-256), replacing any earlier ones.
pub async fn enable_totp(conn: &mut PgConnection, person_id: Uuid, step: i64, recovery_hashes: &[Vec<u8>]) -> sqlx::Result<()> {
    sqlx::query("UPDATE people SET totp_enabled_at = now(), totp_last_step = $2 WHERE id = $1").bind(person_id).bind(step).execute(&mut *conn).await?;
    sqlx::query("DELETE FROM recovery_codes WHERE person_id = $1").bind(person_id).execute(&mut *conn).await?;
    sqlx::query("INSERT INTO recovery_codes (person_id, code_hash) SELECT $1, unnest($2::bytea[])")
        .bind(person_id)
        .bind(recovery_hashes)
        .execute(conn)
        .await?;
    Ok(())
}

/// Turns TOTP off and forgets the recovery codes.
pub async fn disable_totp(conn: &mut PgConnection, person_id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE people SET totp_secret = NULL, totp_enabled_at = NULL, totp_last_step = NULL WHERE id = $1").bind(person_id).execute(&mut *conn).await?;
    sqlx::query("DELETE FROM recovery_codes WHERE person_id = $1").bind(person_id).execute(conn).await?;
    Ok(())
}

/// Uses one unused recovery code; `false` when the person has no such code.
pub async fn use_recovery_code(conn: &mut PgConnection, person_id: Uuid, code_hash: &[u8]) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE recovery_codes SET used_at = now() WHERE person_id = $1 AND code_hash = $2 AND used_at IS NULL")
        .bind(person_id)
        .bind(code_hash)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
