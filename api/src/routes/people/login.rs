//! Who a person is: addresses and names as accounts keep them, argon2id passwords, sign-in with
//! its throttles (per address and per client address) and the TOTP second factor.

use sqlx::PgConnection;
use uuid::Uuid;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::state::AppState;
use chrono::{TimeDelta, Utc};
use schema::store::people;

/// Shortest and longest password, in characters.
const PASSWORD_CHARS: std::ops::RangeInclusive<usize> = 10..=200;
/// Failed sign-ins counted, and over how long.
const FAILURES_PER_ADDRESS: i64 = 5;
const FAILURES_PER_CLIENT: i64 = 20;
const FAILURE_WINDOW_MINUTES: i64 = 15;
/// Checks a sign-in: the throttle (five failures per address, twenty per client address, in
/// 15 minutes), the password, and the TOTP or recovery code when the account has TOTP on. A
/// failure is recorded and answers `403 validation_error` (a missing code says so in
/// `details.mfa_required`); over the throttle, `429 rate_limit_exceeded`.
pub async fn authenticate(state: &AppState, email: &str, password: &str, mfa_code: Option<&str>, ip: Option<&str>) -> ApiResult<people::Person> {
    let password = password.chars().take(*PASSWORD_CHARS.end() + 1).collect::<String>();
    let since = Utc::now() - TimeDelta::minutes(FAILURE_WINDOW_MINUTES);
    let mut conn = state.pool.acquire().await?;
    let (by_address, by_client) = people::failures(&mut conn, email, ip, since).await?;
    if by_address >= FAILURES_PER_ADDRESS || by_client >= FAILURES_PER_CLIENT {
        return Err(ApiError::new(ErrorKind::RateLimitExceeded, "Too many failed sign-ins. Try again in 15 minutes."));
    }
    let person = people::by_email(&mut conn, email).await?;
    // An unknown address is checked against a throwaway hash, so both answers take as long.
    let stored = person.as_ref().map_or_else(|| DUMMY_HASH.clone(), |p| p.password_hash.clone());
    let right = tokio::task::spawn_blocking(move || verify_password(&password, &stored)).await.map_err(anyhow::Error::from)?;
    let Some(person) = person.filter(|_| right) else {
        people::record_failure(&mut conn, email, ip).await?;
        return Err(wrong_credentials());
    };
    drop(conn);
    let mut tx = state.pool.begin().await?;
    if person.totp_enabled_at.is_some() {
        let Some(code) = mfa_code.filter(|c| !c.trim().is_empty()) else {
            return Err(ApiError::not_allowed("This account asks for a second factor: send the authenticator's code (or a recovery code) in `mfa_code`.")
                .with_error("mfa_code", "is required for this account")
                .with_details(serde_json::json!({ "mfa_required": true })));
        };
        if !crate::routes::people::login::second_factor(&mut tx, person.id, code).await? {
            drop(tx);
            people::record_failure(&mut *state.pool.acquire().await?, email, ip).await?;
            return Err(ApiError::not_allowed("The authenticator code is wrong or was already used.")
                .with_error("mfa_code", "is wrong or was already used")
                .with_details(serde_json::json!({ "mfa_required": true })));
        }
    }
    enforce_sso(&mut tx, &person).await?;
    people::clear_failures(&mut tx, email).await?;
    tx.commit().await?;
    Ok(person)
}

/// A password sign-in for an address whose domain a team's single sign-on covers with
/// `enforced` is `403 validation_error` pointing at `/auth/sso/start`, unless the person is an
/// admin of that team: admins keep their password as the way back in when the provider fails.
async fn enforce_sso(conn: &mut PgConnection, person: &people::Person) -> ApiResult<()> {
    let domain = person.email.rsplit_once('@').map(|(_, domain)| domain).unwrap_or_default();
    let Some(team_id) = schema::store::sso::enforced_team(conn, domain).await? else { return Ok(()) };
    if people::role_in(conn, team_id, person.id).await?.as_deref() == Some("admin") {
        return Ok(());
    }
    let start = format!("/auth/sso/start?email={}", percent_encoding::utf8_percent_encode(&person.email, percent_encoding::NON_ALPHANUMERIC));
    Err(ApiError::not_allowed("This address signs in with its team's single sign-on, not a password.").with_details(serde_json::json!({ "sso_start": start })))
}

/// A person's name: 1 to 100 characters on one line, trimmed.
pub fn person_name(raw: &str) -> Option<String> {
    crate::http::input::one_line(raw, 100)
}

/// An account's address: bare and lower-case.
pub fn address(raw: Option<String>) -> ApiResult<String> {
    let raw = raw.ok_or_else(|| ApiError::missing_field("email"))?;
    let mailbox = schema::email::Mailbox::parse(raw.trim()).map_err(|e| ApiError::refused_field("email", e))?;
    Ok(mailbox.key())
}


pub fn wrong_credentials() -> ApiError {
    ApiError::not_allowed("The email address or the password is wrong.")
}

/// An argon2id hash of a password nobody has, checked when the address has no account.
static DUMMY_HASH: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| hash_password(&schema::secret::mint("").plaintext).unwrap_or_default());

/// Checks a new password's length (10 to 200 characters) and hashes it with argon2id off the
/// async threads.
pub async fn new_password_hash(password: String) -> ApiResult<String> {
    if !PASSWORD_CHARS.contains(&password.chars().count()) {
        return Err(ApiError::refused_field("password", "must be 10 to 200 characters"));
    }
    Ok(tokio::task::spawn_blocking(move || hash_password(&password)).await.map_err(anyhow::Error::from)??)
}

fn hash_password(password: &str) -> anyhow::Result<String> {
    use argon2::password_hash::{PasswordHasher, SaltString, rand_core::OsRng};
    let salt = SaltString::generate(&mut OsRng);
    Ok(argon2::Argon2::default().hash_password(password.as_bytes(), &salt).map_err(|e| anyhow::anyhow!("hashing a password failed: {e}"))?.to_string())
}

fn verify_password(password: &str, stored: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    PasswordHash::new(stored).is_ok_and(|hash| argon2::Argon2::default().verify_password(password.as_bytes(), &hash).is_ok())
}

/// Checks a second factor in `tx`: the current TOTP code (each accepted once) or an unused
/// recovery code (used up by it).
pub async fn second_factor(tx: &mut PgConnection, person_id: Uuid, code: &str) -> ApiResult<bool> {
    let totp = people::totp(tx, person_id).await?;
    let (Some(sealed), Some(_)) = (totp.totp_secret, totp.totp_enabled_at) else { return Ok(false) };
    let secret = crate::routes::people::mfa::open(tx, &sealed).await?;
    if let Some(step) = crate::routes::people::mfa::check(&secret, code, Utc::now().timestamp(), totp.totp_last_step) {
        people::spend_totp_step(tx, person_id, step).await?;
        return Ok(true);
    }
    Ok(people::use_recovery_code(tx, person_id, &crate::routes::people::mfa::recovery_hash(code)).await?)
}
