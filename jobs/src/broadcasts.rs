//! The broadcast fan-out: pages through the segment's members by id, records each page's
//! recipients (included, or excluded with the reason), renders each included contact's email
//! per contact, and commits the page's email rows, delivery jobs and the cursor in one
//! transaction. A worker that dies mid-send leaves a job that resumes after the last committed
//! page, and a recipient already recorded is never given a second email.

use anyhow::Context;
use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use chrono::Utc;
use render::{Compiled, Mode};
use schema::email::Mailbox;
use schema::jobs::{DeliverPage, SendBroadcast};
use schema::links::{self, Link};
use schema::status::BroadcastStatus;
use schema::store::broadcasts::{self, Broadcast, Resolved};
use schema::store::emails::{NewEmail, NewRecipient};
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
            match prepare(&mut tx, &broadcast, settings.development).await? {
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
                let page = Page { pool: pool.clone(), broadcast: broadcast.clone(), ready: ready.clone(), link_key: link_key.clone(), settings: settings.clone(), start, end };
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
    link_key: Arc<[u8]>,
    settings: BroadcastSettings,
    start: Option<Uuid>,
    end: Uuid,
}

impl Page {
    /// Records the page's recipients, creates their emails and enqueues their delivery, in one
    /// transaction that holds the broadcast live (a cancel waits for it, then stops the next).
    async fn commit(self) -> anyhow::Result<PageOutcome> {
        let Page { pool, broadcast, ready, link_key, settings, start, end } = self;
        let mut tx = pool.begin().await?;
        if !broadcasts::hold_live(&mut tx, broadcast.id).await? {
            return Ok(PageOutcome::Stopped);
        }
        let page = broadcasts::resolve_page(&mut tx, &broadcast, &ready.membership, start, end).await?;
        let new_emails: Vec<NewEmail> = page
            .iter()
            .filter_map(|r| Some(ready.email_for(&broadcast, r, r.email_id?, &link_key, &settings)))
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

/// What every page of one run shares: the membership, the compiled content, the sender.
struct Prepared {
    membership: segments::Membership,
    compiled: Compiled,
    has_html: bool,
    has_text: bool,
    template: Option<(Uuid, i32)>,
    variables: Map<String, Value>,
    fallbacks: HashMap<String, String>,
    domain_id: Uuid,
    domain_name: String,
    return_path: String,
    from: Mailbox,
}

/// Loads what the send needs; `Err(reason)` when the broadcast cannot continue.
async fn prepare(conn: &mut PgConnection, broadcast: &Broadcast, development: bool) -> anyhow::Result<Result<Prepared, String>> {
    let Some(segment_id) = broadcast.segment_id else { return Ok(Err("the broadcast has no segment".into())) };
    let Some(segment) = segments::get(conn, broadcast.team_id, segment_id).await? else {
        return Ok(Err("the segment was deleted".into()));
    };
    let membership = segments::membership(conn, &segment).await?;
    let Ok(from) = Mailbox::parse(&broadcast.from_header) else { return Ok(Err("`from` is not an address".into())) };
    let domain = domains::find_by_name(conn, broadcast.team_id, from.domain()).await?;
    let domain = match domains::can_send(domain.as_ref(), development) {
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
        compiled,
        has_html,
        has_text,
        template,
        variables,
        fallbacks,
        domain_id: domain.id,
        domain_name: domain.name.clone(),
        return_path: format!("{}.{}", domain.custom_return_path, domain.name),
        from,
    }))
}

/// A template's declared variables that have a fallback, as the values a send starts from.
pub(crate) fn template_defaults(declared: Option<&Value>) -> Map<String, Value> {
    declared
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| Some((v["key"].as_str()?.to_string(), v.get("fallback_value").filter(|f| !f.is_null())?.clone())))
        .collect()
}

/// The team's property fallbacks as text, for `{{{PROPERTY}}}` merge tags.
pub(crate) fn property_fallbacks(properties: &[contacts::Property]) -> HashMap<String, String> {
    properties.iter().filter_map(|p| Some((p.key.clone(), fallback_text(p.fallback_value.as_ref()?)?))).collect()
}

fn fallback_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
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

impl Prepared {
    /// One contact's email.
    fn email_for(&self, broadcast: &Broadcast, resolved: &Resolved, id: Uuid, link_key: &[u8], settings: &BroadcastSettings) -> NewEmail {
        let links = contact_links(link_key, &settings.public_url, resolved.contact_id, broadcast.topic_id, &self.return_path);
        let topics = resolved
            .topics
            .as_object()
            .map(|map| map.iter().filter_map(|(id, v)| Some((Uuid::parse_str(id).ok()?, v.as_bool()?))).collect())
            .unwrap_or_default();
        let contact = render::Contact {
            email: resolved.email.clone(),
            first_name: resolved.first_name.clone(),
            last_name: resolved.last_name.clone(),
            unsubscribed: false,
            created_at: Some(resolved.created_at),
            properties: resolved.properties.as_object().cloned().unwrap_or_default(),
            fallbacks: self.fallbacks.clone(),
            topics,
            segments: broadcast.segment_id.map(|id| HashMap::from([(id, true)])).unwrap_or_default(),
            unsubscribe_url: Some(links.unsubscribe_url.clone()),
            preferences_url: Some(links.preferences_url.clone()),
        };
        let context = render::Context { variables: &self.variables, contact: Some(&contact), event: None };
        let rendered = self.compiled.render(&context, Mode::PerContact);
        let html = self.has_html.then_some(rendered.html);
        let text = self.has_text.then_some(rendered.text);
        let size = html.as_ref().map_or(0, String::len) + text.as_ref().map_or(0, String::len);
        NewEmail {
            id,
            team_id: broadcast.team_id,
            api_key_id: None,
            domain_id: self.domain_id,
            from_header: broadcast.from_header.clone(),
            from_email: self.from.key(),
            subject: rendered.subject.replace(['\r', '\n'], " "),
            html,
            text,
            reply_to: broadcast.reply_to.clone(),
            headers: links.headers(),
            tags: json!({}),
            message_id: format!("{id}@{}", self.domain_name),
            scheduled_at: None,
            size_bytes: size.min(i32::MAX as usize) as i32,
            created_at: Utc::now(),
            template: self.template,
            broadcast_id: Some(broadcast.id),
            recipients: vec![NewRecipient { kind: "to", address: resolved.email.clone(), email: resolved.email.to_ascii_lowercase(), suppressed: None }],
            attachments: Vec::new(),
        }
    }
}

/// A contact's unsubscribe and preferences links.
pub(crate) struct ContactLinks {
    pub unsubscribe_url: String,
    pub preferences_url: String,
    /// `List-Unsubscribe`: the one-click URL and a mailto to the return-path host carrying the
    /// same signed token in its subject (the inbound server reads it from the mail a mailbox
    /// provider sends).
    pub list_unsubscribe: String,
}

impl ContactLinks {
    /// The one-click unsubscribe headers of RFC 8058.
    pub fn headers(&self) -> Value {
        json!({ "List-Unsubscribe": self.list_unsubscribe, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" })
    }
}

/// The signed links of one contact (`topic_id`: the topic an unsubscribe leaves).
pub(crate) fn contact_links(link_key: &[u8], public_url: &str, contact_id: Uuid, topic_id: Option<Uuid>, return_path: &str) -> ContactLinks {
    let public = public_url.trim_end_matches('/');
    let token = links::token(link_key, Link { contact_id, topic_id });
    let unsubscribe_url = format!("{public}/unsubscribe/{token}");
    let preferences_url = format!("{public}/preferences/{}", links::token(link_key, Link { contact_id, topic_id: None }));
    let list_unsubscribe = format!("<{unsubscribe_url}>, <mailto:unsubscribe@{return_path}?subject=unsubscribe%20{token}>");
    ContactLinks { unsubscribe_url, preferences_url, list_unsubscribe }
}
