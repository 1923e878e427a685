//! The `deliver` job: builds an email's MIME message once (once per recipient for a send with
//! `unsubscribe_link`, whose headers name each recipient), DKIM-signs it with its domain's key
//! under selector `svc`, and submits one envelope per pending recipient. Before any SMTP the
//! recipients are marked `sending` in a committed transaction; a run that finds recipients
//! still `sending` knows an earlier run died mid-submission and never sends to them again
//! (they become ambiguous). Every outcome, its `email.*` events, suppressions and the next
//! retry are written in one transaction. The development sender's mail is signed the same way
//! and kept in the development outbox in that transaction, never sent.

use anyhow::Context;
use crate::smtp::{Envelope, Mailer, Outcome};
use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;
use chrono::Utc;
use crate::dkim::DkimSigner;
use lettre::message::header::{ContentTransferEncoding, ContentType, HeaderName, HeaderValue};
use lettre::message::{Attachment, Body, Mailbox as LettreMailbox, Message, MultiPart, SinglePart};
use schema::email::{Mailbox, Simulated, simulated};
use schema::jobs::{Deliver, DeliverPage, ResolveAmbiguous};
use schema::store::emails::{self, Email, EmailOutcome, Recipient, RecipientOutcome};
use schema::store::events::NewEvent;
use schema::store::suppressions::{self, NewSuppression};
use schema::store::{domains, events};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The DKIM selector every domain publishes.
pub const DKIM_SELECTOR: &str = "svc";

/// Retry and ambiguity timing.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    /// `HERALD_DELIVERY_RETRY_SCHEDULE`: the wait before each retry of a deferred recipient;
    /// when it is spent the recipient bounces.
    pub retry_schedule: Vec<Duration>,
    /// How long an ambiguous submission waits for a matching event before it fails.
    pub ambiguous_window: Duration,
    /// `HERALD_PUBLIC_URL`: its scheme is the tracking links' scheme, and links to its hosted
    /// pages (unsubscribe, preferences) are never tracked.
    pub public_url: String,
}

/// What the deliver job needs: SMTP, timing and a cache of parsed signing keys.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub mailer: Mailer,
    pub settings: Arc<DeliverySettings>,
    /// Deliveries the process runs at once (`deliver_page` jobs use half each).
    pub concurrency: usize,
    signers: Arc<Mutex<Signers>>,
    /// The link key tracking links are signed with, read once.
    link_key: Arc<tokio::sync::OnceCell<Vec<u8>>>,
}

/// Parsed DKIM keys by domain, with the PEM they were parsed from.
type Signers = HashMap<uuid::Uuid, (String, Arc<DkimSigner>)>;

impl Delivery {
    pub fn new(mailer: Mailer, settings: DeliverySettings) -> Delivery {
        Delivery { mailer, settings: Arc::new(settings), concurrency: 32, signers: Arc::default(), link_key: Arc::default() }
    }

    /// The service's link key (made by the first process that needs it).
    async fn link_key(&self, pool: &PgPool) -> anyhow::Result<&[u8]> {
        let key = self
            .link_key
            .get_or_try_init(|| async {
                let fresh: [u8; 32] = rand::random();
                schema::store::keys::get_or_create(&mut *pool.acquire().await?, "links", &fresh).await
            })
            .await?;
        Ok(key)
    }

    /// The domain's DKIM signer, parsed once per key.
    fn signer(&self, domain_id: uuid::Uuid, domain: &str, pem: &str) -> anyhow::Result<Arc<DkimSigner>> {
        let mut signers = self.signers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cached_pem, signer)) = signers.get(&domain_id)
            && cached_pem == pem
        {
            return Ok(signer.clone());
        }
        let config = Arc::new(DkimSigner::from_pkcs1_pem(domain, DKIM_SELECTOR, pem)?);
        signers.insert(domain_id, (pem.to_string(), config.clone()));
        Ok(config)
    }
}

/// Runs one `deliver` job; a failure on Herald's side (the database) retries later.
pub async fn handle(job: Deliver, pool: Data<PgPool>, delivery: Data<Delivery>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    match deliver(&pool, &delivery, &[job.email_id]).await.with_context(|| format!("delivering email {}", job.email_id)) {
        Ok(()) => Ok(()),
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Runs one `deliver_page` job: the page's emails delivered in batches, two batches at once,
/// so the job keeps half the process's delivery concurrency busy while one batch's outcomes
/// are written. A failure on Herald's side retries the whole page; emails a run already
/// delivered are skipped (nothing left to claim).
pub async fn handle_page(job: DeliverPage, pool: Data<PgPool>, delivery: Data<Delivery>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    use futures::StreamExt;
    let batch = (delivery.concurrency / 4).max(1);
    let batches: Vec<Vec<uuid::Uuid>> = job.email_ids.chunks(batch).map(<[uuid::Uuid]>::to_vec).collect();
    let failures: Vec<anyhow::Error> = futures::stream::iter(batches)
        .map(|email_ids| {
            let (pool, delivery) = (&*pool, &*delivery);
            async move { deliver(pool, delivery, &email_ids).await }
        })
        .buffer_unordered(2)
        .filter_map(|result| async move { result.err() })
        .collect()
        .await;
    match failures.into_iter().next() {
        None => Ok(()),
        Some(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Delivers emails' pending recipients and records what happened: the emails are read in one
/// statement, each message is built and signed before the claim (so a failure there leaves no
/// recipient `sending`), all are claimed in one statement, the emails are submitted at once
/// (each email's recipients one after another), and every outcome is written in one
/// transaction. One email's failure never stops the others: they are delivered and recorded,
/// and the first failure is returned afterwards (the job retries; nothing is sent twice).
pub async fn deliver(pool: &PgPool, delivery: &Delivery, email_ids: &[uuid::Uuid]) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let materials = emails::for_delivery(&mut conn, email_ids).await?;
    let mut attachments = HashMap::new();
    for material in materials.iter().filter(|m| m.has_attachments) {
        attachments.insert(material.email.id, emails::attachment_contents(&mut conn, material.email.id).await?);
    }
    drop(conn);
    let mut signing = Vec::new();
    for material in materials {
        let attachments = attachments.remove(&material.email.id).unwrap_or_default();
        signing.push(async move {
            let bytes = sign(pool, delivery, &material, attachments).await?;
            Ok::<_, anyhow::Error>((material.email.id, (bytes, material.domain)))
        });
    }
    let mut failure = None;
    let mut signed: HashMap<uuid::Uuid, (Option<Copies>, Option<emails::SendingDomain>)> = HashMap::new();
    for result in futures::future::join_all(signing).await {
        match result {
            Ok((email_id, message)) => {
                signed.insert(email_id, message);
            }
            Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }

    if !signed.is_empty() {
        // Each recipient's return path is signed under the link key (bounces name it).
        let link_key = delivery.link_key(pool).await?;
        let ids: Vec<uuid::Uuid> = signed.keys().copied().collect();
        let claimed = emails::claim(&mut *pool.acquire().await?, &ids).await?;
        let mut submissions = Vec::new();
        for claimed in claimed {
            let (bytes, domain) = signed.remove(&claimed.email.id).unwrap_or_default();
            submissions.push(submit(delivery, link_key, claimed, bytes, domain));
        }
        let mut submitted = Vec::new();
        for result in futures::future::join_all(submissions).await {
            match result {
                Ok(done) if !done.results.is_empty() => submitted.push(done),
                Ok(_) => {}
                Err(error) => {
                    failure.get_or_insert(error);
                }
            }
        }
        if !submitted.is_empty() {
            let mut tx = pool.begin().await?;
            for s in submitted.iter().filter(|s| !s.outbox.is_empty()) {
                if let Some(copies) = &s.copies {
                    let kept: Vec<(&str, &[u8])> =
                        s.outbox.iter().filter_map(|(address, position)| Some((address.as_str(), copies.for_position(*position)?))).collect();
                    schema::store::outbox::insert(&mut tx, s.email.team_id, s.email.id, &kept).await?;
                }
            }
            record(&mut tx, &delivery.settings, submitted).await?;
            tx.commit().await?;
        }
    }
    failure.map_or(Ok(()), Err)
}

/// An email's signed message: one for all its recipients, or, for a send with
/// `unsubscribe_link`, one per recipient whose `List-Unsubscribe` names that recipient.
enum Copies {
    Shared(Vec<u8>),
    Own(HashMap<i16, Vec<u8>>),
}

impl Copies {
    /// The message the recipient at `position` is sent.
    fn for_position(&self, position: i16) -> Option<&[u8]> {
        match self {
            Copies::Shared(bytes) => Some(bytes),
            Copies::Own(copies) => copies.get(&position).map(Vec::as_slice),
        }
    }
}

/// The email's signed message(s), tracked when its domain says so; `None` once its domain is
/// deleted (its mail then fails).
async fn sign(
    pool: &PgPool,
    delivery: &Delivery,
    material: &emails::DeliveryMaterial,
    attachments: Vec<emails::AttachmentContent>,
) -> anyhow::Result<Option<Copies>> {
    let Some(domain) = &material.domain else { return Ok(None) };
    let signer = delivery.signer(domain.domain_id, &domain.domain_name, &domain.dkim_private_key)?;
    let mut email = material.email.clone();
    if let Some(html) = email.html.as_deref().filter(|_| domain.open_tracking || domain.click_tracking) {
        let key = delivery.link_key(pool).await?;
        email.html = Some(tracked_html(html, email.id, domain, key, &delivery.settings.public_url));
    }
    // Each recipient's own unsubscribe headers, when the send asked for them.
    let mut variants: Vec<(Option<i16>, Email)> = Vec::new();
    if email.unsubscribe_link {
        let key = delivery.link_key(pool).await?;
        let return_path = format!("{}.{}", domain.domain_return_path, domain.domain_name);
        for recipient in material.recipients.iter().filter(|r| r.status != "suppressed") {
            let token = schema::links::address_token(key, &schema::links::AddressLink { email_id: email.id, email: recipient.email.clone() });
            let mut own = email.clone();
            if let (Some(headers), Value::Object(added)) =
                (own.headers.as_object_mut(), schema::links::unsubscribe_headers(&delivery.settings.public_url, &token, &return_path))
            {
                headers.extend(added);
            }
            variants.push((Some(recipient.position), own));
        }
    } else {
        variants.push((None, email));
    }
    // RSA signing is CPU work: off the async threads, so other deliveries' I/O goes on.
    let recipients = material.recipients.clone();
    let copies = tokio::task::spawn_blocking(move || -> anyhow::Result<Copies> {
        let now = Utc::now().timestamp();
        let mut own = HashMap::new();
        for (position, email) in variants {
            let bytes = signer.sign(&build_message(&email, &recipients, &attachments)?.formatted(), now)?;
            match position {
                None => return Ok(Copies::Shared(bytes)),
                Some(position) => own.insert(position, bytes),
            };
        }
        Ok(Copies::Own(own))
    })
    .await??;
    Ok(Some(copies))
}

/// One claimed email's submission results.
struct Submitted {
    email: Email,
    domain: Option<emails::SendingDomain>,
    copies: Option<Copies>,
    results: Vec<(Recipient, Result<Outcome, Simulated>)>,
    /// Addresses kept in the development outbox, with their positions.
    outbox: Vec<(String, i16)>,
}

/// Submits a claimed email to its recipients, one after another. Recipients an earlier run
/// left `sending` are ambiguous and never sent again.
async fn submit(
    delivery: &Delivery,
    link_key: &[u8],
    claimed: emails::Claimed,
    copies: Option<Copies>,
    domain: Option<emails::SendingDomain>,
) -> anyhow::Result<Submitted> {
    let email_id = claimed.email.id;
    let mut results: Vec<(Recipient, Result<Outcome, Simulated>)> = claimed
        .interrupted
        .into_iter()
        .map(|r| (r, Ok(Outcome::Ambiguous { response: "the worker stopped while submitting".into() })))
        .collect();
    let mut outbox = Vec::new();
    for recipient in claimed.to_send {
        let (Some(domain), Some(bytes)) = (&domain, copies.as_ref().and_then(|c| c.for_position(recipient.position))) else {
            let response = "the sending domain was deleted".to_string();
            results.push((recipient, Ok(Outcome::Refused { reason: "domain_deleted", response })));
            continue;
        };
        let mailbox = Mailbox::parse(&recipient.address).map_err(anyhow::Error::msg)?;
        if let Some(outcome) = simulated(&mailbox) {
            results.push((recipient, Err(outcome)));
            continue;
        }
        if domain.development {
            outbox.push((recipient.address.clone(), recipient.position));
            let response = "250 2.0.0 kept in the development outbox".to_string();
            results.push((recipient, Ok(Outcome::Accepted { response, final_hop: true })));
            continue;
        }
        let host = format!("{}.{}", domain.domain_return_path, domain.domain_name);
        let mail_from = schema::tracking::return_path(link_key, email_id, recipient.position, &host);
        let require_tls = domain.domain_tls == schema::domain::Tls::Enforced;
        let envelope = Envelope { mail_from: &mail_from, rcpt_to: mailbox.address(), message: bytes, require_tls };
        let outcome = delivery.mailer.send(&envelope).await;
        results.push((recipient, Ok(outcome)));
    }
    Ok(Submitted { email: claimed.email, domain, copies, results, outbox })
}

/// The HTML body of tracked mail: with click tracking each http(s) link (except Herald's own
/// hosted pages) goes through a signed redirect on the domain's `links` host, and with open
/// tracking a pixel from that host closes the body.
pub fn tracked_html(html: &str, email_id: uuid::Uuid, domain: &emails::SendingDomain, key: &[u8], public_url: &str) -> String {
    let public_url = public_url.trim_end_matches('/');
    let scheme = if public_url.starts_with("https://") { "https" } else { "http" };
    let base = format!("{scheme}://links.{}", domain.domain_name);
    let hosted = [format!("{public_url}/unsubscribe/"), format!("{public_url}/preferences/")];
    let mut out = if domain.click_tracking {
        render::tracking::rewrite_links(html, |href| {
            let link = href.trim();
            let lower = link.get(..8).unwrap_or(link).to_ascii_lowercase();
            let web = lower.starts_with("https://") || lower.starts_with("http://");
            (web && !hosted.iter().any(|page| link.starts_with(page.as_str())))
                .then(|| format!("{base}/click/{}", schema::tracking::click_token(key, email_id, link)))
        })
    } else {
        html.to_string()
    };
    if domain.open_tracking {
        out = render::tracking::add_open_pixel(&out, &format!("{base}/open/{}", schema::tracking::open_token(key, email_id)));
    }
    out
}

/// The MIME message: alternative text and HTML, attachments (inline ones by `content_id`),
/// custom headers and a Message-ID on the sending domain. Bcc recipients are left out.
pub fn build_message(email: &Email, recipients: &[Recipient], attachments: &[emails::AttachmentContent]) -> anyhow::Result<Message> {
    let mailbox = |raw: &str| -> anyhow::Result<LettreMailbox> {
        let (name, address) = Mailbox::parse(raw).map_err(anyhow::Error::msg)?.into_parts();
        Ok(LettreMailbox::new(name, address.parse()?))
    };
    let mut builder = Message::builder()
        .from(mailbox(&email.from_header)?)
        .subject(email.subject.clone())
        .message_id(Some(format!("<{}>", email.message_id)))
        .date(SystemTime::now());
    for recipient in recipients {
        match recipient.kind.as_str() {
            "to" => builder = builder.to(mailbox(&recipient.address)?),
            "cc" => builder = builder.cc(mailbox(&recipient.address)?),
            _ => {}
        }
    }
    for reply_to in &email.reply_to {
        builder = builder.reply_to(mailbox(reply_to)?);
    }
    if let Some(headers) = email.headers.as_object() {
        for (name, value) in headers {
            let name = HeaderName::new_from_ascii(name.clone()).map_err(|_| anyhow::anyhow!("header name {name}"))?;
            builder = builder.raw_header(HeaderValue::new(name, value.as_str().unwrap_or_default().to_string()));
        }
    }
    let single = |text: &Option<String>, html: &Option<String>| match (text, html) {
        (_, Some(html)) => SinglePart::html(html.clone()),
        (text, None) => SinglePart::plain(text.clone().unwrap_or_default()),
    };
    let body = match (&email.text, &email.html) {
        (Some(text), Some(html)) => Ok(MultiPart::alternative_plain_html(text.clone(), html.clone())),
        (text, html) => Err(single(text, html)),
    };
    if attachments.is_empty() {
        return Ok(match body {
            Ok(alternative) => builder.multipart(alternative)?,
            Err(part) => builder.singlepart(part)?,
        });
    }
    let mut mixed = match body {
        Ok(alternative) => MultiPart::mixed().multipart(alternative),
        Err(part) => MultiPart::mixed().singlepart(part),
    };
    for emails::AttachmentContent { attachment, content } in attachments {
        let content_type = ContentType::parse(&attachment.content_type).unwrap_or(ContentType::parse("application/octet-stream")?);
        let part = match &attachment.content_id {
            Some(cid) => Attachment::new_inline_with_name(cid.clone(), attachment.filename.clone()),
            None => Attachment::new(attachment.filename.clone()),
        };
        // Attachments always travel as base64: their bytes reach the recipient exactly, and no
        // bare line ending can change between the body hash and a verifier's reading.
        let body = Body::new_with_encoding(content.clone(), ContentTransferEncoding::Base64)
            .map_err(|_| anyhow::anyhow!("base64 encoding an attachment"))?;
        mixed = mixed.singlepart(part.body(body, content_type));
    }
    Ok(builder.multipart(mixed)?)
}

/// What one recipient's result means: its new status, the events it emits, and whether it
/// suppresses the address, retries or waits for the ambiguity window.
#[derive(Debug, Clone, PartialEq)]
struct Decision {
    status: &'static str,
    events: Vec<(&'static str, Option<(&'static str, Value)>)>,
    suppress: bool,
    retry_after: Option<Duration>,
    ambiguous: bool,
    failed_reason: Option<&'static str>,
    response: Option<String>,
}

fn bounce(kind: &str, message: &str) -> Value {
    json!({ "type": kind, "subType": "General", "message": message, "diagnosticCode": [message] })
}

/// The one mapping from a submission result to statuses and events.
fn decide(result: &Result<Outcome, Simulated>, attempts: i32, settings: &DeliverySettings, email: &Email) -> Decision {
    let base = Decision {
        status: "sent",
        events: vec![],
        suppress: false,
        retry_after: None,
        ambiguous: false,
        failed_reason: None,
        response: None,
    };
    match result {
        Err(Simulated::Delivered) => Decision { status: "delivered", events: vec![("email.sent", None), ("email.delivered", None)], ..base },
        Err(Simulated::Complained) => Decision {
            status: "complained",
            events: vec![("email.sent", None), ("email.delivered", None), ("email.complained", None)],
            ..base
        },
        Err(Simulated::Bounced) => Decision {
            status: "bounced",
            events: vec![("email.sent", None), ("email.bounced", Some(("bounce", bounce("Permanent", "550 5.1.1 simulated bounce"))))],
            ..base
        },
        Ok(Outcome::Accepted { response, final_hop: true }) => Decision {
            status: "delivered",
            events: vec![("email.sent", None), ("email.delivered", None)],
            response: Some(response.clone()),
            ..base
        },
        Ok(Outcome::Accepted { response, final_hop: false }) => {
            Decision { status: "sent", events: vec![("email.sent", None)], response: Some(response.clone()), ..base }
        }
        Ok(Outcome::Rejected { response }) => Decision {
            status: "bounced",
            events: vec![("email.bounced", Some(("bounce", bounce("Permanent", response))))],
            suppress: true,
            response: Some(response.clone()),
            ..base
        },
        Ok(Outcome::Deferred { response }) => match settings.retry_schedule.get(attempts.max(1) as usize - 1) {
            Some(wait) => {
                let total: Duration = settings.retry_schedule.iter().sum();
                let expires = email.created_at + chrono::Duration::from_std(total).unwrap_or_default();
                let delay = json!({
                    "type": "TransientFailure",
                    "expirationTime": expires,
                    "delayedRecipients": [{ "status": response.get(..3).unwrap_or("4.0.0"), "diagnosticCode": response }],
                });
                Decision {
                    status: "delayed",
                    events: vec![("email.delivery_delayed", Some(("delay", delay)))],
                    retry_after: Some(*wait),
                    response: Some(response.clone()),
                    ..base
                }
            }
            None => Decision {
                status: "bounced",
                events: vec![("email.bounced", Some(("bounce", bounce("Transient", response))))],
                response: Some(response.clone()),
                ..base
            },
        },
        Ok(Outcome::Refused { reason, response }) => Decision {
            status: "failed",
            events: vec![("email.failed", Some(("failed", json!({ "reason": reason }))))],
            failed_reason: Some(reason),
            response: Some(response.clone()),
            ..base
        },
        Ok(Outcome::Ambiguous { response }) => {
            Decision { status: "ambiguous", ambiguous: true, response: Some(response.clone()), ..base }
        }
    }
}

/// Writes the results of one run over several emails: recipients, events, suppressions, each
/// email's next retry and ambiguity check, and each domain's last send (unless one was
/// recorded within the minute).
async fn record(conn: &mut PgConnection, settings: &DeliverySettings, submitted: Vec<Submitted>) -> anyhow::Result<()> {
    let mut outcomes = Vec::new();
    let mut new_events = Vec::new();
    let mut suppress = Vec::new();
    let mut retries = Vec::new();
    let mut ambiguous_emails = Vec::new();
    let mut sent_domains: Vec<uuid::Uuid> = Vec::new();
    for Submitted { email, domain, results, .. } in &submitted {
        let mut recipients = Vec::new();
        let mut retry_after: Option<Duration> = None;
        let mut ambiguous = false;
        let mut last_event = None;
        let mut failed_reason = None;
        let mut sent = false;
        for (recipient, result) in results {
            let decision = decide(result, recipient.attempts, settings, email);
            for (event_type, extra) in &decision.events {
                new_events.push(NewEvent {
                    team_id: email.team_id,
                    event_type,
                    data: email.event_data(&[recipient.email.as_str()], extra.clone()),
                    email_id: Some(email.id),
                });
                last_event = Some(event_type.trim_start_matches("email."));
            }
            if decision.suppress {
                suppress.push(NewSuppression { team_id: email.team_id, email: recipient.email.clone(), origin: "bounce", source_id: Some(email.id) });
            }
            if let Some(wait) = decision.retry_after {
                retry_after = Some(retry_after.map_or(wait, |w: Duration| w.min(wait)));
            }
            ambiguous |= decision.ambiguous;
            sent |= matches!(decision.status, "sent" | "delivered" | "complained") || decision.ambiguous;
            failed_reason = failed_reason.or(decision.failed_reason);
            recipients.push(RecipientOutcome { position: recipient.position, status: decision.status, response: decision.response });
        }
        if !recipients.is_empty() {
            outcomes.push(EmailOutcome { email_id: email.id, recipients, last_event, failed_reason });
        }
        retries.extend(retry_after.map(|wait| (email.id, wait)));
        if ambiguous {
            ambiguous_emails.push(email.id);
        }
        let recently_sent = domain.as_ref().and_then(|d| d.domain_last_sent_at).is_some_and(|at| Utc::now() - at < chrono::TimeDelta::minutes(1));
        if let (true, false, Some(domain_id)) = (sent, recently_sent, email.domain_id)
            && !sent_domains.contains(&domain_id)
        {
            sent_domains.push(domain_id);
        }
    }
    emails::record_outcomes(conn, &outcomes).await?;
    let added = suppressions::add(conn, &suppress).await?;
    new_events.extend(suppressions::added_events(&added));
    events::emit(conn, &new_events).await?;
    for (email_id, wait) in retries {
        schema::jobs::enqueue_after(conn, &Deliver { email_id }, wait).await?;
    }
    for email_id in ambiguous_emails {
        schema::jobs::enqueue_after(conn, &ResolveAmbiguous { email_id }, settings.ambiguous_window).await?;
    }
    for domain_id in sent_domains {
        domains::mark_sent(conn, domain_id, Utc::now()).await?;
    }
    Ok(())
}

/// Runs one `resolve_ambiguous` job: recipients still ambiguous after the window fail with
/// reason `ambiguous_submission`.
pub async fn handle_ambiguous(job: ResolveAmbiguous, pool: Data<PgPool>, id: PgTaskId, attempt: Attempt) -> Result<(), BoxDynError> {
    match resolve_ambiguous(&pool, job.email_id).await {
        Ok(()) => Ok(()),
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Fails the email's recipients that no later event resolved.
pub async fn resolve_ambiguous(pool: &PgPool, email_id: uuid::Uuid) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    let pending = emails::ambiguous_recipients(&mut tx, email_id).await?;
    let Some(email) = emails::by_id(&mut tx, email_id).await? else { return Ok(()) };
    if pending.is_empty() {
        return Ok(());
    }
    let recipients: Vec<RecipientOutcome> =
        pending.iter().map(|r| RecipientOutcome { position: r.position, status: "failed", response: None }).collect();
    let outcome = EmailOutcome { email_id, recipients, last_event: Some("failed"), failed_reason: Some("ambiguous_submission") };
    emails::record_outcomes(&mut tx, &[outcome]).await?;
    let to: Vec<&str> = pending.iter().map(|r| r.email.as_str()).collect();
    let event = NewEvent {
        team_id: email.team_id,
        event_type: "email.failed",
        data: email.event_data(&to, Some(("failed", json!({ "reason": "ambiguous_submission" })))),
        email_id: Some(email_id),
    };
    events::emit(&mut tx, &[event]).await?;
    tx.commit().await?;
    Ok(())
}
