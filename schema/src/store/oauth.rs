//! OAuth 2.1: registered clients, authorization requests waiting for consent, codes, grants and
//! tokens. Secrets are looked up by their SHA-256.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A registered client: its ids and its metadata (RFC 7591).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Client {
    pub id: Uuid,
    pub client_id: String,
    #[sqlx(flatten)]
    pub metadata: Metadata,
    pub created_at: DateTime<Utc>,
}

/// Metadata as registered or replaced.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Metadata {
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
    pub scope: Option<String>,
    pub client_uri: Option<String>,
    pub logo_uri: Option<String>,
    pub software_id: Option<String>,
    pub software_version: Option<String>,
}

const CLIENT_COLUMNS: &str = "id, client_id, client_name, redirect_uris, grant_types, response_types, scope, client_uri, logo_uri, software_id, software_version, created_at";

/// Registrations in the last hour from `ip`, and in the last day from anywhere.
pub async fn recent_registrations(conn: &mut PgConnection, ip: Option<&str>) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM oauth_clients WHERE registered_from = $1 AND created_at > now() - interval '1 hour'),
                (SELECT count(*) FROM oauth_clients WHERE created_at > now() - interval '1 day')",
    )
    .bind(ip)
    .fetch_one(conn)
    .await
}

/// Registers a client.
pub async fn register(conn: &mut PgConnection, client_id: &str, registration_token_hash: &[u8], metadata: &Metadata, ip: Option<&str>) -> sqlx::Result<Client> {
    let query = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO oauth_clients (id, client_id, registration_token_hash, client_name, redirect_uris, grant_types, response_types, scope,
             client_uri, logo_uri, software_id, software_version, registered_from)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING {CLIENT_COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(client_id)
    .bind(registration_token_hash);
    bind_metadata(query, metadata).bind(ip).fetch_one(conn).await
}

type ClientQuery<'q> = sqlx::query::QueryAs<'q, sqlx::Postgres, Client, sqlx::postgres::PgArguments>;

/// Binds the metadata's nine fields, in the order of [`Metadata`].
fn bind_metadata<'q>(query: ClientQuery<'q>, metadata: &'q Metadata) -> ClientQuery<'q> {
    query
        .bind(&metadata.client_name)
        .bind(&metadata.redirect_uris)
        .bind(&metadata.grant_types)
        .bind(&metadata.response_types)
        .bind(&metadata.scope)
        .bind(&metadata.client_uri)
        .bind(&metadata.logo_uri)
        .bind(&metadata.software_id)
        .bind(&metadata.software_version)
}

/// A live client by its `client_id`.
pub async fn client(conn: &mut PgConnection, client_id: &str) -> sqlx::Result<Option<Client>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE client_id = $1 AND disabled_at IS NULL")))
        .bind(client_id)
        .fetch_optional(conn)
        .await
}

/// A live client by its id.
pub async fn client_by_id(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Client>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE id = $1 AND disabled_at IS NULL")))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The live client whose registration access token hashes to `hash`.
pub async fn client_by_registration(conn: &mut PgConnection, hash: &[u8]) -> sqlx::Result<Option<Client>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE registration_token_hash = $1 AND disabled_at IS NULL")))
        .bind(hash)
        .fetch_optional(conn)
        .await
}

/// Replaces a client's metadata.
pub async fn update_client(conn: &mut PgConnection, id: Uuid, metadata: &Metadata) -> sqlx::Result<Client> {
    let query = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE oauth_clients SET client_name = $2, redirect_uris = $3, grant_types = $4, response_types = $5, scope = $6,
             client_uri = $7, logo_uri = $8, software_id = $9, software_version = $10
         WHERE id = $1 RETURNING {CLIENT_COLUMNS}"
    )))
    .bind(id);
    bind_metadata(query, metadata).fetch_one(conn).await
}

/// Disables a client and revokes its grants (and so every token under them).
pub async fn disable_client(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE oauth_clients SET disabled_at = now() WHERE id = $1").bind(id).execute(&mut *conn).await?;
    sqlx::query("UPDATE oauth_grants SET revoked_at = now() WHERE client_id = $1 AND revoked_at IS NULL").bind(id).execute(conn).await?;
    Ok(())
}

/// An authorization request waiting for the person's answer.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AuthRequest {
    pub id: Uuid,
    pub client_id: Uuid,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub scopes: Vec<String>,
    pub state: String,
    pub resource: Option<String>,
}

/// Stores an authorization request under the hash of its consent-page token.
#[allow(clippy::too_many_arguments)]
pub async fn insert_request(
    conn: &mut PgConnection,
    token_hash: &[u8],
    client_id: Uuid,
    redirect_uri: &str,
    code_challenge: &str,
    scopes: &[String],
    state: &str,
    resource: Option<&str>,
    expires_at: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO oauth_requests (id, token_hash, client_id, redirect_uri, code_challenge, scopes, state, resource, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(crate::ids::new_id())
    .bind(token_hash)
    .bind(client_id)
    .bind(redirect_uri)
    .bind(code_challenge)
    .bind(scopes)
    .bind(state)
    .bind(resource)
    .bind(expires_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The unexpired request of a consent page's token.
pub async fn request(conn: &mut PgConnection, token_hash: &[u8]) -> sqlx::Result<Option<AuthRequest>> {
    sqlx::query_as(
        "SELECT id, client_id, redirect_uri, code_challenge, scopes, state, resource FROM oauth_requests
         WHERE token_hash = $1 AND expires_at > now()",
    )
    .bind(token_hash)
    .fetch_optional(conn)
    .await
}

/// Ends a request (answered, either way); `false` when another answer took it first.
pub async fn finish_request(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM oauth_requests WHERE id = $1 OR expires_at < now() - interval '1 day'").bind(id).execute(conn).await?;
    Ok(done.rows_affected() >= 1)
}

/// Gives (or widens to exactly `scopes`) the live grant of a person to a client in a team.
pub async fn upsert_grant(conn: &mut PgConnection, team_id: Uuid, person_id: Uuid, client_id: Uuid, scopes: &[String]) -> sqlx::Result<Uuid> {
    sqlx::query_scalar(
        "INSERT INTO oauth_grants (id, team_id, person_id, client_id, scopes) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (team_id, person_id, client_id) WHERE revoked_at IS NULL
         DO UPDATE SET scopes = ARRAY(SELECT DISTINCT unnest(oauth_grants.scopes || excluded.scopes) ORDER BY 1), updated_at = now()
         RETURNING id",
    )
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(person_id)
    .bind(client_id)
    .bind(scopes)
    .fetch_one(conn)
    .await
}

/// An authorization code as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Code {
    pub code_hash: Vec<u8>,
    pub grant_id: Uuid,
    pub client_id: Uuid,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub scopes: Vec<String>,
    pub resource: Option<String>,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
}

/// Stores a code.
pub async fn insert_code(conn: &mut PgConnection, code: &Code) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO oauth_codes (code_hash, grant_id, client_id, redirect_uri, code_challenge, scopes, resource, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&code.code_hash)
    .bind(code.grant_id)
    .bind(code.client_id)
    .bind(&code.redirect_uri)
    .bind(&code.code_challenge)
    .bind(&code.scopes)
    .bind(&code.resource)
    .bind(code.expires_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// A code by its hash, locked, used or not.
pub async fn code(conn: &mut PgConnection, hash: &[u8]) -> sqlx::Result<Option<Code>> {
    sqlx::query_as(
        "SELECT code_hash, grant_id, client_id, redirect_uri, code_challenge, scopes, resource, expires_at, used_at
         FROM oauth_codes WHERE code_hash = $1 FOR UPDATE",
    )
    .bind(hash)
    .fetch_optional(conn)
    .await
}

/// Marks a code used.
pub async fn use_code(conn: &mut PgConnection, hash: &[u8]) -> sqlx::Result<()> {
    sqlx::query("UPDATE oauth_codes SET used_at = now() WHERE code_hash = $1").bind(hash).execute(conn).await?;
    Ok(())
}

/// A token to store.
pub struct NewToken<'a> {
    pub token_hash: &'a [u8],
    pub kind: &'static str,
    pub grant_id: Uuid,
    pub family_id: Uuid,
    pub code_hash: Option<&'a [u8]>,
    pub scopes: &'a [String],
    pub expires_at: DateTime<Utc>,
}

/// Stores a token.
pub async fn insert_token(conn: &mut PgConnection, token: &NewToken<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO oauth_tokens (id, token_hash, kind, grant_id, family_id, code_hash, scopes, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(crate::ids::new_id())
    .bind(token.token_hash)
    .bind(token.kind)
    .bind(token.grant_id)
    .bind(token.family_id)
    .bind(token.code_hash)
    .bind(token.scopes)
    .bind(token.expires_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// A refresh token as stored, with its grant's client and state.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Refresh {
    pub id: Uuid,
    pub grant_id: Uuid,
    pub family_id: Uuid,
    pub client_id: Uuid,
    pub scopes: Vec<String>,
    pub grant_scopes: Vec<String>,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub grant_revoked: bool,
}

/// A refresh token by its hash, locked.
pub async fn refresh(conn: &mut PgConnection, hash: &[u8]) -> sqlx::Result<Option<Refresh>> {
    sqlx::query_as(
        "SELECT t.id, t.grant_id, t.family_id, g.client_id, t.scopes, g.scopes AS grant_scopes, t.expires_at, t.used_at, t.revoked_at,
                g.revoked_at IS NOT NULL AS grant_revoked
         FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
         WHERE t.token_hash = $1 AND t.kind = 'refresh' FOR UPDATE OF t",
    )
    .bind(hash)
    .fetch_optional(conn)
    .await
}

/// Marks a refresh token rotated.
pub async fn use_refresh(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE oauth_tokens SET used_at = now() WHERE id = $1").bind(id).execute(conn).await?;
    Ok(())
}

/// Revokes every token of a family (a refresh token used twice, a code replayed).
pub async fn revoke_family(conn: &mut PgConnection, family_id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE oauth_tokens SET revoked_at = now() WHERE family_id = $1 AND revoked_at IS NULL").bind(family_id).execute(conn).await?;
    Ok(())
}

/// Revokes the tokens issued for a code (it was replayed).
pub async fn revoke_issued_for_code(conn: &mut PgConnection, code_hash: &[u8]) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE oauth_tokens SET revoked_at = now()
         WHERE family_id IN (SELECT family_id FROM oauth_tokens WHERE code_hash = $1) AND revoked_at IS NULL",
    )
    .bind(code_hash)
    .execute(conn)
    .await?;
    Ok(())
}

/// Revokes a token of `client_id` (RFC 7009): a refresh token takes its family with it. Unknown
/// tokens, and another client's, change nothing.
pub async fn revoke_token(conn: &mut PgConnection, hash: &[u8], client_id: Option<Uuid>) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE oauth_tokens t SET revoked_at = now()
         FROM oauth_tokens r JOIN oauth_grants g ON g.id = r.grant_id
         WHERE r.token_hash = $1 AND ($2::uuid IS NULL OR g.client_id = $2)
           AND t.revoked_at IS NULL
           AND (t.id = r.id OR (r.kind = 'refresh' AND t.family_id = r.family_id))",
    )
    .bind(hash)
    .bind(client_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// What a live access token acts as: its member in its team, with the grant's scopes.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenCaller {
    pub grant_id: Uuid,
    pub team_id: Uuid,
    pub person_id: Uuid,
    pub role: String,
    pub scopes: Vec<String>,
    pub expires_at: DateTime<Utc>,
    pub risk_state: crate::model::RiskState,
}

/// The caller of a live access token: unexpired, unrevoked, its grant and client live, its
/// person still a member of the team.
pub async fn access(conn: &mut PgConnection, hash: &[u8]) -> sqlx::Result<Option<TokenCaller>> {
    sqlx::query_as(
        "SELECT g.id AS grant_id, g.team_id, g.person_id, m.role, t.scopes, t.expires_at, team.risk_state
         FROM oauth_tokens t
         JOIN oauth_grants g ON g.id = t.grant_id AND g.revoked_at IS NULL
         JOIN oauth_clients c ON c.id = g.client_id AND c.disabled_at IS NULL
         JOIN memberships m ON m.team_id = g.team_id AND m.person_id = g.person_id
         JOIN teams team ON team.id = g.team_id
         WHERE t.token_hash = $1 AND t.kind = 'access' AND t.revoked_at IS NULL AND t.expires_at > now()",
    )
    .bind(hash)
    .fetch_optional(conn)
    .await
}

/// A grant as listed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Grant {
    pub id: Uuid,
    pub client_id: String,
    pub client_name: String,
    pub person_id: Uuid,
    pub email: String,
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The team's live grants, newest first.
pub async fn grants(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<Vec<Grant>> {
    sqlx::query_as(
        "SELECT g.id, c.client_id, c.client_name, g.person_id, p.email, g.scopes, g.created_at, g.updated_at
         FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client_id JOIN people p ON p.id = g.person_id
         WHERE g.team_id = $1 AND g.revoked_at IS NULL ORDER BY g.created_at DESC, g.id DESC LIMIT 500",
    )
    .bind(team_id)
    .fetch_all(conn)
    .await
}

/// Revokes one of the team's live grants; `false` when it has none with that id.
pub async fn revoke_grant(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE oauth_grants SET revoked_at = now() WHERE team_id = $1 AND id = $2 AND revoked_at IS NULL")
        .bind(team_id)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
