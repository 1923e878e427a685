//! Inbox channels: set up by a team admin in the dashboard session (create, rename, restrict,
//! close, members), listed with their teammates for everyone who reaches them.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::routes::inbox::actor::Actor;
use crate::routes::people::membership::admin_team;
use crate::routes::{Tag, path_id};
use crate::state::{AppState, Caller, SessionCaller};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::email::Mailbox;
use schema::store::inbox::{self, Channel, NewChannel};
use schema::store::received::{self, HostRole};
use serde::Deserialize;
use uuid::Uuid;

pub struct InboxChannelsApi;

/// Body of `POST /inbox/channels`.
#[derive(Object, Deserialize)]
pub struct CreateInboxChannel {
    /// 1 to 100 characters on one line, shown to teammates and as the sender name of replies.
    #[oai(validator(min_length = 1, max_length = 100, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"))]
    pub name: String,
    /// A receiving address on one of the team's domains with receiving on (`support@acme.com`).
    #[oai(validator(max_length = 320))]
    pub address: String,
    /// Only its members (and the team's admins) open it; keys reach it only when limited to it.
    pub restricted: Option<bool>,
    /// The signed-in person's own channel: no key or token ever reaches it.
    pub personal: Option<bool>,
}

/// Body of `PATCH /inbox/channels/{channel_id}`.
#[derive(Object, Deserialize)]
pub struct UpdateInboxChannel {
    /// 1 to 100 characters on one line.
    #[oai(validator(min_length = 1, max_length = 100, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"))]
    pub name: Option<String>,
    /// Only its members (and the team's admins) open it.
    pub restricted: Option<bool>,
    /// A closed channel takes no new mail into conversations (mail to it is still received)
    /// and is reached by no one but the team's admins setting it up.
    pub closed: Option<bool>,
}

/// Body of `PUT /inbox/channels/{channel_id}/members`.
#[derive(Object, Deserialize)]
pub struct InboxChannelMembers {
    /// The people of the team who open the restricted channel (admins always do).
    #[oai(validator(max_items = 1000))]
    pub user_ids: Vec<String>,
}

/// A channel.
#[derive(Object)]
pub struct InboxChannel {
    /// Always `inbox_channel`.
    pub object: String,
    /// The channel's id.
    pub id: String,
    /// Its receiving address.
    pub address: String,
    /// Its name.
    pub name: String,
    /// Whether only its members (and the team's admins) open it.
    pub restricted: bool,
    /// Whether it is the signed-in person's own channel.
    pub personal: bool,
    /// Whether it is closed to new mail.
    pub closed: bool,
}

/// The channels the caller reaches.
#[derive(Object)]
pub struct InboxChannelList {
    /// Always `list`.
    pub object: String,
    /// Always false: every channel is listed.
    pub has_more: bool,
    /// The channels, oldest first.
    pub data: Vec<InboxChannel>,
}

/// A teammate who can open a channel.
#[derive(Object)]
pub struct InboxTeammate {
    /// Always `inbox_teammate`.
    pub object: String,
    /// The person's id.
    pub user_id: String,
    /// The person's name.
    pub name: String,
    /// False for a viewer of the team, who reads and cannot write.
    pub can_write: bool,
}

/// The teammates who can open a channel.
#[derive(Object)]
pub struct InboxTeammateList {
    /// Always `list`.
    pub object: String,
    /// Always false: every teammate is listed.
    pub has_more: bool,
    /// The teammates, by name.
    pub data: Vec<InboxTeammate>,
}

#[derive(ApiResponse)]
pub enum CreateChannelResponse {
    /// Created.
    #[oai(status = 201)]
    Created(Json<InboxChannel>),
}

#[poem_openapi::OpenApi(tag = "Tag::Inbox")]
impl InboxChannelsApi {
    /// Add a channel (a team admin, signed in to the dashboard). The address must be on one of
    /// the team's domains with receiving on (`422 invalid_parameter`); a second channel at one
    /// address is `422 invalid_parameter`.
    #[oai(path = "/inbox/channels", method = "post", operation_id = "create-inbox-channel")]
    async fn create(&self, state: Data<&AppState>, session: Data<&SessionCaller>, body: Body<CreateInboxChannel>) -> ApiResult<CreateChannelResponse> {
        let session = &session.0.session;
        let team_id = admin_team(session)?;
        let body = body.0;
        let name = channel_name(&body.name)?;
        let address = Mailbox::parse(&body.address).map_err(|e| ApiError::invalid_field("address", e))?.key();
        let personal = body.personal.unwrap_or(false);
        let mut tx = state.pool.begin().await?;
        let host = address.rsplit_once('@').map(|(_, host)| host).unwrap_or_default();
        let domain_id = received::host_roles(&mut tx, host)
            .await?
            .into_iter()
            .find_map(|role| match role {
                HostRole::Receiving { team_id: owner, domain_id } if owner == team_id => Some(domain_id),
                _ => None,
            })
            .ok_or_else(|| ApiError::invalid_parameter("address", "must be on one of the team's domains with receiving on"))?;
        let new = NewChannel {
            domain_id,
            address: &address,
            name: &name,
            restricted: body.restricted.unwrap_or(false) && !personal,
            personal_person_id: personal.then_some(session.person_id),
        };
        let channel = inbox::insert(&mut tx, team_id, &new).await?.ok_or_else(|| ApiError::invalid_parameter("address", "the team has a channel at this address"))?;
        tx.commit().await?;
        Ok(CreateChannelResponse::Created(Json(view(channel))))
    }

    /// The shared channels the caller reaches (a key's restricted ones only when it is limited
    /// to them; the session also lists the person's own channel).
    #[oai(path = "/inbox/channels", method = "get", operation_id = "list-inbox-channels")]
    async fn list(&self, state: Data<&AppState>, caller: Data<&Caller>) -> ApiResult<Json<InboxChannelList>> {
        let mut conn = state.pool.acquire().await?;
        let actor = Actor::of(&mut conn, &caller).await?;
        let channels = inbox::list(&mut conn, actor.team_id, &actor.reach).await?;
        Ok(Json(InboxChannelList { object: "list".into(), has_more: false, data: channels.into_iter().map(view).collect() }))
    }

    /// Rename, restrict or close a channel (a team admin, signed in to the dashboard).
    #[oai(path = "/inbox/channels/:channel_id", method = "patch", operation_id = "update-inbox-channel")]
    async fn update(&self, state: Data<&AppState>, session: Data<&SessionCaller>, channel_id: Path<String>, body: Body<UpdateInboxChannel>) -> ApiResult<Json<InboxChannel>> {
        let team_id = admin_team(&session.0.session)?;
        let id = path_id(&channel_id.0, "Channel")?;
        let body = body.0;
        let name = body.name.as_deref().map(channel_name).transpose()?;
        let change = inbox::Change { name: name.as_deref(), restricted: body.restricted, closed: body.closed };
        let mut tx = state.pool.begin().await?;
        let channel = admin_channel(&mut tx, team_id, id, session.0.session.person_id).await?;
        let updated = inbox::update(&mut tx, team_id, channel.id, &change).await?.ok_or_else(|| ApiError::not_found("Channel"))?;
        tx.commit().await?;
        Ok(Json(view(updated)))
    }

    /// Set the members of a restricted channel (a team admin, signed in to the dashboard).
    /// Someone outside the team is `422 invalid_parameter`; an unrestricted channel has no
    /// members to set (`422 invalid_parameter`).
    #[oai(path = "/inbox/channels/:channel_id/members", method = "put", operation_id = "set-inbox-channel-members")]
    async fn members(&self, state: Data<&AppState>, session: Data<&SessionCaller>, channel_id: Path<String>, body: Body<InboxChannelMembers>) -> ApiResult<Json<InboxTeammateList>> {
        let team_id = admin_team(&session.0.session)?;
        let id = path_id(&channel_id.0, "Channel")?;
        let people: Vec<Uuid> = body.0.user_ids.iter().map(|raw| schema::ids::parse_id(raw).ok_or_else(|| ApiError::invalid_parameter("user_ids", format!("{raw} is not a person's id")))).collect::<ApiResult<_>>()?;
        let mut tx = state.pool.begin().await?;
        let channel = admin_channel(&mut tx, team_id, id, session.0.session.person_id).await?;
        if !channel.restricted {
            return Err(ApiError::invalid_parameter("user_ids", "the channel is not restricted: every teammate opens it"));
        }
        let strangers = inbox::set_members(&mut tx, team_id, channel.id, &people).await?;
        if let Some(stranger) = strangers.first() {
            return Err(ApiError::invalid_parameter("user_ids", format!("{stranger} is not a member of the team")));
        }
        let teammates = inbox::teammates(&mut tx, &channel).await?;
        tx.commit().await?;
        Ok(Json(teammate_list(teammates)))
    }

    /// The teammates who can open a channel (`can_write` is false for a viewer).
    #[oai(path = "/inbox/channels/:channel_id/teammates", method = "get", operation_id = "list-inbox-channel-teammates")]
    async fn teammates(&self, state: Data<&AppState>, caller: Data<&Caller>, channel_id: Path<String>) -> ApiResult<Json<InboxTeammateList>> {
        let id = path_id(&channel_id.0, "Channel")?;
        let mut conn = state.pool.acquire().await?;
        let actor = Actor::of(&mut conn, &caller).await?;
        let channel = inbox::get(&mut conn, actor.team_id, id, Some(&actor.reach)).await?.ok_or_else(|| ApiError::not_found("Channel"))?;
        Ok(Json(teammate_list(inbox::teammates(&mut conn, &channel).await?)))
    }
}

/// One of the team's channels an admin sets up: any shared one, and their own personal one.
async fn admin_channel(conn: &mut sqlx::PgConnection, team_id: Uuid, id: Uuid, person_id: Uuid) -> ApiResult<Channel> {
    let channel = inbox::get(conn, team_id, id, None).await?.filter(|c| c.personal_person_id.is_none_or(|owner| owner == person_id));
    channel.ok_or_else(|| ApiError::not_found("Channel"))
}

fn channel_name(raw: &str) -> ApiResult<String> {
    crate::http::input::one_line(raw, 100).ok_or_else(|| ApiError::invalid_field("name", "must be 1 to 100 characters on one line"))
}

fn view(channel: Channel) -> InboxChannel {
    InboxChannel {
        object: "inbox_channel".into(),
        id: channel.id.to_string(),
        address: channel.address,
        name: channel.name,
        restricted: channel.restricted,
        personal: channel.personal_person_id.is_some(),
        closed: channel.closed,
    }
}

fn teammate_list(teammates: Vec<inbox::Teammate>) -> InboxTeammateList {
    let data = teammates
        .into_iter()
        .map(|t| InboxTeammate { object: "inbox_teammate".into(), user_id: t.person_id.to_string(), name: t.name, can_write: t.role != "viewer" })
        .collect();
    InboxTeammateList { object: "list".into(), has_more: false, data }
}
