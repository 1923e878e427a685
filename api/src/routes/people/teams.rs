//! Teams as people see them: the teams a signed-in person belongs to, creating one, and a
//! team's members (read with a `full_access` key).

use crate::http::paging::{page_of, page_request};
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, IdText, Required};
use poem_openapi::param::{Path, Query};
use crate::routes::Tag;
use crate::routes::people::session::{Role, SessionView};
use crate::state::{AppState, Caller, SessionCaller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::store::people;
use serde::Deserialize;
use uuid::Uuid;
use crate::routes::people::membership::{switch, current_team, admin_team, create_for};

pub struct TeamsApi;
pub struct MembersApi;

/// Body of `POST /teams`.
#[derive(Object, Deserialize)]
pub struct CreateTeam {
    /// 1 to 80 characters on one line.
    #[oai(validator(max_length = 80))]
    pub name: Required<String>,
}

/// A team the signed-in person belongs to.
#[derive(Object)]
pub struct TeamMembership {
    /// Always `team`.
    pub object: String,
    /// The team's id.
    pub id: String,
    /// The team's name.
    pub name: String,
    /// The person's role in the team.
    pub role: Choice<Role>,
    /// Whether it is the session's current team.
    pub current: bool,
    /// When the person joined the team.
    pub joined_at: DateTime<Utc>,
}

/// The signed-in person's teams.
#[derive(Object)]
pub struct TeamMembershipList {
    /// Always `list`.
    pub object: String,
    /// Whether more teams follow this page.
    pub has_more: bool,
    /// The teams the person belongs to, in the order they joined.
    pub data: Vec<TeamMembership>,
}

/// A member of the team.
#[derive(Object)]
pub struct TeamMember {
    /// Always `team_member`.
    pub object: String,
    /// The member's person id.
    pub user_id: String,
    /// The member's address.
    pub email: String,
    /// How teammates see the member.
    pub name: String,
    /// The member's role in the team.
    pub role: Choice<Role>,
    /// When the member joined the team.
    pub joined_at: DateTime<Utc>,
}

/// The team's members, in the order they joined (a team's members fit one answer).
#[derive(Object)]
pub struct TeamMemberList {
    /// Always `list`.
    pub object: String,
    /// Whether more members follow this page.
    pub has_more: bool,
    /// The members, in the order they joined.
    pub data: Vec<TeamMember>,
}

/// Body of `PATCH /team/members/{user_id}`.
#[derive(Object, Deserialize)]
pub struct ChangeRole {
    /// The member's new role.
    pub role: Required<Choice<Role>>,
}

/// `{ object: "team_member", user_id, deleted: true }`.
#[derive(Object)]
pub struct MemberRemoved {
    /// Always `team_member`.
    pub object: String,
    /// The removed member's person id.
    pub user_id: String,
    /// Always true.
    pub deleted: bool,
}

#[derive(ApiResponse)]
pub enum CreateTeamResponse {
    /// The session, now in the new team.
    #[oai(status = 201)]
    Created(Json<SessionView>),
}

#[poem_openapi::OpenApi(tag = "Tag::People")]
impl TeamsApi {
    /// The teams the signed-in person belongs to, with their role in each.
    #[oai(path = "/teams", method = "get", operation_id = "list-teams")]
    async fn list(
        &self,
        state: Data<&AppState>,
        session: Data<&SessionCaller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<TeamMembershipList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let session = &session.0.session;
        let teams = page_of(people::memberships(&mut *state.pool.acquire().await?, session.person_id).await?, |m| m.team_id, &page)?;
        let has_more = teams.has_more;
        let data = teams
            .data
            .into_iter()
            .map(|m| TeamMembership {
                object: "team".into(),
                id: m.team_id.to_string(),
                name: m.team_name,
                role: Choice::new(m.role),
                current: Some(m.team_id) == session.team_id,
                joined_at: m.joined_at,
            })
            .collect();
        Ok(Json(TeamMembershipList { object: "list".into(), has_more, data }))
    }

    /// Create a team with the signed-in person as its admin, and make it the session's current
    /// team. A name outside 1 to 80 characters, or on more than one line, is
    /// `422 validation_error`.
    #[oai(path = "/teams", method = "post", operation_id = "create-team")]
    async fn create(&self, state: Data<&AppState>, session: Data<&SessionCaller>, body: Body<CreateTeam>) -> ApiResult<CreateTeamResponse> {
        let name = body.0.name.0.ok_or_else(|| ApiError::missing_field("name"))?;
        let session = &session.0.session;
        let mut tx = state.pool.begin().await?;
        let team_id = create_for(&mut tx, session.person_id, &name, state.config.is_development()).await?;
        let now = switch(&mut tx, session.id, team_id).await?;
        tx.commit().await?;
        Ok(CreateTeamResponse::Created(Json(now)))
    }

    /// Make one of the person's teams the session's current team. A team the person does not
    /// belong to is `404 not_found`.
    #[oai(path = "/teams/:team_id/switch", method = "post", operation_id = "switch-team")]
    async fn switch(&self, state: Data<&AppState>, session: Data<&SessionCaller>, team_id: Path<String>) -> ApiResult<Json<SessionView>> {
        let session = &session.0.session;
        let team_id: Uuid = crate::routes::path_id(&team_id.0, "Team")?;
        let mut tx = state.pool.begin().await?;
        if people::role_in(&mut tx, team_id, session.person_id).await?.is_none() {
            return Err(ApiError::not_found("Team"));
        }
        let now = switch(&mut tx, session.id, team_id).await?;
        tx.commit().await?;
        Ok(Json(now))
    }

    /// Give a member of the session's current team another role (admins only). Taking the team's
    /// last admin away is `422 validation_error`; someone outside the team is `404 not_found`.
    #[oai(path = "/team/members/:user_id", method = "patch", operation_id = "update-team-member")]
    async fn change_role(&self, state: Data<&AppState>, session: Data<&SessionCaller>, user_id: Path<String>, body: Body<ChangeRole>) -> ApiResult<Json<TeamMember>> {
        let role = crate::routes::people::session::role(body.0.role.0)?;
        let team_id = admin_team(&session.0.session)?;
        let person_id: Uuid = crate::routes::path_id(&user_id.0, "Team member")?;
        let mut tx = state.pool.begin().await?;
        member_change(people::set_role(&mut tx, team_id, person_id, &role).await?)?;
        let member = people::members(&mut tx, team_id).await?.into_iter().find(|m| m.person_id == person_id).ok_or_else(|| ApiError::not_found("Team member"))?;
        tx.commit().await?;
        // The member's OAuth tokens act with the new role from the next request on.
        crate::http::key_cache::settle(&state.pool).await?;
        Ok(Json(member_view(member)))
    }

    /// Remove a member from the session's current team: an admin removes anyone, anyone may
    /// leave. The team's last admin cannot go (`422 validation_error`). Their sessions keep the
    /// person but lose the team at once.
    #[oai(path = "/team/members/:user_id", method = "delete", operation_id = "remove-team-member")]
    async fn remove(&self, state: Data<&AppState>, session: Data<&SessionCaller>, user_id: Path<String>) -> ApiResult<Json<MemberRemoved>> {
        let session = &session.0.session;
        let person_id: Uuid = crate::routes::path_id(&user_id.0, "Team member")?;
        let team_id = if person_id == session.person_id { current_team(session)? } else { admin_team(session)? };
        let mut tx = state.pool.begin().await?;
        member_change(people::remove_member(&mut tx, team_id, person_id).await?)?;
        tx.commit().await?;
        crate::http::key_cache::settle(&state.pool).await?;
        Ok(Json(MemberRemoved { object: "team_member".into(), user_id: person_id.to_string(), deleted: true }))
    }
}

fn member_change(change: people::MemberChange) -> ApiResult<()> {
    match change {
        people::MemberChange::Done => Ok(()),
        people::MemberChange::NotMember => Err(ApiError::not_found("Team member")),
        people::MemberChange::LastAdmin => Err(ApiError::refused("A team keeps at least one admin: make someone else admin first.")),
    }
}

fn member_view(m: people::Member) -> TeamMember {
    TeamMember { object: "team_member".into(), user_id: m.person_id.to_string(), email: m.email, name: m.name, role: Choice::new(m.role), joined_at: m.joined_at }
}

#[poem_openapi::OpenApi(tag = "Tag::Team")]
impl MembersApi {
    /// The people of the team with their roles. Only a `full_access` key reaches it; no OAuth
    /// scope does.
    #[oai(path = "/team/members", method = "get", operation_id = "list-team-members")]
    async fn members(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after this one, in the list's order.
        after: Query<Option<IdText>>,
        /// Return the items before this one, in the list's order.
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<TeamMemberList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let members = page_of(people::members(&mut *state.pool.acquire().await?, caller.team_id).await?, |m| m.person_id, &page)?;
        Ok(Json(TeamMemberList { object: "list".into(), has_more: members.has_more, data: members.data.into_iter().map(member_view).collect() }))
    }
}
