//! A person's teams: making a team with its first admin, switching the session's team, and the
//! team a session acts on (any member, or an admin).

use crate::http::error::{ApiError, ApiResult};
use crate::routes::people::session::SessionView;
use schema::store::{people, teams};
use uuid::Uuid;

/// Makes `team_id` the session's current team and answers the session as it is now.
pub async fn switch(tx: &mut sqlx::PgConnection, session_id: Uuid, team_id: Uuid) -> ApiResult<SessionView> {
    people::switch_team(tx, session_id, team_id).await?;
    let now = people::session_by_id(tx, session_id).await?.ok_or_else(|| anyhow::anyhow!("the session is gone"))?;
    Ok(crate::routes::people::session::view(&now))
}

/// The session's current team; `403 invalid_permission` when it has none.
pub fn current_team(session: &people::Session) -> ApiResult<Uuid> {
    session.team_id.ok_or_else(|| ApiError::invalid_permission("The session has no current team; switch to one with `POST /teams/{team_id}/switch`."))
}

/// The session's current team when the person is its admin; `403 invalid_permission` otherwise.
pub fn admin_team(session: &people::Session) -> ApiResult<Uuid> {
    let team_id = current_team(session)?;
    if session.role.as_deref() != Some("admin") {
        return Err(ApiError::invalid_permission("Only an admin of the team can do this."));
    }
    Ok(team_id)
}

/// Creates a team named `name` (1 to 80 characters, one line) with the person as its admin; in
/// development it has the development sender at once.
pub async fn create_for(tx: &mut sqlx::PgConnection, person_id: Uuid, name: &str, development: bool) -> ApiResult<Uuid> {
    let name = crate::http::input::one_line(name, 80).ok_or_else(|| ApiError::refused_field("name", "must be 1 to 80 characters on one line"))?;
    let team_id = schema::ids::new_id();
    teams::insert(tx, team_id, &name, &format!("team-{}", team_id.simple())).await?;
    people::add_member(tx, team_id, person_id, "admin").await?;
    if development {
        schema::store::domains::give_dev_sender(tx, Some(team_id)).await?;
    }
    Ok(team_id)
}
