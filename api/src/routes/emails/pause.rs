//! The operator's `herald sending pause`: while the `sending` switch is off, the send routes
//! answer `503 service_unavailable` with `retry-after`. Each process reads the switch at most
//! once a second, so a send costs no query of its own for it and a pause holds everywhere
//! within a second.

use crate::http::error::{ApiError, ApiResult, ErrorKind};
use schema::store::switches::{self, Switch};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a process trusts the switch it read.
const FRESH: Duration = Duration::from_secs(1);
/// The `retry-after` a paused send answers with.
const RETRY_AFTER_SECONDS: u64 = 60;

/// The `sending` switch as this process last read it.
#[derive(Default)]
pub struct SendingSwitch {
    read: Mutex<Option<(Instant, bool)>>,
}

impl SendingSwitch {
    /// `503 service_unavailable` while the operator has paused sending.
    pub async fn check(&self, pool: &sqlx::PgPool) -> ApiResult<()> {
        let known = *self.read.lock().unwrap_or_else(|e| e.into_inner());
        let off = match known {
            Some((at, off)) if at.elapsed() < FRESH => off,
            _ => {
                let off = switches::is_off(&mut *pool.acquire().await?, Switch::Sending).await?;
                *self.read.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), off));
                off
            }
        };
        if off {
            return Err(ApiError::new(
                ErrorKind::ServiceUnavailable,
                "Sending is paused on this Herald by its operator; nothing was accepted. Retry after the `retry-after` seconds.",
            )
            .with_retry_after(RETRY_AFTER_SECONDS));
        }
        Ok(())
    }
}
