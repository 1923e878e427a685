//! The broadcast fan-out: pages through the segment's members by id, records each page's
//! recipients (included, or excluded with the reason), renders each included contact's email
//! per contact, and commits the page's email rows, delivery jobs and the cursor in one
//! transaction. A worker that dies mid-send leaves a job that resumes after the last committed
//! page, and a recipient already recorded is never given a second email.

use anyhow::Context;
use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use chrono::Utc;
use crate::compose::{Addressee, Composer, Origin, Sender, property_fallbacks, template_defaults};
use render::Compiled;
use schema::email::Mailbox;
use schema::jobs::{DeliverPage, SendBroadcast};
use schema::status::BroadcastStatus;
use schema::store::broadcasts::{self, Broadcast, Resolved};
use schema::store::emails::NewEmail;
use schema::store::{contacts, domains, emails, segments, teams, templates, usage};
use serde_json::{Map, Value, json};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;

/// Contacts resolved per transaction (the default of [`BroadcastSettings::page_size`]).
pub const PAGE: i64 = 500;

/// What the fan-out needs besides the database: where the hosted pages are.
#[derive(Debug, Clone)]
pub struct BroadcastSettings {
    /// `HERALD_PUBLIC_URL`.
    pub public_url: String,
    /// Contacts resolved per transaction ([`PAGE`]).
    pub page_size: i64,
    /// Whether this is a development server, where the development sender may send.
    pub development: bool,
}

/// The job handler.
pub async fn handle(job: SendBroadcast, pool: Data<PgPool>, settings: Data<BroadcastSettings>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    match run(&pool, &settings, job.broadcast_id).await.with_context(|| format!("sending broadcast {}", job.broadcast_id)) {
        Ok(()) => Ok(()),
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Pages committed at once in one round of a run (each on its own connection).
const PAGES_IN_FLIGHT: usize = 2;

/// Sends a broadcast from where it stopped until done or canceled. Each round reads the next
/// [`PAGES_IN_FLIGHT`] page ranges after the cursor in one statement and commits each page in
/// its own transaction at the same time (a spawned task each); the cursor moves past the round
/// once every page of it has committed. A run that dies mid-round resumes at the cursor: a
/// page that had committed records no recipient again, so nobody gets a second email.
pub async fn run(pool: &PgPool, settings: &BroadcastSettings, broadcast_id: Uuid) -> anyhow::Result<()> {
    let link_key: Arc<[u8]> = schema::store::keys::get(&mut *pool.acquire().await?, "links")
        .await?
        .ok_or_else(|| anyhow::anyhow!("no link key yet"))?
        .into();
    let mut prepared: Option<Arc<Prepared>> = None;
    loop {
        let mut tx = pool.begin().await?;
        let Some(broadcast) = broadcasts::for_job(&mut tx, broadcast_id).await? else { return Ok(()) };
        if !broadcast.status.is_in_flight() {
            return Ok(());
        }
        if broadcast.scheduled_at.is_some_and(|at| at > Utc::now() + chrono::TimeDelta::seconds(1)) {
            // Rescheduled later than this job: the job enqueued with the new time runs it.
            return Ok(());
        }
        if prepared.is_none() {
            match prepare(&mut tx, &broadcast, link_key.clone(), settings).await? {
                Ok(ready) => prepared = Some(Arc::new(ready)),
                Err(reason) => {
                    broadcasts::fail(&mut tx, broadcast.id, &reason).await?;
                    tx.commit().await?;
                    return Ok(());
                }
            }
        }
        let ready = prepared.clone().expect("prepared above");
        let ends = broadcasts::page_ends(&mut tx, &broadcast, &ready.membership, broadcast.cursor, settings.page_size, PAGES_IN_FLIGHT as i64).await?;
        let Some(&last) = ends.last() else {
            broadcasts::set_status(&mut tx, broadcast.id, BroadcastStatus::Sent, broadcast.scheduled_at, None).await?;
            tx.commit().await?;
            return Ok(());
        };
        if broadcast.status != BroadcastStatus::Sending {
            broadcasts::start_sending(&mut tx, broadcast.id).await?;
        }
        tx.commit().await?;

        let broadcast = Arc::new(broadcast);
        let mut starts = vec![broadcast.cursor];
        starts.extend(ends.iter().map(|end| Some(*end)));
        let pages: Vec<_> = ends
            .iter()
            .zip(starts)
            .map(|(&end, start)| {
                let page = Page { pool: pool.clone(), broadcast: broadcast.clone(), ready: ready.clone(), start, end };
                tokio::spawn(page.commit())
            })
            .collect();
        // Every page is awaited (none is left running); the first that did not commit decides.
        let mut outcomes = Vec::new();
        for page in pages {
            outcomes.push(page.await?);
        }
        let outcomes = outcomes.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
        match outcomes.into_iter().find(|o| !matches!(o, PageOutcome::Done)) {
            None => {}
            Some(PageOutcome::OverQuota(which)) => {
                let mut conn = pool.acquire().await?;
                broadcasts::fail(&mut conn, broadcast.id, &format!("the team's {which} sending quota is used up")).await?;
                return Ok(());
            }
            Some(_) => return Ok(()),
        }
        broadcasts::move_cursor(&mut *pool.acquire().await?, broadcast.id, broadcast.cursor, last).await?;
    }
}

/// How one page's transaction ended.
enum PageOutcome {
    /// Committed (or nothing left to record in it).
    Done,
    /// The broadcast was canceled (or is gone): nothing written.
    Stopped,
    /// The page would pass the team's `daily` or `monthly` quota: nothing written.
    OverQuota(&'static str),
}

/// One page of a round: the members in `(start, end]`.
struct Page {
    pool: PgPool,
    broadcast: Arc<Broadcast>,
    ready: Arc<Prepared>,
    start: Option<Uuid>,
    end: Uuid,
}

impl Page {
    /// Records the page's recipients, creates their emails and enqueues their delivery, in one
    /// transaction that holds the broadcast live (a cancel waits for it, then stops the next).
    async fn commit(self) -> anyhow::Result<PageOutcome> {
        let Page { pool, broadcast, ready, start, end } = self;
        let mut tx = pool.begin().await?;
        if !broadcasts::hold_live(&mut tx, broadcast.id).await? {
            return Ok(PageOutcome::Stopped);
        }
        let page = broadcasts::resolve_page(&mut tx, &broadcast, &ready.membership, start, end).await?;
        let new_emails: Vec<NewEmail> = page
            .iter()
            .filter_map(|r| Some(email_for(&ready, &broadcast, r, r.email_id?)))
            .collect();
        if !new_emails.is_empty() {
            emails::insert_many(&mut tx, &new_emails, None).await?;
            let deliveries = DeliverPage { email_ids: new_emails.iter().map(|e| e.id).collect() };
            schema::jobs::enqueue(&mut tx, &deliveries).await?;
            // Counted last: the team's counter row stays locked only until the commit.
            let count = usage::Count { team_id: broadcast.team_id, emails: new_emails.len() as i32, now: Utc::now() };
            let used = usage::add(&mut tx, count).await?;
            if used.over_daily() {
                return Ok(PageOutcome::OverQuota("daily"));
            }
            if used.over_monthly() {
                return Ok(PageOutcome::OverQuota("monthly"));
            }
        }
        tx.commit().await?;
        Ok(PageOutcome::Done)
    }
}

/// What every page of one run shares: the membership and the composer of each contact's email.
struct Prepared {
    membership: segments::Membership,
    composer: Composer,
}

/// Loads what the send needs; `Err(reason)` when the broadcast cannot continue.
async fn prepare(conn: &mut PgConnection, broadcast: &Broadcast, link_key: Arc<[u8]>, settings: &BroadcastSettings) -> anyhow::Result<Result<Prepared, String>> {
    let Some(segment_id) = broadcast.segment_id else { return Ok(Err("the broadcast has no segment".into())) };
    let Some(segment) = segments::get(conn, broadcast.team_id, segment_id).await? else {
        return Ok(Err("the segment was deleted".into()));
    };
    let membership = segments::membership(conn, &segment).await?;
    let Ok(from) = Mailbox::parse(&broadcast.from_header) else { return Ok(Err("`from` is not an address".into())) };
    let domain = domains::find_by_name(conn, broadcast.team_id, from.domain()).await?;
    let domain = match domains::can_send(domain.as_ref(), settings.development) {
        Ok(domain) => domain.clone(),
        Err(why) => return Ok(Err(why.explain(from.domain(), domain.as_ref().map(|d| d.id)))),
    };
    let team = teams::get(conn, broadcast.team_id).await?.ok_or_else(|| anyhow::anyhow!("team gone"))?;
    let address = postal_address(team.postal_address.as_ref());
    let mut variables = Map::new();
    let (compiled, has_html, has_text, template) = match broadcast.template_id {
        Some(template_id) => {
            let sendable = templates::for_send(conn, broadcast.team_id, &[template_id.to_string()]).await?;
            let Some(t) = sendable.into_iter().next().filter(|t| t.version.is_some()) else {
                return Ok(Err("the template has no published version".into()));
            };
            variables = template_defaults(t.variables.as_ref());
            // The broadcast's own subject line (required on every broadcast) over the template's
            // bodies.
            let subject = Compiled::from_parts(Some(&broadcast.subject), None, None)
                .map_err(|p| anyhow::anyhow!("the subject no longer compiles: {:?}", p.first()))?;
            let compiled: Compiled = serde_json::from_value(t.compiled.clone().unwrap_or_default())?;
            (compiled.with_subject_of(&subject), t.has_html, t.has_text, Some((template_id, t.version.unwrap_or(1))))
        }
        None => {
            let compiled = Compiled::from_parts(Some(&broadcast.subject), broadcast.html.as_deref(), broadcast.text.as_deref())
                .map_err(|p| anyhow::anyhow!("content no longer compiles: {:?}", p.first()))?;
            (compiled, broadcast.html.is_some(), broadcast.text.is_some(), None)
        }
    };
    // A body with an unsubscribe or preferences link of its own gets no footer.
    let compiled = if has_unsubscribe(&compiled) { compiled } else { with_footer(&compiled, &address)? };
    let fallbacks = property_fallbacks(&contacts::properties(conn, broadcast.team_id).await?);
    Ok(Ok(Prepared {
        membership,
        composer: Composer {
            team_id: broadcast.team_id,
            compiled,
            has_html,
            has_text,
            template,
            variables,
            fallbacks,
            sender: Sender::new(&domain, broadcast.from_header.clone(), from),
            reply_to: broadcast.reply_to.clone(),
            topic_id: broadcast.topic_id,
            link_key,
            public_url: settings.public_url.clone(),
        },
    }))
}

/// The team's postal address on one line.
fn postal_address(value: Option<&Value>) -> String {
    let Some(address) = value else { return String::new() };
    ["line1", "line2", "city", "state", "postal_code", "country"]
        .iter()
        .filter_map(|field| address.get(*field).and_then(Value::as_str).filter(|s| !s.is_empty()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn has_unsubscribe(compiled: &Compiled) -> bool {
    compiled.merge_keys().iter().any(|k| k.eq_ignore_ascii_case("UNSUBSCRIBE_URL") || k.eq_ignore_ascii_case("PREFERENCES_URL"))
}

/// The content with the plain footer (an unsubscribe link and the postal address) after each
/// body; in a whole HTML document, before `</body>`.
fn with_footer(compiled: &Compiled, address: &str) -> anyhow::Result<Compiled> {
    let escaped = address.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let html = format!(
        "<p style=\"margin:24px 0 0;font-size:12px;color:#6b7280;\"><a href=\"{{{{{{UNSUBSCRIBE_URL}}}}}}\" style=\"color:#6b7280;\">Unsubscribe</a><br>{escaped}</p>"
    );
    let text = format!("\n\n--\nUnsubscribe: {{{{{{UNSUBSCRIBE_URL}}}}}}\n{address}\n");
    let footer = Compiled::from_parts(None, Some(&html), Some(&text)).map_err(|p| anyhow::anyhow!("footer: {:?}", p.first()))?;
    Ok(compiled.followed_by(&footer))
}

/// One member's email.
fn email_for(ready: &Prepared, broadcast: &Broadcast, resolved: &Resolved, id: Uuid) -> NewEmail {
    let topics = resolved
        .topics
        .as_object()
        .map(|map| map.iter().filter_map(|(id, v)| Some((Uuid::parse_str(id).ok()?, v.as_bool()?))).collect())
        .unwrap_or_default();
    let to = Addressee {
        contact_id: resolved.contact_id,
        email: resolved.email.clone(),
        first_name: resolved.first_name.clone(),
        last_name: resolved.last_name.clone(),
        unsubscribed: false,
        created_at: resolved.created_at,
        properties: resolved.properties.as_object().cloned().unwrap_or_default(),
        topics,
        segments: broadcast.segment_id.map(|id| HashMap::from([(id, true)])).unwrap_or_default(),
    };
    ready.composer.compose(id, to, None, Origin { tags: json!({}), broadcast_id: Some(broadcast.id), suppressed: None })
}
