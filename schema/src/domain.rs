//! Sending domains as values: a validated name, its region and TLS policy, the statuses of a
//! domain and of each record, and the DNS records a domain publishes (document A's table).

use rsa::pkcs1::{EncodeRsaPrivateKey, LineEnding};
use rsa::pkcs8::EncodePublicKey;

/// A domain name, lower-case ASCII (IDNA), without a trailing dot, with the registrable domain
/// (`zone`) that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainName {
    name: String,
    zone: String,
}

impl DomainName {
    /// Validates and normalises a name: IDNA to ASCII, lower case, at least two labels, each
    /// 1 to 63 letters, digits or inner hyphens, 253 characters in all, not an IP address, and
    /// not a public suffix itself.
    pub fn parse(raw: &str) -> Result<DomainName, &'static str> {
        let trimmed = raw.trim().trim_end_matches('.');
        if trimmed.is_empty() {
            return Err("must not be blank");
        }
        if trimmed.parse::<std::net::IpAddr>().is_ok() {
            return Err("must be a domain name, not an IP address");
        }
        let name = idna::domain_to_ascii(trimmed).map_err(|_| "is not a valid domain name")?;
        if name.len() > 253 {
            return Err("must be at most 253 characters");
        }
        let labels: Vec<&str> = name.split('.').collect();
        if labels.len() < 2 {
            return Err("must have at least two labels, such as example.com");
        }
        for label in &labels {
            let valid = !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-');
            if !valid {
                return Err("is not a valid domain name: each label is 1 to 63 letters, digits or inner hyphens");
            }
        }
        if labels.last().is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit())) {
            return Err("is not a valid domain name");
        }
        let zone = psl::domain_str(&name).ok_or("is a public suffix, not a domain that can be registered")?.to_string();
        Ok(DomainName { name, zone })
    }

    /// A name read back from a row, which was validated by [`DomainName::parse`] when written.
    pub fn stored(name: String, zone: String) -> DomainName {
        DomainName { name, zone }
    }

    /// The whole name, lower-case ASCII, without a trailing dot.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The registrable domain that holds the name (`example.co.uk` for `mail.example.co.uk`).
    pub fn zone(&self) -> &str {
        &self.zone
    }

    /// The labels of the name below its zone (`mail` for `mail.example.com`), or `None` at the apex.
    pub fn subdomain(&self) -> Option<&str> {
        self.name.strip_suffix(&self.zone).and_then(|rest| rest.strip_suffix('.')).filter(|s| !s.is_empty())
    }
}

text_enum! {
    /// Where a domain's mail leaves from: a deliverability choice, not data residency.
    Region {
        UsEast1 = "us-east-1",
        EuWest1 = "eu-west-1",
        SaEast1 = "sa-east-1",
        ApNortheast1 = "ap-northeast-1",
    }
}

impl Region {
    /// Whether inbound mail (the receiving MX) is offered in this region.
    pub fn offers_receiving(self) -> bool {
        matches!(self, Region::UsEast1 | Region::EuWest1)
    }
}

text_enum! {
    /// How delivery treats TLS.
    Tls {
        /// STARTTLS when the receiving server offers it, plain SMTP otherwise (default).
        Opportunistic = "opportunistic",
        /// Mail is not sent to a server that offers no TLS.
        Enforced = "enforced",
    }
}

text_enum! {
    /// A domain's state. It verifies for sending once its DKIM and mail-from records verify.
    DomainStatus {
        /// Added; DNS not checked yet.
        NotStarted = "not_started",
        /// Checked; DKIM or mail-from not found yet (within 72 hours of creation).
        Pending = "pending",
        /// DKIM and mail-from verified: the domain can send.
        Verified = "verified",
        /// Verified earlier; DKIM or mail-from no longer resolves. Sending waits until it does.
        Drifted = "drifted",
        /// Never verified, and DKIM or mail-from still missing 72 hours after creation. Rechecks go on.
        Failed = "failed",
        /// The last check could not reach DNS (timeout or server failure).
        TemporaryFailure = "temporary_failure",
        /// This team's copy while its claim on a domain another team holds is pending.
        Claiming = "claiming",
        /// The claim ran out (7 days) before the transfer.
        ClaimExpired = "claim_expired",
        /// Switched off because another team claimed the domain.
        Disabled = "disabled",
    }
}

text_enum! {
    /// What DNS said about one record at its last check.
    RecordStatus {
        /// Not checked yet.
        NotStarted = "not_started",
        /// Not found (or a different value) and never verified, within 72 hours of creation.
        Pending = "pending",
        /// Found with the expected value.
        Verified = "verified",
        /// Verified earlier, no longer found with the expected value.
        Drifted = "drifted",
        /// Never verified, still missing 72 hours after the domain was created.
        Failed = "failed",
        /// DNS could not answer (timeout, refused, server failure); a verified record stays verified.
        TemporaryFailure = "temporary_failure",
    }
}

text_enum! {
    /// Which of the four records a row is.
    RecordKind {
        /// TXT at `svc._domainkey`: the DKIM public key.
        Dkim = "dkim",
        /// CNAME at the return-path label: bounces come back to the service.
        MailFrom = "mail_from",
        /// MX at the receiving host: inbound mail.
        Receiving = "receiving",
        /// CNAME at `links`: open and click tracking.
        Tracking = "tracking",
    }
}

text_enum! {
    /// A record's name as the Resend SDKs read it (`record`), beside Herald's `kind`.
    RecordName {
        /// The return-path (mail-from) record, which carries SPF.
        Spf = "SPF",
        /// The DKIM public key.
        Dkim = "DKIM",
        /// The receiving MX.
        ReceivingMx = "Receiving MX",
        /// The tracking CNAME.
        Tracking = "Tracking",
    }
}

impl RecordKind {
    /// The record's name as the Resend SDKs read it.
    pub fn sdk_name(self) -> RecordName {
        match self {
            RecordKind::Dkim => RecordName::Dkim,
            RecordKind::MailFrom => RecordName::Spf,
            RecordKind::Receiving => RecordName::ReceivingMx,
            RecordKind::Tracking => RecordName::Tracking,
        }
    }

    pub const ALL: [RecordKind; 4] = [RecordKind::Dkim, RecordKind::MailFrom, RecordKind::Receiving, RecordKind::Tracking];

    /// The DNS type published.
    pub fn record_type(self) -> &'static str {
        match self {
            RecordKind::Dkim => "TXT",
            RecordKind::MailFrom | RecordKind::Tracking => "CNAME",
            RecordKind::Receiving => "MX",
        }
    }
}

/// Decides one record's status from a check's outcome and its previous status.
pub fn next_record_status(previous: RecordStatus, outcome: CheckOutcome, past_grace: bool) -> RecordStatus {
    let was_verified = matches!(previous, RecordStatus::Verified | RecordStatus::Drifted);
    match outcome {
        CheckOutcome::Matches => RecordStatus::Verified,
        CheckOutcome::Unreachable if was_verified => previous,
        CheckOutcome::Unreachable => RecordStatus::TemporaryFailure,
        CheckOutcome::Missing if was_verified => RecordStatus::Drifted,
        CheckOutcome::Missing if past_grace => RecordStatus::Failed,
        CheckOutcome::Missing => RecordStatus::Pending,
    }
}

/// A domain's status from its DKIM and mail-from records; `held` says whether it verified before.
pub fn sending_status(dkim: RecordStatus, mail_from: RecordStatus, held: bool) -> DomainStatus {
    use RecordStatus as R;
    match (dkim, mail_from) {
        (R::Verified, R::Verified) => DomainStatus::Verified,
        _ if held => DomainStatus::Drifted,
        (R::TemporaryFailure, _) | (_, R::TemporaryFailure) => DomainStatus::TemporaryFailure,
        (R::Failed, _) | (_, R::Failed) => DomainStatus::Failed,
        (R::NotStarted, R::NotStarted) => DomainStatus::NotStarted,
        _ => DomainStatus::Pending,
    }
}

/// What a lookup said about one expected record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckOutcome {
    Matches,
    /// No record, or a record with another value.
    Missing,
    /// DNS did not answer.
    Unreachable,
}

/// The operator's hosts per region that domains point at.
#[derive(Debug, Clone)]
pub struct RegionHosts {
    /// Mail-from target, `{region}` replaced by the region: the CNAME reads `<code>.<host>`.
    pub mail_from: String,
    /// Inbound MX host, `{region}` replaced by the region.
    pub inbound: String,
    /// The tracking CNAME target.
    pub tracking: String,
}

impl RegionHosts {
    /// Defaults under `base` (the public URL's host, or `herald.localhost`).
    pub fn under(base: &str) -> RegionHosts {
        RegionHosts {
            mail_from: format!("feedback.{{region}}.{base}"),
            inbound: format!("inbound.{{region}}.{base}"),
            tracking: format!("links.{base}"),
        }
    }

    pub fn mail_from_host(&self, region: Region) -> String {
        self.mail_from.replace("{region}", region.as_str()).to_ascii_lowercase()
    }

    pub fn inbound_host(&self, region: Region) -> String {
        self.inbound.replace("{region}", region.as_str()).to_ascii_lowercase()
    }

    /// Whether `target` is one of the service's mail-from targets in any region.
    pub fn is_mail_from_target(&self, target: &str) -> bool {
        let target = target.trim_end_matches('.').to_ascii_lowercase();
        [Region::UsEast1, Region::EuWest1, Region::SaEast1, Region::ApNortheast1]
            .into_iter()
            .any(|region| target.ends_with(&format!(".{}", self.mail_from_host(region))))
    }
}

/// The parts of a domain the records are computed from.
#[derive(Debug, Clone)]
pub struct RecordSource<'a> {
    pub name: &'a DomainName,
    pub region: Region,
    pub custom_return_path: &'a str,
    pub receiving_host: &'a str,
    pub mail_from_code: &'a str,
    pub dkim_public_key: &'a str,
}

/// One record the domain publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedRecord {
    pub kind: RecordKind,
    /// Name relative to the zone (`@` at the apex).
    pub name: String,
    /// Fully qualified name, without a trailing dot.
    pub fqdn: String,
    pub value: String,
    pub priority: Option<u16>,
}

/// The records of document A's table. The receiving row is absent in regions without inbound mail.
pub fn expected_records(source: &RecordSource<'_>, hosts: &RegionHosts) -> Vec<ExpectedRecord> {
    let at = |label: &str| -> (String, String) {
        let relative = match (label, source.name.subdomain()) {
            ("@", None) => "@".to_string(),
            ("@", Some(sub)) => sub.to_string(),
            (label, None) => label.to_string(),
            (label, Some(sub)) => format!("{label}.{sub}"),
        };
        let fqdn = if label == "@" { source.name.name.clone() } else { format!("{label}.{}", source.name.name) };
        (relative, fqdn)
    };
    let mut records = Vec::with_capacity(4);
    let (name, fqdn) = at("svc._domainkey");
    records.push(ExpectedRecord { kind: RecordKind::Dkim, name, fqdn, value: dkim_value(source.dkim_public_key), priority: None });
    let (name, fqdn) = at(source.custom_return_path);
    let value = format!("{}.{}", source.mail_from_code, hosts.mail_from_host(source.region));
    records.push(ExpectedRecord { kind: RecordKind::MailFrom, name, fqdn, value, priority: None });
    if source.region.offers_receiving() {
        let (name, fqdn) = at(source.receiving_host);
        let value = hosts.inbound_host(source.region);
        records.push(ExpectedRecord { kind: RecordKind::Receiving, name, fqdn, value, priority: Some(10) });
    }
    let (name, fqdn) = at("links");
    records.push(ExpectedRecord { kind: RecordKind::Tracking, name, fqdn, value: hosts.tracking.to_ascii_lowercase(), priority: None });
    records
}

/// The DKIM TXT value: the bare `p=` tag.
pub fn dkim_value(public_key: &str) -> String {
    format!("p={public_key}")
}

/// The DKIM value as the two quoted character-strings a zone file or provider API publishes
/// (a 2048-bit key is longer than one 255-byte string).
pub fn dkim_zone_strings(public_key: &str) -> [String; 2] {
    let value = dkim_value(public_key);
    let (first, second) = value.split_at(value.len().min(255));
    [first.to_string(), second.to_string()]
}

/// Whether a TXT record's text (its strings joined) carries the DKIM key `public_key`.
pub fn txt_has_dkim_key(text: &str, public_key: &str) -> bool {
    text.split(';').any(|tag| {
        let tag: String = tag.chars().filter(|c| !c.is_whitespace()).collect();
        tag.strip_prefix("p=").is_some_and(|key| key == public_key)
    })
}

/// A fresh DKIM key pair.
pub struct DkimKey {
    /// PKCS#1 PEM, as the signer reads it.
    pub private_pem: String,
    /// Base64 of the DER SubjectPublicKeyInfo: the `p=` value.
    pub public_base64: String,
}

/// Generates a 2048-bit RSA DKIM key. Takes tens to hundreds of milliseconds: call it off the
/// async executor (`spawn_blocking`).
pub fn generate_dkim_key() -> anyhow::Result<DkimKey> {
    use base64::Engine;
    let private = rsa::RsaPrivateKey::new(&mut rand::thread_rng(), 2048)?;
    let private_pem = private.to_pkcs1_pem(LineEnding::LF)?.to_string();
    let der = private.to_public_key().to_public_key_der()?;
    Ok(DkimKey { private_pem, public_base64: base64::engine::general_purpose::STANDARD.encode(der.as_bytes()) })
}

/// A random code for the mail-from CNAME target: 12 lower-case letters and digits.
pub fn new_mail_from_code() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::thread_rng();
    (0..12).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char).collect()
}

/// Validates a DNS label given for the return path or receiving host (`@` allowed for the latter).
pub fn parse_label(raw: &str, allow_apex: bool) -> Result<String, &'static str> {
    let label = raw.trim().to_ascii_lowercase();
    if allow_apex && label == "@" {
        return Ok(label);
    }
    let valid = !label.is_empty()
        && label.len() <= 63
        && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-');
    if valid { Ok(label) } else { Err("must be one DNS label: 1 to 63 letters, digits or inner hyphens") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_lower_cased_and_idna_encoded() {
        assert_eq!(DomainName::parse(" Example.COM. ").unwrap().name, "example.com");
        assert_eq!(DomainName::parse("bücher.example").unwrap().name, "xn--bcher-kva.example");
    }

    #[test]
    fn bad_names_are_refused() {
        for raw in ["", "localhost", "-a.com", "a-.com", "a..com", "exa mple.com", "127.0.0.1", "co.uk", "a.123", &"a".repeat(64)] {
            assert!(DomainName::parse(raw).is_err(), "{raw} should be refused");
        }
    }

    #[test]
    fn a_subdomain_keeps_its_labels_below_the_zone() {
        let name = DomainName::parse("mail.example.co.uk").unwrap();
        assert_eq!((name.zone.as_str(), name.subdomain()), ("example.co.uk", Some("mail")));
        let apex = DomainName::parse("example.test").unwrap();
        assert_eq!((apex.zone.as_str(), apex.subdomain()), ("example.test", None));
    }

    #[test]
    fn records_of_a_subdomain_carry_its_labels() {
        let name = DomainName::parse("mail.example.com").unwrap();
        let hosts = RegionHosts::under("herald.test");
        let source = RecordSource {
            name: &name,
            region: Region::EuWest1,
            custom_return_path: "send",
            receiving_host: "@",
            mail_from_code: "abc",
            dkim_public_key: "KEY",
        };
        let records = expected_records(&source, &hosts);
        let names: Vec<_> = records.iter().map(|r| (r.name.as_str(), r.fqdn.as_str(), r.value.as_str())).collect();
        assert_eq!(
            names,
            [
                ("svc._domainkey.mail", "svc._domainkey.mail.example.com", "p=KEY"),
                ("send.mail", "send.mail.example.com", "abc.feedback.eu-west-1.herald.test"),
                ("mail", "mail.example.com", "inbound.eu-west-1.herald.test"),
                ("links.mail", "links.mail.example.com", "links.herald.test"),
            ]
        );
        assert_eq!(records[2].priority, Some(10));
    }

    #[test]
    fn regions_without_inbound_mail_list_no_receiving_record() {
        let name = DomainName::parse("example.com").unwrap();
        let source = RecordSource {
            name: &name,
            region: Region::SaEast1,
            custom_return_path: "bounce",
            receiving_host: "@",
            mail_from_code: "abc",
            dkim_public_key: "KEY",
        };
        let kinds: Vec<_> = expected_records(&source, &RegionHosts::under("h.test")).iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [RecordKind::Dkim, RecordKind::MailFrom, RecordKind::Tracking]);
    }

    #[test]
    fn a_dkim_key_is_published_as_two_strings_and_found_in_joined_text() {
        let key = generate_dkim_key().unwrap();
        let [first, second] = dkim_zone_strings(&key.public_base64);
        assert_eq!(first.len(), 255);
        assert!(!second.is_empty());
        assert!(key.private_pem.starts_with("-----BEGIN RSA PRIVATE KEY-----"));
        assert!(txt_has_dkim_key(&format!("v=DKIM1; k=rsa; {first}{second}"), &key.public_base64));
        assert!(!txt_has_dkim_key("p=other", &key.public_base64));
    }

    #[test]
    fn a_verified_record_that_stops_resolving_drifts_and_an_outage_changes_nothing() {
        use CheckOutcome::*;
        use RecordStatus as R;
        assert_eq!(next_record_status(R::Verified, Missing, false), R::Drifted);
        assert_eq!(next_record_status(R::Verified, Unreachable, false), R::Verified);
        assert_eq!(next_record_status(R::Pending, Unreachable, false), R::TemporaryFailure);
        assert_eq!(next_record_status(R::Pending, Missing, true), R::Failed);
        assert_eq!(next_record_status(R::Drifted, Matches, true), R::Verified);
    }

    #[test]
    fn a_domain_verifies_with_dkim_and_mail_from_alone() {
        use RecordStatus as R;
        assert_eq!(sending_status(R::Verified, R::Verified, false), DomainStatus::Verified);
        assert_eq!(sending_status(R::Verified, R::Pending, false), DomainStatus::Pending);
        assert_eq!(sending_status(R::Drifted, R::Verified, true), DomainStatus::Drifted);
        assert_eq!(sending_status(R::Failed, R::Verified, false), DomainStatus::Failed);
    }

    #[test]
    fn labels_are_single_dns_labels() {
        assert_eq!(parse_label("Bounce", false).unwrap(), "bounce");
        assert!(parse_label("@", false).is_err());
        assert_eq!(parse_label("@", true).unwrap(), "@");
        assert!(parse_label("a.b", false).is_err());
    }
}
