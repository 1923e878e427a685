//! Broadcasts: drafts, their sends, and the recipients a send resolved (each included with its
//! email or excluded with its reason).

use crate::page::{Page, PageRequest};
use crate::status::BroadcastStatus;
use crate::store::segments::Membership;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A broadcast as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Broadcast {
    pub id: Uuid,
    pub team_id: Uuid,
    pub name: Option<String>,
    pub segment_id: Option<Uuid>,
    pub topic_id: Option<Uuid>,
    pub template_id: Option<Uuid>,
    pub from_header: String,
    pub subject: String,
    pub reply_to: Vec<String>,
    pub html: Option<String>,
    pub text: Option<String>,
    pub preview_text: Option<String>,
    pub status: BroadcastStatus,
    pub scheduled_at: Option<DateTime<Utc>>,
    pub sent_at: Option<DateTime<Utc>>,
    pub failed_reason: Option<String>,
    pub template_version: Option<i32>,
    pub cursor: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, team_id, name, segment_id, topic_id, template_id, from_header, subject, reply_to, html, text, preview_text,
    status, scheduled_at, sent_at, failed_reason, template_version, cursor, created_at, updated_at";

/// A broadcast's writable fields.
#[derive(Debug, Clone, Default)]
pub struct Fields {
    pub name: Option<String>,
    pub segment_id: Option<Uuid>,
    pub topic_id: Option<Uuid>,
    pub template_id: Option<Uuid>,
    pub from_header: String,
    pub subject: String,
    pub reply_to: Vec<String>,
    pub html: Option<String>,
    pub text: Option<String>,
    pub preview_text: Option<String>,
}

/// Inserts a draft.
pub async fn insert(conn: &mut PgConnection, team_id: Uuid, f: &Fields) -> sqlx::Result<Broadcast> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO broadcasts (id, team_id, name, segment_id, topic_id, template_id, from_header, subject, reply_to, html, text, preview_text)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING {COLUMNS}"
    )))
    .bind(crate::ids::new_id())
    .bind(team_id)
    .bind(&f.name)
    .bind(f.segment_id)
    .bind(f.topic_id)
    .bind(f.template_id)
    .bind(&f.from_header)
    .bind(&f.subject)
    .bind(&f.reply_to)
    .bind(&f.html)
    .bind(&f.text)
    .bind(&f.preview_text)
    .fetch_one(conn)
    .await
}

/// Replaces a draft's fields.
pub async fn update(conn: &mut PgConnection, id: Uuid, f: &Fields) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE broadcasts SET name = $2, segment_id = $3, topic_id = $4, template_id = $5, from_header = $6, subject = $7,
             reply_to = $8, html = $9, text = $10, preview_text = $11, updated_at = now()
         WHERE id = $1 AND status = 'draft'",
    )
    .bind(id)
    .bind(&f.name)
    .bind(f.segment_id)
    .bind(f.topic_id)
    .bind(f.template_id)
    .bind(&f.from_header)
    .bind(&f.subject)
    .bind(&f.reply_to)
    .bind(&f.html)
    .bind(&f.text)
    .bind(&f.preview_text)
    .execute(conn)
    .await?;
    Ok(())
}

/// One live broadcast of the team; `lock` takes it for update.
pub async fn get(conn: &mut PgConnection, team_id: Uuid, id: Uuid, lock: bool) -> sqlx::Result<Option<Broadcast>> {
    let lock = if lock { " FOR UPDATE" } else { "" };
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM broadcasts WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL{lock}")))
        .bind(team_id)
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// A broadcast by id alone (for its job), locked.
pub async fn for_job(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Broadcast>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM broadcasts WHERE id = $1 AND deleted_at IS NULL FOR UPDATE")))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The team's live broadcasts, newest first; `search` matches name or subject, `status` one status.
pub async fn list(conn: &mut PgConnection, team_id: Uuid, page: &PageRequest, search: Option<&str>, status: Option<BroadcastStatus>) -> sqlx::Result<Page<Broadcast>> {
    let mut query = QueryBuilder::new(format!("SELECT {COLUMNS} FROM broadcasts WHERE deleted_at IS NULL AND team_id = "));
    query.push_bind(team_id);
    if let Some(search) = search {
        let pattern = super::like_pattern(search);
        query.push(" AND (name ILIKE ").push_bind(pattern.clone()).push(" OR subject ILIKE ").push_bind(pattern).push(")");
    }
    if let Some(status) = status {
        query.push(" AND status = ").push_bind(status);
    }
    page.push_to(&mut query, "id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// Soft-deletes a draft.
pub async fn delete(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE broadcasts SET deleted_at = now() WHERE id = $1 AND status = 'draft'").bind(id).execute(conn).await?;
    Ok(())
}

/// Moves a broadcast to `status` (with its schedule and the template version it will use).
pub async fn set_status(conn: &mut PgConnection, id: Uuid, status: BroadcastStatus, scheduled_at: Option<DateTime<Utc>>, template_version: Option<i32>) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE broadcasts SET status = $2, scheduled_at = $3, template_version = COALESCE($4, template_version), updated_at = now(),
             sent_at = CASE WHEN $2 = 'sent' THEN now() ELSE sent_at END
         WHERE id = $1",
    )
    .bind(id)
    .bind(status)
    .bind(scheduled_at)
    .bind(template_version)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks a broadcast failed with a reason.
pub async fn fail(conn: &mut PgConnection, id: Uuid, reason: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE broadcasts SET status = 'failed', failed_reason = $2, updated_at = now() WHERE id = $1").bind(id).bind(reason).execute(conn).await?;
    Ok(())
}

/// Marks a queued (or due scheduled) broadcast as sending.
pub async fn start_sending(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE broadcasts SET status = 'sending', updated_at = now() WHERE id = $1").bind(id).execute(conn).await?;
    Ok(())
}

/// Moves the fan-out's cursor from `from` to `to` (a run that raced ahead is left alone).
pub async fn move_cursor(conn: &mut PgConnection, id: Uuid, from: Option<Uuid>, to: Uuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE broadcasts SET cursor = $3, updated_at = now() WHERE id = $1 AND cursor IS NOT DISTINCT FROM $2")
        .bind(id)
        .bind(from)
        .bind(to)
        .execute(conn)
        .await?;
    Ok(())
}

/// Whether the broadcast is still to be sent, holding it so until the transaction ends (a
/// cancel waits for the page in flight, and the next page sees it).
pub async fn hold_live(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<bool> {
    let live: Option<bool> = sqlx::query_scalar(
        "SELECT status IN ('queued', 'scheduled', 'sending') FROM broadcasts WHERE id = $1 AND deleted_at IS NULL FOR SHARE",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(live.unwrap_or(false))
}

/// A contact a page of a send resolved.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Resolved {
    pub contact_id: Uuid,
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub properties: Value,
    pub created_at: DateTime<Utc>,
    /// Why the contact is not sent to, or `None`.
    pub excluded_reason: Option<String>,
    /// Every live topic of the team to the contact's effective opt-in: `{ topic_id: bool }`.
    pub topics: Value,
    /// The id the contact's email takes (recorded with the recipient); `None` when excluded.
    pub email_id: Option<Uuid>,
}

/// Resolves a page of a send: the segment's members after `after` up to `through` (by id), each
/// recorded as a recipient, included or excluded (globally unsubscribed, opted out of the
/// broadcast's topic, suppressed), in one statement. Contacts already recorded (a rerun after
/// a crash) are skipped. Answers the new recipients in id order.
pub async fn resolve_page(
    conn: &mut PgConnection,
    broadcast: &Broadcast,
    membership: &Membership,
    after: Option<Uuid>,
    through: Uuid,
) -> sqlx::Result<Vec<Resolved>> {
    let mut query = QueryBuilder::new(
        "WITH page AS (
             SELECT c.id, c.email, c.first_name, c.last_name, c.properties, c.created_at, c.unsubscribed
             FROM contacts c WHERE c.team_id = ",
    );
    query.push_bind(broadcast.team_id).push(" AND ");
    membership.push_members_after(&mut query, after);
    query.push(" AND c.id <= ").push_bind(through);
    query.push(
        "), judged AS (
             SELECT p.*,
                 (SELECT COALESCE(jsonb_object_agg(t.id, CASE WHEN p.unsubscribed THEN false
                      ELSE COALESCE(ct.subscription, t.default_subscription) = 'opt_in' END), '{}')
                  FROM topics t LEFT JOIN contact_topics ct ON ct.topic_id = t.id AND ct.contact_id = p.id
                  WHERE t.team_id = ",
    );
    query.push_bind(broadcast.team_id);
    query.push(
        " AND t.deleted_at IS NULL) AS topics,
                 CASE WHEN p.unsubscribed THEN 'unsubscribed'
                      WHEN EXISTS (SELECT 1 FROM suppressions s WHERE s.team_id = ",
    );
    query.push_bind(broadcast.team_id);
    query.push(" AND s.email = lower(p.email)) THEN 'suppressed' ");
    if let Some(topic_id) = broadcast.topic_id {
        query.push(
            "WHEN COALESCE((SELECT ct.subscription FROM contact_topics ct WHERE ct.contact_id = p.id AND ct.topic_id = ",
        );
        query.push_bind(topic_id);
        query.push("), (SELECT t.default_subscription FROM topics t WHERE t.id = ");
        query.push_bind(topic_id);
        query.push(")) = 'opt_out' THEN 'topic_opt_out' ");
    }
    query.push(
        "END AS excluded_reason FROM page p
         ), recorded AS (
             INSERT INTO broadcast_recipients (broadcast_id, contact_id, email, excluded_reason, email_id)
             SELECT ",
    );
    query.push_bind(broadcast.id);
    query.push(
        ", j.id, j.email, j.excluded_reason, CASE WHEN j.excluded_reason IS NULL THEN herald_uuid_v7() END FROM judged j
             ON CONFLICT (broadcast_id, contact_id) DO NOTHING RETURNING contact_id, email_id
         )
         SELECT j.id AS contact_id, j.email, j.first_name, j.last_name, j.properties, j.created_at, j.excluded_reason, j.topics, r.email_id
         FROM judged j JOIN recorded r ON r.contact_id = j.id ORDER BY j.id",
    );
    query.build_query_as().fetch_all(conn).await
}

/// The last contact id of each of the next `pages` pages of `size` members after `after`
/// (contacts recorded by an earlier run included, so the cursor moves past them), in order;
/// empty when no member is left.
pub async fn page_ends(conn: &mut PgConnection, broadcast: &Broadcast, membership: &Membership, after: Option<Uuid>, size: i64, pages: i64) -> sqlx::Result<Vec<Uuid>> {
    let mut query = QueryBuilder::new("SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS n, count(*) OVER () AS total FROM (SELECT c.id FROM contacts c WHERE c.team_id = ");
    query.push_bind(broadcast.team_id).push(" AND ");
    membership.push_members_after(&mut query, after);
    query.push(" ORDER BY c.id LIMIT ").push_bind(size * pages).push(") members) numbered WHERE n % ");
    query.push_bind(size).push(" = 0 OR n = total ORDER BY id");
    query.build_query_scalar().fetch_all(conn).await
}

/// Counts of a broadcast's recipients by outcome.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct Counts {
    pub recipients: i64,
    pub excluded: i64,
    pub sent: i64,
    pub delivered: i64,
    pub bounced: i64,
    pub complained: i64,
    pub failed: i64,
    /// Recipients who opened the email at least once (open tracking).
    pub opened: i64,
    /// Recipients who clicked a link at least once (click tracking).
    pub clicked: i64,
}

/// The counts of each of these broadcasts, in one statement (a broadcast no send reached yet
/// counts zeros).
pub async fn counts(conn: &mut PgConnection, ids: &[Uuid]) -> sqlx::Result<std::collections::HashMap<Uuid, Counts>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        broadcast_id: Uuid,
        #[sqlx(flatten)]
        counts: Counts,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT r.broadcast_id,
                count(*) AS recipients,
                count(*) FILTER (WHERE r.excluded_reason IS NOT NULL) AS excluded,
                count(e.id) AS sent,
                count(*) FILTER (WHERE e.last_event = 'delivered') AS delivered,
                count(*) FILTER (WHERE e.last_event = 'bounced') AS bounced,
                count(*) FILTER (WHERE e.last_event = 'complained') AS complained,
                count(*) FILTER (WHERE e.last_event = 'failed') AS failed,
                (SELECT count(DISTINCT g.email_id) FROM email_engagements g WHERE g.broadcast_id = r.broadcast_id AND g.kind = 'open') AS opened,
                (SELECT count(DISTINCT g.email_id) FROM email_engagements g WHERE g.broadcast_id = r.broadcast_id AND g.kind = 'click') AS clicked
         FROM broadcast_recipients r LEFT JOIN emails e ON e.id = r.email_id
         WHERE r.broadcast_id = ANY($1) GROUP BY r.broadcast_id",
    )
    .bind(ids)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|row| (row.broadcast_id, row.counts)).collect())
}

/// A recipient as listed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Recipient {
    pub contact_id: Uuid,
    pub email: String,
    pub email_id: Option<Uuid>,
    pub excluded_reason: Option<String>,
    pub last_event: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A page of recipients (newest contact first); `kind` filters by outcome: `sent`,
/// `delivered`, `bounced`, `complained`, `suppressed` (suppressed at send time or by delivery),
/// `unsubscribed` (excluded as unsubscribed or opted out of the topic), `opened` and `clicked`
/// (at least once).
pub async fn recipients(conn: &mut PgConnection, id: Uuid, page: &PageRequest, kind: Option<&str>) -> sqlx::Result<Page<Recipient>> {
    let mut query = QueryBuilder::new(
        "SELECT r.contact_id, r.email, r.email_id, r.excluded_reason, e.last_event, r.created_at
         FROM broadcast_recipients r LEFT JOIN emails e ON e.id = r.email_id WHERE r.broadcast_id = ",
    );
    query.push_bind(id);
    match kind {
        Some("sent") => query.push(" AND r.email_id IS NOT NULL"),
        Some("suppressed") => query.push(" AND (r.excluded_reason = 'suppressed' OR e.last_event = 'suppressed')"),
        Some("unsubscribed") => query.push(" AND r.excluded_reason IN ('unsubscribed', 'topic_opt_out')"),
        Some("opened") => query.push(" AND EXISTS (SELECT 1 FROM email_engagements g WHERE g.email_id = r.email_id AND g.kind = 'open')"),
        Some("clicked") => query.push(" AND EXISTS (SELECT 1 FROM email_engagements g WHERE g.email_id = r.email_id AND g.kind = 'click')"),
        Some(event) => query.push(" AND e.last_event = ").push_bind(event.to_string()),
        None => &mut query,
    };
    page.push_to(&mut query, "r.contact_id");
    let rows = query.build_query_as().fetch_all(conn).await?;
    Ok(page.finish(rows))
}

/// The marketing meter of a team: its plan's monthly allowance (`None`: no meter) and the
/// broadcast emails created this calendar month (UTC).
pub async fn marketing_meter(conn: &mut PgConnection, team_id: Uuid) -> sqlx::Result<(Option<i32>, i64)> {
    sqlx::query_as(
        "SELECT p.marketing_monthly,
                (SELECT count(*) FROM emails e WHERE e.team_id = t.id AND e.broadcast_id IS NOT NULL
                     AND e.created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
         FROM teams t JOIN plans p ON p.code = t.plan_code WHERE t.id = $1",
    )
    .bind(team_id)
    .fetch_one(conn)
    .await
}
