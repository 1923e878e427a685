//! TOTP second factor (RFC 6238: HMAC-SHA1, 30-second steps, six digits) and recovery codes.
//! Secrets are kept sealed with the service's own `mfa` key (made once, shared by every
//! process); recovery codes are kept as SHA-256.

use rand::Rng;
use sqlx::PgConnection;

/// Seconds per code.
const STEP_SECONDS: i64 = 30;
/// Steps either side of now a code is accepted for (clock drift).
const DRIFT_STEPS: i64 = 1;
/// Recovery codes handed out at enrolment.
pub const RECOVERY_CODES: usize = 10;

/// A fresh 160-bit secret.
pub fn new_secret() -> Vec<u8> {
    rand::thread_rng().r#gen::<[u8; 20]>().to_vec()
}

/// The secret as authenticator apps take it (base32, no padding).
pub fn base32(secret: &[u8]) -> String {
    data_encoding::BASE32_NOPAD.encode(secret)
}

/// The `otpauth://` URI an authenticator app reads from a QR code or a pasted link.
pub fn otpauth_uri(issuer: &str, account: &str, secret: &[u8]) -> String {
    let label = format!("{issuer}:{account}");
    format!(
        "otpauth://totp/{}?secret={}&issuer={}&algorithm=SHA1&digits=6&period={STEP_SECONDS}",
        urlencoding(&label),
        base32(secret),
        urlencoding(issuer)
    )
}

fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// The time step of a Unix time.
pub fn step_at(unix_seconds: i64) -> i64 {
    unix_seconds.div_euclid(STEP_SECONDS)
}

/// The six-digit code of a step.
pub fn code(secret: &[u8], step: i64) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret);
    let tag = ring::hmac::sign(&key, &step.to_be_bytes());
    let digest = tag.as_ref();
    let offset = (digest[digest.len() - 1] & 0x0f) as usize;
    let number = u32::from_be_bytes([digest[offset] & 0x7f, digest[offset + 1], digest[offset + 2], digest[offset + 3]]);
    format!("{:06}", number % 1_000_000)
}

/// The step a code matches, within the drift allowed around `now` and after `last_step` (a
/// code is accepted once).
pub fn check(secret: &[u8], code_given: &str, unix_now: i64, last_step: Option<i64>) -> Option<i64> {
    let given: String = code_given.chars().filter(|c| !c.is_whitespace()).collect();
    if given.len() != 6 || !given.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now = step_at(unix_now);
    (now - DRIFT_STEPS..=now + DRIFT_STEPS)
        .filter(|step| last_step.is_none_or(|last| *step > last))
        .find(|step| constant_eq(code(secret, *step).as_bytes(), given.as_bytes()))
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Fresh recovery codes, `xxxxx-xxxxx` of lower-case letters and digits.
pub fn recovery_codes() -> Vec<String> {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut rng = rand::thread_rng();
    (0..RECOVERY_CODES)
        .map(|_| {
            let mut part = || (0..5).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char).collect::<String>();
            format!("{}-{}", part(), part())
        })
        .collect()
}

/// A recovery code as stored: the SHA-256 of its lower-case letters and digits.
pub fn recovery_hash(code: &str) -> Vec<u8> {
    let normal: String = code.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
    schema::secret::hash(&normal)
}

/// The key secrets are sealed with.
async fn sealing_key(conn: &mut PgConnection) -> sqlx::Result<String> {
    let fresh = rand::thread_rng().r#gen::<[u8; 32]>();
    Ok(hex::encode(schema::store::keys::get_or_create(conn, "mfa", &fresh).await?))
}

/// Seals a secret for storage.
pub async fn seal(conn: &mut PgConnection, secret: &[u8]) -> sqlx::Result<Vec<u8>> {
    Ok(schema::secret::seal(&sealing_key(conn).await?, secret))
}

/// Opens a stored secret.
pub async fn open(conn: &mut PgConnection, sealed: &[u8]) -> anyhow::Result<Vec<u8>> {
    schema::secret::open(&sealing_key(conn).await?, sealed).ok_or_else(|| anyhow::anyhow!("a TOTP secret does not open with the mfa key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_rfc_6238_sha1_test_vectors() {
        let secret = b"12345678901234567890";
        // RFC 6238 appendix B gives eight digits; six digits are its last six.
        assert_eq!(code(secret, step_at(59)), "287082");
        assert_eq!(code(secret, step_at(1_111_111_109)), "081804");
        assert_eq!(code(secret, step_at(2_000_000_000)), "279037");
    }

    #[test]
    fn a_code_is_accepted_one_step_either_side_and_only_once() {
        let secret = b"12345678901234567890";
        let now = 1_111_111_109;
        let earlier = code(secret, step_at(now) - 1);
        assert_eq!(check(secret, &earlier, now, None), Some(step_at(now) - 1));
        assert_eq!(check(secret, &earlier, now, Some(step_at(now) - 1)), None);
        assert_eq!(check(secret, &code(secret, step_at(now) - 2), now, None), None);
        assert_eq!(check(secret, "12345", now, None), None);
    }

    #[test]
    fn recovery_codes_are_matched_whatever_their_case_and_dash() {
        let codes = recovery_codes();
        assert_eq!(codes.len(), RECOVERY_CODES);
        assert_eq!(recovery_hash(&codes[0]), recovery_hash(&codes[0].to_uppercase().replace('-', "")));
    }
}
