//! How bodies and paths name the audience: a contact by id or address, segments by id, and
//! contact property keys.

use crate::http::error::{ApiError, ApiResult};
use schema::store::contacts::Key;
use schema::store::segments;
use serde_json::Value;
use uuid::Uuid;
use crate::routes::path_id;
use crate::state::AppState;
use crate::state::Caller;

/// Most properties a team declares.
pub const MAX_PROPERTIES: usize = 100;
/// A path's contact: an id, or an address (any case); anything else is `404 not_found`.
pub fn contact_key(raw: &str) -> ApiResult<Key> {
    crate::http::input::id_or_address(raw, "Contact")
}

/// A property key: a letter or underscore, then letters, digits or underscores; 1 to 50.
pub fn valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= 50
}

/// Checks segment ids sent with a contact (`[{ id }]`); `path` names the body field in errors.
pub async fn segment_ids(conn: &mut sqlx::PgConnection, team_id: Uuid, items: &[Value], path: &str) -> ApiResult<Vec<Uuid>> {
    let mut ids = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let id = item.get("id").and_then(Value::as_str).and_then(schema::ids::parse_id);
        ids.push(id.ok_or_else(|| ApiError::invalid_parameter(&format!("{path}[{i}].id"), "is not a segment id"))?);
    }
    let live = segments::live_ids(conn, team_id, &ids).await?;
    if let Some(i) = ids.iter().position(|id| !live.contains(id)) {
        return Err(ApiError::invalid_parameter(&format!("{path}[{i}].id"), "is not one of the team's segments"));
    }
    Ok(ids)
}

/// The live segment an audience path names; anything else is 404.
pub async fn live_audience(state: &AppState, caller: &Caller, raw: &str) -> ApiResult<uuid::Uuid> {
    let id = path_id(raw, "Audience")?;
    let found = schema::store::segments::get(&mut *state.pool.acquire().await?, caller.team_id, id).await?;
    found.map(|segment| segment.id).ok_or_else(|| ApiError::not_found("Audience"))
}
