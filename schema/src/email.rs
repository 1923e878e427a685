//! The values of a send, parsed: mailboxes (`Name <address>` or an address), tags, custom
//! headers, subjects and attachment names, each by document B's rules. A failure is a message
//! for the field's `errors[]` entry.

/// Recipients (`to`, `cc` and `bcc` together) per email.
pub const MAX_RECIPIENTS: usize = 50;
/// Emails per batch.
pub const MAX_BATCH: usize = 100;
/// Attachments per email.
pub const MAX_ATTACHMENTS: usize = 100;
/// Tags per email.
pub const MAX_TAGS: usize = 50;
/// Subject length in bytes of UTF-8.
pub const MAX_SUBJECT_BYTES: usize = 998;
/// `html` and `text` together, in bytes.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// The content rule of sends, broadcasts and templates: `html` and `text` together at most
/// [`MAX_BODY_BYTES`]. The error says so (it belongs to the `html` field).
pub fn check_body_size(html: Option<&str>, text: Option<&str>) -> Result<(), &'static str> {
    if html.map_or(0, str::len) + text.map_or(0, str::len) > MAX_BODY_BYTES {
        return Err("`html` and `text` together must be at most 2 MB");
    }
    Ok(())
}

/// Attachments of one email together, decoded.
pub const MAX_ATTACHMENT_BYTES: usize = 40 * 1024 * 1024;

/// The reserved mailbox-simulator domain: `delivered@`, `bounced@` and `complained@` it (with
/// any `+label`) produce their events without SMTP.
pub const SIMULATOR_DOMAIN: &str = "simulator.herald.test";

/// An email address with an optional display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mailbox {
    name: Option<String>,
    /// The bare address: local part as written, domain lower-case ASCII (IDNA).
    address: String,
}

impl Mailbox {
    /// Reads `address` or `Name <address>` (the name may be quoted).
    pub fn parse(raw: &str) -> Result<Mailbox, String> {
        let raw = raw.trim();
        if raw.chars().any(char::is_control) {
            return Err("must not contain control characters".into());
        }
        let (name, address) = match raw.strip_suffix('>').and_then(|rest| rest.rsplit_once('<')) {
            Some((name, address)) => {
                let name = name.trim();
                let name = name.strip_prefix('"').and_then(|n| n.strip_suffix('"')).unwrap_or(name).trim();
                ((!name.is_empty()).then(|| name.to_string()), address.trim())
            }
            None => (None, raw),
        };
        Ok(Mailbox { name, address: parse_address(address)? })
    }

    /// The display name, if one was written.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The bare address: local part as written, domain lower-case ASCII (IDNA).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The display name and the bare address, taken apart.
    pub fn into_parts(self) -> (Option<String>, String) {
        (self.name, self.address)
    }

    /// The bare address, lower-case: what suppressions and searches compare.
    pub fn key(&self) -> String {
        self.address.to_lowercase()
    }

    /// The address's domain.
    pub fn domain(&self) -> &str {
        self.address.rsplit_once('@').map(|(_, domain)| domain).unwrap_or_default()
    }

    /// Whether the address is at the mailbox simulator.
    pub fn is_simulator(&self) -> bool {
        self.domain() == SIMULATOR_DOMAIN
    }

    /// As written in a header: `Name <address>` or the address.
    pub fn header_form(&self) -> String {
        match &self.name {
            Some(name) => format!("{name} <{}>", self.address),
            None => self.address.clone(),
        }
    }
}

/// Whether a region in the sending sandbox delivers to `recipient`: the mailbox simulator and
/// the team's verified domains (and their subdomains) only.
pub fn sandbox_allows(recipient: &Mailbox, verified_domains: &[String]) -> bool {
    recipient.is_simulator() || verified_domains.iter().any(|d| recipient.domain() == d || recipient.domain().ends_with(&format!(".{d}")))
}

/// A bare address: a dot-atom local part and a domain with at least two labels.
fn parse_address(raw: &str) -> Result<String, String> {
    let invalid = || format!("`{raw}` is not a valid email address");
    let (local, domain) = raw.rsplit_once('@').ok_or_else(invalid)?;
    let atext = |c: char| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii();
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && local.split('.').all(|atom| !atom.is_empty() && atom.chars().all(atext));
    if !local_ok {
        return Err(invalid());
    }
    let ascii = idna::domain_to_ascii(domain).map_err(|_| invalid())?;
    let labels: Vec<&str> = ascii.split('.').collect();
    let label_ok = |label: &&str| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    if labels.len() < 2 || ascii.len() > 253 || !labels.iter().all(label_ok) {
        return Err(invalid());
    }
    Ok(format!("{local}@{ascii}"))
}

/// What the simulator does with an address, if it is one of its mailboxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simulated {
    Delivered,
    Bounced,
    Complained,
}

/// The simulator outcome for `mailbox`; `None` for an ordinary address, and for an unknown
/// mailbox at the simulator (delivered, like any other simulator mailbox).
pub fn simulated(mailbox: &Mailbox) -> Option<Simulated> {
    if !mailbox.is_simulator() {
        return None;
    }
    let local = mailbox.address.split('@').next().unwrap_or_default().to_lowercase();
    let base = local.split('+').next().unwrap_or_default();
    Some(match base {
        "bounced" => Simulated::Bounced,
        "complained" => Simulated::Complained,
        _ => Simulated::Delivered,
    })
}

/// Checks a subject: one line, at most 998 bytes.
pub fn check_subject(subject: &str) -> Result<(), String> {
    if subject.len() > MAX_SUBJECT_BYTES {
        return Err(format!("must be at most {MAX_SUBJECT_BYTES} bytes"));
    }
    if subject.contains(['\r', '\n']) {
        return Err("must be one line".into());
    }
    Ok(())
}

/// Checks one tag: name 1 to 252 and value 1 to 256 characters of `A-Z a-z 0-9 _ -`.
pub fn check_tag(name: &str, value: &str) -> Result<(), String> {
    let allowed = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if name.is_empty() || name.len() > 252 || !allowed(name) {
        return Err("tag names are 1 to 252 characters of A-Z, a-z, 0-9, `_` and `-`".into());
    }
    if value.is_empty() || value.len() > 256 || !allowed(value) {
        return Err("tag values are 1 to 256 characters of A-Z, a-z, 0-9, `_` and `-`".into());
    }
    Ok(())
}

/// Whether a custom header name is one Herald sets or that controls delivery.
pub fn is_reserved_header(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "from", "to", "cc", "bcc", "subject", "date", "message-id", "return-path", "mime-version", "dkim-signature",
        "domainkey-signature", "received", "sender", "authentication-results", "received-spf", "reply-to",
        "delivered-to", "envelope-to", "x-original-to", "disposition-notification-to", "return-receipt-to",
        "precedence", "auto-submitted", "errors-to",
    ];
    let name = name.to_ascii_lowercase();
    RESERVED.contains(&name.as_str())
        || ["arc-", "resent-", "list-unsubscribe", "content-"].iter().any(|prefix| name.starts_with(prefix))
}

/// Checks one custom header: a printable-ASCII name that is not reserved, and a value without
/// control characters other than tab.
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    if name.is_empty() || !name.bytes().all(|b| (33..=126).contains(&b) && b != b':') {
        return Err(format!("`{name}` is not a valid header name"));
    }
    if is_reserved_header(name) {
        return Err(format!("`{name}` is reserved and set by Herald"));
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!("the value of `{name}` must not contain control characters other than tab"));
    }
    Ok(())
}

/// Checks a `content_id`: printable ASCII without spaces or angle brackets.
pub fn check_content_id(content_id: &str) -> Result<(), String> {
    let ok = !content_id.is_empty()
        && content_id.len() <= 255
        && content_id.bytes().all(|b| (33..=126).contains(&b) && b != b'<' && b != b'>');
    ok.then_some(()).ok_or_else(|| "must be printable ASCII without spaces or angle brackets".into())
}

/// Checks an attachment's file name: 1 to 255 characters, one line.
pub fn check_filename(filename: &str) -> Result<(), String> {
    if filename.trim().is_empty() || filename.chars().count() > 255 || filename.chars().any(char::is_control) {
        return Err("`filename` must be 1 to 255 characters on one line".into());
    }
    Ok(())
}

/// The content type for a file name when the request gives none.
pub fn content_type_for(filename: &str) -> &'static str {
    let extension = filename.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "txt" => "text/plain",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "ics" => "text/calendar",
        "json" => "application/json",
        "zip" => "application/zip",
        "doc" => "application/msword",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        _ => "application/octet-stream",
    }
}

/// Checks a content type: `type/subtype` of token characters, parameters allowed.
pub fn check_content_type(content_type: &str) -> Result<(), String> {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b));
    match essence.split_once('/') {
        Some((kind, sub)) if token(kind) && token(sub) && !content_type.chars().any(char::is_control) => Ok(()),
        _ => Err(format!("`{content_type}` is not a content type")),
    }
}

/// A resource a path names by its id or by an address: how every `{id or address}` path
/// segment is read, so that each answers the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdOrEmail {
    Id(uuid::Uuid),
    /// Bare, lower-case.
    Email(String),
}

impl IdOrEmail {
    /// An id when the text is one, else a bare lower-case address (surrounding spaces ignored,
    /// any case); `None` when it is neither.
    pub fn parse(raw: &str) -> Option<IdOrEmail> {
        if let Some(id) = crate::ids::parse_id(raw) {
            return Some(IdOrEmail::Id(id));
        }
        Mailbox::parse(raw.trim()).ok().map(|mailbox| IdOrEmail::Email(mailbox.key()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_a_row_by_its_id_or_by_an_address_in_any_case_and_nothing_else() {
        let id = crate::ids::new_id();
        assert_eq!(IdOrEmail::parse(&id.to_string()), Some(IdOrEmail::Id(id)));
        assert_eq!(IdOrEmail::parse(" Ada+news@Example.COM "), Some(IdOrEmail::Email("ada+news@example.com".into())));
        assert_eq!(IdOrEmail::parse("not an address"), None);
    }

    #[test]
    fn a_named_mailbox_keeps_its_name_and_lower_cases_the_domain() {
        let mailbox = Mailbox::parse("\"Acme Billing\" <Billing@Acme.EXAMPLE>").unwrap();
        assert_eq!(mailbox.name.as_deref(), Some("Acme Billing"));
        assert_eq!(mailbox.address, "Billing@acme.example");
        assert_eq!(mailbox.key(), "billing@acme.example");
        assert_eq!(mailbox.domain(), "acme.example");
    }

    #[test]
    fn addresses_without_a_usable_domain_or_local_part_are_refused() {
        for raw in ["nobody", "a@b", "@acme.example", "a..b@acme.example", "a b@acme.example", "a@-acme.example", "x <y>"] {
            assert!(Mailbox::parse(raw).is_err(), "{raw} should be refused");
        }
    }

    #[test]
    fn an_international_domain_is_stored_in_ascii() {
        assert_eq!(Mailbox::parse("a@bücher.example").unwrap().address, "a@xn--bcher-kva.example");
    }

    #[test]
    fn simulator_mailboxes_read_their_outcome_from_the_local_part() {
        let outcome = |raw: &str| simulated(&Mailbox::parse(raw).unwrap());
        assert_eq!(outcome("bounced+x1@simulator.herald.test"), Some(Simulated::Bounced));
        assert_eq!(outcome("complained@simulator.herald.test"), Some(Simulated::Complained));
        assert_eq!(outcome("delivered+a@simulator.herald.test"), Some(Simulated::Delivered));
        assert_eq!(outcome("bounced@acme.example"), None);
    }

    #[test]
    fn reserved_and_control_character_headers_are_refused() {
        assert!(check_header("X-Entity-Ref", "abc\tdef").is_ok());
        for (name, value) in [("From", "x"), ("list-unsubscribe-post", "x"), ("ARC-Seal", "x"), ("X-A", "a\nb"), ("Bad Name", "x")] {
            assert!(check_header(name, value).is_err(), "{name} should be refused");
        }
    }

    #[test]
    fn tags_allow_only_letters_digits_underscore_and_hyphen() {
        assert!(check_tag("category", "confirm_email-2").is_ok());
        assert!(check_tag("cat egory", "x").is_err());
        assert!(check_tag("c", "").is_err());
        assert!(check_tag(&"n".repeat(253), "x").is_err());
    }

    #[test]
    fn a_subject_is_one_line_of_at_most_998_bytes() {
        assert!(check_subject(&"é".repeat(499)).is_ok());
        assert!(check_subject(&"é".repeat(500)).is_err());
        assert!(check_subject("a\nb").is_err());
    }
}
