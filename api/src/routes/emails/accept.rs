//! Accepting sends: a request body becomes a [`NewEmail`] (every rule of document B's send
//! table, one `errors[]` entry per failing field), is authorized (verified from-domain, key pin,
//! sandbox), and is committed with its recipients, events, quota count and delivery job in one
//! transaction.

use crate::http::error::{ApiError, ApiResult, ErrorKind, FieldError};
use crate::state::{AppState, Caller};
use base64::Engine;
use chrono::{DateTime, Utc};
use schema::email::{self as rules, Mailbox};
use schema::jobs::{Deliver, RunAt};
use schema::store::emails::{NewAttachment, NewEmail, NewRecipient};
use schema::store::events::{self, NewEvent};
use schema::store::{domains, emails, sending, usage};
use serde_json::{Value, json};
use sqlx::PgConnection;
use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;
use uuid::Uuid;
use crate::routes::emails::fetch::{Fetcher};
use crate::routes::emails::send_body::{Addresses, AttachmentIn, AttachmentContent, SendEmail};

/// A send that passed the body rules, before authorization.
#[derive(Debug)]
pub struct ParsedSend {
    template: Option<(Uuid, i32)>,
    from: Mailbox,
    from_header: String,
    recipients: Vec<(&'static str, String, Mailbox)>,
    reply_to: Vec<String>,
    subject: String,
    html: Option<String>,
    text: Option<String>,
    scheduled_at: Option<DateTime<Utc>>,
    /// The `inbox` field as sent, until [`prepare`] finds its channel.
    inbox: Option<String>,
    inbox_channel_id: Option<Uuid>,
    headers: BTreeMap<String, String>,
    tags: BTreeMap<String, String>,
    attachments: Vec<PendingAttachment>,
    unsubscribe_link: bool,
}

#[derive(Debug)]
struct PendingAttachment {
    filename: String,
    content_type: String,
    content_id: Option<String>,
    source: Source,
}

#[derive(Debug)]
enum Source {
    Bytes(Vec<u8>),
    Url(String),
}

/// One problem found in a body.
pub struct Problem {
    kind: ErrorKind,
    path: String,
    message: String,
}

/// Collects problems; the answer takes the status and name of the first.
struct Problems {
    prefix: String,
    list: Vec<Problem>,
}

impl Problems {
    fn add(&mut self, kind: ErrorKind, path: &str, message: impl Into<String>) {
        self.list.push(Problem { kind, path: format!("{}{path}", self.prefix), message: message.into() });
    }
    fn missing(&mut self, path: &str) {
        self.add(ErrorKind::MissingRequiredField, path, "is required");
    }
    fn invalid(&mut self, path: &str, message: impl Into<String>) {
        self.add(ErrorKind::Invalid, path, message);
    }
    fn attachment(&mut self, path: &str, message: impl Into<String>) {
        self.add(ErrorKind::InvalidAttachment, path, message);
    }
}

/// What accepting a request's sends gives: the rows to insert and, in a permissive batch, the
/// items refused (their index and why).
pub struct Prepared {
    pub emails: Vec<NewEmail>,
    pub rejected: Vec<(usize, String)>,
}

/// The one accept entry point, for `POST /emails` (one item, `indexed` false) and the batch
/// (`indexed` true: errors name the item; `permissive` sends the valid items and reports the
/// others): templates applied, every item parsed, the team's facts read once, each authorized.
pub async fn prepare(
    state: &AppState,
    caller: &Caller,
    mut items: Vec<SendEmail>,
    indexed: bool,
    permissive: bool,
    now: DateTime<Utc>,
) -> ApiResult<Prepared> {
    if items.iter().any(|item| item.topic_id.is_some()) {
        return Err(ApiError::new(ErrorKind::NotImplemented, "The send field `topic_id` is reserved for a later release; send without it."));
    }
    state.sending.check(&state.pool).await?;
    let template_problems = apply_templates(&mut *state.pool.acquire().await?, caller.team_id, &mut items, indexed).await?;
    let (mut indexes, mut parsed) = (Vec::with_capacity(items.len()), Vec::with_capacity(items.len()));
    let (mut problems, mut rejected) = (Vec::new(), Vec::new());
    for ((index, item), found) in items.into_iter().enumerate().zip(template_problems) {
        let checked = if found.is_empty() { parse(item, indexed.then_some(index), now) } else { Err(found) };
        match checked {
            Ok(one) => {
                indexes.push(index);
                parsed.push(one);
            }
            Err(found) if permissive => rejected.push((index, problems_error(found).message)),
            Err(found) => problems.extend(found),
        }
    }
    if !problems.is_empty() {
        return Err(problems_error(problems));
    }
    let channels = inbox_channels(&mut *state.pool.acquire().await?, caller, &mut parsed, indexed.then_some(&indexes)).await?;
    let facts = team_facts(&mut *state.pool.acquire().await?, caller.team_id, &parsed, state.config.is_development()).await?;
    let mut emails = Vec::with_capacity(parsed.len());
    for ((index, one), channel) in indexes.into_iter().zip(parsed).zip(channels) {
        let authorized = match channel {
            Ok(()) => authorize(caller, &facts, one, &state.fetcher, indexed.then_some(index)).await,
            Err(refused) => Err(refused),
        };
        match authorized {
            Ok(one) => emails.push(one),
            Err(error) if permissive && error.status.is_client_error() => rejected.push((index, error.message)),
            Err(error) => return Err(error),
        }
    }
    Ok(Prepared { emails, rejected })
}

/// Applies the body rules to one send (`index` names it inside a batch).
pub fn parse(body: SendEmail, index: Option<usize>, now: DateTime<Utc>) -> Result<ParsedSend, Vec<Problem>> {
    let mut p = Problems { prefix: index.map(|i| format!("[{i}].")).unwrap_or_default(), list: Vec::new() };
    if body.from.is_none() {
        p.missing("from");
    }
    if body.to.is_none() {
        p.missing("to");
    }
    if body.subject.is_none() {
        p.missing("subject");
    }
    if body.html.is_none() && body.text.is_none() {
        p.missing("html");
    }
    let from = body.from.as_deref().and_then(|raw| Mailbox::parse(raw).map_err(|m| p.invalid("from", m)).ok());
    let mut recipients = Vec::new();
    for (kind, list) in [("to", body.to.0), ("cc", body.cc), ("bcc", body.bcc)] {
        for (i, raw) in list.map(Addresses::into_vec).unwrap_or_default().into_iter().enumerate() {
            match Mailbox::parse(&raw) {
                Ok(mailbox) => recipients.push((kind, raw.trim().to_string(), mailbox)),
                Err(message) => p.invalid(&format!("{kind}[{i}]"), message),
            }
        }
    }
    if recipients.len() > rules::MAX_RECIPIENTS {
        p.invalid("to", format!("`to`, `cc` and `bcc` together take at most {} addresses", rules::MAX_RECIPIENTS));
    }
    let mut reply_to = Vec::new();
    for (i, raw) in body.reply_to.map(Addresses::into_vec).unwrap_or_default().into_iter().enumerate() {
        match Mailbox::parse(&raw) {
            Ok(mailbox) => reply_to.push(mailbox.header_form()),
            Err(message) => p.invalid(&format!("reply_to[{i}]"), message),
        }
    }
    if let Some(subject) = &body.subject
        && let Err(message) = rules::check_subject(subject)
    {
        p.invalid("subject", message);
    }
    if let Err(message) = rules::check_body_size(body.html.as_deref(), body.text.as_deref()) {
        p.invalid("html", message);
    }
    let scheduled_at = body.scheduled_at.as_deref().and_then(|raw| {
        schema::when::parse_scheduled_at(raw, now).map_err(|e| p.invalid("scheduled_at", e.message())).ok()
    });
    let headers = body.headers.unwrap_or_default();
    for (name, value) in &headers {
        if let Err(message) = rules::check_header(name, value) {
            p.invalid(&format!("headers.{name}"), message);
        }
    }
    let unsubscribe_link = body.unsubscribe_link.unwrap_or(false);
    let mut tags = BTreeMap::new();
    let tag_list = body.tags.unwrap_or_default();
    if tag_list.len() > rules::MAX_TAGS {
        p.invalid("tags", format!("at most {} tags", rules::MAX_TAGS));
    }
    for (i, tag) in tag_list.into_iter().enumerate() {
        let (Some(name), Some(value)) = (tag.name.0, tag.value.0) else {
            p.missing(&format!("tags[{i}].name"));
            continue;
        };
        if let Err(message) = rules::check_tag(&name, &value) {
            p.invalid(&format!("tags[{i}]"), message);
        } else if tags.insert(name.clone(), value).is_some() {
            p.invalid(&format!("tags[{i}].name"), format!("`{name}` is used twice"));
        }
    }
    let attachments = parse_attachments(body.attachments.unwrap_or_default(), &mut p);
    if body.inbox.is_some() && !reply_to.is_empty() {
        p.add(ErrorKind::InvalidParameter, "inbox", "is not combinable with `reply_to`: the channel is the Reply-To");
    }
    if body.template.is_some() && body.rendered_from.is_none() {
        p.add(ErrorKind::InvalidParameter, "template", "could not be applied");
    }
    if !p.list.is_empty() {
        return Err(p.list);
    }
    let from = from.expect("checked above");
    Ok(ParsedSend {
        from_header: from.header_form(),
        from,
        recipients,
        reply_to,
        subject: body.subject.unwrap_or_default(),
        html: body.html,
        text: body.text,
        scheduled_at,
        inbox: body.inbox,
        inbox_channel_id: None,
        headers,
        tags,
        attachments,
        template: body.rendered_from,
        unsubscribe_link,
    })
}

/// Finds the channel of each send's `inbox` field and makes it the send's Reply-To: an open
/// shared channel of the team, a restricted one only for a key limited to it. Answers each
/// send's verdict (a refusal refuses that send alone; a permissive batch sends the others).
async fn inbox_channels(conn: &mut PgConnection, caller: &Caller, parsed: &mut [ParsedSend], indexes: Option<&Vec<usize>>) -> ApiResult<Vec<ApiResult<()>>> {
    let mut verdicts: Vec<ApiResult<()>> = parsed.iter().map(|_| Ok(())).collect();
    if parsed.iter().all(|send| send.inbox.is_none()) {
        return Ok(verdicts);
    }
    let limit = schema::store::inbox::setup(conn, caller.team_id, caller.key_id).await?.key_channel_ids;
    for ((n, send), verdict) in parsed.iter_mut().enumerate().zip(verdicts.iter_mut()) {
        let Some(raw) = send.inbox.as_deref() else { continue };
        let path = match indexes {
            Some(indexes) => format!("[{}].inbox", indexes[n]),
            None => "inbox".to_string(),
        };
        let Some(channel) = schema::store::inbox::for_sending(conn, caller.team_id, raw).await? else {
            *verdict = Err(ApiError::invalid_parameter(&path, "no open shared Inbox channel of the team has this id or address"));
            continue;
        };
        if channel.restricted && !limit.as_ref().is_some_and(|ids| ids.contains(&channel.id)) {
            *verdict = Err(ApiError::invalid_permission("The Inbox channel is restricted: only a key limited to it may name it.").with_error(path, "the channel is restricted"));
            continue;
        }
        send.reply_to = vec![format!("\"{}\" <{}>", channel.name.replace(['"', '<', '>', '\\'], ""), channel.address)];
        send.inbox_channel_id = Some(channel.id);
    }
    Ok(verdicts)
}

/// Renders the templates named by sends into their bodies (one statement loads them all):
/// `html` and `text`, and `subject`, `from` and `reply_to` where the send left them out.
/// Answers each send's problems (empty when it is fine); `indexed` prefixes paths with the
/// send's index in a batch.
pub async fn apply_templates(conn: &mut PgConnection, team_id: Uuid, sends: &mut [SendEmail], indexed: bool) -> ApiResult<Vec<Vec<Problem>>> {
    let mut problems: Vec<Vec<Problem>> = sends.iter().map(|_| Vec::new()).collect();
    if sends.iter().all(|s| s.template.is_none()) {
        return Ok(problems);
    }
    let keys: Vec<String> = sends.iter().filter_map(|s| s.template.as_ref()?.id.0.clone()).collect();
    let found = if keys.is_empty() { Vec::new() } else { schema::store::templates::for_send(conn, team_id, &keys).await? };
    for (i, send) in sends.iter_mut().enumerate() {
        let Some(template) = send.template.clone() else { continue };
        let mut p = Problems { prefix: if indexed { format!("[{i}].") } else { String::new() }, list: Vec::new() };
        for (given, path) in [(send.html.is_some(), "html"), (send.text.is_some(), "text")] {
            if given {
                p.add(ErrorKind::InvalidParameter, path, "cannot be sent with `template`: the template supplies it");
            }
        }
        let Some(key) = template.id.0.as_deref() else {
            p.missing("template.id");
            problems[i] = p.list;
            continue;
        };
        let Some(stored) = found.iter().find(|t| t.id.to_string() == key || t.alias.as_deref() == Some(key)) else {
            p.add(ErrorKind::NotFound, "template.id", format!("no live template of the team has the id or alias `{key}`"));
            problems[i] = p.list;
            continue;
        };
        if !p.list.is_empty() {
            problems[i] = p.list;
            continue;
        }
        let given: serde_json::Map<String, Value> = template.variables.unwrap_or_default().into_iter().map(|(k, v)| (k, v.into_json())).collect();
        match crate::routes::templates::content::render_send(stored, &given, &p.prefix) {
            Ok(rendered) => {
                send.html = rendered.html;
                send.text = rendered.text;
                if send.subject.is_none() {
                    send.subject = rendered.subject;
                }
                if send.from.is_none() {
                    send.from = rendered.from;
                }
                if send.reply_to.is_none() {
                    send.reply_to = rendered.reply_to.map(Addresses::Many);
                }
                send.rendered_from = Some((rendered.template_id, rendered.version));
            }
            Err(problem) => {
                problems[i] = vec![Problem { kind: problem.kind, path: problem.path, message: problem.message }];
            }
        }
    }
    Ok(problems)
}

/// One error for the problems of a send (or a whole batch): the first problem's kind, the message naming its field, and every problem of that name in `errors[]`.
pub fn problems_error(problems: Vec<Problem>) -> ApiError {
    let Some(first) = problems.first() else { return ApiError::invalid_field("body", "is invalid") };
    let message = if first.kind == ErrorKind::MissingRequiredField {
        format!("Missing `{}` field.", first.path)
    } else {
        format!("Invalid `{}`: {}", first.path, first.message)
    };
    let mut error = ApiError::new(first.kind, message);
    error.errors = problems
        .iter()
        .filter(|p| p.kind.status_and_name().1 == first.kind.status_and_name().1)
        .map(|p| FieldError { path: p.path.clone(), message: p.message.clone() })
        .collect();
    error
}

fn parse_attachments(list: Vec<AttachmentIn>, p: &mut Problems) -> Vec<PendingAttachment> {
    if list.len() > rules::MAX_ATTACHMENTS {
        p.attachment("attachments", format!("at most {} attachments", rules::MAX_ATTACHMENTS));
        return Vec::new();
    }
    let mut total = 0usize;
    let mut out = Vec::new();
    for (i, attachment) in list.into_iter().enumerate() {
        let path = format!("attachments[{i}]");
        let Some(filename) = attachment.filename else {
            p.attachment(&format!("{path}.filename"), "is required");
            continue;
        };
        if let Err(message) = rules::check_filename(&filename) {
            p.attachment(&format!("{path}.filename"), message);
            continue;
        }
        let source = match (attachment.content, attachment.path) {
            (Some(_), Some(_)) => {
                p.attachment(&path, "give either `content` or `path`, not both");
                continue;
            }
            (None, None) => {
                p.attachment(&path, "needs `content` (base64) or `path` (an https URL)");
                continue;
            }
            (Some(AttachmentContent::Bytes(bytes)), None) => {
                total += bytes.len();
                Source::Bytes(bytes)
            }
            (Some(AttachmentContent::Base64(content)), None) => {
                let cleaned: String = content.chars().filter(|c| !c.is_whitespace()).collect();
                match base64::engine::general_purpose::STANDARD.decode(cleaned.as_bytes()) {
                    Ok(bytes) => {
                        total += bytes.len();
                        Source::Bytes(bytes)
                    }
                    Err(_) => {
                        p.attachment(&format!("{path}.content"), "is not valid base64");
                        continue;
                    }
                }
            }
            (None, Some(url)) => match check_url(&url) {
                Ok(()) => Source::Url(url),
                Err(message) => {
                    p.attachment(&format!("{path}.path"), message);
                    continue;
                }
            },
        };
        let content_type = attachment.content_type.unwrap_or_else(|| rules::content_type_for(&filename).to_string());
        if let Err(message) = rules::check_content_type(&content_type) {
            p.attachment(&format!("{path}.content_type"), message);
            continue;
        }
        if let Some(content_id) = &attachment.content_id
            && let Err(message) = rules::check_content_id(content_id)
        {
            p.attachment(&format!("{path}.content_id"), message);
            continue;
        }
        out.push(PendingAttachment { filename, content_type, content_id: attachment.content_id, source });
    }
    if total > rules::MAX_ATTACHMENT_BYTES {
        p.attachment("attachments", "attachments together must be at most 40 MB");
    }
    out
}

/// An attachment URL must be https with a host.
fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|_| "is not a URL".to_string())?;
    if parsed.scheme() != "https" {
        return Err("must be an https URL".into());
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("must name a host".into());
    }
    Ok(())
}


/// What authorizing a request's sends needs, read in one statement before its transaction:
/// the team's sandbox regions and verified domains, the senders' domains, and which recipients
/// are suppressed (with their origin).
pub struct TeamFacts {
    pub sandbox_regions: Vec<String>,
    pub verified_domains: Vec<String>,
    pub domains: HashMap<String, domains::Domain>,
    pub suppressed: HashMap<String, String>,
    /// The recipients that are confirmed identities of the team (the sandbox delivers to them).
    pub identities: Vec<String>,
    /// Whether this server runs as `development`, where the development sender works.
    pub development: bool,
}

/// Loads the facts for these parsed sends (`development`: the server's `HERALD_ENV` is
/// `development`).
pub async fn team_facts(conn: &mut PgConnection, team_id: Uuid, sends: &[ParsedSend], development: bool) -> ApiResult<TeamFacts> {
    let mut from_domains: Vec<String> = sends.iter().map(|s| s.from.domain().to_string()).collect();
    from_domains.sort();
    from_domains.dedup();
    let recipients: Vec<String> = sends.iter().flat_map(|s| s.recipients.iter().map(|(_, _, mailbox)| mailbox.key())).collect();
    let context = sending::context(conn, team_id, &from_domains, &recipients).await?.ok_or_else(|| ApiError::not_found("Team"))?;
    Ok(TeamFacts {
        sandbox_regions: context.sandbox_regions,
        verified_domains: context.verified_domains,
        domains: context.domains.into_iter().map(|d| (d.name.clone(), d)).collect(),
        suppressed: context.suppressed.into_iter().collect(),
        identities: context.identities,
        development,
    })
}

/// Authorizes a parsed send (from-domain verified on the team, the key's pin, the sandbox),
/// marks its suppressed recipients, fetches its URL attachments, and builds the row to insert.
pub async fn authorize(caller: &Caller, facts: &TeamFacts, send: ParsedSend, fetcher: &Fetcher, index: Option<usize>) -> ApiResult<NewEmail> {
    let prefix = index.map(|i| format!("[{i}].")).unwrap_or_default();
    let from_domain = send.from.domain().to_string();
    let domain = domains::can_send(facts.domains.get(&from_domain), facts.development).map_err(|why| {
        let field = match why {
            domains::NotSendable::DevelopmentOnly => "the development sender works only in development",
            _ => "the domain is not verified on this team",
        };
        let id = facts.domains.get(&from_domain).map(|d| d.id);
        ApiError::not_allowed(why.explain(&from_domain, id)).with_error(format!("{prefix}from"), field)
    })?;
    if caller.domain_id.is_some_and(|pinned| pinned != domain.id) {
        return Err(ApiError::not_allowed(format!("This API key can only send from its own domain, not {from_domain}."))
            .with_error(format!("{prefix}from"), "the key is pinned to another domain"));
    }
    let region = domain.region.as_str().to_string();
    // The development sender's mail stays in the local outbox, so the sandbox has nothing to guard.
    if facts.sandbox_regions.contains(&region)
        && !domain.development
        && let Some((_, _, refused)) = send
            .recipients
            .iter()
            .find(|(_, _, mailbox)| !schema::email::sandbox_allows(mailbox, &facts.verified_domains) && !facts.identities.contains(&mailbox.key()))
    {
        return Err(ApiError::not_allowed(format!(
            "The team's {region} region is in the sending sandbox: it delivers only to the mailbox simulator, to domains verified on the team and to identities confirmed with POST /team/identities, not {}.",
            refused.address()
        ))
        .with_details(json!({ "recipient": refused.address(), "region": region, "allowed": ["verified_domain", "verified_identity", "simulator"] })));
    }
    let mut attachments = Vec::with_capacity(send.attachments.len());
    for (i, pending) in send.attachments.into_iter().enumerate() {
        let content = match pending.source {
            Source::Bytes(bytes) => bytes,
            Source::Url(url) => fetcher.fetch(&url).await.map_err(|message| {
                let path = format!("{prefix}attachments[{i}].path");
                ApiError::new(ErrorKind::InvalidAttachment, format!("Invalid `{path}`: {message}"))
                    .with_error(path, message)
            })?,
        };
        attachments.push(NewAttachment {
            id: schema::ids::new_id(),
            filename: pending.filename,
            content_type: pending.content_type,
            content_id: pending.content_id,
            content,
        });
    }
    let id = schema::ids::new_id();
    let size = send.html.as_ref().map_or(0, String::len)
        + send.text.as_ref().map_or(0, String::len)
        + attachments.iter().map(|a| a.content.len()).sum::<usize>();
    Ok(NewEmail {
        id,
        team_id: caller.team_id,
        api_key_id: caller.key_id,
        domain_id: domain.id,
        from_header: send.from_header,
        from_email: send.from.key(),
        subject: send.subject,
        html: send.html,
        text: send.text,
        reply_to: send.reply_to,
        headers: json!(send.headers),
        tags: json!(send.tags),
        message_id: format!("{id}@{}", domain.name),
        scheduled_at: send.scheduled_at,
        size_bytes: size.min(i32::MAX as usize) as i32,
        created_at: Utc::now(),
        template: send.template,
        broadcast_id: None,
        recipients: send
            .recipients
            .into_iter()
            .map(|(kind, address, mailbox)| {
                let email = mailbox.key();
                let suppressed = facts.suppressed.get(&email).cloned();
                NewRecipient { kind, address, email, suppressed }
            })
            .collect(),
        attachments,
        inbox_channel_id: send.inbox_channel_id,
        unsubscribe_link: send.unsubscribe_link,
    })
}

/// Commits accepted sends: rows and the quota counter (one statement), `email.scheduled` and
/// `email.suppressed` events, and one delivery job per email with something to deliver. Over a
/// quota, the transaction is dropped, so nothing is written.
pub async fn accept(conn: &mut PgConnection, team_id: Uuid, emails: Vec<NewEmail>, now: DateTime<Utc>) -> ApiResult<Vec<Uuid>> {
    let count = usage::Count { team_id, emails: emails.len() as i32, now };
    let usage = emails::insert_many(conn, &emails, Some(count)).await?.ok_or_else(|| ApiError::not_found("Team"))?;
    let links: Vec<(Uuid, Uuid, String)> = emails.iter().filter_map(|e| e.inbox_channel_id.map(|channel| (e.id, channel, e.message_id.clone()))).collect();
    schema::store::inbox::link_emails(conn, team_id, &links).await?;
    let mut new_events = Vec::new();
    let mut jobs = Vec::new();
    for email in &emails {
        if let Some(at) = email.scheduled_at {
            let to: Vec<&str> = email.recipients.iter().map(|r| r.email.as_str()).collect();
            new_events.push(event(email, "email.scheduled", email.event_data(&to, None)));
            jobs.push((Deliver { email_id: email.id }, RunAt::At(SystemTime::from(at))));
        } else if !email.all_suppressed() {
            jobs.push((Deliver { email_id: email.id }, RunAt::Now));
        }
        new_events.extend(email.suppressed_events());
    }
    events::emit(conn, &new_events).await?;
    schema::jobs::enqueue_many(conn, &jobs).await.map_err(anyhow::Error::from)?;
    if usage.over_daily() {
        return Err(ApiError::new(ErrorKind::DailyQuotaExceeded, "The team's daily sending quota is used up; it resets at 00:00 UTC.",
        ));
    }
    if usage.over_monthly() {
        return Err(ApiError::new(ErrorKind::MonthlyQuotaExceeded, "The team's monthly sending quota is used up; it resets at the start of next month or with a plan change.",
        ));
    }
    Ok(emails.iter().map(|e| e.id).collect())
}

fn event(email: &NewEmail, event_type: &'static str, data: Value) -> NewEvent {
    NewEvent { team_id: email.team_id, event_type, data, email_id: Some(email.id) }
}
