//! Idempotent requests. A route that accepts `Idempotency-Key` calls [`begin`]; a replay
//! within 24 hours answers the original status and body; the same key still in flight is
//! `409 concurrent_idempotent_requests`; the same key with another request is
//! `409 invalid_idempotent_request`. The answer is stored by [`Claimed::complete`] inside the
//! route's own transaction, so it commits together with what the request wrote.

use crate::http::error::{ApiError, ApiResult, ErrorKind};
use poem::http::StatusCode;
use schema::store::idempotency::{self, Claim};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Longest accepted key.
pub const MAX_KEY_LEN: usize = 256;

/// A validated `Idempotency-Key` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Reads the header value; outside 1 to 256 characters is `400 invalid_idempotency_key`.
    pub fn parse(raw: Option<&str>) -> ApiResult<Option<Self>> {
        match raw {
            None => Ok(None),
            Some(raw) if (1..=MAX_KEY_LEN).contains(&raw.chars().count()) => Ok(Some(Self(raw.to_string()))),
            Some(_) => Err(ApiError::new(ErrorKind::InvalidIdempotencyKey, "The `Idempotency-Key` must be between 1 and 256 characters.",
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What the route should do.
#[derive(Debug)]
pub enum Begin {
    /// Run the request (`Some` when it holds a key claim to complete).
    Proceed(Option<Claimed>),
    /// Answer this stored response.
    Replay { status: StatusCode, body: serde_json::Value },
}

/// A claimed key: complete it in the route's transaction, or release it on failure.
#[derive(Debug)]
pub struct Claimed {
    team_id: Uuid,
    key: String,
}

/// The fingerprint of a request: what makes two requests "the same request".
pub fn fingerprint(method: &str, path: &str, body: &[u8]) -> Vec<u8> {
    let mut material = Vec::with_capacity(method.len() + path.len() + body.len() + 2);
    material.extend_from_slice(method.as_bytes());
    material.push(b' ');
    material.extend_from_slice(path.as_bytes());
    material.push(b'\n');
    material.extend_from_slice(body);
    schema::secret::hash(&String::from_utf8_lossy(&material))
}

/// Claims `key` for this request, or says what to answer instead.
pub async fn begin(pool: &PgPool, team_id: Uuid, key: Option<&IdempotencyKey>, fingerprint: &[u8]) -> ApiResult<Begin> {
    let Some(key) = key else { return Ok(Begin::Proceed(None)) };
    let mut conn = pool.acquire().await?;
    // A claim racing another first insert of the same key sees neither row nor conflict in its
    // snapshot; the next statement sees the winner.
    let mut claim = None;
    for _ in 0..3 {
        match idempotency::claim(&mut conn, team_id, key.as_str(), fingerprint).await {
            Ok(found) => {
                claim = Some(found);
                break;
            }
            Err(sqlx::Error::RowNotFound) => continue,
            Err(error) => return Err(error.into()),
        }
    }
    match claim.ok_or(sqlx::Error::RowNotFound)? {
        Claim::Fresh => Ok(Begin::Proceed(Some(Claimed { team_id, key: key.as_str().to_string() }))),
        Claim::InFlight => Err(ApiError::new(ErrorKind::ConcurrentIdempotentRequests, "Another request with this `Idempotency-Key` is still being processed. Retry after it completes.",
        )),
        Claim::Mismatch => Err(ApiError::new(ErrorKind::InvalidIdempotentRequest, "This `Idempotency-Key` was already used with a different request.",
        )),
        Claim::Answered { status, body } => {
            let status = StatusCode::from_u16(status as u16).unwrap_or(StatusCode::OK);
            Ok(Begin::Replay { status, body })
        }
    }
}

impl Claimed {
    /// Stores the answer, inside the transaction that wrote the request's rows.
    pub async fn complete(&self, conn: &mut PgConnection, status: StatusCode, body: &serde_json::Value) -> ApiResult<()> {
        idempotency::complete(conn, self.team_id, &self.key, status.as_u16() as i16, body).await?;
        Ok(())
    }

    /// Gives the key back after a failure that wrote nothing, so a retry can run. When
    /// PostgreSQL is what failed, the release is retried in the background for a minute, so a
    /// client retrying through an outage is accepted seconds after PostgreSQL is back instead of
    /// after the two minutes that mark a claim abandoned. A minute stays inside those two, so a
    /// late release never removes a later request's claim (none can take this one over sooner).
    pub async fn release(self, pool: &PgPool) {
        if self.try_release(pool).await.is_ok() {
            return;
        }
        let pool = pool.clone();
        tokio::spawn(async move {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(RELEASE_RETRY_SECONDS);
            while std::time::Instant::now() < until {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                if self.try_release(&pool).await.is_ok() {
                    return;
                }
            }
            tracing::warn!("releasing an idempotency key failed; it frees itself after two minutes");
        });
    }

    async fn try_release(&self, pool: &PgPool) -> sqlx::Result<()> {
        let mut conn = pool.acquire().await?;
        idempotency::release(&mut conn, self.team_id, &self.key).await
    }
}

/// How long a failed release is retried: well inside [`idempotency::ABANDONED_SECONDS`].
const RELEASE_RETRY_SECONDS: u64 = 60;
const _: () = assert!(RELEASE_RETRY_SECONDS * 2 <= idempotency::ABANDONED_SECONDS as u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_one_to_256_characters_are_accepted() {
        assert!(IdempotencyKey::parse(Some("a")).unwrap().is_some());
        assert!(IdempotencyKey::parse(Some(&"é".repeat(256))).unwrap().is_some());
        assert_eq!(IdempotencyKey::parse(None).unwrap(), None);
    }

    #[test]
    fn an_empty_or_overlong_key_is_an_invalid_idempotency_key() {
        for raw in [String::new(), "k".repeat(257)] {
            let error = IdempotencyKey::parse(Some(&raw)).unwrap_err();
            assert_eq!((error.status.as_u16(), error.name), (400, "invalid_idempotency_key"));
        }
    }

    #[test]
    fn the_fingerprint_depends_on_the_body() {
        assert_ne!(fingerprint("POST", "/emails", b"{}"), fingerprint("POST", "/emails", b"{\"a\":1}"));
    }
}
