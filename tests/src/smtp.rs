//! A real SMTP sink for integration tests: a small hand-written ESMTP server on 127.0.0.1 (port 0)
//! that records what it is sent and answers each recipient as the test scripted it.
//!
//! It speaks what lettre's `AsyncSmtpConnection` uses: EHLO/HELO, optional STARTTLS (with a
//! self-signed certificate, see [`SmtpSink::start_with_starttls`]), MAIL FROM, RCPT TO, DATA,
//! RSET, NOOP and QUIT, with several transactions per connection. There is no pipelining, no
//! AUTH and no size enforcement: it is a test double, not a mail server.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;

/// How the sink answers one recipient (see [`SmtpSink::set_behavior`] and [`SmtpSink::set_default`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Behavior {
    /// `250` at RCPT and after DATA; the message is recorded.
    Accept,
    /// `451 4.3.0` at RCPT.
    TempFail,
    /// `550 5.1.1` (user unknown) at RCPT.
    Reject,
    /// `250` at RCPT, then `554 5.7.1` after the message body.
    RejectAfterData,
    /// `250` at RCPT, reads the whole message, then closes the TCP connection without a reply.
    DropAfterData,
    /// `250` at RCPT, reads the whole message, then never replies (the socket stays open until the
    /// client closes it).
    Hang,
}

impl Behavior {
    /// Whether this behaviour decides what happens after DATA (rather than at RCPT).
    fn acts_after_data(&self) -> bool {
        matches!(self, Behavior::RejectAfterData | Behavior::DropAfterData | Behavior::Hang)
    }
}

/// One message the sink accepted (answered `250` after DATA).
#[derive(Debug, Clone)]
pub struct Received {
    /// The reverse path of MAIL FROM, without angle brackets (empty for the null sender `<>`).
    pub mail_from: String,
    /// The accepted RCPT TO addresses, without angle brackets, as the client spelled them.
    pub rcpt_to: Vec<String>,
    /// The message exactly as received (CRLF line endings), dot-stuffing undone, without the final
    /// `.` line. lettre always ends DATA with `\r\n.\r\n`, so a message it was given with a final
    /// CRLF arrives here with one empty line more (DKIM body canonicalization ignores it).
    pub data: Vec<u8>,
}

impl Received {
    /// The message as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }

    /// The decoded body of the message's `text/html` part (quoted-printable, base64 or plain).
    pub fn html(&self) -> Option<String> {
        use base64::Engine;
        let text = self.text();
        let at = text.to_ascii_lowercase().find("content-type: text/html")?;
        let part = &text[at..];
        let (headers, rest) = part.split_once("\r\n\r\n")?;
        let body = rest.split("\r\n--").next().unwrap_or(rest);
        let encoding = headers.to_ascii_lowercase();
        let bytes = if encoding.contains("content-transfer-encoding: quoted-printable") {
            quoted_printable::decode(body, quoted_printable::ParseMode::Robust).ok()?
        } else if encoding.contains("content-transfer-encoding: base64") {
            base64::engine::general_purpose::STANDARD.decode(body.replace("\r\n", "")).ok()?
        } else {
            body.as_bytes().to_vec()
        };
        String::from_utf8(bytes).ok()
    }

    /// The first header called `name` (case-insensitive), unfolded, its value trimmed; not
    /// RFC 2047-decoded.
    pub fn header(&self, name: &str) -> Option<String> {
        let text = self.text();
        let block = match text.find("\r\n\r\n") {
            Some(end) => &text[..end + 2],
            None => &text[..],
        };
        // Unfold first: a line break followed by whitespace continues the previous field.
        let unfolded = block.replace("\r\n ", " ").replace("\r\n\t", "\t");
        unfolded.split("\r\n").find_map(|line| {
            let (field, value) = line.split_once(':')?;
            field.trim_end().eq_ignore_ascii_case(name).then(|| value.trim().to_string())
        })
    }
}

/// A running SMTP sink. Cheap to clone; every clone sees the same server and records.
#[derive(Clone)]
pub struct SmtpSink {
    inner: Arc<Inner>,
}

struct Inner {
    addr: SocketAddr,
    /// Present when the sink offers STARTTLS.
    tls: Option<TlsAcceptor>,
    state: Mutex<State>,
    /// Woken whenever a message is recorded.
    recorded: Notify,
}

struct State {
    default: Behavior,
    /// Behaviours by lower-cased recipient address.
    behaviors: HashMap<String, Behavior>,
    messages: Vec<Received>,
    data_attempts: usize,
    connections: usize,
    tls_sessions: usize,
}

impl SmtpSink {
    /// Binds 127.0.0.1 on a free port and starts accepting connections (plain SMTP only).
    pub async fn start() -> SmtpSink {
        Self::bind(None).await
    }

    /// Like [`SmtpSink::start`], but also offers STARTTLS with a self-signed certificate for
    /// `localhost` and `127.0.0.1`, made at start (clients must accept invalid certificates).
    pub async fn start_with_starttls() -> SmtpSink {
        Self::bind(Some(self_signed_acceptor())).await
    }

    async fn bind(tls: Option<TlsAcceptor>) -> SmtpSink {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("SMTP sink binds 127.0.0.1:0");
        let addr = listener.local_addr().expect("SMTP sink has a local address");
        let state = State {
            default: Behavior::Accept,
            behaviors: HashMap::new(),
            messages: Vec::new(),
            data_attempts: 0,
            connections: 0,
            tls_sessions: 0,
        };
        let inner = Arc::new(Inner { addr, tls, state: Mutex::new(state), recorded: Notify::new() });
        tokio::spawn(accept_loop(listener, Arc::downgrade(&inner)));
        SmtpSink { inner }
    }

    /// The port the sink listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.inner.addr.port()
    }

    /// The address the sink listens on.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// Sets how recipients without a behaviour of their own are answered (initially [`Behavior::Accept`]).
    pub fn set_default(&self, b: Behavior) {
        self.inner.state().default = b;
    }

    /// Sets how `recipient` (case-insensitive) is answered from now on.
    pub fn set_behavior(&self, recipient: &str, b: Behavior) {
        self.inner.state().behaviors.insert(recipient.to_lowercase(), b);
    }

    /// The messages accepted so far (answered `250` after DATA), oldest first.
    pub fn messages(&self) -> Vec<Received> {
        self.inner.state().messages.clone()
    }

    /// How many message bodies were read to the end, whatever the answer (or lack of one) was.
    pub fn data_attempts(&self) -> usize {
        self.inner.state().data_attempts
    }

    /// How many TCP connections were accepted.
    pub fn connections(&self) -> usize {
        self.inner.state().connections
    }

    /// How many STARTTLS upgrades completed their TLS handshake.
    pub fn tls_sessions(&self) -> usize {
        self.inner.state().tls_sessions
    }

    /// Waits until at least `count` messages were accepted and returns all of them; panics when
    /// that does not happen within `timeout`.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Register interest before looking, so a message recorded in between still wakes us.
            let recorded = self.inner.recorded.notified();
            tokio::pin!(recorded);
            recorded.as_mut().enable();
            {
                let state = self.inner.state();
                if state.messages.len() >= count {
                    return state.messages.clone();
                }
            }
            if tokio::time::timeout_at(deadline, recorded).await.is_err() {
                let state = self.inner.state();
                if state.messages.len() >= count {
                    return state.messages.clone();
                }
                panic!(
                    "SMTP sink: expected at least {count} accepted message(s) within {timeout:?}, got {} \
                     ({} DATA attempt(s) over {} connection(s))",
                    state.messages.len(),
                    state.data_attempts,
                    state.connections,
                );
            }
        }
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the records from the others.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn behavior_for(&self, recipient: &str) -> Behavior {
        let state = self.state();
        state.behaviors.get(&recipient.to_lowercase()).unwrap_or(&state.default).clone()
    }
}

/// Accepts connections until every [`SmtpSink`] handle is gone; each connection runs on its own task.
async fn accept_loop(listener: TcpListener, inner: Weak<Inner>) {
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            // Out of file descriptors or the like: try again shortly rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let Some(inner) = inner.upgrade() else {
            return;
        };
        inner.state().connections += 1;
        tokio::spawn(async move {
            // I/O errors only mean the client went away; the test sees that from its own side.
            let _ = serve_connection(stream, inner).await;
        });
    }
}

/// Greets, runs the session, and continues it over TLS after STARTTLS.
async fn serve_connection(mut stream: TcpStream, inner: Arc<Inner>) -> std::io::Result<()> {
    stream.write_all(b"220 sink ESMTP\r\n").await?;
    match session(stream, &inner, inner.tls.is_some()).await? {
        Ended::Closed => Ok(()),
        Ended::StartTls(stream) => {
            let acceptor = inner.tls.clone().expect("STARTTLS is only offered with a TLS acceptor");
            let stream = acceptor.accept(stream).await?;
            inner.state().tls_sessions += 1;
            // RFC 3207: the client starts over with EHLO; STARTTLS is no longer offered.
            match session(stream, &inner, false).await? {
                Ended::Closed => Ok(()),
                Ended::StartTls(_) => unreachable!("STARTTLS is not offered inside TLS"),
            }
        }
    }
}

/// How a session ended.
enum Ended<S> {
    /// QUIT, end of input, or a scripted drop: the stream is done.
    Closed,
    /// STARTTLS was accepted (and answered `220`): the caller does the handshake on this stream.
    StartTls(S),
}

/// The envelope of the transaction in progress.
#[derive(Default)]
struct Transaction {
    mail_from: Option<String>,
    rcpt_to: Vec<String>,
    /// The behaviours of the accepted recipients, in RCPT order.
    behaviors: Vec<Behavior>,
}

/// Runs the command loop on `stream` (plain or TLS) until the client quits or goes away, or
/// asks for STARTTLS when `offer_starttls`.
async fn session<S>(stream: S, inner: &Inner, offer_starttls: bool) -> std::io::Result<Ended<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn = BufReader::new(stream);
    let mut transaction = Transaction::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        if conn.read_until(b'\n', &mut line).await? == 0 {
            return Ok(Ended::Closed);
        }
        let command = String::from_utf8_lossy(&line);
        let command = command.trim_end_matches(['\r', '\n']);
        let (verb, argument) = match command.split_once(' ') {
            Some((verb, argument)) => (verb.to_ascii_uppercase(), argument.trim()),
            None => (command.to_ascii_uppercase(), ""),
        };
        let reply: &[u8] = match verb.as_str() {
            "EHLO" => {
                transaction = Transaction::default();
                if offer_starttls {
                    b"250-sink\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250-STARTTLS\r\n250 SIZE 52428800\r\n"
                } else {
                    b"250-sink\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250 SIZE 52428800\r\n"
                }
            }
            "HELO" => {
                transaction = Transaction::default();
                b"250 sink\r\n"
            }
            "STARTTLS" if offer_starttls => {
                if !conn.buffer().is_empty() {
                    // RFC 3207 §5: nothing may follow STARTTLS before the handshake.
                    conn.write_all(b"501 5.5.4 no pipelining into STARTTLS\r\n").await?;
                    conn.flush().await?;
                    return Ok(Ended::Closed);
                }
                conn.write_all(b"220 2.0.0 ready to start TLS\r\n").await?;
                conn.flush().await?;
                return Ok(Ended::StartTls(conn.into_inner()));
            }
            "STARTTLS" => b"502 5.5.1 STARTTLS not offered\r\n",
            "MAIL" => match path_argument(argument, "FROM:") {
                Some(from) => {
                    transaction = Transaction { mail_from: Some(from), ..Transaction::default() };
                    b"250 2.1.0 OK\r\n"
                }
                None => b"501 5.5.4 syntax: MAIL FROM:<address>\r\n",
            },
            "RCPT" => match (transaction.mail_from.is_some(), path_argument(argument, "TO:")) {
                (false, _) => b"503 5.5.1 MAIL first\r\n",
                (true, None) => b"501 5.5.4 syntax: RCPT TO:<address>\r\n",
                (true, Some(to)) => match inner.behavior_for(&to) {
                    Behavior::TempFail => b"451 4.3.0 temporary failure\r\n",
                    Behavior::Reject => b"550 5.1.1 user unknown\r\n",
                    behavior => {
                        transaction.rcpt_to.push(to);
                        transaction.behaviors.push(behavior);
                        b"250 2.1.5 OK\r\n"
                    }
                },
            },
            "DATA" if transaction.rcpt_to.is_empty() => b"503 5.5.1 RCPT first\r\n",
            "DATA" => {
                conn.write_all(b"354 end data with <CR><LF>.<CR><LF>\r\n").await?;
                conn.flush().await?;
                let Some(data) = read_data(&mut conn).await? else {
                    return Ok(Ended::Closed);
                };
                let transaction = std::mem::take(&mut transaction);
                inner.state().data_attempts += 1;
                let after_data = transaction.behaviors.iter().find(|b| b.acts_after_data()).cloned();
                match after_data {
                    Some(Behavior::RejectAfterData) => b"554 5.7.1 message rejected\r\n",
                    Some(Behavior::DropAfterData) => return Ok(Ended::Closed),
                    Some(Behavior::Hang) => {
                        // Never answer; keep reading (and ignoring) until the client gives up.
                        let mut ignored = [0u8; 4096];
                        while conn.read(&mut ignored).await? > 0 {}
                        return Ok(Ended::Closed);
                    }
                    _ => {
                        let received = Received {
                            mail_from: transaction.mail_from.expect("RCPT needs MAIL first"),
                            rcpt_to: transaction.rcpt_to,
                            data,
                        };
                        inner.state().messages.push(received);
                        inner.recorded.notify_waiters();
                        b"250 2.0.0 OK queued\r\n"
                    }
                }
            }
            "RSET" => {
                transaction = Transaction::default();
                b"250 2.0.0 OK\r\n"
            }
            "NOOP" => b"250 2.0.0 OK\r\n",
            "VRFY" => b"252 2.1.5 cannot verify\r\n",
            "QUIT" => {
                conn.write_all(b"221 2.0.0 bye\r\n").await?;
                conn.flush().await?;
                let _ = conn.shutdown().await;
                return Ok(Ended::Closed);
            }
            _ => b"500 5.5.2 command not recognized\r\n",
        };
        conn.write_all(reply).await?;
        conn.flush().await?;
    }
}

/// Reads a message after `354` up to the line `.`: the bytes with dot-stuffing undone, or
/// `None` when the client went away first.
async fn read_data<R: AsyncRead + Unpin>(conn: &mut BufReader<R>) -> std::io::Result<Option<Vec<u8>>> {
    let mut data = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        if conn.read_until(b'\n', &mut line).await? == 0 {
            return Ok(None);
        }
        if line == b".\r\n" {
            return Ok(Some(data));
        }
        let unstuffed = if line.starts_with(b"..") { &line[1..] } else { &line[..] };
        data.extend_from_slice(unstuffed);
    }
}

/// The address of `MAIL FROM:<a> PARAMS` or `RCPT TO:<a> PARAMS` (`argument` is what follows the
/// verb, `keyword` is `FROM:` or `TO:`), without brackets; parameters are ignored.
fn path_argument(argument: &str, keyword: &str) -> Option<String> {
    let head = argument.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    let rest = argument[keyword.len()..].trim_start();
    if let Some(bracketed) = rest.strip_prefix('<') {
        let end = bracketed.find('>')?;
        Some(bracketed[..end].to_string())
    } else {
        let address = rest.split_whitespace().next()?;
        Some(address.to_string())
    }
}

/// A TLS acceptor with a fresh self-signed certificate for `localhost` and `127.0.0.1` (ring provider).
/// Submits `raw` to the SMTP server on 127.0.0.1:`port` with lettre, a real client: MAIL FROM
/// `from` (empty for the null sender `<>`), RCPT TO `to`.
pub async fn submit(port: u16, from: &str, to: &str, raw: &[u8]) -> Result<lettre::transport::smtp::response::Response, lettre::transport::smtp::Error> {
    use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor, address::Envelope};
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1").port(port).build();
    let sender = (!from.is_empty()).then(|| from.parse().expect("a sender address"));
    let envelope = Envelope::new(sender, vec![to.parse().expect("a recipient address")]).expect("an envelope");
    transport.send_raw(&envelope, raw).await
}

fn self_signed_acceptor() -> TlsAcceptor {
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let certified = rcgen::generate_simple_self_signed(names).expect("rcgen makes a self-signed certificate");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .expect("the certificate matches its key");
    TlsAcceptor::from(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_with_or_without_parameters_and_brackets() {
        assert_eq!(path_argument("FROM:<a@b.test> BODY=8BITMIME SMTPUTF8", "FROM:").as_deref(), Some("a@b.test"));
        assert_eq!(path_argument("from: <a@b.test>", "FROM:").as_deref(), Some("a@b.test"));
        assert_eq!(path_argument("TO:c@d.test SIZE=10", "TO:").as_deref(), Some("c@d.test"));
        assert_eq!(path_argument("FROM:<>", "FROM:").as_deref(), Some(""));
        assert_eq!(path_argument("TO:<unterminated", "TO:"), None);
        assert_eq!(path_argument("FROM:<a@b.test>", "TO:"), None);
    }

    #[test]
    fn a_received_header_is_found_case_insensitively_and_unfolded() {
        let received = Received {
            mail_from: String::new(),
            rcpt_to: vec![],
            data: b"From: a@b.test\r\nsubject: Hello\r\n  world \r\nTo: c@d.test\r\n\r\nSubject: body\r\n".to_vec(),
        };
        assert_eq!(received.header("Subject").as_deref(), Some("Hello  world"));
        assert_eq!(received.header("to").as_deref(), Some("c@d.test"));
        assert_eq!(received.header("Cc"), None);
    }
}
