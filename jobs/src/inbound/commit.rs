//! Commits received messages in batches. Sessions hand each finished message (parsed and
//! judged already) to a few committer tasks; a committer takes every message waiting at that
//! moment and records them in one transaction, so concurrent deliveries share one commit and
//! one WAL flush. Each session answers `250` only after the transaction holding its message
//! committed. When a batch fails, each of its messages is retried in a transaction of its own,
//! so one message that cannot be written never holds back the others.
//!
//! A write that does not finish within its bound (`HERALD_INBOUND_COMMIT_TIMEOUT_SECONDS`, a
//! stalled connection) is abandoned:
//! its sessions answer `451` and the senders try again, as they do for any temporary failure.
//! Should the abandoned commit have landed after all, the retry stores a second copy; a
//! duplicate is the failure mode SMTP accepts (RFC 5321, section 6.3), a loss is not. The
//! committers beat as the loop `inbound` (at least every [`IDLE_BEAT`] while idle, after each
//! write while busy), so readiness names them when every one of them is stuck.

use super::{reports, unsubscribe};
use chrono::{DateTime, Utc};
use schema::inbox::Facts;
use schema::links::Unsubscribe;
use schema::store::conversations::{self, NewConversation};
use schema::store::inbox;
use schema::store::inbox_messages::{self, NewMessage};
use schema::store::events::{self, NewEvent};
use schema::store::received::{self, Content, Dropped, Envelope, NewReceived};
use serde_json::json;
use sqlx::{PgConnection, PgPool};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, mpsc, oneshot};
use uuid::Uuid;

/// Committer tasks (each a connection while it writes).
const COMMITTERS: usize = 4;
/// Most messages in one transaction.
const BATCH: usize = 64;
/// How often an idle committer beats.
const IDLE_BEAT: Duration = Duration::from_secs(5);

/// One message's writes.
pub struct Pending {
    /// The id of its first record (the one named in the `250` reply).
    pub first_id: Uuid,
    pub mail_from: String,
    pub raw: Vec<u8>,
    pub envelope: Envelope,
    pub content: Option<Content>,
    /// A record per team: its team, the addresses it was accepted for, why it is dropped.
    pub records: Vec<(Uuid, Vec<String>, Option<Dropped>)>,
    pub reports: Vec<(reports::Target, reports::Report)>,
    pub unsubscribes: Vec<(Uuid, Unsubscribe)>,
    /// The Message-IDs it answers, for threading it into an Inbox conversation.
    pub thread_ids: Vec<String>,
    pub now: DateTime<Utc>,
}

type Job = (Pending, oneshot::Sender<bool>);

/// The way into the committer tasks.
pub struct Committer {
    queue: mpsc::Sender<Job>,
}

impl Committer {
    /// Starts the committer tasks on `pool`, each write bounded by `bound`.
    pub fn start(pool: PgPool, bound: Duration) -> Committer {
        let (queue, receiver) = mpsc::channel::<Job>(1024);
        let receiver = Arc::new(Mutex::new(receiver));
        crate::supervise::expect_beats("inbound", IDLE_BEAT + 2 * bound);
        for _ in 0..COMMITTERS {
            tokio::spawn(run(pool.clone(), bound, receiver.clone()));
        }
        Committer { queue }
    }

    /// Records the message; answers once the transaction holding it has committed.
    pub async fn commit(&self, pending: Pending) -> anyhow::Result<()> {
        let (done, committed) = oneshot::channel();
        self.queue.send((pending, done)).await.map_err(|_| anyhow::anyhow!("the committers stopped"))?;
        match committed.await {
            Ok(true) => Ok(()),
            _ => anyhow::bail!("the message was not committed"),
        }
    }
}

async fn run(pool: PgPool, bound: Duration, receiver: Arc<Mutex<mpsc::Receiver<Job>>>) {
    loop {
        let mut batch: Vec<Job> = Vec::new();
        {
            let mut receiver = receiver.lock().await;
            crate::supervise::beat("inbound");
            match tokio::time::timeout(IDLE_BEAT, receiver.recv()).await {
                Ok(Some(job)) => batch.push(job),
                Ok(None) => return,
                Err(_) => continue,
            }
            while batch.len() < BATCH {
                match receiver.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
        }
        let pending: Vec<&Pending> = batch.iter().map(|(p, _)| p).collect();
        match write(&pool, bound, &pending).await {
            Ok(()) => {
                for (_, done) in batch {
                    let _ = done.send(true);
                }
            }
            Err(error) if batch.len() == 1 => {
                tracing::warn!(%error, "inbound: a message was not committed");
                let _ = batch.pop().map(|(_, done)| done.send(false));
            }
            Err(error) => {
                tracing::warn!(%error, size = batch.len(), "inbound: a batch was not committed; retrying its messages one by one");
                for (pending, done) in batch {
                    crate::supervise::beat("inbound");
                    let written = write(&pool, bound, &[&pending]).await;
                    if let Err(error) = &written {
                        tracing::warn!(%error, "inbound: a message was not committed");
                    }
                    let _ = done.send(written.is_ok());
                }
            }
        }
    }
}

/// Writes the messages in one transaction and commits it, or gives up after `bound`.
async fn write(pool: &PgPool, bound: Duration, messages: &[&Pending]) -> anyhow::Result<()> {
    tokio::time::timeout(bound, write_now(pool, messages))
        .await
        .map_err(|_| anyhow::anyhow!("the write did not finish within {bound:?}; abandoned"))?
}

async fn write_now(pool: &PgPool, messages: &[&Pending]) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    let (mut new_events, mut tally) = (Vec::new(), received::Tally::default());
    for pending in messages {
        record(&mut tx, pending, &mut new_events, &mut tally).await?;
    }
    events::emit(&mut tx, &new_events).await?;
    // Last, so the counter rows every committer updates are locked only until the commit.
    received::count(&mut tx, &tally).await?;
    tx.commit().await?;
    Ok(())
}

/// One message's records, unsubscribes and reports, and its `email.received` events.
async fn record(conn: &mut PgConnection, pending: &Pending, new_events: &mut Vec<NewEvent>, tally: &mut received::Tally) -> anyhow::Result<()> {
    for (team_id, link) in &pending.unsubscribes {
        unsubscribe::apply(conn, *team_id, link).await?;
    }
    let envelope = &pending.envelope;
    let mut next_id = Some(pending.first_id);
    for (team_id, received_for, dropped) in &pending.records {
        let id = next_id.take().unwrap_or_else(schema::ids::new_id);
        let new = NewReceived {
            id,
            team_id: *team_id,
            mail_from: &pending.mail_from,
            received_for: received_for.clone(),
            envelope,
            content: pending.content.as_ref(),
            raw: &pending.raw,
            dropped: *dropped,
            now: pending.now,
        };
        let dropped = received::insert(conn, &new, tally).await?;
        let attachments: Vec<_> = pending
            .content
            .as_ref()
            .filter(|_| dropped.is_none())
            .map(|c| {
                c.attachments
                    .iter()
                    .map(|a| json!({ "id": a.id, "filename": a.filename, "content_type": a.content_type,
                        "content_disposition": a.content_disposition, "size": a.size }))
                    .collect()
            })
            .unwrap_or_default();
        let data = json!({
            "email_id": id,
            "created_at": pending.now,
            "from": envelope.from_header,
            "to": envelope.to,
            "cc": envelope.cc,
            "bcc": envelope.bcc,
            "reply_to": envelope.reply_to,
            "received_for": received_for,
            "subject": envelope.subject,
            "message_id": envelope.message_id,
            "dropped_reason": dropped.map(Dropped::as_str),
            "attachments": attachments,
        });
        new_events.push(NewEvent { team_id: *team_id, event_type: "email.received", data, email_id: None });
        if dropped.is_none() {
            into_conversations(conn, pending, *team_id, id, received_for, new_events).await?;
        }
    }
    for (target, report) in &pending.reports {
        if !reports::apply(conn, *target, report).await? {
            tracing::info!(email_id = %target.email_id, "inbound: a report about no email of the team, or nothing new; ignored");
        }
    }
    Ok(())
}

/// Mail stored for a team at one of its open channels' addresses becomes a message of a
/// conversation of each such channel: the one it answers (by `In-Reply-To`/`References`
/// against the channel's own messages), else a new one. The received email is the message.
async fn into_conversations(conn: &mut PgConnection, pending: &Pending, team_id: Uuid, received_email_id: Uuid, received_for: &[String], new_events: &mut Vec<NewEvent>) -> anyhow::Result<()> {
    let channels = inbox::open_channels_at(conn, team_id, received_for).await?;
    if channels.is_empty() {
        return Ok(());
    }
    let envelope = &pending.envelope;
    let content = pending.content.as_ref();
    let text = content.and_then(|c| c.text.clone()).or_else(|| content.and_then(|c| c.html.as_deref()).map(schema::inbox::html_words)).unwrap_or_default();
    let message_id = envelope.message_id.as_deref().map(schema::inbox::message_id);
    for channel in channels {
        let threaded = conversations::thread(conn, team_id, channel.id, &pending.thread_ids).await?;
        let (conversation_id, subject) = match threaded {
            Some(found) => found,
            None => {
                let customer = envelope.from_email.to_lowercase();
                // An answer to a sent email that named this channel opens a conversation linked to it.
                let email_id = inbox::linked_email(conn, team_id, channel.id, &pending.thread_ids).await?;
                let new = NewConversation {
                    channel_id: channel.id,
                    subject: &envelope.subject,
                    customer_email: &customer,
                    customer_name: &envelope.from_name,
                    external_id: None,
                    email_id,
                };
                let id = conversations::open(conn, team_id, &new).await?.ok_or_else(|| anyhow::anyhow!("opening a conversation wrote nothing"))?;
                let facts = Facts { team_id, conversation_id: id, channel_id: channel.id, subject: &envelope.subject };
                new_events.push(facts.created(&customer, &envelope.from_name, None));
                (id, envelope.subject.clone())
            }
        };
        let message = NewMessage {
            conversation_id,
            kind: "received",
            received_email_id: Some(received_email_id),
            message_id: message_id.as_deref(),
            from_email: &envelope.from_email,
            from_name: &envelope.from_name,
            to: &envelope.to,
            cc: &envelope.cc,
            subject: &envelope.subject,
            search_text: &text,
            ..NewMessage::default()
        };
        let (id, _) = inbox_messages::add(conn, team_id, &message).await?;
        let facts = Facts { team_id, conversation_id, channel_id: channel.id, subject: &subject };
        new_events.push(facts.received(id, &envelope.from_email, Some(received_email_id)));
    }
    Ok(())
}
