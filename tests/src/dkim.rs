//! An independent DKIM verifier (RFC 6376) for what arrives at the SMTP sink: it checks a raw
//! message against a published public key with its own parsing and canonicalization, so the
//! tests do not trust the signer's (lettre's) code to check itself.
//!
//! Only `rsa-sha256` is supported; the key is given by the caller instead of looked up in DNS.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::pkcs8::DecodePublicKey;
use rsa::{Pkcs1v15Sign, RsaPublicKey};
use sha2::{Digest, Sha256};

/// The message re-read as lines, each ended by CRLF (whatever ended it: CRLF, LF or CR).
fn as_crlf_lines(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len());
    let mut i = 0;
    while i < message.len() {
        match message[i] {
            b'\r' if message.get(i + 1) == Some(&b'\n') => {
                out.extend_from_slice(b"\r\n");
                i += 1;
            }
            b'\r' | b'\n' => out.extend_from_slice(b"\r\n"),
            byte => out.push(byte),
        }
        i += 1;
    }
    out
}

/// What a valid signature covers.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The signing domain (`d=`).
    pub domain: String,
    /// The selector (`s=`).
    pub selector: String,
    /// The signed header names (`h=`), lower-cased, in order.
    pub signed_headers: Vec<String>,
}

/// Verifies the first DKIM-Signature of `message` with the public key `public_key_b64` (base64
/// of the DER SubjectPublicKeyInfo, i.e. the DNS `p=` value). Like dkimpy and every MTA, it
/// reads lines ending in CRLF, LF or CR alike, as CRLF lines: a signer that hashed a bare LF
/// as it stands fails here as it would there.
pub fn verify(message: &[u8], public_key_b64: &str) -> Result<Verified, String> {
    let message = as_crlf_lines(message);
    let (fields, body) = split_message(&message);
    let signature_field =
        fields.iter().find(|field| field.is_named("dkim-signature")).ok_or("no DKIM-Signature header")?;
    let signature = Signature::parse(signature_field)?;

    if let Some(expires) = signature.expires {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs();
        if expires < now {
            return Err(format!("signature expired at x={expires}"));
        }
    }

    let mut canonical_body = canonicalize_body(body, signature.body_canonicalization);
    if let Some(length) = signature.body_length {
        let length = usize::try_from(length).map_err(|_| format!("l={length} is out of range"))?;
        if length > canonical_body.len() {
            return Err(format!("l={length} is longer than the canonical body ({} bytes)", canonical_body.len()));
        }
        canonical_body.truncate(length);
    }
    if Sha256::digest(&canonical_body)[..] != signature.body_hash[..] {
        return Err("body hash mismatch".into());
    }

    let mut signed = Vec::new();
    let mut taken: HashMap<&str, usize> = HashMap::new();
    for name in &signature.signed_headers {
        let instances: Vec<&Field> = fields.iter().filter(|field| field.is_named(name)).collect();
        let already = taken.entry(name.as_str()).or_default();
        // Instances are used from the bottom up; a name listed more often than present adds nothing.
        if let Some(index) = instances.len().checked_sub(*already + 1) {
            signed.extend(canonicalize_header(instances[index].raw, signature.header_canonicalization));
        }
        *already += 1;
    }
    let unsigned = without_b_value(signature_field.raw)?;
    let mut own = canonicalize_header(&unsigned, signature.header_canonicalization);
    if own.ends_with(b"\r\n") {
        own.truncate(own.len() - 2);
    }
    signed.extend(own);

    let key = public_key(public_key_b64)?;
    key.verify(Pkcs1v15Sign::new::<Sha256>(), &Sha256::digest(&signed), &signature.signature)
        .map_err(|_| "signature does not verify".to_string())?;

    Ok(Verified { domain: signature.domain, selector: signature.selector, signed_headers: signature.signed_headers })
}

/// Reads the RSA key from base64 DER: SubjectPublicKeyInfo as published, or a bare PKCS#1 key.
fn public_key(public_key_b64: &str) -> Result<RsaPublicKey, String> {
    let der = decode_base64(public_key_b64).map_err(|e| format!("public key is not base64: {e}"))?;
    RsaPublicKey::from_public_key_der(&der)
        .or_else(|_| RsaPublicKey::from_pkcs1_der(&der))
        .map_err(|e| format!("public key is not an RSA public key: {e}"))
}

/// Decodes base64 after removing all whitespace (folding included).
fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    STANDARD.decode(compact)
}

/// One header field as it appears in the message.
struct Field<'a> {
    /// The field name, as written (without the colon or whitespace before it).
    name: &'a [u8],
    /// The whole field: name, colon, value and continuation lines, with its final CRLF.
    raw: &'a [u8],
}

impl Field<'_> {
    fn is_named(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name.as_bytes())
    }
}

/// Splits a message into its header fields (continuation lines kept with their field) and the
/// body after the first empty line (empty when there is none).
fn split_message(message: &[u8]) -> (Vec<Field<'_>>, &[u8]) {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut position = 0;
    let mut body: &[u8] = &[];
    while position < message.len() {
        let end = match message[position..].iter().position(|&byte| byte == b'\n') {
            Some(newline) => position + newline + 1,
            None => message.len(),
        };
        let line = &message[position..end];
        if line == b"\r\n" || line == b"\n" {
            body = &message[end..];
            break;
        }
        match spans.last_mut() {
            Some(span) if line.starts_with(b" ") || line.starts_with(b"\t") => span.1 = end,
            _ => spans.push((position, end)),
        }
        position = end;
    }
    let fields = spans
        .into_iter()
        .map(|(start, end)| {
            let raw = &message[start..end];
            let name = match raw.iter().position(|&byte| byte == b':') {
                Some(colon) => trim_wsp_end(&raw[..colon]),
                None => &raw[..0],
            };
            Field { name, raw }
        })
        .collect();
    (fields, body)
}

fn is_wsp(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

fn trim_wsp_end(mut bytes: &[u8]) -> &[u8] {
    while let [rest @ .., last] = bytes
        && is_wsp(*last)
    {
        bytes = rest;
    }
    bytes
}

/// A canonicalization algorithm (RFC 6376 §3.4).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Canonicalization {
    Simple,
    Relaxed,
}

impl Canonicalization {
    fn parse(name: &str) -> Result<Self, String> {
        match name {
            "simple" => Ok(Self::Simple),
            "relaxed" => Ok(Self::Relaxed),
            other => Err(format!("unknown canonicalization {other:?}")),
        }
    }
}

/// Header canonicalization (§3.4.1 and §3.4.2) of one whole field, with its final CRLF.
fn canonicalize_header(raw: &[u8], canonicalization: Canonicalization) -> Vec<u8> {
    match canonicalization {
        Canonicalization::Simple => raw.to_vec(),
        Canonicalization::Relaxed => {
            let colon = raw.iter().position(|&byte| byte == b':').unwrap_or(raw.len());
            let mut out: Vec<u8> = trim_wsp_end(&raw[..colon]).to_ascii_lowercase();
            out.push(b':');
            // Unfold (drop every CRLF), then turn each whitespace run into one space and trim both ends.
            let mut pending_space = false;
            let mut started = false;
            let mut value = raw.get(colon + 1..).unwrap_or_default();
            while let [byte, rest @ ..] = value {
                match (*byte, rest.first()) {
                    (b'\r', Some(b'\n')) => {
                        value = &rest[1..];
                        continue;
                    }
                    (byte, _) if is_wsp(byte) => pending_space = true,
                    (byte, _) => {
                        if pending_space && started {
                            out.push(b' ');
                        }
                        pending_space = false;
                        started = true;
                        out.push(byte);
                    }
                }
                value = rest;
            }
            out.extend_from_slice(b"\r\n");
            out
        }
    }
}

/// Body canonicalization (§3.4.3 and §3.4.4).
fn canonicalize_body(body: &[u8], canonicalization: Canonicalization) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (line, next) = match rest.windows(2).position(|pair| pair == b"\r\n") {
            Some(end) => (&rest[..end], &rest[end + 2..]),
            // A last line without CRLF is completed with one.
            None => (rest, &rest[rest.len()..]),
        };
        lines.push(match canonicalization {
            Canonicalization::Simple => line.to_vec(),
            Canonicalization::Relaxed => {
                let mut out = Vec::with_capacity(line.len());
                let mut pending_space = false;
                for &byte in line {
                    if is_wsp(byte) {
                        pending_space = true;
                    } else {
                        if pending_space {
                            out.push(b' ');
                        }
                        pending_space = false;
                        out.push(byte);
                    }
                }
                // Whitespace at the end of the line is dropped (the pending space is never written).
                out
            }
        });
        rest = next;
    }
    while lines.last().is_some_and(|line| line.is_empty()) {
        lines.pop();
    }
    if lines.is_empty() {
        return match canonicalization {
            Canonicalization::Simple => b"\r\n".to_vec(),
            Canonicalization::Relaxed => Vec::new(),
        };
    }
    let mut out = Vec::with_capacity(body.len() + 2);
    for line in lines {
        out.extend_from_slice(&line);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The raw DKIM-Signature field with the value of its `b=` tag (and the whitespace around
/// that value) removed, everything else byte for byte.
fn without_b_value(raw: &[u8]) -> Result<Vec<u8>, String> {
    let colon = raw.iter().position(|&byte| byte == b':').ok_or("DKIM-Signature has no colon")?;
    let mut start = colon + 1;
    while start <= raw.len() {
        let end = raw[start..].iter().position(|&byte| byte == b';').map_or(raw.len(), |semicolon| start + semicolon);
        let tag = &raw[start..end];
        if let Some(equals) = tag.iter().position(|&byte| byte == b'=') {
            let name: Vec<u8> = tag[..equals].iter().copied().filter(|byte| !byte.is_ascii_whitespace()).collect();
            if name == b"b" {
                let mut out = raw[..start + equals + 1].to_vec();
                out.extend_from_slice(&raw[end..]);
                return Ok(out);
            }
        }
        start = end + 1;
    }
    Err("DKIM-Signature has no b= tag".into())
}

/// The tags of a DKIM-Signature this verifier uses.
struct Signature {
    domain: String,
    selector: String,
    signed_headers: Vec<String>,
    header_canonicalization: Canonicalization,
    body_canonicalization: Canonicalization,
    body_hash: Vec<u8>,
    signature: Vec<u8>,
    body_length: Option<u64>,
    expires: Option<u64>,
}

impl Signature {
    fn parse(field: &Field) -> Result<Self, String> {
        let raw = String::from_utf8_lossy(field.raw);
        let value = raw.split_once(':').map(|(_, value)| value).unwrap_or_default();
        let mut tags: HashMap<&str, &str> = HashMap::new();
        for tag in value.split(';') {
            let tag = tag.trim();
            if tag.is_empty() {
                continue; // the list may end with a semicolon
            }
            let (name, value) = tag.split_once('=').ok_or_else(|| format!("malformed DKIM tag {tag:?}"))?;
            if tags.insert(name.trim(), value.trim()).is_some() {
                return Err(format!("duplicate DKIM tag {}=", name.trim()));
            }
        }
        let required = |name: &str| tags.get(name).copied().ok_or_else(|| format!("DKIM-Signature lacks {name}="));
        let number = |name: &str| -> Result<Option<u64>, String> {
            tags.get(name).map(|value| value.parse().map_err(|_| format!("bad {name}={value:?}"))).transpose()
        };

        let version = required("v")?;
        if version != "1" {
            return Err(format!("unsupported DKIM version v={version}"));
        }
        let algorithm = required("a")?;
        if !algorithm.eq_ignore_ascii_case("rsa-sha256") {
            return Err(format!("unsupported algorithm a={algorithm} (only rsa-sha256)"));
        }
        let canonicalization = tags.get("c").copied().unwrap_or("simple/simple").to_ascii_lowercase();
        let (header_canonicalization, body_canonicalization) = match canonicalization.split_once('/') {
            Some((header, body)) => (Canonicalization::parse(header.trim())?, Canonicalization::parse(body.trim())?),
            None => (Canonicalization::parse(canonicalization.trim())?, Canonicalization::Simple),
        };
        let signed_headers: Vec<String> =
            required("h")?.split(':').map(|name| name.trim().to_ascii_lowercase()).filter(|n| !n.is_empty()).collect();
        if signed_headers.is_empty() {
            return Err("DKIM-Signature has an empty h=".into());
        }
        let body_hash = decode_base64(required("bh")?).map_err(|e| format!("bh= is not base64: {e}"))?;
        let signature = decode_base64(required("b")?).map_err(|e| format!("b= is not base64: {e}"))?;
        if signature.is_empty() {
            return Err("DKIM-Signature has an empty b=".into());
        }
        let signed_at = number("t")?;
        let expires = number("x")?;
        if let (Some(signed_at), Some(expires)) = (signed_at, expires)
            && expires < signed_at
        {
            return Err(format!("x={expires} is before t={signed_at}"));
        }
        Ok(Self {
            domain: required("d")?.to_string(),
            selector: required("s")?.to_string(),
            signed_headers,
            header_canonicalization,
            body_canonicalization,
            body_hash,
            signature,
            body_length: number("l")?,
            expires,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lettre::Message;
    use lettre::message::dkim::{
        DkimCanonicalization, DkimCanonicalizationType, DkimConfig, DkimSigningAlgorithm, DkimSigningKey,
    };
    use lettre::message::header::{ContentType, HeaderName};
    use lettre::message::{Mailbox, MultiPart, SinglePart};
    use rsa::RsaPrivateKey;
    use rsa::pkcs1::{EncodeRsaPrivateKey, LineEnding};
    use rsa::pkcs8::EncodePublicKey;
    use std::sync::OnceLock;

    /// One 2048-bit key for all tests (generating is slow): PKCS#1 PEM and the `p=` value.
    fn key() -> &'static (String, String) {
        static KEY: OnceLock<(String, String)> = OnceLock::new();
        KEY.get_or_init(|| {
            let private = RsaPrivateKey::new(&mut rand::thread_rng(), 2048).expect("RSA key generation");
            let pem = private.to_pkcs1_pem(LineEnding::LF).expect("PKCS#1 PEM").to_string();
            let der = private.to_public_key().to_public_key_der().expect("SubjectPublicKeyInfo DER");
            (pem, STANDARD.encode(der.as_bytes()))
        })
    }

    fn message() -> Message {
        let recipients: Vec<Mailbox> = (1..=4)
            .map(|n| format!("Recipient Number {n} <recipient.number.{n}@destination.example>").parse().unwrap())
            .collect();
        let mut builder = Message::builder()
            .from("Herald Sender <sender@herald.example>".parse().unwrap())
            .subject("Grüße aus Köln — a rather long subject line that must be encoded and folded by the builder")
            .message_id(Some("<test-1@herald.example>".into()));
        for recipient in recipients {
            builder = builder.to(recipient);
        }
        builder
            .multipart(
                MultiPart::alternative()
                    .singlepart(
                        SinglePart::builder()
                            .header(ContentType::TEXT_PLAIN)
                            .body("Hallo Welt,  \r\nmit Umlauten: äöü.\t\r\n.leading dot\r\n\r\n\r\n".to_string()),
                    )
                    .singlepart(SinglePart::html("<p>Hallo <b>Welt</b> — äöü</p>".to_string())),
            )
            .expect("message builds")
    }

    /// The headers the tests sign: Reply-To is absent from the message.
    const SIGNED: &[&str] = &["From", "Subject", "To", "Date", "Message-ID", "MIME-Version", "Reply-To"];

    fn signed(canonicalization: DkimCanonicalization, headers: &[&str]) -> Vec<u8> {
        let (pem, _) = key();
        let signing_key = DkimSigningKey::new(pem, DkimSigningAlgorithm::Rsa).expect("lettre reads the key");
        let headers =
            headers.iter().map(|name| HeaderName::new_from_ascii(name.to_string()).expect("header name")).collect();
        let config = DkimConfig::new("svc".into(), "herald.example".into(), signing_key, headers, canonicalization);
        let mut message = message();
        message.sign(&config);
        message.formatted()
    }

    fn relaxed() -> DkimCanonicalization {
        DkimCanonicalization { header: DkimCanonicalizationType::Relaxed, body: DkimCanonicalizationType::Relaxed }
    }

    /// The canonicalizations a working lettre signature can use: relaxed headers, either body.
    fn working() -> [DkimCanonicalization; 2] {
        [
            relaxed(),
            DkimCanonicalization { header: DkimCanonicalizationType::Relaxed, body: DkimCanonicalizationType::Simple },
        ]
    }

    fn header_end(message: &[u8]) -> usize {
        message.windows(4).position(|w| w == b"\r\n\r\n").expect("the message has a body") + 4
    }

    #[test]
    fn a_message_signed_by_lettre_with_relaxed_header_canonicalization_verifies_with_the_published_key() {
        for canonicalization in working() {
            let message = signed(canonicalization, SIGNED);
            let text = String::from_utf8_lossy(&message);
            assert!(text.contains(&format!("c={canonicalization};")), "{text}");
            let verified = verify(&message, &key().1).unwrap_or_else(|e| panic!("{canonicalization}: {e}\n{text}"));
            assert_eq!(verified.domain, "herald.example");
            assert_eq!(verified.selector, "svc");
            assert_eq!(
                verified.signed_headers,
                ["from", "subject", "to", "date", "message-id", "mime-version", "reply-to"]
            );
        }
    }

    #[test]
    fn lettres_default_simple_header_canonicalization_hashes_a_dkim_signature_folded_otherwise_than_sent() {
        // lettre 0.11 hashes its own DKIM-Signature with "; b=" on the bh= line, but sends b= folded
        // onto a line of its own; under simple header canonicalization (lettre's default) no
        // verifier accepts that. Herald must sign with relaxed header canonicalization.
        let text = String::from_utf8(signed(DkimCanonicalization::default(), SIGNED)).expect("lettre writes UTF-8");
        assert!(text.contains("c=simple/relaxed"), "{text}");
        assert_eq!(verify(text.as_bytes(), &key().1), Err("signature does not verify".to_string()));
        let as_hashed = text.replacen(";\r\n b=", "; b=", 1);
        assert_ne!(as_hashed, text);
        let verified = verify(as_hashed.as_bytes(), &key().1).unwrap_or_else(|e| panic!("{e}\n{as_hashed}"));
        assert_eq!(verified.signed_headers[..2], ["from", "subject"]);
    }

    #[test]
    fn lettre_lists_but_does_not_hash_the_content_type_of_a_mime_body() {
        // A MIME body's Content-Type is written with the body, not in `Message::headers()`, and
        // lettre's signer hashes only the latter: listing it breaks the signature.
        let message = signed(relaxed(), &["From", "Subject", "Content-Type"]);
        assert_eq!(verify(&message, &key().1), Err("signature does not verify".to_string()));
    }

    #[test]
    fn the_signed_message_has_folded_headers_and_a_non_ascii_subject() {
        let message = signed(relaxed(), SIGNED);
        let head = String::from_utf8_lossy(&message[..header_end(&message)]).into_owned();
        assert!(head.contains("\r\n "), "some header is folded: {head}");
        assert!(head.contains("Subject: =?utf-8?"), "the subject is RFC 2047-encoded: {head}");
    }

    #[test]
    fn changing_one_body_byte_is_a_body_hash_mismatch() {
        for canonicalization in working() {
            let mut message = signed(canonicalization, SIGNED);
            let body = header_end(&message);
            let letter = body + message[body..].iter().position(u8::is_ascii_alphabetic).expect("a letter");
            message[letter] ^= 0x20; // swap the letter's case
            assert_eq!(verify(&message, &key().1), Err("body hash mismatch".to_string()));
        }
    }

    #[test]
    fn changing_the_subject_fails_the_signature() {
        for canonicalization in working() {
            let message = signed(canonicalization, SIGNED);
            let text = String::from_utf8(message).expect("lettre writes UTF-8");
            let tampered = text.replacen("Subject: =?utf-8?", "Subject: =?UTF-8?", 1);
            assert_ne!(tampered, text);
            assert_eq!(verify(tampered.as_bytes(), &key().1), Err("signature does not verify".to_string()));
        }
    }

    #[test]
    fn another_key_does_not_verify_the_signature() {
        let other = RsaPrivateKey::new(&mut rand::thread_rng(), 1024).expect("RSA key generation");
        let other = STANDARD.encode(other.to_public_key().to_public_key_der().expect("DER").as_bytes());
        assert_eq!(verify(&signed(relaxed(), SIGNED), &other), Err("signature does not verify".to_string()));
    }

    #[test]
    fn a_message_without_a_signature_is_reported_as_such() {
        let message = b"From: a@b.example\r\nSubject: hi\r\n\r\nbody\r\n";
        assert_eq!(verify(message, &key().1), Err("no DKIM-Signature header".to_string()));
    }

    #[test]
    fn canonicalization_matches_the_examples_of_rfc_6376() {
        // RFC 6376 §3.4.5.
        let (fields, body) = split_message(b"A: X\r\nB : Y\t\r\n\tZ  \r\n\r\n C \r\nD \t E\r\n\r\n\r\n");
        let relaxed: Vec<u8> =
            fields.iter().flat_map(|field| canonicalize_header(field.raw, Canonicalization::Relaxed)).collect();
        assert_eq!(relaxed, b"a:X\r\nb:Y Z\r\n");
        let simple: Vec<u8> =
            fields.iter().flat_map(|field| canonicalize_header(field.raw, Canonicalization::Simple)).collect();
        assert_eq!(simple, b"A: X\r\nB : Y\t\r\n\tZ  \r\n");
        assert_eq!(canonicalize_body(body, Canonicalization::Relaxed), b" C\r\nD E\r\n");
        assert_eq!(canonicalize_body(body, Canonicalization::Simple), b" C \r\nD \t E\r\n");
    }

    #[test]
    fn an_empty_body_canonicalizes_to_crlf_when_simple_and_to_nothing_when_relaxed() {
        for body in [&b""[..], b"\r\n", b"\r\n\r\n"] {
            assert_eq!(canonicalize_body(body, Canonicalization::Simple), b"\r\n");
            assert_eq!(canonicalize_body(body, Canonicalization::Relaxed), b"");
        }
        assert_eq!(canonicalize_body(b"no newline", Canonicalization::Simple), b"no newline\r\n");
    }

    #[test]
    fn the_b_value_is_emptied_wherever_it_stands_and_bh_is_left_alone() {
        let last = b"DKIM-Signature: v=1; bh=abc=; b=sig\r\n  nature\r\n";
        assert_eq!(without_b_value(last).unwrap(), b"DKIM-Signature: v=1; bh=abc=; b=");
        let middle = b"DKIM-Signature: v=1; b = sig ;bh=abc=\r\n";
        assert_eq!(without_b_value(middle).unwrap(), b"DKIM-Signature: v=1; b =;bh=abc=\r\n");
    }

    #[test]
    fn a_header_listed_twice_signs_instances_from_the_bottom_up() {
        // Hand-made signatures: the signer hashes the X-Hop fields bottom up, the third listed X-Hop
        // (absent) contributes nothing, and the DKIM-Signature itself ends the data without CRLF.
        let (pem, public) = key();
        let private = <RsaPrivateKey as rsa::pkcs1::DecodeRsaPrivateKey>::from_pkcs1_pem(pem).expect("PEM");
        let body = b"Hello \r\n";
        for (c, canonicalization) in
            [("relaxed/relaxed", Canonicalization::Relaxed), ("simple/simple", Canonicalization::Simple)]
        {
            let bh = STANDARD.encode(Sha256::digest(canonicalize_body(body, canonicalization)));
            let unsigned = format!(
                "DKIM-Signature: v=1; a=rsa-sha256; c={c}; d=herald.example; s=svc;\r\n\th=x-hop:x-hop:from:x-hop; bh={bh}; b="
            );
            let mut data: Vec<u8> = match canonicalization {
                Canonicalization::Relaxed => b"x-hop:second\r\nx-hop:first\r\nfrom:a@herald.example\r\n".to_vec(),
                Canonicalization::Simple => b"X-Hop:  second\r\nX-Hop: first\r\nFrom: a@herald.example\r\n".to_vec(),
            };
            let own = canonicalize_header(unsigned.as_bytes(), canonicalization);
            data.extend_from_slice(own.strip_suffix(b"\r\n").unwrap_or(&own));
            let signature = private.sign(Pkcs1v15Sign::new::<Sha256>(), &Sha256::digest(&data)).expect("signing");
            let signature = STANDARD.encode(signature);
            // Folded inside the b= value, as signers may do.
            let (first, second) = signature.split_at(100);
            let mut message = b"X-Hop: first\r\nFrom: a@herald.example\r\nX-Hop:  second\r\n".to_vec();
            message.extend(format!("{unsigned}{first}\r\n {second}\r\n\r\n").as_bytes());
            message.extend_from_slice(body);
            let verified = verify(&message, public).unwrap_or_else(|e| panic!("{c}: {e}"));
            assert_eq!(verified.signed_headers, ["x-hop", "x-hop", "from", "x-hop"]);
        }
    }

    #[test]
    fn a_message_signed_by_heralds_own_signer_verifies_and_a_changed_body_does_not() {
        let (pem, public) = key();
        let signer = jobs::dkim::DkimSigner::from_pkcs1_pem("herald.example", "svc", pem).expect("the signer reads the key");
        let signed = signer.sign(&message().formatted(), 1_790_000_000).expect("signs");
        let verified = verify(&signed, public).expect("Herald's signature verifies");
        assert_eq!((verified.domain.as_str(), verified.selector.as_str()), ("herald.example", "svc"));
        assert!(verified.signed_headers.contains(&"to".to_string()) && verified.signed_headers.contains(&"subject".to_string()));
        let text = String::from_utf8_lossy(&signed).to_string();
        let tampered = text.replacen("Hallo Welt,", "Hallo Welt!", 1);
        assert_ne!(tampered, text);
        assert!(verify(tampered.as_bytes(), public).is_err(), "a changed body fails");
    }
}
