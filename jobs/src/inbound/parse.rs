//! A received message's fields, bodies and attachments, read with mail-parser. Bodies are kept
//! as decoded (never sanitised, never converted from the other kind); attachment names are
//! reduced to a safe file name.

use mail_parser::{Address, Message, MessageParser, MimeHeaders, PartType};
use schema::store::received::{Content, Envelope, NewAttachment};
use serde_json::{Map, Value};

/// The parsed message, or `None` when the bytes are no message at all (`parse_failed`).
pub fn parse(raw: &[u8]) -> Option<Message<'_>> {
    // mail-parser makes a message of anything; a message starts with a header field
    // (`Name: value`, the name printable ASCII without a colon), or it is garbage.
    let name = raw.iter().take_while(|&&b| b != b':').count();
    let starts_with_field = name > 0 && name < raw.len() && raw[..name].iter().all(|b| (33..=126).contains(b));
    if !starts_with_field {
        return None;
    }
    MessageParser::default().parse(raw)
}

/// The header fields the record lists.
pub fn envelope(message: &Message<'_>) -> Envelope {
    let from = message.from().and_then(|a| a.first());
    let from_email = from.and_then(|a| a.address()).unwrap_or_default().to_string();
    let from_name = from.and_then(|a| a.name()).unwrap_or_default().to_string();
    let from_header = match (from_name.is_empty(), from_email.is_empty()) {
        (true, _) => from_email.clone(),
        (false, true) => from_name.clone(),
        (false, false) => format!("{from_name} <{from_email}>"),
    };
    Envelope {
        from_header,
        from_email,
        from_name,
        to: addresses(message.to()),
        cc: addresses(message.cc()),
        bcc: addresses(message.bcc()),
        reply_to: addresses(message.reply_to()),
        subject: message.subject().unwrap_or_default().to_string(),
        message_id: message.message_id().map(str::to_string),
    }
}

fn addresses(list: Option<&Address<'_>>) -> Vec<String> {
    list.map(|a| a.iter().filter_map(|a| a.address().map(str::to_string)).collect()).unwrap_or_default()
}

/// The bodies as decoded, the headers and the attachments; a part larger than
/// `max_attachment_bytes` (decoded) is listed with its size and refused (not stored).
pub fn content(message: &Message<'_>, max_attachment_bytes: usize) -> Content {
    let text = message.text_bodies().find_map(|p| match &p.body {
        PartType::Text(t) => Some(t.to_string()),
        _ => None,
    });
    let html = message.html_bodies().find_map(|p| match &p.body {
        PartType::Html(h) => Some(h.to_string()),
        _ => None,
    });
    let mut headers = Map::new();
    for (name, value) in message.headers_raw() {
        let value = unfold(value);
        let entry = headers.entry(name.to_ascii_lowercase()).or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(values) = entry {
            values.push(Value::String(value));
        }
    }
    let attachments = message
        .attachments()
        .enumerate()
        .map(|(i, part)| {
            let bytes = part.contents();
            let content_type = part
                .content_type()
                .map(|t| match t.subtype() {
                    Some(sub) => format!("{}/{}", t.ctype(), sub),
                    None => t.ctype().to_string(),
                })
                .unwrap_or_else(|| "application/octet-stream".into())
                .to_ascii_lowercase();
            let disposition = part.content_disposition().map(|d| d.ctype().to_ascii_lowercase()).filter(|d| d == "inline").unwrap_or_else(|| "attachment".into());
            NewAttachment {
                id: schema::ids::new_id(),
                filename: safe_filename(part.attachment_name(), i),
                content_type,
                content_disposition: disposition,
                content_id: part.content_id().map(|c| c.chars().filter(|c| !c.is_control()).take(255).collect()),
                size: bytes.len().min(i32::MAX as usize) as i32,
                content: (bytes.len() <= max_attachment_bytes).then(|| bytes.to_vec()),
            }
        })
        .collect();
    Content { html, text, headers: Value::Object(headers), attachments }
}

/// A header value as one line: folding undone, surrounding space trimmed.
fn unfold(value: &str) -> String {
    value.replace("\r\n", "").replace('\n', "").trim().to_string()
}

/// The name an attachment is stored and downloaded under: the last path segment of the name it
/// came with, without control characters (NUL included), slashes or a leading dot, at most 255
/// characters; `attachment-<n>` when nothing is left.
pub fn safe_filename(name: Option<&str>, index: usize) -> String {
    let name = name.unwrap_or_default();
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last.chars().filter(|c| !c.is_control()).take(255).collect();
    let cleaned = cleaned.trim().trim_start_matches('.').trim().to_string();
    if cleaned.is_empty() { format!("attachment-{}", index + 1) } else { cleaned }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attachment_name_never_leaves_its_folder_nor_carries_a_nul() {
        assert_eq!(safe_filename(Some("../x"), 0), "x");
        assert_eq!(safe_filename(Some("..\\..\\boot.ini"), 0), "boot.ini");
        assert_eq!(safe_filename(Some("a\0b.txt"), 0), "ab.txt");
        assert_eq!(safe_filename(Some(".."), 2), "attachment-3");
        assert_eq!(safe_filename(None, 0), "attachment-1");
        assert_eq!(safe_filename(Some("report.pdf"), 0), "report.pdf");
    }

    #[test]
    fn a_message_keeps_its_bodies_as_decoded_and_lists_its_attachments() {
        let raw = b"From: Ann <ann@example.test>\r\nTo: inbox@acme.test, Bob <bob@acme.test>\r\nSubject: =?utf-8?q?Caf=C3=A9?=\r\n\
Message-ID: <m1@example.test>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n\
--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p onclick=\"x()\">Hi</p>\r\n\
--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"../r.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERg==\r\n--b--\r\n";
        let message = parse(raw).unwrap();
        let envelope = envelope(&message);
        assert_eq!((envelope.from_header.as_str(), envelope.subject.as_str()), ("Ann <ann@example.test>", "Café"));
        assert_eq!(envelope.to, ["inbox@acme.test", "bob@acme.test"]);
        assert_eq!(envelope.message_id.as_deref(), Some("m1@example.test"));
        let content = content(&message, 1024);
        assert_eq!(content.html.as_deref().map(str::trim), Some("<p onclick=\"x()\">Hi</p>"), "never sanitised");
        assert_eq!(content.text, None, "no text body is made from the HTML");
        assert_eq!(content.attachments.len(), 1);
        let pdf = &content.attachments[0];
        assert_eq!((pdf.filename.as_str(), pdf.content_type.as_str(), pdf.size), ("r.pdf", "application/pdf", 4));
        assert_eq!(content.headers["subject"][0], "=?utf-8?q?Caf=C3=A9?=");
    }

    #[test]
    fn bytes_without_a_header_are_no_message() {
        assert!(parse(b"\x00\x01\x02 not a message").is_none());
    }
}

/// The Message-IDs the message answers (`In-Reply-To`, then `References` latest first), as
/// threading compares them.
pub fn thread_ids(message: &Message<'_>) -> Vec<String> {
    let list = |value: &mail_parser::HeaderValue<'_>| -> Vec<String> {
        match (value.as_text_list(), value.as_text()) {
            (Some(list), _) => list.iter().map(|id| id.to_string()).collect(),
            (None, Some(id)) => vec![id.to_string()],
            (None, None) => Vec::new(),
        }
    };
    schema::inbox::thread_ids(&list(message.in_reply_to()), &list(message.references()))
}
