//! Single sign-on: a team's OpenID provider, the email domains it covers (one team per
//! domain), and the sign-ins on their way through the provider.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A team's single sign-on, as stored (the client secret sealed).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Sso {
    pub team_id: Uuid,
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Vec<u8>,
    pub enforced: bool,
    /// Lower-case, sorted.
    pub domains: Vec<String>,
    pub updated_at: DateTime<Utc>,
}

const SELECT: &str = "SELECT s.team_id, s.issuer, s.client_id, s.client_secret, s.enforced, s.updated_at,
        ARRAY(SELECT d.domain FROM sso_domains d WHERE d.team_id = s.team_id ORDER BY d.domain) AS domains
     FROM team_sso s";

/// The team's single sign-on.
pub async fn get(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Option<Sso>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{SELECT} WHERE s.team_id = $1"))).bind(team_id).fetch_optional(conn).await
}

/// The single sign-on that covers an email domain (lower-case).
pub async fn for_domain(conn: &mut PgConnection, domain: &str) -> sqlx::Result<Option<Sso>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{SELECT} JOIN sso_domains c ON c.team_id = s.team_id WHERE c.domain = $1")))
        .bind(domain)
        .fetch_optional(conn)
        .await
}

/// What a team saves.
pub struct NewSso<'a> {
    pub team_id: Uuid,
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub client_secret: &'a [u8],
    pub enforced: bool,
    pub domains: &'a [String],
}

/// Saves a team's single sign-on and replaces its domains. `Err(domain)` (and nothing kept:
/// roll the transaction back) when another team's single sign-on covers one of them.
pub async fn save(conn: &mut PgConnection, new: &NewSso<'_>) -> sqlx::Result<Result<(), String>> {
    let taken: Option<String> =
        sqlx::query_scalar("SELECT domain FROM sso_domains WHERE domain = ANY($1) AND team_id <> $2 ORDER BY domain LIMIT 1")
            .bind(new.domains)
            .bind(new.team_id)
            .fetch_optional(&mut *conn)
            .await?;
    if let Some(domain) = taken {
        return Ok(Err(domain));
    }
    sqlx::query(
        "INSERT INTO team_sso (team_id, issuer, client_id, client_secret, enforced) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (team_id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id,
             client_secret = excluded.client_secret, enforced = excluded.enforced, updated_at = now()",
    )
    .bind(new.team_id)
    .bind(new.issuer)
    .bind(new.client_id)
    .bind(new.client_secret)
    .bind(new.enforced)
    .execute(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM sso_domains WHERE team_id = $1 AND NOT domain = ANY($2)").bind(new.team_id).bind(new.domains).execute(&mut *conn).await?;
    let added = sqlx::query(
        "INSERT INTO sso_domains (domain, team_id) SELECT d, $2 FROM unnest($1::text[]) AS d
         WHERE NOT EXISTS (SELECT 1 FROM sso_domains x WHERE x.domain = d AND x.team_id = $2)",
    )
    .bind(new.domains)
    .bind(new.team_id)
    .execute(&mut *conn)
    .await;
    match added {
        // Another team saved one of these domains since the check above.
        Err(sqlx::Error::Database(e)) if e.constraint() == Some("sso_domains_pkey") => Ok(Err(String::new())),
        Err(e) => Err(e),
        Ok(_) => Ok(Ok(())),
    }
}

/// Removes a team's single sign-on; `false` when it had none.
pub async fn delete(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<bool> {
    Ok(sqlx::query("DELETE FROM team_sso WHERE team_id = $1").bind(team_id).execute(conn).await?.rows_affected() > 0)
}

/// The team whose enforced single sign-on covers an email domain.
pub async fn enforced_team(conn: &mut PgConnection, domain: &str) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar("SELECT s.team_id FROM sso_domains d JOIN team_sso s ON s.team_id = d.team_id WHERE d.domain = $1 AND s.enforced")
        .bind(domain)
        .fetch_optional(conn)
        .await
}

/// A sign-in on its way through the provider.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Login {
    pub team_id: Uuid,
    pub nonce: String,
    pub pkce_verifier: String,
}

/// Records a started sign-in (and forgets the expired ones).
pub async fn start_login(conn: &mut PgConnection, state_hash: &[u8], login: &Login, expires_at: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM sso_logins WHERE expires_at < now()").execute(&mut *conn).await?;
    sqlx::query("INSERT INTO sso_logins (state_hash, team_id, nonce, pkce_verifier, expires_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(state_hash)
        .bind(login.team_id)
        .bind(&login.nonce)
        .bind(&login.pkce_verifier)
        .bind(expires_at)
        .execute(conn)
        .await?;
    Ok(())
}

/// Takes a started sign-in by its state's hash: once, and only before it expires.
pub async fn take_login(conn: &mut PgConnection, state_hash: &[u8]) -> sqlx::Result<Option<Login>> {
    sqlx::query_as("DELETE FROM sso_logins WHERE state_hash = $1 RETURNING team_id, nonce, pkce_verifier, expires_at > now() AS live")
        .bind(state_hash)
        .fetch_optional(conn)
        .await
        .map(|row: Option<LoginRow>| row.filter(|r| r.live).map(|r| Login { team_id: r.team_id, nonce: r.nonce, pkce_verifier: r.pkce_verifier }))
}

#[derive(sqlx::FromRow)]
struct LoginRow {
    team_id: Uuid,
    nonce: String,
    pkce_verifier: String,
    live: bool,
}

/// The names a team may cover with single sign-on: its verified domains and the registrable
/// domains holding them.
pub async fn coverable_domains(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT DISTINCT n FROM domains d CROSS JOIN LATERAL (VALUES (d.name), (d.zone)) AS v(n)
         WHERE d.team_id = $1 AND d.status = 'verified' AND NOT d.development ORDER BY n",
    )
    .bind(team_id)
    .fetch_all(conn)
    .await
}
