//! `svc:segment.entered` as time passes. A time-based segment (its filter names an age, such as
//! `created_at` `lt` `"3 days ago"`) gains members without any contact changing, so nothing
//! else would notice. Each schedule tick claims the enabled automations watching such a segment
//! and, for each, enrols in one statement the contacts that are members at the tick's `now` but
//! were not at the automation's clock (the filter read at both moments over today's contacts;
//! explicit members are members at both), then moves the clock to `now`. A contact whose own
//! change made it a member was enrolled by that change ([`super::automations::SegmentWatch`]);
//! it is a member at both moments here, so it is never enrolled twice.

use super::segments;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// An enabled automation watching a time-based segment, and up to when it has enrolled.
#[derive(Debug, sqlx::FromRow)]
pub struct TimeWatch {
    pub automation_id: Uuid,
    pub team_id: Uuid,
    pub segment_id: Uuid,
    pub since: DateTime<Utc>,
}

/// Claims up to `limit` enabled automations watching a live time-based segment, the longest
/// unevaluated first, locked until the transaction ends (another worker's tick skips them).
pub async fn claim(conn: &mut PgConnection, limit: i64) -> sqlx::Result<Vec<TimeWatch>> {
    sqlx::query_as(
        "SELECT a.id AS automation_id, a.team_id, a.trigger_segment_id AS segment_id, a.segment_clock_at AS since
         FROM automations a JOIN segments s ON s.id = a.trigger_segment_id AND s.time_based AND s.deleted_at IS NULL
         WHERE a.trigger_event = 'svc:segment.entered' AND a.status = 'enabled' AND a.deleted_at IS NULL
         ORDER BY a.segment_clock_at
         LIMIT $1
         FOR UPDATE OF a SKIP LOCKED",
    )
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Starts a run of the watching automation for each contact that entered its segment between
/// the clock and `now`, then moves the clock to `now`. Answers how many runs started.
pub async fn enrol_since(conn: &mut PgConnection, watch: &TimeWatch, now: DateTime<Utc>) -> sqlx::Result<u64> {
    let started = match segments::get(conn, watch.team_id, watch.segment_id).await? {
        Some(segment) => match segments::membership(conn, &segment).await?.filter {
            Some(filter) => {
                let mut query = QueryBuilder::new(
                    "INSERT INTO automation_runs (id, team_id, automation_id, version, contact_id, trigger_event, event_data)
                     SELECT herald_uuid_v7(), a.team_id, a.id, a.current_version, c.id, a.trigger_event,
                            jsonb_build_object('contact_id', c.id, 'segment_id', a.trigger_segment_id)
                     FROM contacts c JOIN automations a ON a.id = ",
                );
                query.push_bind(watch.automation_id).push(" WHERE c.team_id = ").push_bind(watch.team_id).push(" AND ");
                filter.push_sql_at(&mut query, Some(now));
                // Unknown (NULL) at the clock reads as not a member, as every membership read does.
                query.push(" AND NOT COALESCE((");
                filter.push_sql_at(&mut query, Some(watch.since));
                query.push("), false) AND NOT EXISTS (SELECT 1 FROM segment_members m WHERE m.segment_id = ").push_bind(watch.segment_id);
                query.push(" AND m.contact_id = c.id)");
                query.build().execute(&mut *conn).await?.rows_affected()
            }
            None => 0,
        },
        None => 0,
    };
    sqlx::query("UPDATE automations SET segment_clock_at = $2 WHERE id = $1").bind(watch.automation_id).bind(now).execute(conn).await?;
    Ok(started)
}
