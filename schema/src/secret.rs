//! Secrets handed to clients once and stored only as SHA-256 hashes.

use rand::{Rng, distributions::Alphanumeric};
use sha2::{Digest, Sha256};

/// Length of the random part of a token.
const TOKEN_RANDOM_LEN: usize = 40;
/// Characters of the token kept readable as the key's `key_prefix`.
pub const KEY_PREFIX_LEN: usize = 10;

/// A freshly minted token: the plaintext (shown once) and what is stored.
pub struct MintedToken {
    pub plaintext: String,
    pub hash: Vec<u8>,
    pub prefix: String,
}

/// Mints a token such as `rk_…` with the given prefix.
pub fn mint(prefix: &str) -> MintedToken {
    let random: String = rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(TOKEN_RANDOM_LEN)
        .map(char::from)
        .collect();
    let plaintext = format!("{prefix}{random}");
    MintedToken {
        hash: hash(&plaintext),
        prefix: plaintext.chars().take(KEY_PREFIX_LEN).collect(),
        plaintext,
    }
}

/// SHA-256 of a token, as stored.
pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Hex SHA-256 of arbitrary bytes (request fingerprints, content digests).
pub fn digest_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Seals a credential the service must read back later (a DNS provider token) with
/// AES-256-GCM under a key derived from the operator's `HERALD_SECRET_KEY`: nonce then ciphertext.
pub fn seal(secret_key: &str, plaintext: &[u8]) -> Vec<u8> {
    use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng};
    let cipher = aes_gcm::Aes256Gcm::new_from_slice(&Sha256::digest(secret_key.as_bytes())).expect("32-byte key");
    let nonce = aes_gcm::Aes256Gcm::generate_nonce(&mut OsRng);
    let mut sealed = nonce.to_vec();
    sealed.extend(cipher.encrypt(&nonce, plaintext).expect("AES-GCM encryption does not fail"));
    sealed
}

/// Opens what [`seal`] sealed; `None` when the key differs or the bytes were altered.
pub fn open(secret_key: &str, sealed: &[u8]) -> Option<Vec<u8>> {
    use aes_gcm::aead::{Aead, KeyInit};
    if sealed.len() < 12 {
        return None;
    }
    let cipher = aes_gcm::Aes256Gcm::new_from_slice(&Sha256::digest(secret_key.as_bytes())).ok()?;
    let (nonce, ciphertext) = sealed.split_at(12);
    let nonce: [u8; 12] = nonce.try_into().ok()?;
    cipher.decrypt(&nonce.into(), ciphertext).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_credential_opens_only_with_its_key() {
        let sealed = seal("operator key", b"cf-token");
        assert_eq!(open("operator key", &sealed).as_deref(), Some(&b"cf-token"[..]));
        assert_eq!(open("another key", &sealed), None);
        assert!(!sealed.windows(8).any(|w| w == b"cf-token"));
    }

    #[test]
    fn a_minted_api_key_starts_with_its_prefix_and_hashes_to_what_is_stored() {
        let token = mint("rk_");
        assert!(token.plaintext.starts_with("rk_"));
        assert_eq!(token.plaintext.len(), 3 + TOKEN_RANDOM_LEN);
        assert_eq!(hash(&token.plaintext), token.hash);
        assert!(token.plaintext.starts_with(&token.prefix));
    }

    #[test]
    fn two_minted_tokens_differ() {
        assert_ne!(mint("rk_").plaintext, mint("rk_").plaintext);
    }
}
