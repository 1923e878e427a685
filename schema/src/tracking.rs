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

#[cfg(test)]
mod tests {
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
