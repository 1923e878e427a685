//! Received emails: what the inbound server accepted for a team (stored, or recorded as
//! dropped with a reason), their attachments and raw source, and the lookups the server makes
//! while it talks to a sending MTA.

use crate::page::{Page, PageRequest};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// Statuses in which a domain belongs to the team that verified it (mail to it is theirs).
const HELD: &str = "first_verified_at IS NOT NULL AND status NOT IN ('disabled', 'claiming', 'claim_expired')";

/// What a host that mail is addressed to is to Herald.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRole {
    /// A team's receiving domain (at its `receiving_host`).
    Receiving { team_id: Uuid, domain_id: Uuid },
    /// A team's return-path host (`<custom_return_path>.<domain>`): bounces, complaints and the
    /// `unsubscribe@` address of `List-Unsubscribe`.
    ReturnPath { team_id: Uuid, domain_id: Uuid },
}

/// Every role `host` (bare, lower-case) plays, receiving first.
pub async fn host_roles(conn: &mut PgConnection, host: &str) -> sqlx::Result<Vec<HostRole>> {
    let rows: Vec<(bool, Uuid, Uuid)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT true, team_id, id FROM domains
         WHERE receiving_enabled AND {HELD} AND (CASE WHEN receiving_host = '@' THEN name ELSE receiving_host || '.' || name END) = $1
         UNION ALL
         SELECT false, team_id, id FROM domains WHERE {HELD} AND (custom_return_path || '.' || name) = $1
         ORDER BY 1 DESC"
    )))
    .bind(host)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(receiving, team_id, domain_id)| match receiving {
            true => HostRole::Receiving { team_id, domain_id },
            false => HostRole::ReturnPath { team_id, domain_id },
        })
        .collect())
}

/// Why a message accepted for a team is recorded without being stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    StorageQuota,
    DailyCap,
    Virus,
    ParseFailed,
    NoMailbox,
    TeamBlocked,
}

impl Dropped {
    pub fn as_str(self) -> &'static str {
        match self {
            Dropped::StorageQuota => "storage_quota",
            Dropped::DailyCap => "daily_cap",
            Dropped::Virus => "virus",
            Dropped::ParseFailed => "parse_failed",
            Dropped::NoMailbox => "no_mailbox",
            Dropped::TeamBlocked => "team_blocked",
        }
    }
}

/// The header fields of a message as decoded.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    pub from_header: String,
    pub from_email: String,
    pub from_name: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub reply_to: Vec<String>,
    pub subject: String,
    pub message_id: Option<String>,
}

/// A stored message's content.
#[derive(Debug, Clone, Default)]
pub struct Content {
    pub html: Option<String>,
    pub text: Option<String>,
    /// Lower-case name to its values in order.
    pub headers: Value,
    pub attachments: Vec<NewAttachment>,
}

/// One attachment of a received message; `content` is `None` for a refused part.
#[derive(Debug, Clone)]
pub struct NewAttachment {
    pub id: Uuid,
    pub filename: String,
    pub content_type: String,
    pub content_disposition: String,
    pub content_id: Option<String>,
    pub size: i32,
    pub content: Option<Vec<u8>>,
}

/// A message accepted for one team.
#[derive(Debug, Clone)]
pub struct NewReceived<'a> {
    pub id: Uuid,
    pub team_id: Uuid,
    pub mail_from: &'a str,
    pub received_for: Vec<String>,
    pub envelope: &'a Envelope,
    /// `None` when the message did not parse.
    pub content: Option<&'a Content>,
    pub raw: &'a [u8],
    /// Decided before the team's allowances are looked at (virus, parse_failed, no_mailbox).
    pub dropped: Option<Dropped>,
    pub now: DateTime<Utc>,
}

/// Shards of the team's counters (see the migration).
const SHARDS: i16 = 16;

/// The counter shard a received email's bytes and count go to.
pub fn shard_of(id: Uuid) -> i16 {
    (id.as_u128() % SHARDS as u128) as i16
}

/// What a transaction's stored messages add to their teams' counters, by team, day and shard.
#[derive(Debug, Default)]
pub struct Tally {
    rows: std::collections::BTreeMap<(Uuid, chrono::NaiveDate, i16), (i64, i64)>,
}

impl Tally {
    fn add(&mut self, team_id: Uuid, day: chrono::NaiveDate, shard: i16, bytes: i64) {
        let row = self.rows.entry((team_id, day, shard)).or_default();
        row.0 += 1;
        row.1 += bytes;
    }

    fn messages(&self, team_id: Uuid, day: chrono::NaiveDate) -> i64 {
        self.rows.iter().filter(|((team, d, _), _)| *team == team_id && *d == day).map(|(_, (messages, _))| messages).sum()
    }

    fn bytes(&self, team_id: Uuid) -> i64 {
        self.rows.iter().filter(|((team, _, _), _)| *team == team_id).map(|(_, (_, bytes))| bytes).sum()
    }
}

/// Adds a transaction's tally to the teams' message and storage counters: one statement, its
/// rows in (team, day, shard) order, so two committers never take them in opposite orders.
pub async fn count(conn: &mut PgConnection, tally: &Tally) -> sqlx::Result<()> {
    if tally.rows.is_empty() {
        return Ok(());
    }
    let (mut teams, mut days, mut shards, mut messages, mut bytes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ((team, day, shard), (count, size)) in &tally.rows {
        teams.push(*team);
        days.push(*day);
        shards.push(*shard);
        messages.push(*count);
        bytes.push(*size);
    }
    // Two statements, usage then storage: every committer locks the two tables in that order.
    sqlx::query(
        "INSERT INTO received_usage (team_id, day, shard, messages)
         SELECT team_id, day, shard, messages FROM unnest($1::uuid[], $2::date[], $3::int2[], $4::int8[]) WITH ORDINALITY AS t (team_id, day, shard, messages, n) ORDER BY n
         ON CONFLICT (team_id, day, shard) DO UPDATE SET messages = received_usage.messages + excluded.messages",
    )
    .bind(&teams)
    .bind(days)
    .bind(&shards)
    .bind(messages)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO received_storage (team_id, shard, bytes)
         SELECT team_id, shard, sum(bytes) FROM unnest($1::uuid[], $2::int2[], $3::int8[]) AS t (team_id, shard, bytes) GROUP BY team_id, shard ORDER BY team_id, shard
         ON CONFLICT (team_id, shard) DO UPDATE SET bytes = received_storage.bytes + excluded.bytes",
    )
    .bind(teams)
    .bind(shards)
    .bind(bytes)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records a received message for its team: decides whether the team can take it (not
/// blocked, under its plan's daily cap and its storage quota (the plan's and its storage add-ons'), counting what `tally` holds of the
/// transaction's earlier messages), adds what it stores to `tally`, and writes the record with
/// its attachments and raw source (the raw source is kept for a stored message and for one that
/// did not parse). Answers the reason it was dropped, if it was. The caller writes the tally
/// with [`count`] just before it commits, so the counter rows, which every committer updates,
/// stay locked only for that moment.
pub async fn insert(conn: &mut PgConnection, new: &NewReceived<'_>, tally: &mut Tally) -> sqlx::Result<Option<Dropped>> {
    let size = new.raw.len() as i64;
    let day = new.now.date_naive();
    let allowance: (bool, Option<i32>, Option<i64>, i64, i64) = sqlx::query_as(
        "SELECT t.risk_state = 'suspended', p.inbound_daily_cap, l.inbound_storage_bytes,
                CASE WHEN p.inbound_daily_cap IS NULL THEN 0
                     ELSE (SELECT COALESCE(sum(messages), 0) FROM received_usage WHERE team_id = t.id AND day = $2) END::int8,
                CASE WHEN l.inbound_storage_bytes IS NULL THEN 0
                     ELSE (SELECT COALESCE(sum(bytes), 0) FROM received_storage WHERE team_id = t.id) END::int8
         FROM teams t JOIN plans p ON p.code = t.plan_code JOIN team_limits l ON l.team_id = t.id WHERE t.id = $1",
    )
    .bind(new.team_id)
    .bind(day)
    .fetch_one(&mut *conn)
    .await?;
    let (blocked, daily_cap, storage_cap, today, stored) = allowance;
    let (today, stored) = (today + tally.messages(new.team_id, day), stored + tally.bytes(new.team_id));
    let dropped = if blocked {
        Some(Dropped::TeamBlocked)
    } else if new.dropped.is_some() {
        new.dropped
    } else if daily_cap.is_some_and(|cap| today >= i64::from(cap)) {
        Some(Dropped::DailyCap)
    } else if storage_cap.is_some_and(|cap| stored + size > cap) {
        Some(Dropped::StorageQuota)
    } else {
        None
    };
    let content = new.content.filter(|_| dropped.is_none());
    let stored = dropped.is_none();
    let keep_source = matches!(dropped, None | Some(Dropped::ParseFailed));
    let shard = shard_of(new.id);
    let e = new.envelope;
    if stored {
        tally.add(new.team_id, day, shard, size);
    }
    // The record and its raw source in one statement (the source's foreign key is checked at
    // its end, when the record exists).
    sqlx::query(
        "WITH record AS (
             INSERT INTO received_emails (id, team_id, mail_from, received_for, from_header, from_email, from_name, to_addresses, cc, bcc,
                 reply_to, subject, message_id, html, text, headers, dropped_reason, size_bytes, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
         )
         INSERT INTO received_sources (received_email_id, raw) SELECT $1, $20 WHERE $21",
    )
    .bind(new.id)
    .bind(new.team_id)
    .bind(new.mail_from)
    .bind(&new.received_for)
    .bind(&e.from_header)
    .bind(&e.from_email)
    .bind(&e.from_name)
    .bind(&e.to)
    .bind(&e.cc)
    .bind(&e.bcc)
    .bind(&e.reply_to)
    .bind(&e.subject)
    .bind(&e.message_id)
    .bind(content.and_then(|c| c.html.as_deref()))
    .bind(content.and_then(|c| c.text.as_deref()))
    .bind(content.map(|c| &c.headers))
    .bind(dropped.map(Dropped::as_str))
    .bind(size.min(i64::from(i32::MAX)) as i32)
    .bind(new.now)
    .bind(new.raw)
    .bind(keep_source)
    .execute(&mut *conn)
    .await?;
    let Some(content) = content else { return Ok(dropped) };
    if !content.attachments.is_empty() {
        let mut query = QueryBuilder::new(
            "INSERT INTO received_attachments (id, received_email_id, position, filename, content_type, content_disposition, content_id, size, content) ",
        );
        query.push_values(content.attachments.iter().enumerate(), |mut row, (position, a)| {
            row.push_bind(a.id)
                .push_bind(new.id)
                .push_bind(position as i16)
                .push_bind(&a.filename)
                .push_bind(&a.content_type)
                .push_bind(&a.content_disposition)
                .push_bind(&a.content_id)
                .push_bind(a.size)
                .push_bind(&a.content);
        });
        query.build().execute(&mut *conn).await?;
    }
    Ok(None)
}

/// A received email as listed (and, with the extra fields, as retrieved).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Received {
    pub id: Uuid,
    pub team_id: Uuid,
    pub mail_from: String,
    pub received_for: Vec<String>,
    pub from_header: String,
    pub from_email: String,
    pub to_addresses: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub reply_to: Vec<String>,
    pub subject: String,
    pub message_id: Option<String>,
    pub dropped_reason: Option<String>,
    pub size_bytes: i32,
    pub created_at: DateTime<Utc>,
    /// Read on retrieve only (`None` in lists).
    pub html: Option<String>,
    pub text: Option<String>,
    pub headers: Option<Value>,
}

const LIST_COLUMNS: &str = "id, team_id, mail_from, received_for, from_header, from_email, to_addresses, cc, bcc, reply_to, subject, message_id,
     dropped_reason, size_bytes, created_at, NULL::text AS html, NULL::text AS text, NULL::jsonb AS headers";
const COLUMNS: &str = "id, team_id, mail_from, received_for, from_header, from_email, to_addresses, cc, bcc, reply_to, subject, message_id,
     dropped_reason, size_bytes, created_at, html, text, headers";

/// An attachment as listed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Attachment {
    pub id: Uuid,
    pub received_email_id: Uuid,
    pub filename: String,
    pub content_type: String,
    pub content_disposition: String,
    pub content_id: Option<String>,
    pub size: i32,
    /// Whether the part was refused (listed with its size only).
    pub refused: bool,
}

/// Filters of the list.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub search: Option<String>,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
}

/// The team's received emails, newest first; `search` matches the subject, the sender's address
/// or name, or any recipient, literally.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, filter: &ListFilter, page: &PageRequest) -> sqlx::Result<Page<Received>> {
    let mut query = QueryBuilder::new(format!("SELECT {LIST_COLUMNS} FROM received_emails WHERE team_id = "));
    query.push_bind(team_id);
    if let Some(search) = &filter.search {
        let pattern = super::like_pattern(search);
        query.push(" AND (subject ILIKE ").push_bind(pattern.clone());
        query.push(" OR from_header ILIKE ").push_bind(pattern.clone());
        query.push(" OR EXISTS (SELECT 1 FROM unnest(to_addresses || cc || received_for) a WHERE a ILIKE ").push_bind(pattern).push("))");
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

/// One received email of the team, with its bodies and headers.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Received>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM received_emails WHERE team_id = $1 AND id = $2")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The attachments of these received emails (of the team), in order.
pub async fn attachments(conn: &mut PgConnection, team_id: Uuid, ids: &[Uuid]) -> sqlx::Result<Vec<Attachment>> {
    sqlx::query_as(
        "SELECT a.id, a.received_email_id, a.filename, a.content_type, a.content_disposition, a.content_id, a.size, a.content IS NULL AS refused
         FROM received_attachments a JOIN received_emails r ON r.id = a.received_email_id
         WHERE r.team_id = $1 AND a.received_email_id = ANY($2) ORDER BY a.received_email_id, a.position",
    )
    .bind(team_id)
    .bind(ids)
    .fetch_all(conn)
    .await
}

/// An attachment's name, type and bytes by id alone (the download link was checked already).
pub async fn attachment_content(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<(String, String, Vec<u8>)>> {
    sqlx::query_as("SELECT filename, content_type, content FROM received_attachments WHERE id = $1 AND content IS NOT NULL")
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The raw source of a received email of the team (none for a dropped one, but one that did
/// not parse).
pub async fn raw(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<Option<Vec<u8>>> {
    sqlx::query_scalar(
        "SELECT s.raw FROM received_sources s JOIN received_emails r ON r.id = s.received_email_id WHERE r.team_id = $1 AND r.id = $2",
    )
    .bind(team_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Deletes a received email with its attachments and raw source; `false` when the team has no
/// such email. Its bytes leave the team's storage.
pub async fn delete(conn: &mut PgConnection, team_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let removed: Option<(i32, bool)> =
        sqlx::query_as("DELETE FROM received_emails WHERE team_id = $1 AND id = $2 RETURNING size_bytes, dropped_reason IS NULL")
            .bind(team_id)
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
    let Some((size, stored)) = removed else { return Ok(false) };
    if stored {
        sqlx::query("UPDATE received_storage SET bytes = bytes - $3 WHERE team_id = $1 AND shard = $2")
            .bind(team_id)
            .bind(shard_of(id))
            .bind(i64::from(size))
            .execute(conn)
            .await?;
    }
    Ok(true)
}

/// Deletes up to `batch` dropped records older than their team's plan retention window;
/// answers how many.
pub async fn delete_expired_dropped(conn: &mut PgConnection, batch: i64) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM received_emails WHERE id IN (
             SELECT r.id FROM received_emails r JOIN teams t ON t.id = r.team_id JOIN plans p ON p.code = t.plan_code
             WHERE r.dropped_reason IS NOT NULL AND r.created_at < now() - make_interval(days => p.retention_days)
             LIMIT $1)",
    )
    .bind(batch)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
