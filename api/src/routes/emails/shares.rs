//! Read-only view links of sent emails: minted once, stored as a hash, revocable.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::routes::{Tag, path_id};
use crate::state::{AppState, Caller};
use chrono::{DateTime, TimeDelta, Utc};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::Object;
use schema::store::{emails, shares};
use serde::Deserialize;

/// The longest (and default) life of a view link.
pub const MAX_SHARE_LIFE: TimeDelta = TimeDelta::hours(48);

pub struct EmailSharesApi;

/// Body of `POST /emails/{email_id}/share`.
#[derive(Object, Deserialize, Default)]
pub struct ShareRequest {
    /// How long the link works: a duration such as `10m`, `2 hours` or `1 day`. Default and
    /// maximum 48 hours.
    pub expires_in: Option<String>,
}

/// A view link. `url` is shown only in this answer; Herald keeps a hash of it.
#[derive(Object)]
pub struct ShareView {
    /// Always `email_share`.
    pub object: String,
    /// The email the link shows (the Resend SDKs read the email's id here).
    pub id: String,
    /// The email the link shows.
    pub email_id: String,
    /// The link's own id.
    pub share_id: String,
    /// The read-only page, at the deployment's public URL.
    pub url: String,
    /// When the link stops working.
    pub expires_at: DateTime<Utc>,
    /// When the link was minted.
    pub created_at: DateTime<Utc>,
}

/// The answer of revoking an email's links.
#[derive(Object)]
pub struct SharesRevoked {
    /// Always `email_share`.
    pub object: String,
    /// The email whose links were revoked.
    pub email_id: String,
    /// How many live links stopped working.
    pub revoked: i64,
}

#[poem_openapi::OpenApi(tag = "Tag::Emails")]
impl EmailSharesApi {
    /// Create a read-only view link to a sent email. The link is returned once; only its hash is
    /// stored. An unknown, expired or revoked link answers the same 404.
    #[oai(path = "/emails/:email_id/share", method = "post", operation_id = "share-email")]
    async fn share(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        email_id: Path<String>,
        body: Body<ShareRequest>,
    ) -> ApiResult<Json<ShareView>> {
        let life = life(body.0.expires_in.as_deref())?;
        let id = path_id(&email_id.0, "Email")?;
        let token = schema::secret::mint("");
        let mut conn = state.pool.acquire().await?;
        emails::get(&mut conn, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        super::manage::content_readable(&mut conn, caller.team_id).await?;
        let share = shares::create(&mut conn, id, &token.hash, Utc::now() + life).await?;
        Ok(Json(ShareView {
            object: "email_share".into(),
            id: id.to_string(),
            email_id: id.to_string(),
            share_id: share.id.to_string(),
            url: format!("{}/share/{}", state.config.public_url, token.plaintext),
            expires_at: share.expires_at,
            created_at: share.created_at,
        }))
    }

    /// Revoke every live view link of an email; they answer 404 from then on.
    #[oai(path = "/emails/:email_id/share", method = "delete", operation_id = "revoke-email-shares")]
    async fn revoke(&self, state: Data<&AppState>, caller: Data<&Caller>, email_id: Path<String>) -> ApiResult<Json<SharesRevoked>> {
        let id = path_id(&email_id.0, "Email")?;
        let mut tx = state.pool.begin().await?;
        emails::lock(&mut tx, caller.team_id, id).await?.ok_or_else(|| ApiError::not_found("Email"))?;
        let revoked = shares::revoke_all(&mut tx, id).await?;
        tx.commit().await?;
        Ok(Json(SharesRevoked { object: "email_share".into(), email_id: id.to_string(), revoked: revoked as i64 }))
    }
}

/// A link's life: `expires_in` read as a duration, more than zero and at most 48 hours.
fn life(expires_in: Option<&str>) -> ApiResult<TimeDelta> {
    let Some(raw) = expires_in else { return Ok(MAX_SHARE_LIFE) };
    let life = schema::when::parse_duration(raw)
        .ok_or_else(|| ApiError::invalid_field("expires_in", "must be a duration such as `10m`, `2 hours` or `1 day`"))?;
    if life <= TimeDelta::zero() || life > MAX_SHARE_LIFE {
        return Err(ApiError::invalid_field("expires_in", "must be more than zero and at most 48 hours"));
    }
    Ok(life)
}
