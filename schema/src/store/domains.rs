//! Sending domains and the status of each of their DNS records.

use crate::domain::{DomainName, DomainStatus, RecordKind, RecordStatus, Region, Tls};
use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A domain as stored (its DKIM private keys stay in [`SigningKey`]).
#[derive(Debug, Clone, sqlx::FromRow, serde::Deserialize)]
pub struct Domain {
    pub id: Uuid,
    pub team_id: Uuid,
    pub name: String,
    pub zone: String,
    pub region: Region,
    pub tls: Tls,
    pub custom_return_path: String,
    pub receiving_host: String,
    pub sending_enabled: bool,
    pub receiving_enabled: bool,
    pub open_tracking: bool,
    pub click_tracking: bool,
    pub status: DomainStatus,
    pub mail_from_code: String,
    pub dkim_public_key: String,
    pub dkim_next_public_key: Option<String>,
    pub dkim_rotation_started_at: Option<DateTime<Utc>>,
    pub verified_at: Option<DateTime<Utc>>,
    pub first_verified_at: Option<DateTime<Utc>>,
    pub checked_at: Option<DateTime<Utc>>,
    pub last_sent_at: Option<DateTime<Utc>>,
    pub autoconfigure_provider: Option<String>,
    pub has_credential: bool,
    pub created_at: DateTime<Utc>,
    /// The development sender (`dev.herald.localhost`): verified without DNS, usable only while
    /// `HERALD_ENV=development`, its mail kept in the local outbox.
    pub development: bool,
    /// Each record's status, where the query reads them (the send context, to say which
    /// records a refused sender's domain still lacks); `None` elsewhere.
    #[sqlx(skip)]
    #[serde(default)]
    pub record_statuses: Option<Vec<(RecordKind, RecordStatus)>>,
}

/// Why a team cannot send from a domain (the one rule, [`can_send`], says which).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSendable {
    /// The team has no copy of the domain.
    NotOnTeam,
    /// The development sender, on a server that is not a development server.
    DevelopmentOnly,
    /// Being claimed from another team.
    Claiming,
    /// The claim expired before the domain moved.
    ClaimExpired,
    /// Sending is switched off on the domain.
    SendingOff,
    /// Not verified: the status, and the sending records not yet verified.
    Unverified { status: DomainStatus, missing: Vec<(RecordKind, RecordStatus)> },
}

/// Whether a team can send from `domain` (its copy of the name, if any) now: verified, sending
/// on, and the development sender only on a development server (`development`). Sends,
/// broadcasts (their gate and their job) and automations all ask this.
pub fn can_send(domain: Option<&Domain>, development: bool) -> Result<&Domain, NotSendable> {
    let Some(domain) = domain else { return Err(NotSendable::NotOnTeam) };
    if domain.development && !development {
        return Err(NotSendable::DevelopmentOnly);
    }
    match domain.status {
        DomainStatus::Claiming => Err(NotSendable::Claiming),
        DomainStatus::ClaimExpired => Err(NotSendable::ClaimExpired),
        _ if !domain.sending_enabled => Err(NotSendable::SendingOff),
        DomainStatus::Verified => Ok(domain),
        status => {
            let missing = domain
                .record_statuses
                .iter()
                .flatten()
                .filter(|(kind, status)| matches!(kind, RecordKind::Dkim | RecordKind::MailFrom) && *status != RecordStatus::Verified)
                .cloned()
                .collect();
            Err(NotSendable::Unverified { status, missing })
        }
    }
}

impl NotSendable {
    /// What to tell the team about sending from `name` (its copy `id`, when it has one), and
    /// what to call about it.
    pub fn explain(&self, name: &str, id: Option<Uuid>) -> String {
        let id = id.map(|id| id.to_string()).unwrap_or_else(|| "{id}".into());
        match self {
            NotSendable::NotOnTeam => format!(
                "The {name} domain is not on this team. Add it with `POST /domains`, publish its records, then call `POST /domains/{{id}}/verify`."
            ),
            NotSendable::DevelopmentOnly => format!(
                "{name} is Herald's development sender: it works only while the server runs with HERALD_ENV=development, and its mail never leaves the machine. Send from a domain of your own: add it with `POST /domains` and verify it with `POST /domains/{{id}}/verify`."
            ),
            NotSendable::Claiming => format!(
                "The {name} domain is being claimed from another team. Publish the TXT record `GET /domains/{id}/claim` shows, then call `POST /domains/{id}/verify`."
            ),
            NotSendable::ClaimExpired => {
                format!("The claim on the {name} domain expired before the domain moved to this team. Claim it again with `POST /domains/claim`.")
            }
            NotSendable::SendingOff => format!(
                "Sending from the {name} domain is turned off. Turn it on with `PATCH /domains/{id}` and `{{\"capabilities\": {{\"sending\": \"enabled\"}}}}`."
            ),
            NotSendable::Unverified { status, missing } => {
                let missing: Vec<String> =
                    missing.iter().map(|(kind, status)| format!("its `{}` record is `{}`", kind.as_str(), status.as_str())).collect();
                let why = if missing.is_empty() { format!("its status is `{}`", status.as_str()) } else { missing.join(" and ") };
                format!(
                    "The {name} domain is not verified: {why}. Publish the records `GET /domains/{id}` lists, then call `POST /domains/{id}/verify`."
                )
            }
        }
    }
}

impl Domain {
    pub fn domain_name(&self) -> DomainName {
        DomainName::stored(self.name.clone(), self.zone.clone())
    }

    /// Whether the domain's capabilities need `kind` published: DKIM and mail-from for sending,
    /// the MX for receiving, the tracking CNAME for open or click tracking.
    pub fn needs(&self, kind: RecordKind) -> bool {
        match kind {
            RecordKind::Dkim | RecordKind::MailFrom => self.sending_enabled,
            RecordKind::Receiving => self.receiving_enabled,
            RecordKind::Tracking => self.open_tracking || self.click_tracking,
        }
    }
}

/// One record's last check.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RecordState {
    pub domain_id: Uuid,
    pub kind: RecordKind,
    pub status: RecordStatus,
    pub found: Option<String>,
    pub verified_at: Option<DateTime<Utc>>,
    pub checked_at: Option<DateTime<Utc>>,
}

/// A domain about to be stored.
pub struct NewDomain<'a> {
    pub id: Uuid,
    pub team_id: Uuid,
    pub name: &'a DomainName,
    pub region: Region,
    pub tls: Tls,
    pub custom_return_path: &'a str,
    pub receiving_host: &'a str,
    pub sending_enabled: bool,
    pub receiving_enabled: bool,
    pub open_tracking: bool,
    pub click_tracking: bool,
    pub status: DomainStatus,
    pub mail_from_code: &'a str,
    pub dkim_private_key: &'a str,
    pub dkim_public_key: &'a str,
}

pub(crate) const COLUMNS: &str = "id, team_id, name, zone, region, tls, custom_return_path, receiving_host, sending_enabled,
    receiving_enabled, open_tracking, click_tracking, status, mail_from_code, dkim_public_key, dkim_next_public_key,
    dkim_rotation_started_at, verified_at, first_verified_at, checked_at, last_sent_at, autoconfigure_provider,
    autoconfigure_credential IS NOT NULL AS has_credential, created_at, development";

/// Statuses in which a copy no longer belongs to the team's live domains.
const HOLDING: &str = "first_verified_at IS NOT NULL AND status NOT IN ('disabled', 'claiming', 'claim_expired')";

/// Inserts a domain and its record rows.
pub async fn insert(conn: &mut PgConnection, domain: &NewDomain<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO domains (id, team_id, name, zone, region, tls, custom_return_path, receiving_host, sending_enabled,
            receiving_enabled, open_tracking, click_tracking, status, mail_from_code, dkim_private_key, dkim_public_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
    )
    .bind(domain.id)
    .bind(domain.team_id)
    .bind(domain.name.name())
    .bind(domain.name.zone())
    .bind(domain.region)
    .bind(domain.tls)
    .bind(domain.custom_return_path)
    .bind(domain.receiving_host)
    .bind(domain.sending_enabled)
    .bind(domain.receiving_enabled)
    .bind(domain.open_tracking)
    .bind(domain.click_tracking)
    .bind(domain.status)
    .bind(domain.mail_from_code)
    .bind(domain.dkim_private_key)
    .bind(domain.dkim_public_key)
    .execute(&mut *conn)
    .await?;
    sqlx::query("INSERT INTO domain_records (domain_id, kind) SELECT $1, unnest($2::text[])")
        .bind(domain.id)
        .bind(RecordKind::ALL.map(RecordKind::as_str).to_vec())
        .execute(conn)
        .await?;
    Ok(())
}

/// Domains the team has that count against its plan: every copy but switched-off ones and the
/// development sender, which takes no place in any plan.
pub async fn count_live(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM domains WHERE team_id = $1 AND status <> 'disabled' AND NOT development")
        .bind(team_id)
        .fetch_one(conn)
        .await
}

/// The live copy of `name` another team holds (verified, not switched off), if any.
pub async fn held_by_other_team(conn: &mut PgConnection, team_id: Uuid, name: &str) -> sqlx::Result<Option<Domain>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domains WHERE name = $1 AND team_id <> $2 AND {HOLDING} FOR UPDATE"
    )))
    .bind(name)
    .bind(team_id)
    .fetch_optional(conn)
    .await
}

/// The team's live copy of `name`, if any.
pub async fn find_by_name(conn: &mut PgConnection, team_id: Uuid, name: &str) -> sqlx::Result<Option<Domain>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domains WHERE team_id = $1 AND name = $2 AND status <> 'disabled'"
    )))
    .bind(team_id)
    .bind(name)
    .fetch_optional(conn)
    .await
}

/// One domain of the team.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Domain>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM domains WHERE team_id = $1 AND id = $2")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// One domain of the team, locked until the transaction ends.
pub async fn lock(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Domain>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domains WHERE team_id = $1 AND id = $2 FOR UPDATE"
    )))
    .bind(team_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// A page of the team's domains, newest first.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest) -> sqlx::Result<Page<Domain>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM domains WHERE team_id = "));
    query.push_bind(team_id);
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// A batch of domains to recheck, in id order after `after`: every domain whose records are
/// checked (not switched off, not waiting on a claim).
pub async fn batch_to_check(conn: &mut PgConnection, after: Option<Uuid>, limit: i64) -> sqlx::Result<Vec<Domain>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domains
         WHERE status NOT IN ('disabled', 'claiming', 'claim_expired') AND NOT development AND ($1::uuid IS NULL OR id > $1)
         ORDER BY id LIMIT $2"
    )))
    .bind(after)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The record rows of the given domains.
pub async fn records(conn: &mut PgConnection, domain_ids: &[Uuid]) -> sqlx::Result<Vec<RecordState>> {
    sqlx::query_as(
        "SELECT domain_id, kind, status, found, verified_at, checked_at FROM domain_records
         WHERE domain_id = ANY($1) ORDER BY domain_id",
    )
    .bind(domain_ids)
    .fetch_all(conn)
    .await
}

/// Settings a `PATCH` may change.
pub struct Settings {
    pub tls: Tls,
    pub sending_enabled: bool,
    pub receiving_enabled: bool,
    pub open_tracking: bool,
    pub click_tracking: bool,
}

pub async fn update_settings(conn: &mut PgConnection, id: Uuid, settings: &Settings) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE domains SET tls = $2, sending_enabled = $3, receiving_enabled = $4, open_tracking = $5,
            click_tracking = $6, updated_at = now()
         WHERE id = $1",
    )
    .bind(id)
    .bind(settings.tls)
    .bind(settings.sending_enabled)
    .bind(settings.receiving_enabled)
    .bind(settings.open_tracking)
    .bind(settings.click_tracking)
    .execute(conn)
    .await?;
    Ok(())
}

/// Sets a domain's status (a claim starting on an existing copy).
pub async fn set_status(conn: &mut PgConnection, id: Uuid, status: DomainStatus) -> sqlx::Result<()> {
    sqlx::query("UPDATE domains SET status = $2, updated_at = now() WHERE id = $1").bind(id).bind(status).execute(conn).await?;
    Ok(())
}

/// Deletes a domain of the team (its records and claims go with it).
pub async fn delete(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM domains WHERE team_id = $1 AND id = $2").bind(team_id).bind(id).execute(conn).await?;
    Ok(done.rows_affected() == 1)
}

/// The outcome of checking one domain's records.
#[derive(Debug, Clone)]
pub struct CheckResult {
    pub domain_id: Uuid,
    pub status: DomainStatus,
    /// The DNS carries the rotation's next DKIM key: it becomes the key in use.
    pub promote_dkim: bool,
    pub records: Vec<RecordCheck>,
}

#[derive(Debug, Clone)]
pub struct RecordCheck {
    pub kind: RecordKind,
    pub status: RecordStatus,
    pub found: Option<String>,
}

/// A domain's status after a check was stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Saved {
    pub id: Uuid,
    pub team_id: Uuid,
    pub status: DomainStatus,
}

/// Stores a batch of checks in two statements. A domain that would verify while another team
/// holds its name stays `pending` (the name can only move by a claim).
pub async fn save_checks(conn: &mut PgConnection, checks: &[CheckResult]) -> sqlx::Result<Vec<Saved>> {
    let ids: Vec<Uuid> = checks.iter().map(|c| c.domain_id).collect();
    let statuses: Vec<&str> = checks.iter().map(|c| c.status.as_str()).collect();
    let promote: Vec<bool> = checks.iter().map(|c| c.promote_dkim).collect();
    let saved = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "WITH input AS (
             SELECT u.id, u.promote,
                    CASE WHEN u.status = 'verified' AND d.first_verified_at IS NULL AND EXISTS (
                            SELECT 1 FROM domains o WHERE o.name = d.name AND o.id <> d.id AND o.{HOLDING})
                         THEN 'pending' ELSE u.status END AS status
             FROM unnest($1::uuid[], $2::text[], $3::bool[]) AS u(id, status, promote)
             JOIN domains d ON d.id = u.id
         )
         UPDATE domains d SET
             status = input.status,
             checked_at = now(),
             updated_at = now(),
             verified_at = CASE WHEN input.status = 'verified' AND d.status <> 'verified' THEN now() ELSE d.verified_at END,
             first_verified_at = COALESCE(d.first_verified_at, CASE WHEN input.status = 'verified' THEN now() END),
             dkim_private_key = CASE WHEN input.promote THEN d.dkim_next_private_key ELSE d.dkim_private_key END,
             dkim_public_key = CASE WHEN input.promote THEN d.dkim_next_public_key ELSE d.dkim_public_key END,
             dkim_next_private_key = CASE WHEN input.promote THEN NULL ELSE d.dkim_next_private_key END,
             dkim_next_public_key = CASE WHEN input.promote THEN NULL ELSE d.dkim_next_public_key END,
             dkim_rotation_started_at = CASE WHEN input.promote THEN NULL ELSE d.dkim_rotation_started_at END
         FROM input WHERE d.id = input.id AND d.status NOT IN ('disabled', 'claiming', 'claim_expired')
         RETURNING d.id, d.team_id, d.status"
    )))
    .bind(&ids)
    .bind(&statuses)
    .bind(&promote)
    .fetch_all(&mut *conn)
    .await?;

    let rows = checks.iter().flat_map(|c| c.records.iter().map(move |r| (c.domain_id, r)));
    let (mut domain_ids, mut kinds, mut record_statuses, mut found) = (vec![], vec![], vec![], vec![]);
    for (domain_id, record) in rows {
        domain_ids.push(domain_id);
        kinds.push(record.kind.as_str());
        record_statuses.push(record.status.as_str());
        found.push(record.found.clone());
    }
    sqlx::query(
        "UPDATE domain_records r SET status = u.status, found = u.found, checked_at = now(),
             verified_at = CASE WHEN u.status = 'verified' THEN COALESCE(r.verified_at, now()) ELSE r.verified_at END
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) AS u(domain_id, kind, status, found)
         WHERE r.domain_id = u.domain_id AND r.kind = u.kind",
    )
    .bind(&domain_ids)
    .bind(&kinds)
    .bind(&record_statuses)
    .bind(&found)
    .execute(conn)
    .await?;
    Ok(saved)
}

/// Settles the sending tier of teams still at `new` with a verified domain (`verified`, or
/// `paid` with a card on file), logging each move; a team past `new` keeps `verified` already.
pub async fn raise_sending_tier(conn: &mut PgConnection, team_ids: &[Uuid]) -> sqlx::Result<()> {
    sqlx::query("SELECT settle_sending_tier(id, 'a domain was verified') FROM teams WHERE id = ANY($1) AND sending_tier = 0 ORDER BY id")
        .bind(team_ids)
        .execute(conn)
        .await?;
    Ok(())
}

/// Starts a DKIM rotation: the next key is published alongside until DNS carries it.
pub async fn start_rotation(conn: &mut PgConnection, id: Uuid, private_pem: &str, public_key: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE domains SET dkim_next_private_key = $2, dkim_next_public_key = $3, dkim_rotation_started_at = now(),
            updated_at = now()
         WHERE id = $1",
    )
    .bind(id)
    .bind(private_pem)
    .bind(public_key)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that the domain just sent (claim transfers wait 24 hours after it).
pub async fn mark_sent(conn: &mut PgConnection, id: Uuid, at: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query("UPDATE domains SET last_sent_at = $2 WHERE id = $1 AND (last_sent_at IS NULL OR last_sent_at < $2 - interval '1 minute')")
        .bind(id)
        .bind(at)
        .execute(conn)
        .await?;
    Ok(())
}

/// Keeps (or, with `None`, forgets) a sealed DNS provider credential.
pub async fn set_credential(conn: &mut PgConnection, id: Uuid, provider: Option<&str>, sealed: Option<&[u8]>) -> sqlx::Result<()> {
    sqlx::query("UPDATE domains SET autoconfigure_provider = $2, autoconfigure_credential = $3, updated_at = now() WHERE id = $1")
        .bind(id)
        .bind(provider)
        .bind(sealed)
        .execute(conn)
        .await?;
    Ok(())
}

/// The sealed credential kept for a domain, if any.
pub async fn credential(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Vec<u8>>> {
    sqlx::query_scalar("SELECT autoconfigure_credential FROM domains WHERE id = $1")
        .bind(id)
        .fetch_optional(conn)
        .await
        .map(Option::flatten)
}

/// The status of one of the team's domains, share-locked so it cannot be deleted before the
/// caller's transaction ends (pinning a key to it).
pub async fn status_for_share(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<DomainStatus>> {
    sqlx::query_scalar("SELECT status FROM domains WHERE team_id = $1 AND id = $2 FOR SHARE")
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The development sender's name.
pub const DEV_SENDER_DOMAIN: &str = "dev.herald.localhost";

/// The service key holding the development sender's DKIM key (JSON: `private_pem`, `public_key`).
pub const DEV_DKIM_KEY: &str = "dev_dkim";

/// Gives `team` (or, with `None`, every team that lacks one) the development sender, verified
/// with its records and signing with the key stored under [`DEV_DKIM_KEY`] (one key for all:
/// its mail never leaves the machine). Gives nothing while no such key is stored. Answers how
/// many teams it gave it to.
pub async fn give_dev_sender(conn: &mut PgConnection, team: Option<Uuid>) -> sqlx::Result<u64> {
    let added = sqlx::query(
        "WITH dev_key AS (
             SELECT convert_from(secret, 'UTF8')::jsonb AS k FROM service_keys WHERE name = $3
         ), added AS (
             INSERT INTO domains (id, team_id, name, zone, region, tls, custom_return_path, receiving_host, sending_enabled,
                 receiving_enabled, open_tracking, click_tracking, status, mail_from_code, dkim_private_key, dkim_public_key,
                 verified_at, checked_at, development)
             SELECT gen_random_uuid(), t.id, $1, 'herald.localhost', 'us-east-1', 'opportunistic', 'send', '@', true,
                 false, false, false, 'verified', 'dev', dev_key.k ->> 'private_pem', dev_key.k ->> 'public_key', now(), now(), true
             FROM teams t, dev_key
             WHERE ($2::uuid IS NULL OR t.id = $2)
               AND NOT EXISTS (SELECT 1 FROM domains d WHERE d.team_id = t.id AND d.development)
             ON CONFLICT DO NOTHING
             RETURNING id
         )
         INSERT INTO domain_records (domain_id, kind, status, verified_at, checked_at)
         SELECT added.id, kind, 'verified', now(), now() FROM added, unnest(ARRAY['dkim', 'mail_from']) AS kind",
    )
    .bind(DEV_SENDER_DOMAIN)
    .bind(team)
    .bind(DEV_DKIM_KEY)
    .execute(conn)
    .await?;
    Ok(added.rows_affected() / 2)
}

/// The verified, sending domain `name` on whichever team holds it (the oldest verified copy):
/// where account mail from `HERALD_SYSTEM_FROM` is sent from.
/// The development sender counts only for a development server (`development`).
pub async fn system_sender(conn: &mut PgConnection, name: &str, development: bool) -> sqlx::Result<Option<Domain>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domains WHERE name = $1 AND status = 'verified' AND sending_enabled AND (NOT development OR $2)
         ORDER BY first_verified_at, id LIMIT 1"
    )))
    .bind(name)
    .bind(development)
    .fetch_optional(conn)
    .await
}
