//! Signed tracking links: the open pixel and click redirects of one email. A click token
//! carries the email id and the original address and is tagged with HMAC-SHA256 under the
//! service's link key, so the redirect goes only to an address Herald put in that email and
//! needs no database read; an open token carries the email id alone.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use uuid::Uuid;

/// Bytes of the HMAC tag kept (128 bits).
const TAG: usize = 16;

fn tag(key: &[u8], kind: &[u8], email_id: Uuid, url: &[u8]) -> hmac::Tag {
    let mut context = hmac::Context::with_key(&hmac::Key::new(hmac::HMAC_SHA256, key));
    context.update(b"herald-track-v1:");
    context.update(kind);
    context.update(email_id.as_bytes());
    context.update(url);
    context.sign()
}

fn encode(key: &[u8], kind: &[u8], email_id: Uuid, url: &str) -> String {
    let mut bytes = Vec::with_capacity(16 + TAG + url.len());
    bytes.extend_from_slice(email_id.as_bytes());
    bytes.extend_from_slice(&tag(key, kind, email_id, url.as_bytes()).as_ref()[..TAG]);
    bytes.extend_from_slice(url.as_bytes());
    URL_SAFE_NO_PAD.encode(bytes)
}

fn decode(key: &[u8], kind: &[u8], token: &str) -> Option<(Uuid, String)> {
    let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
    if bytes.len() < 16 + TAG {
        return None;
    }
    let email_id = Uuid::from_slice(&bytes[..16]).ok()?;
    let url = &bytes[16 + TAG..];
    let expected = tag(key, kind, email_id, url);
    // Compared in constant time: a forger learns nothing from how long a wrong tag took.
    let difference = expected.as_ref()[..TAG].iter().zip(&bytes[16..16 + TAG]).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if difference != 0 {
        return None;
    }
    Some((email_id, String::from_utf8(url.to_vec()).ok()?))
}

/// The token of a click on `url` in email `email_id`.
pub fn click_token(key: &[u8], email_id: Uuid, url: &str) -> String {
    encode(key, b"click:", email_id, url)
}

/// The email and the original address a click token names, when its tag is right.
pub fn verify_click(key: &[u8], token: &str) -> Option<(Uuid, String)> {
    decode(key, b"click:", token)
}

/// The token of email `email_id`'s open pixel.
pub fn open_token(key: &[u8], email_id: Uuid) -> String {
    encode(key, b"open:", email_id, "")
}

/// The email an open token names, when its tag is right.
pub fn verify_open(key: &[u8], token: &str) -> Option<Uuid> {
    decode(key, b"open:", token).map(|(email_id, _)| email_id)
}

/// The token of a received attachment's download link, valid until `expires` (Unix seconds).
pub fn download_token(key: &[u8], attachment_id: Uuid, expires: i64) -> String {
    encode(key, b"download:", attachment_id, &expires.to_string())
}

/// The attachment a download token names, when its tag is right and it has not expired at `now`.
pub fn verify_download(key: &[u8], token: &str, now: i64) -> Option<Uuid> {
    let (attachment_id, expires) = decode(key, b"download:", token)?;
    (expires.parse::<i64>().ok()? > now).then_some(attachment_id)
}

/// A download token for a sent email's attachment, valid until `expires` (unix seconds).
pub fn sent_download_token(key: &[u8], attachment_id: Uuid, expires: i64) -> String {
    encode(key, b"sent-download:", attachment_id, &expires.to_string())
}

/// The sent attachment a download token names, when its tag is right and it has not expired.
pub fn verify_sent_download(key: &[u8], token: &str, now: i64) -> Option<Uuid> {
    let (attachment_id, expires) = decode(key, b"sent-download:", token)?;
    (expires.parse::<i64>().ok()? > now).then_some(attachment_id)
}

/// A download token for a received email's raw source, valid until `expires` (unix seconds).
pub fn raw_token(key: &[u8], email_id: Uuid, team_id: Uuid, expires: i64) -> String {
    encode(key, b"raw:", email_id, &format!("{expires}.{team_id}"))
}

/// The received email and team a raw-source token names, when its tag is right and it has not
/// expired at `now`.
pub fn verify_raw(key: &[u8], token: &str, now: i64) -> Option<(Uuid, Uuid)> {
    let (email_id, text) = decode(key, b"raw:", token)?;
    let (expires, team) = text.split_once('.')?;
    (expires.parse::<i64>().ok()? > now).then_some(())?;
    Some((email_id, Uuid::parse_str(team).ok()?))
}

/// A download token for an export, valid until `expires` (unix seconds).
pub fn export_token(key: &[u8], export_id: Uuid, expires: i64) -> String {
    encode(key, b"export:", export_id, &expires.to_string())
}

/// The export a download token names, when its tag is right and it has not expired at `now`.
pub fn verify_export(key: &[u8], token: &str, now: i64) -> Option<Uuid> {
    let (export_id, expires) = decode(key, b"export:", token)?;
    (expires.parse::<i64>().ok()? > now).then_some(export_id)
}

/// The return path (VERP) of one recipient of an email: `b-<email id>-<position>-<tag>@<host>`,
/// where the tag (64 bits of HMAC-SHA256 under the link key) makes a bounce to it unforgeable
/// by someone who only knows the email's Message-ID.
pub fn return_path(key: &[u8], email_id: Uuid, position: i16, host: &str) -> String {
    format!("b-{}-{position}-{}@{host}", email_id.simple(), verp_tag(key, email_id, position))
}

/// The email and recipient position a return path's local part names, when its tag is right.
pub fn verify_return_path(key: &[u8], local: &str) -> Option<(Uuid, i16)> {
    let mut parts = local.strip_prefix("b-")?.split('-');
    let (id, position, tag) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || id.len() != 32 {
        return None;
    }
    let email_id = Uuid::parse_str(id).ok()?;
    let position: i16 = position.parse().ok()?;
    let expected = verp_tag(key, email_id, position);
    let difference = expected.bytes().zip(tag.to_ascii_lowercase().bytes()).fold((expected.len() != tag.len()) as u8, |acc, (a, b)| acc | (a ^ b));
    (difference == 0).then_some((email_id, position))
}

fn verp_tag(key: &[u8], email_id: Uuid, position: i16) -> String {
    let signed = tag(key, b"verp:", email_id, &position.to_be_bytes());
    signed.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_return_path_names_its_email_and_recipient_under_its_key_only() {
        let email_id = Uuid::now_v7();
        let address = return_path(b"key", email_id, 3, "send.acme.test");
        let local = address.split('@').next().unwrap();
        assert_eq!(verify_return_path(b"key", local), Some((email_id, 3)));
        assert_eq!(verify_return_path(b"key", &local.to_ascii_uppercase().replacen("B-", "b-", 1)), Some((email_id, 3)), "MTAs may change case");
        assert_eq!(verify_return_path(b"other key", local), None);
        assert_eq!(verify_return_path(b"key", &local.replacen("-3-", "-4-", 1)), None, "another recipient under the same tag");
        assert_eq!(verify_return_path(b"key", &format!("b-{}-3", email_id.simple())), None, "an untagged return path");
    }

    #[test]
    fn a_download_token_holds_until_it_expires() {
        let id = Uuid::now_v7();
        let token = download_token(b"key", id, 1_000);
        assert_eq!(verify_download(b"key", &token, 999), Some(id));
        assert_eq!(verify_download(b"key", &token, 1_000), None);
        assert_eq!(verify_download(b"other", &token, 0), None);
    }

    use super::*;

    #[test]
    fn a_click_token_names_its_email_and_address_under_its_key_only() {
        let email_id = Uuid::now_v7();
        let token = click_token(b"key", email_id, "https://a.test/x?y=1");
        assert_eq!(verify_click(b"key", &token), Some((email_id, "https://a.test/x?y=1".to_string())));
        assert_eq!(verify_click(b"other key", &token), None);
        // Another address under the same tag is refused.
        let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        let last = bytes.len() - 1;
        bytes[last] = b'2';
        assert_eq!(verify_click(b"key", &URL_SAFE_NO_PAD.encode(&bytes)), None);
        // An open token is no click token, and the other way round.
        assert_eq!(verify_click(b"key", &open_token(b"key", email_id)), None);
        assert_eq!(verify_open(b"key", &token), None);
        assert_eq!(verify_open(b"key", &open_token(b"key", email_id)), Some(email_id));
        assert_eq!(verify_open(b"key", "short"), None);
    }
}
