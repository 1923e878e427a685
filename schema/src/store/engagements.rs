//! Opens and clicks: hits on tracking links, drained from the tracking spool in batches. Each
//! new hit becomes an `email_engagements` row and an `email.opened` / `email.clicked` event
//! (with its webhook deliveries) in the drain's transaction.

use crate::store::emails;
use crate::store::events::{self, NewEvent};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::PgConnection;
use std::collections::HashMap;
use uuid::Uuid;

/// One hit on a tracking link, as spooled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// Made when the hit is spooled: a hit drained twice is written once.
    pub id: Uuid,
    pub email_id: Uuid,
    /// The original address of a click; `None` for an open.
    pub link: Option<String>,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    pub at: DateTime<Utc>,
}

impl Hit {
    fn kind(&self) -> &'static str {
        if self.link.is_some() { "click" } else { "open" }
    }
}

/// Writes the hits not written yet (of emails that still exist) and their events; answers how
/// many were new.
pub async fn record(conn: &mut PgConnection, hits: &[Hit]) -> sqlx::Result<usize> {
    if hits.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = hits.iter().map(|h| h.id).collect();
    let email_ids: Vec<Uuid> = hits.iter().map(|h| h.email_id).collect();
    let kinds: Vec<&str> = hits.iter().map(Hit::kind).collect();
    let links: Vec<Option<&str>> = hits.iter().map(|h| h.link.as_deref()).collect();
    let ips: Vec<Option<&str>> = hits.iter().map(|h| h.ip_address.as_deref()).collect();
    let agents: Vec<Option<&str>> = hits.iter().map(|h| h.user_agent.as_deref()).collect();
    let ats: Vec<DateTime<Utc>> = hits.iter().map(|h| h.at).collect();
    let written: Vec<Uuid> = sqlx::query_scalar(
        "INSERT INTO email_engagements (id, team_id, email_id, broadcast_id, kind, link, ip_address, user_agent, occurred_at)
         SELECT h.id, e.team_id, e.id, e.broadcast_id, h.kind, h.link, h.ip, h.agent, h.at
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
              AS h(id, email_id, kind, link, ip, agent, at)
         JOIN emails e ON e.id = h.email_id
         ON CONFLICT (id) DO NOTHING
         RETURNING id",
    )
    .bind(&ids)
    .bind(&email_ids)
    .bind(&kinds)
    .bind(&links)
    .bind(&ips)
    .bind(&agents)
    .bind(&ats)
    .fetch_all(&mut *conn)
    .await?;
    if written.is_empty() {
        return Ok(0);
    }
    let written: std::collections::HashSet<Uuid> = written.into_iter().collect();
    let fresh: Vec<&Hit> = hits.iter().filter(|h| written.contains(&h.id)).collect();
    let mut wanted: Vec<Uuid> = fresh.iter().map(|h| h.email_id).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let heads: HashMap<Uuid, emails::EmailHead> = emails::heads(conn, &wanted).await?.into_iter().map(|h| (h.id, h)).collect();
    let events: Vec<NewEvent> = fresh
        .iter()
        .filter_map(|hit| {
            let head = heads.get(&hit.email_id)?;
            let to: Vec<&str> = head.to.iter().map(String::as_str).collect();
            let (event_type, extra) = match &hit.link {
                Some(link) => (
                    "email.clicked",
                    ("click", json!({ "ipAddress": hit.ip_address, "link": link, "timestamp": hit.at, "userAgent": hit.user_agent })),
                ),
                None => ("email.opened", ("open", json!({ "ipAddress": hit.ip_address, "timestamp": hit.at, "userAgent": hit.user_agent }))),
            };
            Some(NewEvent { team_id: head.team_id, event_type, data: head.event_data(&to, Some(extra)), email_id: Some(head.id) })
        })
        .collect();
    events::emit(conn, &events).await?;
    Ok(fresh.len())
}

/// One link of a broadcast and how it was clicked.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ClickedLink {
    pub link: String,
    pub clicks: i64,
    /// Recipients who clicked it at least once.
    pub unique_clickers: i64,
}

/// A broadcast's clicked links, most clicked first.
pub async fn clicked_links(conn: &mut PgConnection, broadcast_id: Uuid) -> sqlx::Result<Vec<ClickedLink>> {
    sqlx::query_as(
        "SELECT link, count(*) AS clicks, count(DISTINCT email_id) AS unique_clickers
         FROM email_engagements WHERE broadcast_id = $1 AND kind = 'click'
         GROUP BY link ORDER BY clicks DESC, link LIMIT 1000",
    )
    .bind(broadcast_id)
    .fetch_all(conn)
    .await
}
