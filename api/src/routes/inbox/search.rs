//! Inbox search: PostgreSQL full-text search over every message's subject, text and addresses
//! (a GIN index, never `ILIKE` over bodies), best match first, with a snippet.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::IdText;
use crate::routes::Tag;
use crate::routes::inbox::actor::Actor;
use crate::routes::inbox::views::{self, InboxConversation};
use crate::state::{AppState, Caller};
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use schema::store::inbox_search;

pub struct InboxSearchApi;

/// A conversation that matched.
#[derive(Object)]
pub struct InboxSearchHit {
    /// Always `inbox_search_hit`.
    pub object: String,
    /// The conversation.
    pub conversation: InboxConversation,
    /// Its best-matching message.
    pub message_id: String,
    /// Words around the match in that message, each matching word in `<b>` and `</b>`.
    pub snippet: String,
    /// How well it matched (higher first).
    pub rank: f32,
}

/// A page of matches.
#[derive(Object)]
pub struct InboxSearchResults {
    /// Always `list`.
    pub object: String,
    /// Whether more matches follow this page.
    pub has_more: bool,
    /// The matches, best first.
    pub data: Vec<InboxSearchHit>,
}

#[poem_openapi::OpenApi(tag = "Tag::Inbox")]
impl InboxSearchApi {
    /// Search the conversations of the channels the caller reaches: words, `"a phrase"` or
    /// `-excluded` words in their subjects, messages, notes and addresses. Blank or over 200
    /// characters is `422 invalid_parameter`.
    #[oai(path = "/inbox/search", method = "get", operation_id = "search-inbox")]
    async fn search(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// What to look for, 1 to 200 characters.
        #[oai(validator(min_length = 1, max_length = 200))]
        q: Query<String>,
        /// Matches per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Continue after this conversation of the previous page (lower matches).
        after: Query<Option<IdText>>,
        /// Go back before this conversation of the next page (better matches).
        before: Query<Option<IdText>>,
    ) -> ApiResult<Json<InboxSearchResults>> {
        let text = q.0.trim();
        if text.is_empty() || text.chars().count() > 200 {
            return Err(ApiError::invalid_parameter("q", "must be 1 to 200 characters, not blank"));
        }
        let page = crate::http::paging::page_request(limit.0, after.0, before.0)?;
        let mut conn = state.pool.acquire().await?;
        let actor = Actor::of(&mut conn, &caller).await?;
        let (hits, has_more) = inbox_search::search(&mut conn, actor.team_id, &actor.reach, text, page.limit, page.cursor).await?;
        let data = hits
            .into_iter()
            .map(|hit| InboxSearchHit {
                object: "inbox_search_hit".into(),
                message_id: hit.message_id.to_string(),
                snippet: hit.snippet,
                rank: hit.rank,
                conversation: views::conversation(hit.conversation),
            })
            .collect();
        Ok(Json(InboxSearchResults { object: "list".into(), has_more, data }))
    }
}
