//! What happened to a sent broadcast: its recipients with their outcome, and the links clicked.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Bounded, Choice, Choices, IdText, Nullable};
use crate::http::paging::{keyed_page_request, page_by_key, page_request};
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::Object;
use schema::store::broadcasts::{self};
use crate::routes::broadcasts::views::RecipientType;
use crate::routes::broadcasts::views::found;

pub struct BroadcastReportsApi;

#[poem_openapi::OpenApi(tag = "Tag::Broadcasts")]
impl BroadcastReportsApi {
    /// The contacts a send resolved, newest first: each sent one with its email, each left-out
    /// one with the reason.
    #[oai(path = "/broadcasts/:broadcast_id/recipients", method = "get", operation_id = "list-broadcast-recipients")]
    #[allow(clippy::too_many_arguments)]
    async fn recipients(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        broadcast_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after this contact id.
        after: Query<Option<IdText>>,
        /// Return items before this contact id.
        before: Query<Option<IdText>>,
        /// Only recipients with this outcome.
        #[oai(name = "type")]
        kind: Query<Option<Choice<RecipientType>>>,
    ) -> ApiResult<Json<BroadcastRecipientList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        if let Some(kind) = kind.0.as_ref().filter(|k| !RecipientType::allows(k.as_str())) {
            return Err(ApiError::invalid_parameter("type", format!("must be one of {}, not {:?}", RecipientType::VALUES.join(", "), kind.as_str())));
        }
        let mut conn = state.pool.acquire().await?;
        let broadcast = found(&mut conn, caller.team_id, &broadcast_id.0, false).await?;
        let page = broadcasts::recipients(&mut conn, broadcast.id, &page, kind.0.as_ref().map(|k| k.as_str())).await?;
        let data = page
            .data
            .into_iter()
            .map(|r| BroadcastRecipient {
                id: r.contact_id.to_string(),
                contact_id: r.contact_id.to_string(),
                email: r.email,
                email_id: Nullable(r.email_id.map(|id| id.to_string())),
                excluded_reason: Nullable(r.excluded_reason),
                last_event: Nullable(r.last_event),
            })
            .collect();
        Ok(Json(BroadcastRecipientList { object: "list".into(), has_more: page.has_more, data }))
    }

    /// The links recipients clicked (click tracking on the sending domain), each with its
    /// clicks and unique clickers, most clicked first.
    #[oai(path = "/broadcasts/:broadcast_id/clicked-links", method = "get", operation_id = "list-broadcast-clicked-links")]
    async fn clicked_links(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        broadcast_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after the one with this link, in the list's order.
        after: Query<Option<Bounded<1, 2048>>>,
        /// Return the items before the one with this link, in the list's order.
        before: Query<Option<Bounded<1, 2048>>>,
    ) -> ApiResult<Json<BroadcastClickedLinks>> {
        let page = keyed_page_request(limit.0, after.0.map(|k| k.0), before.0.map(|k| k.0))?;
        let mut conn = state.pool.acquire().await?;
        let broadcast = found(&mut conn, caller.team_id, &broadcast_id.0, false).await?;
        let links = page_by_key(schema::store::engagements::clicked_links(&mut conn, broadcast.id).await?, |l| l.link.clone(), &page)?;
        let data = links.data.into_iter().map(|l| BroadcastClickedLink { link: l.link, clicks: l.clicks, unique_clickers: l.unique_clickers }).collect();
        Ok(Json(BroadcastClickedLinks { object: "list".into(), has_more: links.has_more, data }))
    }
}

/// One link of a broadcast and how it was clicked.
#[derive(Object)]
pub struct BroadcastClickedLink {
    /// The address as written in the broadcast.
    pub link: String,
    /// Every click, repeated ones included.
    pub clicks: i64,
    /// Recipients who clicked it at least once.
    pub unique_clickers: i64,
}

/// A broadcast's clicked links, most clicked first (at most 1,000).
#[derive(Object)]
pub struct BroadcastClickedLinks {
    /// Always `list`.
    pub object: String,
    /// Whether more links follow this page.
    pub has_more: bool,
    /// The clicked links, most clicked first.
    pub data: Vec<BroadcastClickedLink>,
}

/// A contact a send resolved.
#[derive(Object)]
pub struct BroadcastRecipient {
    /// The row's paging cursor (`after` / `before`): the contact's id, as the Resend SDKs read
    /// an opaque `id`.
    pub id: String,
    /// The contact's id.
    pub contact_id: String,
    /// The contact's address when the send resolved it.
    pub email: String,
    /// The email created for the contact, or `null` when it was left out.
    pub email_id: Nullable<String>,
    /// Why the contact was left out: `unsubscribed`, `topic_opt_out` or `suppressed`.
    pub excluded_reason: Nullable<String>,
    /// The email's latest event.
    pub last_event: Nullable<String>,
}

/// A page of recipients.
#[derive(Object)]
pub struct BroadcastRecipientList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest contact first.
    pub data: Vec<BroadcastRecipient>,
}
