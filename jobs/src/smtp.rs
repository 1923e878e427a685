//! Outbound SMTP: one envelope per recipient, to the operator's relay or to the recipient
//! domain's MX (looked up through the configured resolver), over pooled connections with
//! opportunistic STARTTLS, or required TLS. [`classify`] turns every way a submission can end
//! into one [`Outcome`].

use crate::dns::{Dns, Lookup};
use lettre::Address;
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use std::collections::HashMap;
use std::net::IpAddr;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where and how mail leaves.
#[derive(Debug, Clone)]
pub struct SmtpSettings {
    /// `HERALD_SMTP_RELAY`; `None` delivers to each recipient's MX.
    pub relay: Option<Relay>,
    /// `HERALD_MX_PORT`: the port of recipients' MX hosts.
    pub mx_port: u16,
    /// The name Herald gives in EHLO.
    pub helo: String,
    /// Connecting, and each command's reply.
    pub command_timeout: Duration,
    /// The reply after the message's final dot.
    pub data_timeout: Duration,
    /// Idle connections kept per destination.
    pub idle_per_host: usize,
}

/// An SMTP relay: `smtp://[user:pass@]host:port` (STARTTLS when offered) or `smtps://` (TLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relay {
    pub host: String,
    pub port: u16,
    pub credentials: Option<(String, String)>,
    pub implicit_tls: bool,
}

impl Relay {
    /// Reads a relay URL.
    pub fn parse(url: &str) -> anyhow::Result<Relay> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| anyhow::anyhow!("HERALD_SMTP_RELAY must be smtp://host:port"))?;
        let implicit_tls = match scheme {
            "smtp" => false,
            "smtps" => true,
            _ => anyhow::bail!("HERALD_SMTP_RELAY must start smtp:// or smtps://"),
        };
        let rest = rest.trim_end_matches('/');
        let (credentials, host_port) = match rest.rsplit_once('@') {
            Some((userinfo, host_port)) => {
                let (user, pass) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                (Some((percent_decode(user), percent_decode(pass))), host_port)
            }
            None => (None, rest),
        };
        let (host, port) = match host_port.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().map_err(|_| anyhow::anyhow!("HERALD_SMTP_RELAY has a bad port"))?),
            None => (host_port, if implicit_tls { 465 } else { 587 }),
        };
        anyhow::ensure!(!host.is_empty(), "HERALD_SMTP_RELAY needs a host");
        Ok(Relay { host: host.trim_matches(['[', ']']).to_string(), port, credentials, implicit_tls })
    }
}

fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = raw.get(i + 1..i + 3).and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How one recipient's submission ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx after the message. `final_hop` is true when the recipient's own MX took it.
    Accepted { response: String, final_hop: bool },
    /// A 4xx, a refused or timed-out connection, no reachable MX: try again later.
    Deferred { response: String },
    /// A 5xx: the recipient will never take it.
    Rejected { response: String },
    /// Not sent and never will be; `reason` becomes the email's `failed_reason`
    /// (`tls_required`: TLS is required and the server offers none; `domain_deleted`: the
    /// sending domain was deleted before delivery).
    Refused { reason: &'static str, response: String },
    /// The message was sent and the reply never came: it may have been delivered.
    Ambiguous { response: String },
}

/// Where a submission stood when something went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Connecting, greeting, EHLO, STARTTLS, AUTH, MAIL, RCPT or DATA: nothing delivered.
    BeforeMessage,
    /// The message (and its final dot) was written: only the reply was outstanding.
    AfterMessage,
}

/// The one place an SMTP result becomes an outcome.
pub fn classify(stage: Stage, result: Result<String, lettre::transport::smtp::Error>, final_hop: bool) -> Outcome {
    match result {
        Ok(response) => Outcome::Accepted { response, final_hop },
        Err(error) if error.is_permanent() => Outcome::Rejected { response: error.to_string() },
        Err(error) if error.is_transient() => Outcome::Deferred { response: error.to_string() },
        Err(error) => match stage {
            Stage::BeforeMessage => Outcome::Deferred { response: error.to_string() },
            Stage::AfterMessage => Outcome::Ambiguous { response: error.to_string() },
        },
    }
}

/// The outcome of a command or message reply that did not come in time.
fn timed_out(stage: Stage, what: &str) -> Outcome {
    let response = format!("timed out waiting for the reply to {what}");
    match stage {
        Stage::BeforeMessage => Outcome::Deferred { response },
        Stage::AfterMessage => Outcome::Ambiguous { response },
    }
}

/// Why no transaction was started on a destination.
enum NotConnected {
    /// The host could not be resolved or reached: the next MX may do better.
    Unreachable(String),
    /// The host answered but the session ended before a transaction (STARTTLS, AUTH, no TLS).
    Ended(Outcome),
}

/// One destination: a host name (or address) and a port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Destination {
    host: String,
    port: u16,
}

/// Sends messages, reusing connections per destination. Cheap to clone.
#[derive(Clone)]
pub struct Mailer {
    settings: Arc<SmtpSettings>,
    dns: Dns,
    idle: Arc<Mutex<HashMap<Destination, Vec<AsyncSmtpConnection>>>>,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer").field("settings", &self.settings).finish()
    }
}

/// One envelope.
#[derive(Debug, Clone)]
pub struct Envelope<'a> {
    /// The return path (`MAIL FROM`).
    pub mail_from: &'a str,
    pub rcpt_to: &'a str,
    /// The signed message.
    pub message: &'a [u8],
    /// The sending domain's `tls` is `enforced`.
    pub require_tls: bool,
}

impl Mailer {
    pub fn new(settings: SmtpSettings, dns: Dns) -> Mailer {
        Mailer { settings: Arc::new(settings), dns, idle: Arc::default() }
    }

    /// Submits one envelope and says how it ended.
    pub async fn send(&self, envelope: &Envelope<'_>) -> Outcome {
        let (destinations, final_hop) = match &self.settings.relay {
            Some(relay) => (vec![Destination { host: relay.host.clone(), port: relay.port }], false),
            None => {
                let domain = envelope.rcpt_to.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
                match self.mx_hosts(domain).await {
                    Ok(hosts) => (hosts, true),
                    Err(outcome) => return outcome,
                }
            }
        };
        // Only a destination that could not be reached is worth the next one.
        let mut unreachable = String::from("no destination");
        for destination in destinations {
            match self.send_to(&destination, envelope, final_hop).await {
                Ok(outcome) => return outcome,
                Err(why) => unreachable = why,
            }
        }
        Outcome::Deferred { response: unreachable }
    }

    /// The MX hosts of `domain` by preference; the domain itself when it has none.
    async fn mx_hosts(&self, domain: &str) -> Result<Vec<Destination>, Outcome> {
        let port = self.settings.mx_port;
        match self.dns.mx(domain).await {
            Lookup::Found(records) => {
                let mut hosts: Vec<(u16, String)> = records
                    .iter()
                    .filter_map(|record| {
                        let (priority, host) = record.split_once(' ')?;
                        Some((priority.parse().ok()?, host.to_string()))
                    })
                    .collect();
                hosts.sort();
                if hosts.iter().any(|(_, host)| host.is_empty() || host == ".") {
                    return Err(Outcome::Rejected { response: format!("{domain} accepts no mail (null MX)") });
                }
                Ok(hosts.into_iter().map(|(_, host)| Destination { host, port }).collect())
            }
            Lookup::NotFound => Ok(vec![Destination { host: domain.to_string(), port }]),
            Lookup::Unreachable(error) => Err(Outcome::Deferred { response: format!("MX lookup for {domain} failed: {error}") }),
        }
    }

    /// The outcome of a transaction with `destination`, or why it could not be reached.
    async fn send_to(&self, destination: &Destination, envelope: &Envelope<'_>, final_hop: bool) -> Result<Outcome, String> {
        // A pooled connection may have gone stale: a failure before the message is retried once
        // on a fresh connection.
        if let Some(connection) = self.take_idle(destination) {
            match self.transaction(connection, destination, envelope, final_hop).await {
                (Outcome::Deferred { .. }, None) => {}
                (outcome, connection) => return Ok(self.finish(destination, outcome, connection)),
            }
        }
        let connection = match self.connect(destination, envelope.require_tls).await {
            Ok(connection) => connection,
            Err(NotConnected::Unreachable(why)) => return Err(why),
            Err(NotConnected::Ended(outcome)) => return Ok(outcome),
        };
        let (outcome, connection) = self.transaction(connection, destination, envelope, final_hop).await;
        Ok(self.finish(destination, outcome, connection))
    }

    fn finish(&self, destination: &Destination, outcome: Outcome, connection: Option<AsyncSmtpConnection>) -> Outcome {
        if let Some(connection) = connection
            && !connection.has_broken()
        {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let list = idle.entry(destination.clone()).or_default();
            if list.len() < self.settings.idle_per_host {
                list.push(connection);
            }
        }
        outcome
    }

    fn take_idle(&self, destination: &Destination) -> Option<AsyncSmtpConnection> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).get_mut(destination).and_then(Vec::pop)
    }

    /// Opens a connection: resolves the host, connects, EHLO, STARTTLS when offered (required
    /// when `require_tls`), AUTH for a relay with credentials.
    async fn connect(&self, destination: &Destination, require_tls: bool) -> Result<AsyncSmtpConnection, NotConnected> {
        let settings = &self.settings;
        let address = self.address_of(&destination.host).await.map_err(NotConnected::Unreachable)?;
        let ended = NotConnected::Ended;
        let hello = ClientId::Domain(settings.helo.clone());
        let implicit = settings.relay.as_ref().is_some_and(|relay| relay.implicit_tls);
        let tls = |host: &str| {
            TlsParameters::builder(host.to_string())
                .dangerous_accept_invalid_certs(settings.relay.is_none())
                .dangerous_accept_invalid_hostnames(settings.relay.is_none())
                .build_rustls()
        };
        let implicit_tls = if implicit {
            Some(tls(&destination.host).map_err(|e| ended(Outcome::Deferred { response: format!("TLS setup: {e}") }))?)
        } else {
            None
        };
        let connect = AsyncSmtpConnection::connect_tokio1(
            (address, destination.port),
            Some(settings.command_timeout),
            &hello,
            implicit_tls,
            None,
        );
        let mut connection = match tokio::time::timeout(settings.command_timeout * 2, connect).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(error)) => return Err(NotConnected::Unreachable(format!("{}:{}: {error}", destination.host, destination.port))),
            Err(_) => return Err(NotConnected::Unreachable(format!("{}:{} timed out", destination.host, destination.port))),
        };
        if connection.can_starttls() {
            let parameters = tls(&destination.host).map_err(|e| ended(Outcome::Deferred { response: format!("TLS setup: {e}") }))?;
            match tokio::time::timeout(settings.command_timeout, connection.starttls(parameters, &hello)).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => return Err(ended(classify(Stage::BeforeMessage, Err(error), false))),
                Err(_) => return Err(ended(timed_out(Stage::BeforeMessage, "STARTTLS"))),
            }
        } else if require_tls && !connection.is_encrypted() {
            close(connection).await;
            return Err(ended(Outcome::Refused {
                reason: "tls_required",
                response: format!("{}:{} does not offer STARTTLS and the domain requires TLS", destination.host, destination.port),
            }));
        }
        if let Some((user, pass)) = settings.relay.as_ref().and_then(|relay| relay.credentials.clone()) {
            use lettre::transport::smtp::authentication::{Credentials, Mechanism};
            let credentials = Credentials::new(user, pass);
            let auth = connection.auth(&[Mechanism::Plain, Mechanism::Login], &credentials);
            match tokio::time::timeout(settings.command_timeout, auth).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => return Err(ended(Outcome::Deferred { response: format!("AUTH failed: {error}") })),
                Err(_) => return Err(ended(timed_out(Stage::BeforeMessage, "AUTH"))),
            }
        }
        Ok(connection)
    }

    /// The IP address of `host` through the configured resolver (or the host itself when it
    /// is an address).
    async fn address_of(&self, host: &str) -> Result<IpAddr, String> {
        if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
            return Ok(ip);
        }
        match self.dns.ip(host).await {
            Lookup::Found(addresses) => addresses
                .iter()
                .find_map(|a| a.parse().ok())
                .ok_or_else(|| format!("{host} has no usable address")),
            Lookup::NotFound => Err(format!("{host} has no address")),
            Lookup::Unreachable(error) => Err(format!("resolving {host}: {error}")),
        }
    }

    /// MAIL, RCPT, DATA and the message on `connection`; gives the connection back when it can
    /// carry another transaction.
    async fn transaction(
        &self,
        mut connection: AsyncSmtpConnection,
        destination: &Destination,
        envelope: &Envelope<'_>,
        final_hop: bool,
    ) -> (Outcome, Option<AsyncSmtpConnection>) {
        let timeout = self.settings.command_timeout;
        if envelope.require_tls && !connection.is_encrypted() {
            let response = format!("{}:{} does not offer STARTTLS and the domain requires TLS", destination.host, destination.port);
            return (Outcome::Refused { reason: "tls_required", response }, Some(connection));
        }
        let (Ok(from), Ok(to)) = (Address::from_str(envelope.mail_from), Address::from_str(envelope.rcpt_to)) else {
            return (Outcome::Rejected { response: format!("`{}` cannot be used in an SMTP envelope", envelope.rcpt_to) }, Some(connection));
        };
        let mut options = Vec::new();
        if !envelope.rcpt_to.is_ascii() {
            options.push(MailParameter::SmtpUtfEight);
        }
        if !envelope.message.is_ascii() && connection.server_info().supports_feature(Extension::EightBitMime) {
            options.push(MailParameter::Body(MailBodyParameter::EightBitMime));
        }
        for (what, command) in [("MAIL", Mail::new(Some(from), options).to_string()), ("RCPT", Rcpt::new(to, vec![]).to_string()), ("DATA", Data.to_string())] {
            match tokio::time::timeout(timeout, connection.command(command)).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => {
                    let outcome = classify(Stage::BeforeMessage, Err(error), final_hop);
                    let reusable = matches!(outcome, Outcome::Deferred { .. } | Outcome::Rejected { .. }) && !connection.has_broken();
                    if reusable && reset(&mut connection, timeout).await {
                        return (outcome, Some(connection));
                    }
                    close(connection).await;
                    return (outcome, None);
                }
                Err(_) => {
                    close(connection).await;
                    return (timed_out(Stage::BeforeMessage, what), None);
                }
            }
        }
        match tokio::time::timeout(self.settings.data_timeout, connection.message(envelope.message)).await {
            Ok(Ok(response)) => {
                let text = response.message().collect::<Vec<_>>().join(" ");
                (classify(Stage::AfterMessage, Ok(format!("{} {text}", response.code())), final_hop), Some(connection))
            }
            Ok(Err(error)) => {
                let outcome = classify(Stage::AfterMessage, Err(error), final_hop);
                if matches!(outcome, Outcome::Ambiguous { .. }) {
                    close(connection).await;
                    (outcome, None)
                } else {
                    (outcome, Some(connection))
                }
            }
            Err(_) => {
                close(connection).await;
                (timed_out(Stage::AfterMessage, "the message"), None)
            }
        }
    }
}

/// Says QUIT when the server still listens; a server that stopped answering is just dropped.
async fn close(mut connection: AsyncSmtpConnection) {
    let _ = tokio::time::timeout(Duration::from_secs(1), connection.abort()).await;
}

/// `RSET` after a refused command, so the connection can carry the next transaction.
async fn reset(connection: &mut AsyncSmtpConnection, timeout: Duration) -> bool {
    matches!(tokio::time::timeout(timeout, connection.command("RSET\r\n")).await, Ok(Ok(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relay_url_gives_host_port_and_credentials() {
        let relay = Relay::parse("smtp://user%40x:p%3Ass@relay.example:2525").unwrap();
        assert_eq!(relay.host, "relay.example");
        assert_eq!(relay.port, 2525);
        assert_eq!(relay.credentials, Some(("user@x".into(), "p:ss".into())));
        assert!(!relay.implicit_tls);
        assert_eq!(Relay::parse("smtps://relay.example").unwrap().port, 465);
        assert!(Relay::parse("http://relay.example").is_err());
    }
}
