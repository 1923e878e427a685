//! Verified identities: a team in the sending sandbox proves it reads an address (a link mailed
//! to it, confirmed by a button on Herald's page) and the sandbox then delivers to it.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, IdText, Nullable};
use crate::http::paging::{page_of, page_request};
use crate::routes::pages::html::{PageResponse, escape};
use crate::routes::people::account_mail::{self, AccountMail};
use crate::routes::{Deleted, Tag, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, TimeDelta, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use schema::email::Mailbox;
use schema::store::identities::{self, Identity};
use serde::Deserialize;

/// How long a confirmation link works.
pub const LINK_HOURS: i64 = 24;

crate::choices! {
    /// `pending` until the mailed link is used, then `verified`.
    IdentityStatus = &["pending", "verified"];
}

/// Body of `POST /team/identities`.
#[derive(Object, Deserialize)]
pub struct NewIdentity {
    /// The address to verify; a link to confirm it is mailed to it.
    #[oai(validator(max_length = 320))]
    pub email: String,
}

/// An address the sandbox delivers to once it is verified.
#[derive(Object)]
pub struct IdentityView {
    /// Always `verified_identity`.
    pub object: String,
    /// The identity's id.
    pub id: String,
    /// The address, bare and lower-case.
    pub email: String,
    /// `pending` until the mailed link is used, then `verified`.
    pub status: Choice<IdentityStatus>,
    /// When the link was used.
    pub verified_at: Nullable<DateTime<Utc>>,
    /// When the latest link stops working.
    pub link_expires_at: DateTime<Utc>,
    /// When the address was first asked for.
    pub created_at: DateTime<Utc>,
}

/// The team's identities.
#[derive(Object)]
pub struct IdentityList {
    /// Always `list`.
    pub object: String,
    /// Whether more identities follow this page.
    pub has_more: bool,
    /// The identities, newest first.
    pub data: Vec<IdentityView>,
}

#[derive(ApiResponse)]
pub enum Requested {
    /// The identity, `pending` (or still `verified`); the link was mailed.
    #[oai(status = 201)]
    Created(Json<IdentityView>),
}

pub struct IdentitiesApi;

#[poem_openapi::OpenApi(tag = "Tag::Team")]
impl IdentitiesApi {
    /// Verify an address for the sending sandbox: mails it a link (valid 24 hours) whose page
    /// confirms it. Asking again for the same address mails a new link.
    #[oai(path = "/team/identities", method = "post", operation_id = "create-verified-identity")]
    async fn create(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<NewIdentity>) -> ApiResult<Requested> {
        let email = Mailbox::parse(&body.0.email).map_err(|message| ApiError::invalid_field("email", message))?.key();
        let token = schema::secret::mint("");
        let mut tx = state.pool.begin().await?;
        let identity = identities::request(&mut tx, caller.team_id, &email, &token.hash, Utc::now() + TimeDelta::hours(LINK_HOURS)).await?;
        let link = format!("{}/identities/{}", state.config.public_url.trim_end_matches('/'), token.plaintext);
        let mail = AccountMail {
            subject: "Confirm this address for a team's test mail on Herald",
            intro: "A team on Herald asked to send test mail to this address from its sending sandbox.",
            action: "Confirm this address",
            link: &link,
            outro: "The link works for 24 hours. If you did not expect it, ignore this message: nothing is sent to you.",
        };
        account_mail::send(&mut tx, &state.config, &email, &mail).await?;
        tx.commit().await?;
        Ok(Requested::Created(Json(view(identity))))
    }

    /// The team's verified identities, pending ones included, newest first.
    #[oai(path = "/team/identities", method = "get", operation_id = "list-verified-identities")]
    async fn list(
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
    ) -> ApiResult<Json<IdentityList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let all = page_of(identities::list(&mut *state.pool.acquire().await?, caller.team_id).await?, |i| i.id, &page)?;
        Ok(Json(IdentityList { object: "list".into(), has_more: all.has_more, data: all.data.into_iter().map(view).collect() }))
    }

    /// Remove an identity: the sandbox stops delivering to it.
    #[oai(path = "/team/identities/:identity_id", method = "delete", operation_id = "delete-verified-identity")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, identity_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let id = path_id(&identity_id.0, "Verified identity")?;
        if !identities::delete(&mut *state.pool.acquire().await?, caller.team_id, id).await? {
            return Err(ApiError::not_found("Verified identity"));
        }
        Ok(Json(Deleted { object: "verified_identity".into(), id: id.to_string(), deleted: true }))
    }

    /// The mailed link's page: a button that confirms the address (a link scanner's visit
    /// confirms nothing). An unknown, used or expired link: one page for all.
    #[oai(path = "/identities/:token", method = "get", operation_id = "view-verified-identity-link", tag = "Tag::Pages")]
    async fn page(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<PageResponse> {
        let found = identities::by_token(&mut *state.pool.acquire().await?, &schema::secret::hash(&token.0)).await?;
        let Some(identity) = found else { return Ok(PageResponse::not_found()) };
        let body = format!(
            "<main><h1>Confirm your address</h1><p>A team on Herald asked to send test mail to <strong>{}</strong>.</p>\
             <form method=\"post\"><button type=\"submit\">Confirm this address</button></form></main>",
            escape(&identity.email)
        );
        Ok(PageResponse::form_page("Confirm your address", &body))
    }

    /// Confirms the address the link names; the link then stops working.
    #[oai(path = "/identities/:token", method = "post", operation_id = "confirm-verified-identity", tag = "Tag::Pages")]
    async fn confirm(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<PageResponse> {
        let mut tx = state.pool.begin().await?;
        let Some(identity) = identities::confirm(&mut tx, &schema::secret::hash(&token.0)).await? else { return Ok(PageResponse::not_found()) };
        tx.commit().await?;
        let body = format!("<main><h1>Address confirmed</h1><p><strong>{}</strong> can now receive the team's test mail.</p></main>", escape(&identity.email));
        Ok(PageResponse::page(crate::routes::pages::html::document("Address confirmed", &body)))
    }
}

fn view(identity: Identity) -> IdentityView {
    IdentityView {
        object: "verified_identity".into(),
        id: identity.id.to_string(),
        email: identity.email,
        status: Choice::new(if identity.confirmed_at.is_some() { "verified" } else { "pending" }),
        verified_at: Nullable(identity.confirmed_at),
        link_expires_at: identity.expires_at,
        created_at: identity.created_at,
    }
}
