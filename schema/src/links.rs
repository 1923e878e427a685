//! Signed links to the hosted pages: the preference page and one-click unsubscribe. A token is
//! the contact id (and, for a topic's unsubscribe link, the topic id) followed by an
//! HMAC-SHA256 tag under the service's link key; it never expires, as mail clients keep
//! unsubscribe links for as long as the message. A transactional send's unsubscribe link
//! ([`AddressLink`]) names the email and one recipient address instead, under its own context.

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

/// The one-click unsubscribe page of a token (of either kind) at `public_url`.
pub fn unsubscribe_url(public_url: &str, token: &str) -> String {
    format!("{}/unsubscribe/{token}", public_url.trim_end_matches('/'))
}

/// The unsubscribe headers of RFC 8058 for a token: `List-Unsubscribe` with the one-click URL
/// and a mailto to `unsubscribe@` on the return-path host (`return_path`) carrying the token
/// in its subject (the inbound server reads it from the mail a mailbox provider sends), and
/// `List-Unsubscribe-Post`.
pub fn unsubscribe_headers(public_url: &str, token: &str, return_path: &str) -> serde_json::Value {
    let list_unsubscribe = format!("<{}>, <mailto:unsubscribe@{return_path}?subject=unsubscribe%20{token}>", unsubscribe_url(public_url, token));
    serde_json::json!({ "List-Unsubscribe": list_unsubscribe, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" })
}

const ADDRESS_CONTEXT: &[u8] = b"herald-address-link-v1:";

/// A transactional email's unsubscribe link for one of its recipients: one click suppresses
/// the address for the email's team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressLink {
    pub email_id: Uuid,
    /// Bare, lower-case.
    pub email: String,
}

/// What an unsubscribe token names: a contact (marketing mail) or a recipient address
/// (a transactional send with `unsubscribe_link`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsubscribe {
    Contact(Link),
    Address(AddressLink),
}

/// The token of an address link.
pub fn address_token(key: &[u8], link: &AddressLink) -> String {
    let mut payload = link.email_id.as_bytes().to_vec();
    payload.extend_from_slice(link.email.as_bytes());
    let mut content = ADDRESS_CONTEXT.to_vec();
    content.extend_from_slice(&payload);
    payload.extend_from_slice(hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), &content).as_ref());
    URL_SAFE_NO_PAD.encode(payload)
}

/// The address link a token names, when its tag is right.
pub fn verify_address(key: &[u8], token: &str) -> Option<AddressLink> {
    let bytes = URL_SAFE_NO_PAD.decode(token.trim()).ok()?;
    let (payload, tag) = bytes.split_at(bytes.len().checked_sub(32).filter(|at| *at > 16)?);
    let mut content = ADDRESS_CONTEXT.to_vec();
    content.extend_from_slice(payload);
    hmac::verify(&hmac::Key::new(hmac::HMAC_SHA256, key), &content, tag).ok()?;
    let email_id = Uuid::from_slice(&payload[..16]).ok()?;
    let email = String::from_utf8(payload[16..].to_vec()).ok()?;
    Some(AddressLink { email_id, email })
}

/// What an unsubscribe token names, of either kind.
pub fn verify_unsubscribe(key: &[u8], token: &str) -> Option<Unsubscribe> {
    verify(key, token).map(Unsubscribe::Contact).or_else(|| verify_address(key, token).map(Unsubscribe::Address))
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

    #[test]
    fn an_address_token_names_its_email_and_address_and_is_no_contact_token() {
        let link = AddressLink { email_id: Uuid::now_v7(), email: "someone@example.com".into() };
        let token = address_token(b"key one", &link);
        assert_eq!(verify_unsubscribe(b"key one", &token), Some(Unsubscribe::Address(link.clone())));
        assert_eq!(verify(b"key one", &token), None);
        assert_eq!(verify_address(b"key two", &token), None);
        // Sixteen characters make a token as long as a contact's topic link: still told apart.
        let short = AddressLink { email_id: link.email_id, email: "abcd@example.com".into() };
        assert_eq!(verify_unsubscribe(b"key one", &address_token(b"key one", &short)), Some(Unsubscribe::Address(short)));
        let contact = Link { contact_id: Uuid::now_v7(), topic_id: None };
        assert_eq!(verify_unsubscribe(b"key one", &super::token(b"key one", contact)), Some(Unsubscribe::Contact(contact)));
        assert_eq!(verify_address(b"key one", &super::token(b"key one", contact)), None);
    }
}
