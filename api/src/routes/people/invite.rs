//! Inviting an address to a team, written once for the invitations route and
//! `herald team invite`: the open invitation of the same address is replaced, and the link is
//! mailed as account mail.

use crate::routes::people::account_mail::{self, AccountMail};
use crate::config::Config;
use crate::http::error::{ApiError, ApiResult};
use chrono::{TimeDelta, Utc};
use schema::store::people::{self, Invitation};
use sqlx::PgConnection;
use uuid::Uuid;

/// How long an invitation's link works.
pub const INVITATION_DAYS: i64 = 7;

/// Who invites: a person of the team, or the operator at the command line.
pub enum Inviter<'a> {
    Person { id: Uuid, name: &'a str },
    Operator,
}

/// An invitation made and its link, and whether the link was mailed (account mail can be off).
pub struct Invited {
    pub invitation: Invitation,
    pub link: String,
    pub mailed: bool,
}

/// Invites `email` (already parsed) to `team_id` as `role` in `tx`'s transaction and mails the
/// link. A member already in the team is `422 validation_error`.
pub async fn invite(tx: &mut PgConnection, config: &Config, team_id: Uuid, email: &str, role: &str, inviter: Inviter<'_>) -> ApiResult<Invited> {
    if let Some(person) = people::by_email(tx, email).await?
        && people::role_in(tx, team_id, person.id).await?.is_some()
    {
        return Err(ApiError::refused_field("email", "is already a member of the team"));
    }
    let token = schema::secret::mint("");
    let invited_by = match inviter {
        Inviter::Person { id, .. } => Some(id),
        Inviter::Operator => None,
    };
    let expires_at = Utc::now() + TimeDelta::days(INVITATION_DAYS);
    let invitation = people::invite(tx, team_id, email, role, invited_by, &token.hash, expires_at).await?;
    let link = format!("{}/invitations/{}", config.public_url.trim_end_matches('/'), token.plaintext);
    let intro = match inviter {
        Inviter::Person { name, .. } => format!("{name} invited you to join the team {} on Herald as {role}.", invitation.team_name),
        Inviter::Operator => format!("You are invited to join the team {} on Herald as {role}.", invitation.team_name),
    };
    let mail = AccountMail {
        subject: &format!("Join {} on Herald", invitation.team_name),
        intro: &intro,
        action: "Accept the invitation",
        link: &link,
        outro: "The invitation works for 7 days. If you did not expect it, ignore this message.",
    };
    let mailed = account_mail::send(tx, config, email, &mail).await?;
    Ok(Invited { invitation, link, mailed })
}
