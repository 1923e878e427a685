//! The counts `GET /emails/metrics` answers: of the emails a team accepted in a window, how many
//! there are (`received`) and, for each type of [`METRIC_EVENTS`], how many have at least one
//! such event, by the UTC period each email was accepted in (its id's time).
//!
//! Counting over the base tables costs every email and event in the window (seconds at a
//! million emails), so the counts are kept per team and UTC hour in `email_metrics_hourly`, as
//! of a watermark id: everything with an id up to it is counted there. [`refresh`] moves the
//! watermark on (the scheduler calls it every tick) and recounts each hour that any email or
//! event since a little before the old watermark belongs to; a late event (an open on a month-old
//! email) recounts that email's hour. [`by_period`] stays exact: it reads the kept hours inside
//! the window, adds what came after the watermark (emails, and each email's first event of a type
//! when that comes after it), and counts the window's partial first and last hours from the base
//! tables.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::ids::{first_at, last_at};

/// The event types counted.
pub const METRIC_EVENTS: &[&str] = &[
    "email.sent",
    "email.delivered",
    "email.delivery_delayed",
    "email.bounced",
    "email.complained",
    "email.failed",
    "email.suppressed",
    "email.canceled",
    "email.opened",
    "email.clicked",
];

/// The watermark stays this far behind now, so rows whose transactions are still open when a
/// refresh runs are most likely committed by then.
pub const LAG: TimeDelta = TimeDelta::seconds(5);
/// Each refresh also recounts the hours of rows from this long before the old watermark, so a
/// row that committed late (minted before the watermark, visible only after it moved) is counted
/// at the next refresh.
pub const MARGIN: TimeDelta = TimeDelta::minutes(2);
/// One refresh moves the watermark at most this far, so catching up on a large backlog (the first
/// refresh after an upgrade) is many short transactions.
pub const STEP: TimeDelta = TimeDelta::hours(6);

/// Moves the watermark one step towards `now - LAG`, recounting the hours touched since. Answers
/// whether it moved (`false` when it is current, or when another process holds it). A `now` in
/// the future counts as the clock's now: a watermark ahead of the ids still being minted would
/// leave them counted nowhere.
pub async fn refresh(conn: &mut PgConnection, now: DateTime<Utc>) -> sqlx::Result<bool> {
    let now = now.min(Utc::now());
    let Some((through,)): Option<(Uuid,)> =
        sqlx::query_as("SELECT through FROM email_metrics_watermark FOR UPDATE SKIP LOCKED").fetch_optional(&mut *conn).await?
    else {
        return Ok(false);
    };
    let from = if through.is_nil() {
        // The first refresh starts at the oldest email, not at 1970.
        let oldest: Option<Uuid> = sqlx::query_scalar("SELECT id FROM emails ORDER BY id LIMIT 1").fetch_optional(&mut *conn).await?;
        oldest.and_then(id_time).map_or(now, |at| at - TimeDelta::milliseconds(1))
    } else {
        id_time(through).unwrap_or(now)
    };
    // Ids keep milliseconds: a target within the watermark's millisecond is no move at all.
    let target = (now - LAG).min(from + STEP);
    let target = DateTime::from_timestamp_millis(target.timestamp_millis()).unwrap_or(target);
    if target <= from {
        return Ok(false);
    }
    let (since, until) = (first_at(from - MARGIN), last_at(target));
    sqlx::query(
        "WITH touched AS (
             SELECT DISTINCT team_id, date_trunc('hour', herald_id_time(id), 'UTC') AS hour
             FROM emails WHERE id >= $1 AND id <= $2
             UNION
             SELECT DISTINCT team_id, date_trunc('hour', herald_id_time(email_id), 'UTC')
             FROM events WHERE id >= $1 AND id <= $2 AND email_id IS NOT NULL AND type = ANY($3)
         )
         INSERT INTO email_metrics_hourly (team_id, hour, kind, count)
         SELECT t.team_id, t.hour, c.kind, c.count FROM touched t CROSS JOIN LATERAL (
             SELECT 'received' AS kind, count(*) AS count FROM emails
             WHERE team_id = t.team_id AND id >= herald_id_floor(t.hour)
               AND id < herald_id_floor(t.hour + interval '1 hour') AND id <= $2
             UNION ALL
             SELECT type, count(DISTINCT email_id) FROM events
             WHERE team_id = t.team_id AND type = ANY($3) AND id <= $2
               AND email_id >= herald_id_floor(t.hour) AND email_id < herald_id_floor(t.hour + interval '1 hour')
             GROUP BY type
         ) c
         ON CONFLICT (team_id, hour, kind) DO UPDATE SET count = EXCLUDED.count",
    )
    .bind(since)
    .bind(until)
    .bind(METRIC_EVENTS)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE email_metrics_watermark SET through = $1").bind(until).execute(&mut *conn).await?;
    Ok(true)
}

/// The team's counts for the emails accepted from `start` to `end` (inclusive), by `unit`
/// (`hour`, `day`, `week` or `month`, in UTC): `(period start, kind, count)`, `kind` being
/// `received` or an event type, periods and kinds with no email left out. Exact whatever the
/// watermark: see the module's comment.
pub async fn by_period(
    conn: &mut PgConnection,
    team_id: Uuid,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    unit: &str,
) -> sqlx::Result<Vec<(DateTime<Utc>, String, i64)>> {
    let hour = TimeDelta::hours(1);
    let after_end = end + TimeDelta::milliseconds(1);
    let first_hour = start.duration_trunc(hour).map(|h| if h < start { h + hour } else { h }).unwrap_or(start);
    let last_hour = after_end.duration_trunc(hour).unwrap_or(after_end);
    // The whole hours inside the window come from the kept counts; the partial hours at either
    // end (the whole window when it holds no whole hour) from the base tables.
    let (inner_start, inner_end) = if first_hour < last_hour { (first_hour, last_hour) } else { (after_end, after_end) };
    let edges = [(first_at(start), first_at(inner_start.min(after_end))), (first_at(inner_end.max(start)), first_at(after_end))];
    sqlx::query_as(
        "SELECT date_trunc($10, hour, 'UTC') AS period, kind, sum(count)::bigint FROM (
             SELECT hour, kind, count FROM email_metrics_hourly WHERE team_id = $1 AND hour >= $2 AND hour < $3
             UNION ALL
             SELECT date_trunc('hour', herald_id_time(id), 'UTC'), 'received', count(*) FROM emails
             WHERE team_id = $1 AND id > $4 AND id >= herald_id_floor($2) AND id < herald_id_floor($3) GROUP BY 1
             UNION ALL
             SELECT date_trunc('hour', herald_id_time(email_id), 'UTC'), type, count(DISTINCT email_id) FROM events ev
             WHERE team_id = $1 AND type = ANY($5) AND id > $4
               AND email_id >= herald_id_floor($2) AND email_id < herald_id_floor($3)
               AND NOT EXISTS (SELECT 1 FROM events seen WHERE seen.email_id = ev.email_id AND seen.type = ev.type AND seen.id <= $4)
             GROUP BY 1, 2
             UNION ALL
             SELECT date_trunc('hour', herald_id_time(id), 'UTC'), 'received', count(*) FROM emails
             WHERE team_id = $1 AND ((id >= $6 AND id < $7) OR (id >= $8 AND id < $9)) GROUP BY 1
             UNION ALL
             SELECT date_trunc('hour', herald_id_time(email_id), 'UTC'), type, count(DISTINCT email_id) FROM events
             WHERE team_id = $1 AND type = ANY($5) AND id >= $6
               AND ((email_id >= $6 AND email_id < $7) OR (email_id >= $8 AND email_id < $9))
             GROUP BY 1, 2
         ) counted GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .bind(team_id)
    .bind(inner_start)
    .bind(inner_end)
    .bind(watermark(conn).await?)
    .bind(METRIC_EVENTS)
    .bind(edges[0].0)
    .bind(edges[0].1)
    .bind(edges[1].0)
    .bind(edges[1].1)
    .bind(unit)
    .fetch_all(conn)
    .await
}

/// The id up to which emails and events are counted in `email_metrics_hourly`.
async fn watermark(conn: &mut PgConnection) -> sqlx::Result<Uuid> {
    sqlx::query_scalar("SELECT through FROM email_metrics_watermark").fetch_one(conn).await
}

/// The time a UUIDv7 was minted: its first 48 bits (also for the bounds of `ids::first_at` and
/// `last_at`, which are not valid v7 ids).
fn id_time(id: Uuid) -> Option<DateTime<Utc>> {
    let bytes = id.as_bytes();
    let millis = bytes[..6].iter().fold(0_i64, |at, byte| at << 8 | i64::from(*byte));
    DateTime::from_timestamp_millis(millis)
}
