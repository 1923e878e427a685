//! Single-use links mailed to people (address verification, password reset): minted as hashed
//! tokens with a lifetime, and the verification mail.

use crate::routes::people::account_mail::{self, AccountMail};
use crate::http::error::ApiResult;
use crate::state::AppState;
use chrono::{TimeDelta, Utc};
use schema::store::people;
use sqlx::PgConnection;
use uuid::Uuid;

pub const VERIFY: &str = "verify_email";
/// How long a verification link works.
const VERIFY_HOURS: i64 = 7 * 24;
/// Mails a new address-confirmation link in `tx` (when account mail is configured).
pub async fn mail_verification(tx: &mut PgConnection, state: &AppState, person_id: Uuid, email: &str) -> ApiResult<()> {
    let link = mint_link(tx, state, person_id, VERIFY, TimeDelta::hours(VERIFY_HOURS), "verify-email").await?;
    let mail = AccountMail {
        subject: "Confirm your address for Herald",
        intro: "Confirm this address for your Herald account:",
        action: "Confirm your address",
        link: &link,
        outro: "The link works for 7 days. If you did not sign up, ignore this message.",
    };
    account_mail::send(tx, &state.config, email, &mail).await?;
    Ok(())
}

/// Stores a new single-use link of `purpose` and answers its URL under `/auth/{page}/`.
pub async fn mint_link(tx: &mut PgConnection, state: &AppState, person_id: Uuid, purpose: &str, life: TimeDelta, page: &str) -> ApiResult<String> {
    let token = schema::secret::mint("");
    people::insert_token(tx, person_id, purpose, &token.hash, Utc::now() + life).await?;
    Ok(format!("{}/auth/{page}/{}", state.config.public_url.trim_end_matches('/'), token.plaintext))
}
