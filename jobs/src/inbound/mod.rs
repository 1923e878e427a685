//! The inbound SMTP server (`herald inbound`, or inside `herald serve` when `HERALD_SMTP_ADDR`
//! is set). It accepts mail for the teams' receiving domains and for their return-path hosts
//! (bounces and complaints about mail Herald sent), and answers `250` to DATA only after the
//! message is committed to PostgreSQL: a crash before that leaves the sending MTA to retry.
//!
//! The protocol is smtp-proto's parser in our own tokio loop: EHLO with SIZE, PIPELINING,
//! 8BITMIME, ENHANCEDSTATUSCODES and (with a certificate) STARTTLS; replies are flushed once
//! per read, so pipelined commands are answered together.

pub mod clamd;
mod commit;
pub mod parse;
pub mod reports;
pub mod unsubscribe;

use schema::store::received::{self, Dropped, HostRole};
use smtp_proto::request::receiver::{DataReceiver, DummyDataReceiver, DummyLineReceiver, RequestReceiver};
use smtp_proto::{EXT_8BIT_MIME, EXT_ENHANCED_STATUS_CODES, EXT_PIPELINING, EXT_SIZE, EXT_START_TLS, EhloResponse, Error as ProtoError, Request};
use sqlx::PgPool;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use uuid::Uuid;

/// How the server runs (each from its `HERALD_SMTP_*` variable; see the README).
#[derive(Clone)]
pub struct InboundSettings {
    /// The name in the greeting and the EHLO reply.
    pub hostname: String,
    /// The largest message accepted (`552` above it); advertised as SIZE.
    pub max_message_bytes: usize,
    /// A part larger than this (decoded) is listed with its size and refused (not stored).
    pub max_attachment_bytes: usize,
    /// Recipients per message (`452` past it).
    pub max_recipients: usize,
    /// Connections at once, in all and from one IP address (`421` past either).
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    /// Messages per connection (`421` past it).
    pub max_messages_per_connection: usize,
    /// How long a command, or a chunk of message data, may take to arrive.
    pub command_timeout: Duration,
    pub data_timeout: Duration,
    /// How long the transaction storing a message (or a recipient's lookup) may take before
    /// the session answers `451`.
    pub commit_timeout: Duration,
    /// STARTTLS is offered when set.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// A clamd to scan each message with (`INSTREAM`); no scanning when unset.
    pub clamd: Option<String>,
}

impl std::fmt::Debug for InboundSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboundSettings").field("hostname", &self.hostname).field("tls", &self.tls.is_some()).finish_non_exhaustive()
    }
}

/// How long a host's roles are taken from memory: a receiving domain turned off (or removed)
/// stops taking mail in every process within this time.
const HOST_ROLES_TTL: Duration = Duration::from_secs(5);

struct Shared {
    /// The roles of hosts mail was addressed to lately (most mail goes to a few domains).
    hosts: Mutex<HashMap<String, (std::time::Instant, Vec<HostRole>)>>,
    committer: commit::Committer,
    pool: PgPool,
    settings: InboundSettings,
    link_key: Vec<u8>,
    connections: Mutex<HashMap<IpAddr, usize>>,
}

/// A connection slot, given back when the session ends.
struct Slot {
    shared: Arc<Shared>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut connections = self.shared.connections.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = connections.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                connections.remove(&self.ip);
            }
        }
    }
}

impl Shared {
    /// Every role `host` plays, from memory when looked up within [`HOST_ROLES_TTL`]; a lookup
    /// that PostgreSQL does not answer within the commit timeout fails (the session answers `451`).
    async fn host_roles(&self, host: &str) -> anyhow::Result<Vec<HostRole>> {
        if let Some((at, roles)) = self.hosts.lock().unwrap_or_else(|e| e.into_inner()).get(host)
            && at.elapsed() < HOST_ROLES_TTL
        {
            return Ok(roles.clone());
        }
        let looked_up = async { received::host_roles(&mut *self.pool.acquire().await?, host).await };
        let roles = tokio::time::timeout(self.settings.commit_timeout, looked_up)
            .await
            .map_err(|_| anyhow::anyhow!("looking up {host} took longer than {:?}", self.settings.commit_timeout))??;
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        if hosts.len() >= 10_000 {
            hosts.clear();
        }
        hosts.insert(host.to_string(), (std::time::Instant::now(), roles.clone()));
        Ok(roles)
    }

    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Slot> {
        let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        let total: usize = connections.values().sum();
        let from_ip = connections.get(&ip).copied().unwrap_or(0);
        if total >= self.settings.max_connections || from_ip >= self.settings.max_connections_per_ip {
            return None;
        }
        *connections.entry(ip).or_default() += 1;
        Some(Slot { shared: self.clone(), ip })
    }
}

/// A TLS acceptor for STARTTLS from PEM certificate chain and private key bytes.
pub fn tls_acceptor(cert_pem: &[u8], key_pem: &[u8]) -> anyhow::Result<tokio_rustls::TlsAcceptor> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_slice_iter(cert_pem).collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_slice(key_pem)?;
    let provider = std::sync::Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Serves SMTP on `listener` until `shutdown` completes (sessions under way finish on their own).
pub async fn serve(pool: PgPool, settings: InboundSettings, listener: TcpListener, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let fresh: [u8; 32] = rand::random();
    let link_key = schema::store::keys::get_or_create(&mut *pool.acquire().await?, "links", &fresh).await?;
    let committer = commit::Committer::start(pool.clone(), settings.commit_timeout);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(crate::supervise::report_beats(pool.clone(), stopped));
    let shared = Arc::new(Shared { hosts: Mutex::default(), committer, pool, settings, link_key, connections: Mutex::default() });
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "inbound: accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    if let Err(error) = connection(shared, stream, peer).await {
                        tracing::debug!(%error, %peer, "inbound: session ended");
                    }
                });
            }
            () = &mut shutdown => {
                let _ = stop.send(true);
                return Ok(());
            }
        }
    }
}

async fn connection(shared: Arc<Shared>, mut stream: TcpStream, peer: SocketAddr) -> anyhow::Result<()> {
    let _ = stream.set_nodelay(true);
    let Some(_slot) = shared.admit(peer.ip()) else {
        stream.write_all(b"421 4.7.0 Too many connections, try again later\r\n").await?;
        return Ok(());
    };
    let greeting = format!("220 {} ESMTP Herald\r\n", shared.settings.hostname);
    stream.write_all(greeting.as_bytes()).await?;
    let mut session = Session { shared: shared.clone(), peer, tls: false, helo: None, mail_from: None, recipients: Vec::new(), messages: 0 };
    if let Some(plain) = session.run(stream).await?
        && let Some(acceptor) = &shared.settings.tls
    {
        let secured = tokio::time::timeout(shared.settings.command_timeout, acceptor.accept(plain)).await??;
        // RFC 3207: after the handshake the client starts over with EHLO.
        session.tls = true;
        session.helo = None;
        session.reset();
        session.run(secured).await?;
    }
    Ok(())
}

/// One accepted recipient and what it is to Herald.
#[derive(Debug, Clone)]
enum Target {
    /// An address on a team's receiving domain.
    Mailbox { team_id: Uuid, address: String },
    /// A return path of an email Herald sent (one recipient of it).
    ReturnPath { team_id: Uuid, address: String, email_id: Uuid, position: i16 },
    /// The feedback-loop address of a team's return-path host (`fbl@`): complaints that name
    /// the original by its Message-ID.
    FeedbackLoop { team_id: Uuid, address: String },
    /// The `mailto:` of a broadcast's List-Unsubscribe (`unsubscribe@` on the return-path
    /// host): the subject carries the signed unsubscribe token.
    Unsubscribe { team_id: Uuid, address: String },
}

struct Session {
    shared: Arc<Shared>,
    peer: SocketAddr,
    tls: bool,
    helo: Option<String>,
    mail_from: Option<String>,
    recipients: Vec<Target>,
    messages: usize,
}

enum State {
    Command(RequestReceiver),
    Data(DataReceiver),
    /// Reading past the size cap to the end of DATA, then `552`.
    Oversized(DummyDataReceiver),
    /// Reading past an over-long command line, then `500`.
    LongLine(DummyLineReceiver),
}

impl Session {
    fn reset(&mut self) {
        self.mail_from = None;
        self.recipients.clear();
    }

    /// Runs the conversation until QUIT, EOF or an error; answers the stream back when the
    /// client asked for STARTTLS (and it is offered).
    async fn run<S: AsyncRead + AsyncWrite + Unpin>(&mut self, mut stream: S) -> anyhow::Result<Option<S>> {
        let settings = self.shared.settings.clone();
        let mut state = State::Command(RequestReceiver::default());
        let mut buffer = vec![0u8; 64 * 1024];
        let mut message: Vec<u8> = Vec::new();
        let mut out: Vec<u8> = Vec::new();
        loop {
            let wait = if matches!(state, State::Command(_)) { settings.command_timeout } else { settings.data_timeout };
            let read = match tokio::time::timeout(wait, stream.read(&mut buffer)).await {
                Ok(read) => read?,
                Err(_) => {
                    stream.write_all(b"421 4.4.2 Timeout, closing connection\r\n").await?;
                    return Ok(None);
                }
            };
            if read == 0 {
                // The client left; a message without its final dot is dropped, never stored.
                return Ok(None);
            }
            let mut bytes = buffer[..read].iter();
            loop {
                match &mut state {
                    State::Command(receiver) => {
                        let request = receiver.ingest(&mut bytes).map(Request::into_owned);
                        match request {
                            Err(ProtoError::NeedsMoreData { .. }) => break,
                            Err(ProtoError::ResponseTooLong) => state = State::LongLine(DummyLineReceiver::default()),
                            Err(error) => out.extend_from_slice(syntax_reply(&error)),
                            Ok(Request::StartTls) if settings.tls.is_some() && !self.tls => {
                                out.extend_from_slice(b"220 2.0.0 Ready to start TLS\r\n");
                                stream.write_all(&out).await?;
                                stream.flush().await?;
                                // Anything pipelined after STARTTLS is discarded (RFC 3207).
                                return Ok(Some(stream));
                            }
                            Ok(Request::Quit) => {
                                out.extend_from_slice(b"221 2.0.0 Bye\r\n");
                                stream.write_all(&out).await?;
                                return Ok(None);
                            }
                            Ok(Request::Data) => {
                                if self.mail_from.is_none() || self.recipients.is_empty() {
                                    out.extend_from_slice(b"503 5.5.1 Need MAIL and RCPT first\r\n");
                                } else if self.messages >= settings.max_messages_per_connection {
                                    out.extend_from_slice(b"421 4.7.0 Too many messages on one connection\r\n");
                                    stream.write_all(&out).await?;
                                    return Ok(None);
                                } else {
                                    out.extend_from_slice(b"354 End data with <CR><LF>.<CR><LF>\r\n");
                                    let mut receiver = DataReceiver::new();
                                    message.clear();
                                    // Primed with a line end, so a dot on the first line is seen.
                                    receiver.ingest(&mut b"\r\n".iter(), &mut message);
                                    state = State::Data(receiver);
                                }
                            }
                            Ok(request) => {
                                let reply = self.command(request).await;
                                out.extend_from_slice(reply.as_bytes());
                            }
                        }
                    }
                    State::Data(receiver) => {
                        if receiver.ingest(&mut bytes, &mut message) {
                            // The message as sent, through the CRLF that starts the final dot.
                            let raw = message.split_off(2.min(message.len()));
                            let reply = if raw.len() > settings.max_message_bytes {
                                "552 5.3.4 Message size exceeds the limit\r\n".to_string()
                            } else {
                                self.message(raw).await
                            };
                            out.extend_from_slice(reply.as_bytes());
                            self.reset();
                            state = State::Command(RequestReceiver::default());
                        } else if message.len() > settings.max_message_bytes + 2 {
                            state = State::Oversized(DummyDataReceiver::new_data(receiver));
                            message = Vec::new();
                        } else {
                            break;
                        }
                    }
                    State::Oversized(receiver) => {
                        if receiver.ingest(&mut bytes) {
                            out.extend_from_slice(b"552 5.3.4 Message size exceeds the limit\r\n");
                            self.reset();
                            state = State::Command(RequestReceiver::default());
                        } else {
                            break;
                        }
                    }
                    State::LongLine(receiver) => {
                        if receiver.ingest(&mut bytes) {
                            out.extend_from_slice(b"500 5.5.6 Line too long\r\n");
                            state = State::Command(RequestReceiver::default());
                        } else {
                            break;
                        }
                    }
                }
            }
            if !out.is_empty() {
                stream.write_all(&out).await?;
                out.clear();
            }
        }
    }

    /// The reply to a command other than DATA, QUIT and STARTTLS.
    async fn command(&mut self, request: Request<String>) -> String {
        let shared = self.shared.clone();
        let settings = &shared.settings;
        match request {
            Request::Ehlo { host } => {
                self.helo = Some(host);
                self.reset();
                let mut reply = EhloResponse::new(settings.hostname.as_str());
                reply.capabilities = EXT_SIZE | EXT_PIPELINING | EXT_8BIT_MIME | EXT_ENHANCED_STATUS_CODES;
                if settings.tls.is_some() && !self.tls {
                    reply.capabilities |= EXT_START_TLS;
                }
                reply.size = settings.max_message_bytes;
                let mut bytes = Vec::new();
                let _ = reply.write(&mut bytes);
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Request::Helo { host } => {
                self.helo = Some(host);
                self.reset();
                format!("250 {}\r\n", settings.hostname)
            }
            Request::Mail { from } => {
                if self.helo.is_none() {
                    "503 5.5.1 Say EHLO first\r\n".into()
                } else if self.mail_from.is_some() {
                    "503 5.5.1 Sender already given\r\n".into()
                } else if from.size > settings.max_message_bytes {
                    "552 5.3.4 Message size exceeds the limit\r\n".into()
                } else {
                    self.mail_from = Some(from.address);
                    "250 2.1.0 Ok\r\n".into()
                }
            }
            Request::Rcpt { to } => {
                if self.mail_from.is_none() {
                    return "503 5.5.1 Need MAIL first\r\n".into();
                }
                if self.recipients.len() >= settings.max_recipients {
                    return "452 4.5.3 Too many recipients\r\n".into();
                }
                match self.target(&to.address).await {
                    Ok(Some(target)) => {
                        self.recipients.push(target);
                        "250 2.1.5 Ok\r\n".into()
                    }
                    Ok(None) => "550 5.1.1 No such recipient here\r\n".into(),
                    Err(error) => {
                        tracing::warn!(%error, "inbound: recipient lookup failed");
                        "451 4.3.0 Temporary failure, try again later\r\n".into()
                    }
                }
            }
            Request::Rset => {
                self.reset();
                "250 2.0.0 Ok\r\n".into()
            }
            Request::Noop { .. } => "250 2.0.0 Ok\r\n".into(),
            Request::Vrfy { .. } => "252 2.5.0 Cannot verify, but will accept\r\n".into(),
            Request::StartTls => "502 5.5.1 STARTTLS not offered\r\n".into(),
            _ => "502 5.5.1 Command not implemented\r\n".into(),
        }
    }

    /// What a RCPT TO address is to Herald, or `None` when nobody here takes it.
    async fn target(&self, address: &str) -> anyhow::Result<Option<Target>> {
        let address = address.to_ascii_lowercase();
        let Some((local, host)) = address.rsplit_once('@') else { return Ok(None) };
        if local.is_empty() || host.is_empty() {
            return Ok(None);
        }
        let roles = self.shared.host_roles(host).await?;
        for role in roles {
            match role {
                HostRole::Receiving { team_id, .. } => return Ok(Some(Target::Mailbox { team_id, address })),
                HostRole::ReturnPath { team_id, .. } => {
                    if let Some((email_id, position)) = schema::tracking::verify_return_path(&self.shared.link_key, local) {
                        return Ok(Some(Target::ReturnPath { team_id, address, email_id, position }));
                    }
                    if local == "fbl" {
                        return Ok(Some(Target::FeedbackLoop { team_id, address }));
                    }
                    if local == "unsubscribe" {
                        return Ok(Some(Target::Unsubscribe { team_id, address }));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Takes a whole message: scans, parses and records it for every recipient in one
    /// transaction, and answers `250` only once that has committed.
    async fn message(&mut self, raw: Vec<u8>) -> String {
        self.messages += 1;
        if has_bare_line_feed(&raw) {
            return "554 5.6.0 Message contains a bare LF; lines must end with CRLF\r\n".into();
        }
        let id = schema::ids::new_id();
        match self.store(id, raw).await {
            Ok(()) => format!("250 2.0.0 Ok: queued as {}\r\n", id.simple()),
            Err(error) => {
                tracing::warn!(%error, peer = %self.peer, "inbound: message not stored");
                "451 4.3.0 Temporary failure, try again later\r\n".into()
            }
        }
    }

    /// Reads the message and hands what it records to a committer; answers once it committed.
    async fn store(&self, first_id: Uuid, raw: Vec<u8>) -> anyhow::Result<()> {
        let pending = self.prepare(first_id, raw).await?;
        self.shared.committer.commit(pending).await
    }

    /// What a message records, decided before any transaction: its parts, the records of the
    /// teams it is for, the reports and unsubscribes it carries.
    async fn prepare(&self, first_id: Uuid, raw: Vec<u8>) -> anyhow::Result<commit::Pending> {
        let virus = match &self.shared.settings.clamd {
            Some(addr) => clamd::scan(addr, &raw).await?,
            None => None,
        };
        let message = parse::parse(&raw);
        let envelope = message.as_ref().map(parse::envelope).unwrap_or_default();
        let thread_ids = message.as_ref().map(parse::thread_ids).unwrap_or_default();
        let (content, dropped, read) = match (&message, &virus) {
            (Some(message), None) => (Some(parse::content(message, self.shared.settings.max_attachment_bytes)), None, reports::read(message)),
            (_, Some(_)) => (None, Some(Dropped::Virus), Vec::new()),
            (None, None) => (None, Some(Dropped::ParseFailed), Vec::new()),
        };
        // The team's addresses this message was accepted for, per team, in RCPT order.
        let mut mailboxes: Vec<(Uuid, Vec<String>)> = Vec::new();
        let mut unreadable: Vec<(Uuid, String)> = Vec::new();
        let mut applied = Vec::new();
        let mut unsubscribes = Vec::new();
        for target in &self.recipients {
            match target {
                Target::Mailbox { team_id, address } => match mailboxes.iter_mut().find(|(t, _)| t == team_id) {
                    Some((_, addresses)) => addresses.push(address.clone()),
                    None => mailboxes.push((*team_id, vec![address.clone()])),
                },
                Target::ReturnPath { team_id, address, email_id, position } => {
                    if read.is_empty() {
                        unreadable.push((*team_id, address.clone()));
                    }
                    let target = reports::Target { team_id: *team_id, email_id: *email_id, position: Some(*position) };
                    applied.extend(read.iter().map(|report| (target, report.clone())));
                }
                Target::FeedbackLoop { team_id, address } => {
                    let complaint = read.iter().find_map(|report| match report {
                        reports::Report::Complaint { message_id: Some(id), .. } => reports::email_id_of_message_id(id).map(|email_id| (email_id, report.clone())),
                        _ => None,
                    });
                    match complaint {
                        Some((email_id, report)) => applied.push((reports::Target { team_id: *team_id, email_id, position: None }, report)),
                        None => unreadable.push((*team_id, address.clone())),
                    }
                }
                Target::Unsubscribe { team_id, address } => {
                    let link = envelope.subject.split_whitespace().find_map(|word| schema::links::verify_unsubscribe(&self.shared.link_key, word));
                    match link.filter(|_| virus.is_none()) {
                        Some(link) => unsubscribes.push((*team_id, link)),
                        None => unreadable.push((*team_id, address.clone())),
                    }
                }
            }
        }
        let mut records: Vec<(Uuid, Vec<String>, Option<Dropped>)> = mailboxes.into_iter().map(|(team, to)| (team, to, dropped)).collect();
        // Mail at a return-path address that is no report (an auto-reply sent to the bounce
        // address, say) is recorded as dropped: nobody reads those addresses.
        records.extend(unreadable.into_iter().map(|(team, address)| (team, vec![address], Some(dropped.unwrap_or(Dropped::NoMailbox)))));
        let mail_from = self.mail_from.clone().unwrap_or_default();
        drop(message);
        Ok(commit::Pending { first_id, mail_from, raw, envelope, content, records, reports: applied, unsubscribes, thread_ids, now: chrono::Utc::now() })
    }
}

/// A `\n` not preceded by `\r` (refused: SMTP smuggling needs one, and no sane MTA sends it).
fn has_bare_line_feed(raw: &[u8]) -> bool {
    raw.iter().enumerate().any(|(i, &b)| b == b'\n' && (i == 0 || raw[i - 1] != b'\r'))
}

fn syntax_reply(error: &ProtoError) -> &'static [u8] {
    match error {
        ProtoError::UnknownCommand => b"500 5.5.2 Command unrecognized\r\n",
        ProtoError::InvalidSenderAddress => b"501 5.1.7 Bad sender address syntax\r\n",
        ProtoError::InvalidRecipientAddress => b"501 5.1.3 Bad recipient address syntax\r\n",
        ProtoError::UnsupportedParameter { .. } | ProtoError::InvalidParameter { .. } => b"504 5.5.4 Parameter not supported\r\n",
        _ => b"501 5.5.2 Syntax error\r\n",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bare_line_feed_is_found_anywhere() {
        assert!(super::has_bare_line_feed(b"Subject: x\r\n\r\nbody\nmore\r\n"));
        assert!(!super::has_bare_line_feed(b"Subject: x\r\n\r\nbody\r\n"));
    }
}
