//! Platform-wide switches an operator flips with the CLI: `marketing` (broadcast sends) and
//! `sending` (every send accepted through the API). A switch never set is on.

use sqlx::PgConnection;

/// A platform-wide switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// Broadcast sends (`herald marketing pause | resume`).
    Marketing,
    /// Sends accepted through the API (`herald sending pause | resume`).
    Sending,
}

impl Switch {
    fn name(self) -> &'static str {
        match self {
            Switch::Marketing => "marketing",
            Switch::Sending => "sending",
        }
    }
}

/// Whether the switch is off (paused) platform-wide.
pub async fn is_off(conn: &mut PgConnection, switch: Switch) -> sqlx::Result<bool> {
    let off: Option<bool> = sqlx::query_scalar("SELECT NOT enabled FROM platform_switches WHERE name = $1").bind(switch.name()).fetch_optional(conn).await?;
    Ok(off.unwrap_or(false))
}

/// Turns the switch on (`true`) or off (`false`) platform-wide.
pub async fn set(conn: &mut PgConnection, switch: Switch, enabled: bool) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO platform_switches (name, enabled) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET enabled = EXCLUDED.enabled, changed_at = now()",
    )
    .bind(switch.name())
    .bind(enabled)
    .execute(conn)
    .await?;
    Ok(())
}
