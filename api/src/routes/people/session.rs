//! The dashboard session: opening one with its cookie, its view (the person, the current team
//! and the CSRF token), and the roles a member can have.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Nullable};
use crate::state::AppState;
use chrono::{DateTime, TimeDelta, Utc};
use poem_openapi::Object;
use schema::store::people;

/// How long a session lasts.
const SESSION_DAYS: i64 = 14;

crate::choices! {
    /// A member's role: `admin`, `member` (reads and writes) or `viewer` (reads only).
    Role = &["admin", "member", "viewer"];
}

/// A role from a body: required, and one of [`Role`]'s values (`422 validation_error` otherwise).
pub fn role(choice: Option<Choice<Role>>) -> ApiResult<String> {
    use crate::http::fields::Choices;
    let role = choice.ok_or_else(|| ApiError::missing_field("role"))?;
    if !Role::VALUES.contains(&role.as_str()) {
        return Err(ApiError::refused_field("role", format!("must be one of {}", Role::VALUES.join(", "))));
    }
    Ok(role.into_string())
}

/// The signed-in person.
#[derive(Object)]
pub struct PersonView {
    /// The person's id.
    pub id: String,
    /// The address the person signs in with.
    pub email: String,
    /// How teammates see the person.
    pub name: String,
    /// Whether the address has been confirmed.
    pub email_verified: bool,
    /// Whether sign-in asks for a TOTP code.
    pub mfa_enabled: bool,
}

/// The session's current team and the person's role in it.
#[derive(Object)]
pub struct TeamRole {
    /// The team's id.
    pub id: String,
    /// The team's name.
    pub name: String,
    /// The person's role in the team.
    pub role: Choice<Role>,
}

/// A dashboard session.
#[derive(Object)]
pub struct SessionView {
    /// Always `session`.
    pub object: String,
    /// The signed-in person.
    pub user: PersonView,
    /// The current team; `null` when the person belongs to none.
    pub team: Nullable<TeamRole>,
    /// Send it as `X-CSRF-Token` with every write made with the session cookie.
    pub csrf_token: String,
    /// When the session ends (14 days after it opened).
    pub expires_at: DateTime<Utc>,
}

/// Opens a session in `tx`; answers it and the `Set-Cookie` value.
pub async fn open(state: &AppState, tx: &mut sqlx::PgConnection, person_id: uuid::Uuid, team_id: Option<uuid::Uuid>) -> ApiResult<(people::Session, String)> {
    let token = schema::secret::mint("hs_");
    let csrf = schema::secret::mint("").plaintext;
    let expires_at = Utc::now() + TimeDelta::days(SESSION_DAYS);
    people::open_session(tx, person_id, team_id, &token.hash, &csrf, expires_at).await?;
    let session = people::session(tx, &token.hash).await?.ok_or_else(|| anyhow::anyhow!("the session just opened is not found"))?;
    let cookie = format!("{}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{}", crate::http::credentials::COOKIE, token.plaintext, SESSION_DAYS * 86_400, secure(state));
    Ok((session, cookie))
}

pub fn secure(state: &AppState) -> &'static str {
    if state.config.public_url.starts_with("https://") { "; Secure" } else { "" }
}

/// A session as answered.
pub fn view(session: &people::Session) -> SessionView {
    let team = match (session.team_id, &session.team_name, &session.role) {
        (Some(id), Some(name), Some(role)) => Some(TeamRole { id: id.to_string(), name: name.clone(), role: Choice::new(role.clone()) }),
        _ => None,
    };
    SessionView {
        object: "session".into(),
        user: PersonView {
            id: session.person_id.to_string(),
            email: session.email.clone(),
            name: session.name.clone(),
            email_verified: session.email_verified_at.is_some(),
            mfa_enabled: session.mfa_enabled,
        },
        team: Nullable(team),
        csrf_token: session.csrf_token.clone(),
        expires_at: session.expires_at,
    }
}
