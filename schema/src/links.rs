//! Signed links to the hosted pages: the preference page and one-click unsubscribe. A token is
//! the contact id (and, for a topic's unsubscribe link, the topic id) followed by an
//! HMAC-SHA256 tag under the service's link key; it never expires, as mail clients keep
//! unsubscribe links for as long as the message.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use uuid::Uuid;

const CONTEXT: &[u8] = b"herald-link-v1:";

/// What a link points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub contact_id: Uuid,
    /// Set on a topic's unsubscribe link: one click leaves that topic only.
    pub topic_id: Option<Uuid>,
}

fn tag(key: &[u8], payload: &[u8]) -> hmac::Tag {
    let mut content = CONTEXT.to_vec();
    content.extend_from_slice(payload);
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), &content)
}

/// The token of a link.
pub fn token(key: &[u8], link: Link) -> String {
    let mut payload = link.contact_id.as_bytes().to_vec();
    if let Some(topic_id) = link.topic_id {
        payload.extend_from_slice(topic_id.as_bytes());
    }
    let tag = tag(key, &payload);
    payload.extend_from_slice(tag.as_ref());
    URL_SAFE_NO_PAD.encode(payload)
}

/// The link a token names, when its tag is right.
pub fn verify(key: &[u8], token: &str) -> Option<Link> {
    let bytes = URL_SAFE_NO_PAD.decode(token.trim()).ok()?;
    let (payload, tag) = match bytes.len() {
        48 => bytes.split_at(16),
        64 => bytes.split_at(32),
        _ => return None,
    };
    let mut content = CONTEXT.to_vec();
    content.extend_from_slice(payload);
    hmac::verify(&hmac::Key::new(hmac::HMAC_SHA256, key), &content, tag).ok()?;
    let contact_id = Uuid::from_slice(&payload[..16]).ok()?;
    let topic_id = (payload.len() == 32).then(|| Uuid::from_slice(&payload[16..])).transpose().ok()?;
    Some(Link { contact_id, topic_id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_verifies_under_its_key_only_and_unchanged() {
        let link = Link { contact_id: Uuid::now_v7(), topic_id: Some(Uuid::now_v7()) };
        let token = token(b"key one", link);
        assert_eq!(verify(b"key one", &token), Some(link));
        assert_eq!(verify(b"key two", &token), None);
        let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        bytes[3] ^= 1;
        assert_eq!(verify(b"key one", &URL_SAFE_NO_PAD.encode(bytes)), None);
        let bare = Link { contact_id: link.contact_id, topic_id: None };
        assert_eq!(verify(b"key one", &super::token(b"key one", bare)), Some(bare));
        assert_eq!(verify(b"key one", "not a token"), None);
    }
}
