//! Event rows, written in the transaction of the change they describe. Delivery to webhook
//! endpoints reads them (the webhooks issue).

use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

/// One event about to be written.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub team_id: Uuid,
    pub event_type: &'static str,
    pub data: Value,
    /// The email whose timeline this event belongs to.
    pub email_id: Option<Uuid>,
}

/// Writes events and their webhook deliveries in one statement.
pub async fn emit(conn: &mut PgConnection, events: &[NewEvent]) -> sqlx::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = events.iter().map(|_| crate::ids::new_id()).collect();
    let teams: Vec<Uuid> = events.iter().map(|e| e.team_id).collect();
    let types: Vec<&str> = events.iter().map(|e| e.event_type).collect();
    let data: Vec<Value> = events.iter().map(|e| e.data.clone()).collect();
    let emails: Vec<Option<Uuid>> = events.iter().map(|e| e.email_id).collect();
    // The same statement writes one webhook delivery per subscribed, enabled endpoint: the
    // dispatchers pick those rows up, so an event and its deliveries commit together.
    sqlx::query(
        "WITH ev AS (
             INSERT INTO events (id, team_id, type, data, email_id)
             SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::uuid[])
             RETURNING id, team_id, type
         )
         INSERT INTO webhook_deliveries (id, team_id, endpoint_id, event_id)
         SELECT herald_uuid_v7(), ev.team_id, w.id, ev.id
         FROM ev JOIN webhook_endpoints w ON w.team_id = ev.team_id AND w.status = 'enabled' AND ev.type = ANY (w.events)",
    )
        .bind(&ids)
        .bind(&teams)
        .bind(&types)
        .bind(&data)
        .bind(&emails)
        .execute(conn)
        .await?;
    Ok(())
}
