//! Who asks the Inbox, what they reach and how they sign what they write: an API key (by its
//! channel limit, writing under its name), or a person through an OAuth token or the dashboard
//! session (by their channels and role; the session alone reaches their personal channel).

use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::state::Caller;
use schema::store::inbox::{self, Reach};
use sqlx::PgConnection;
use uuid::Uuid;

/// The caller of an Inbox route.
#[derive(Debug, Clone)]
pub struct Actor {
    pub team_id: Uuid,
    pub reach: Reach,
    pub who: Who,
}

/// Who writes a reply or note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// An API key; its name is kept with what it writes, as it was then.
    Key { key_id: Uuid, name: String },
    /// A person of the team.
    Person { person_id: Uuid },
}

impl Actor {
    /// The actor of `caller`, once the team has an open channel (`403 inbox_not_set_up`
    /// otherwise).
    pub async fn of(conn: &mut PgConnection, caller: &Caller) -> ApiResult<Actor> {
        let setup = inbox::setup(conn, caller.team_id, caller.key_id).await?;
        if !setup.has_open_channel {
            return Err(ApiError::new(ErrorKind::InboxNotSetUp, "The team's Inbox is not set up: a team admin adds a channel first (`POST /inbox/channels`)."));
        }
        let (reach, who) = match (&caller.token, caller.session_person, caller.key_id) {
            (Some(token), _, _) => (Reach::Person { person_id: token.person_id, admin: token.role == "admin", personal: false }, Who::Person { person_id: token.person_id }),
            (None, Some(person_id), _) => (Reach::Person { person_id, admin: caller.signed_in_admin.is_some(), personal: true }, Who::Person { person_id }),
            (None, None, Some(key_id)) => {
                let name = setup.key_name.ok_or_else(|| ApiError::new(ErrorKind::InvalidApiKey, "API key is invalid."))?;
                (Reach::Key { channel_ids: setup.key_channel_ids }, Who::Key { key_id, name })
            }
            (None, None, None) => return Err(ApiError::invalid_permission("The Inbox takes an API key, an OAuth token or the dashboard session.")),
        };
        Ok(Actor { team_id: caller.team_id, reach, who })
    }

    /// The actor of a dashboard session on a session-only Inbox route (drafts): the person in
    /// their current team; a viewer is refused, as for any write.
    pub async fn of_session(conn: &mut PgConnection, session: &schema::store::people::Session) -> ApiResult<Actor> {
        let Some(team_id) = session.team_id else {
            return Err(ApiError::invalid_permission("The session has no current team: switch to one first."));
        };
        if session.role.as_deref() == Some("viewer") {
            return Err(ApiError::invalid_permission("A viewer of the team reads the Inbox and cannot write to it."));
        }
        if !inbox::setup(conn, team_id, None).await?.has_open_channel {
            return Err(ApiError::new(ErrorKind::InboxNotSetUp, "The team's Inbox is not set up: a team admin adds a channel first (`POST /inbox/channels`)."));
        }
        let person_id = session.person_id;
        Ok(Actor { team_id, reach: Reach::Person { person_id, admin: session.role.as_deref() == Some("admin"), personal: true }, who: Who::Person { person_id } })
    }

    /// The channel named by `raw` (its id or its address) when this actor reaches it.
    pub async fn channel(&self, conn: &mut PgConnection, raw: &str) -> ApiResult<Option<inbox::Channel>> {
        if let Some(id) = schema::ids::parse_id(raw) {
            return Ok(inbox::get(conn, self.team_id, id, Some(&self.reach)).await?);
        }
        let Ok(address) = schema::email::Mailbox::parse(raw) else { return Ok(None) };
        Ok(inbox::by_address(conn, self.team_id, &address.key(), &self.reach).await?)
    }

    /// Whether an API key is asking (a key has no read marks, stars, snoozes or drafts).
    pub fn is_key(&self) -> bool {
        matches!(self.who, Who::Key { .. })
    }

    /// The author columns of what this actor writes: person, key and the key's name.
    pub fn author(&self) -> (Option<Uuid>, Option<Uuid>, Option<&str>) {
        match &self.who {
            Who::Key { key_id, name } => (None, Some(*key_id), Some(name.as_str())),
            Who::Person { person_id } => (Some(*person_id), None, None),
        }
    }
}
