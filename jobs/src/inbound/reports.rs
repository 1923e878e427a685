//! Reports about mail Herald sent: delivery status notifications (RFC 3464), feedback reports
//! (ARF, RFC 5965), and bounces in no standard form that name the recipient and a 5.x.x status.
//! Each is read here into a [`Report`]; `apply` records it on the email in the caller's
//! transaction (the one that answers the sending MTA).

use mail_parser::{Message, MessageParser, MimeHeaders, PartType};
use schema::store::emails::{self, EmailOutcome, RecipientOutcome};
use schema::store::events::{self, NewEvent};
use schema::store::suppressions::{self, NewSuppression};
use serde_json::{Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

/// What a report says about one recipient of one email.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// Delivery failed: `permanent` for a 5.x.x status.
    Bounce { permanent: bool, status: String, diagnostics: Vec<String>, recipient: Option<String> },
    /// A bounce in no standard form: a 5.x.x status `line`, and the addresses its text mentions
    /// (it counts only when they include the recipient's).
    PlainBounce { status: String, line: String, mentioned: Vec<String> },
    /// Delivery is delayed; the MTA keeps trying until `until`, when it says.
    Delayed { status: String, diagnostics: Vec<String>, until: Option<String>, recipient: Option<String> },
    /// The message was delivered (or relayed on where no further report will come).
    Delivered { recipient: Option<String> },
    /// The recipient complained (marked it as spam); `message_id` is the original's.
    Complaint { feedback_type: String, recipient: Option<String>, message_id: Option<String> },
}

/// `name: value` fields of a report block (names lower-case), folded lines joined.
fn fields(block: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in block.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = out.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
        } else if let Some((name, value)) = line.split_once(':') {
            out.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    out
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// The address of an `rfc822; addr` field.
fn typed_address(value: &str) -> String {
    let address = value.split_once(';').map_or(value, |(_, a)| a);
    address.trim().trim_matches(['<', '>']).to_ascii_lowercase()
}

/// The text after a `type;` prefix (`smtp; 550 5.1.1 ...` → `550 5.1.1 ...`).
fn typed_text(value: &str) -> String {
    value.split_once(';').map_or(value, |(_, t)| t).trim().to_string()
}

fn report_type(message: &Message<'_>) -> Option<String> {
    let ct = message.content_type()?;
    (ct.ctype().eq_ignore_ascii_case("multipart") && ct.subtype().is_some_and(|s| s.eq_ignore_ascii_case("report")))
        .then(|| ct.attribute("report-type").unwrap_or_default().to_ascii_lowercase())
}

fn part_text<'a>(message: &'a Message<'a>, ctype: &str, subtypes: &[&str]) -> Option<String> {
    message.parts.iter().find_map(|part| {
        let t = part.content_type()?;
        let matches = t.ctype().eq_ignore_ascii_case(ctype) && t.subtype().is_some_and(|s| subtypes.iter().any(|x| s.eq_ignore_ascii_case(x)));
        matches.then(|| String::from_utf8_lossy(part.contents()).replace("\r\n", "\n"))
    })
}

/// The Message-ID of the original message a report carries (a `message/rfc822` part or
/// `text/rfc822-headers`).
fn original_message_id(message: &Message<'_>) -> Option<String> {
    message.parts.iter().find_map(|part| match &part.body {
        PartType::Message(original) => original.message_id().map(str::to_string),
        _ if part.is_content_type("text", "rfc822-headers") => {
            MessageParser::default().parse_headers(part.contents()).and_then(|h| h.message_id().map(str::to_string))
        }
        _ => None,
    })
}

/// Reads a report: every per-recipient block of a DSN, the one complaint of an ARF report, or
/// a non-standard bounce (see [`heuristic_bounce`]). Empty when the message is no report.
pub fn read(message: &Message<'_>) -> Vec<Report> {
    match report_type(message).as_deref() {
        Some("delivery-status") => dsn(message),
        Some("feedback-report") => arf(message).into_iter().collect(),
        _ => heuristic_bounce(message).into_iter().collect(),
    }
}

fn dsn(message: &Message<'_>) -> Vec<Report> {
    let Some(text) = part_text(message, "message", &["delivery-status", "global-delivery-status"]) else { return Vec::new() };
    text.split("\n\n")
        .map(fields)
        .filter(|f| field(f, "action").is_some())
        .filter_map(|f| {
            let action = field(&f, "action")?.to_ascii_lowercase();
            let status = field(&f, "status").and_then(|s| s.split_whitespace().next()).unwrap_or("").to_string();
            let recipient = field(&f, "final-recipient").or(field(&f, "original-recipient")).map(typed_address);
            let diagnostics: Vec<String> = field(&f, "diagnostic-code").map(typed_text).into_iter().collect();
            match action.as_str() {
                "failed" => Some(Report::Bounce { permanent: !status.starts_with('4'), status, diagnostics, recipient }),
                "delayed" => Some(Report::Delayed { status, diagnostics, until: field(&f, "will-retry-until").map(str::to_string), recipient }),
                "delivered" | "relayed" | "expanded" => Some(Report::Delivered { recipient }),
                _ => None,
            }
        })
        .collect()
}

fn arf(message: &Message<'_>) -> Option<Report> {
    let text = part_text(message, "message", &["feedback-report"])?;
    let f = fields(&text);
    Some(Report::Complaint {
        feedback_type: field(&f, "feedback-type").unwrap_or("abuse").to_ascii_lowercase(),
        recipient: field(&f, "original-rcpt-to").map(typed_address),
        message_id: original_message_id(message),
    })
}

/// A bounce in no standard form (some MTAs still send plain text): a text body with a line
/// holding a 5.x.x enhanced status code. It is read as a permanent bounce of the recipient the
/// return path names, with that line as the diagnostic, only when the text also names the
/// recipient's address somewhere (checked by the caller, which knows the address).
fn heuristic_bounce(message: &Message<'_>) -> Option<Report> {
    let text = message.text_bodies().find_map(|p| match &p.body {
        PartType::Text(t) => Some(t.to_string()),
        _ => None,
    })?;
    let line = text.lines().find(|line| status_code(line).is_some_and(|s| s.starts_with('5')))?;
    let mentioned = text
        .split(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '(' | ')' | '"' | '\'' | ',' | ';' | ':' | '[' | ']'))
        .filter(|word| word.contains('@'))
        .map(|word| word.trim_matches('.').to_ascii_lowercase())
        .collect();
    Some(Report::PlainBounce { status: status_code(line)?, line: line.trim().to_string(), mentioned })
}

/// The first `d.d.d` enhanced status code in a line (`5.1.1`, `4.2.2`, `5.7.26`).
fn status_code(line: &str) -> Option<String> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.')).find_map(|word| {
        let parts: Vec<&str> = word.split('.').collect();
        let ok = parts.len() == 3
            && matches!(parts[0], "2" | "4" | "5")
            && (1..=3).contains(&parts[1].len())
            && (1..=3).contains(&parts[2].len())
            && parts[1..].iter().all(|p| p.chars().all(|c| c.is_ascii_digit()));
        ok.then(|| word.to_string())
    })
}

/// `bounce.subType` for an enhanced status code.
fn sub_type(status: &str) -> &'static str {
    match status.split_once('.').map(|(_, rest)| rest) {
        Some("1.1" | "1.10" | "1.2") => "NoEmail",
        Some("2.2") => "MailboxFull",
        Some("3.4" | "2.3") => "MessageTooLarge",
        Some(rest) if rest.starts_with("7.") => "ContentRejected",
        _ => "General",
    }
}

/// Which email a report is about: the one its return path names (with the recipient's
/// position), or, for a complaint reaching the return-path host without one, the team's email
/// whose Message-ID the report quotes.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub team_id: Uuid,
    pub email_id: Uuid,
    pub position: Option<i16>,
}

/// Records a report on the email it is about, in the caller's transaction: the recipient's new
/// status, the `email.*` event, and a suppression (origin `bounce` for a permanent bounce,
/// `complaint` for a complaint) with its `suppression.added` event. An ambiguous submission is
/// settled by it (sent first, then what the report says). Answers whether anything was
/// recorded (a report for another team's email, an unknown recipient or one already in that
/// state records nothing).
pub async fn apply(conn: &mut PgConnection, target: Target, report: &Report) -> anyhow::Result<bool> {
    let Some(email) = emails::by_id(conn, target.email_id).await?.filter(|e| e.team_id == target.team_id) else {
        return Ok(false);
    };
    let recipients = emails::recipients_for_update(conn, email.id).await?;
    let named = match report {
        Report::Bounce { recipient, .. } | Report::Delayed { recipient, .. } | Report::Delivered { recipient } | Report::Complaint { recipient, .. } => {
            recipient.as_deref()
        }
        Report::PlainBounce { .. } => None,
    };
    let recipient = match target.position {
        Some(position) => recipients.iter().find(|r| r.position == position),
        None => recipients.iter().find(|r| named.is_some_and(|n| n == r.email)).or(recipients.first()),
    };
    let Some(recipient) = recipient else { return Ok(false) };
    // A non-standard bounce counts only when its text names the recipient.
    let plain;
    let report = match report {
        Report::PlainBounce { status, line, mentioned } => {
            if !mentioned.contains(&recipient.email) {
                return Ok(false);
            }
            plain = Report::Bounce { permanent: true, status: status.clone(), diagnostics: vec![line.clone()], recipient: None };
            &plain
        }
        other => other,
    };
    let (status, event, extra, suppress): (&'static str, &'static str, Option<(&str, Value)>, Option<&'static str>) = match report {
        Report::Bounce { permanent, status, diagnostics, .. } => {
            let message = diagnostics.first().cloned().unwrap_or_else(|| format!("status {status}"));
            let bounce = json!({
                "type": if *permanent { "Permanent" } else { "Transient" },
                "subType": sub_type(status),
                "message": message,
                "diagnosticCode": diagnostics,
            });
            ("bounced", "email.bounced", Some(("bounce", bounce)), permanent.then_some("bounce"))
        }
        Report::Delayed { status, diagnostics, until, .. } => {
            let delay = json!({
                "type": "TransientFailure",
                "expirationTime": until,
                "delayedRecipients": [{ "status": status, "diagnosticCode": diagnostics.first() }],
            });
            ("delayed", "email.delivery_delayed", Some(("delay", delay)), None)
        }
        Report::Delivered { .. } => ("delivered", "email.delivered", None, None),
        Report::Complaint { .. } => ("complained", "email.complained", None, Some("complaint")),
        Report::PlainBounce { .. } => return Ok(false),
    };
    // Only a recipient that reached the receiving side can be reported on; a report repeating
    // its state records nothing, and a complaint is never overwritten.
    let reportable = matches!(recipient.status.as_str(), "sent" | "delivered" | "delayed" | "ambiguous" | "sending" | "bounced");
    if !reportable || recipient.status == status {
        return Ok(false);
    }
    let mut new_events = Vec::new();
    let to = [recipient.email.as_str()];
    if recipient.status == "ambiguous" {
        new_events.push(NewEvent { team_id: email.team_id, event_type: "email.sent", data: email.event_data(&to, None), email_id: Some(email.id) });
    }
    new_events.push(NewEvent { team_id: email.team_id, event_type: event, data: email.event_data(&to, extra), email_id: Some(email.id) });
    let response = match report {
        Report::Bounce { diagnostics, .. } | Report::Delayed { diagnostics, .. } => diagnostics.first().cloned(),
        _ => None,
    };
    let outcome = EmailOutcome {
        email_id: email.id,
        recipients: vec![RecipientOutcome { position: recipient.position, status, response }],
        last_event: Some(event.trim_start_matches("email.")),
        failed_reason: None,
    };
    emails::record_outcomes(conn, &[outcome]).await?;
    if let Some(origin) = suppress
        && !recipient.email.ends_with("@simulator.herald.test")
    {
        let added = suppressions::add(conn, &[NewSuppression { team_id: email.team_id, email: recipient.email.clone(), origin, source_id: Some(email.id) }]).await?;
        new_events.extend(suppressions::added_events(&added));
    }
    events::emit(conn, &new_events).await?;
    Ok(true)
}

/// The email id of a Message-ID Herald wrote (`<uuid>@domain`).
pub fn email_id_of_message_id(message_id: &str) -> Option<Uuid> {
    let local = message_id.trim().trim_matches(['<', '>']).split('@').next()?;
    Uuid::parse_str(local).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(raw: &str) -> Message<'_> {
        MessageParser::default().parse(raw.as_bytes()).unwrap()
    }

    #[test]
    fn a_dsn_reads_each_recipient_block() {
        let raw = "From: MAILER-DAEMON@mx.test\r\nTo: b-x@send.acme.test\r\nSubject: Undelivered\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/report; report-type=delivery-status; boundary=\"r\"\r\n\r\n--r\r\nContent-Type: text/plain\r\n\r\nSorry.\r\n\
--r\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.test\r\n\r\nFinal-Recipient: rfc822; Ann@Inbox.test\r\n\
Action: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 <ann@inbox.test>: user\r\n unknown\r\n\r\n\
Final-Recipient: rfc822; bob@inbox.test\r\nAction: delayed\r\nStatus: 4.4.1\r\nWill-Retry-Until: Fri, 27 Nov 2026 10:00:00 +0000\r\n\r\n--r--\r\n";
        let reports = read(&message(raw));
        assert_eq!(reports.len(), 2, "{reports:?}");
        assert_eq!(
            reports[0],
            Report::Bounce {
                permanent: true,
                status: "5.1.1".into(),
                diagnostics: vec!["550 5.1.1 <ann@inbox.test>: user unknown".into()],
                recipient: Some("ann@inbox.test".into())
            }
        );
        assert!(matches!(&reports[1], Report::Delayed { status, until: Some(_), .. } if status == "4.4.1"));
        assert_eq!(sub_type("5.1.1"), "NoEmail");
    }

    #[test]
    fn an_arf_report_names_the_original_message() {
        let raw = "From: fbl@isp.test\r\nTo: b-x@send.acme.test\r\nSubject: complaint\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/report; report-type=feedback-report; boundary=\"f\"\r\n\r\n--f\r\nContent-Type: text/plain\r\n\r\nA complaint.\r\n\
--f\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\nUser-Agent: isp/1.0\r\nVersion: 1\r\nOriginal-Rcpt-To: <ann@inbox.test>\r\n\r\n\
--f\r\nContent-Type: message/rfc822\r\n\r\nFrom: news@acme.test\r\nTo: ann@inbox.test\r\nMessage-ID: <0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b@acme.test>\r\nSubject: hi\r\n\r\nbody\r\n--f--\r\n";
        let reports = read(&message(raw));
        assert_eq!(
            reports,
            vec![Report::Complaint {
                feedback_type: "abuse".into(),
                recipient: Some("ann@inbox.test".into()),
                message_id: Some("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b@acme.test".into())
            }]
        );
        assert!(email_id_of_message_id("<0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b@acme.test>").is_some());
    }

    #[test]
    fn a_plain_text_bounce_is_read_only_with_a_permanent_status() {
        let bounce = message("From: postmaster@old.test\r\nSubject: failure\r\n\r\nDelivery to ann@inbox.test failed:\r\n550 5.2.1 mailbox disabled\r\n");
        assert!(matches!(&read(&bounce)[..], [Report::PlainBounce { status, mentioned, .. }] if status == "5.2.1" && mentioned == &["ann@inbox.test"]));
        let auto_reply = message("From: ann@inbox.test\r\nSubject: Out of office\r\n\r\nI am away until the 5.1.\r\n");
        assert_eq!(read(&auto_reply), vec![]);
    }
}
