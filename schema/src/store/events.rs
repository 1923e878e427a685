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
    // dispatchers pick those rows up, so an event and its deliveries commit together. It also
    // starts the runs of the built-in triggers `svc:contact.created` (the contact in `data`) and
    // `svc:email.*` (each contact whose address is in `to`), except for the automation whose
    // own email the event is about (its `automation_id` tag), so no automation feeds itself,
    // and except for contacts a migration brought in (`source: migration`), who are never mailed.
    sqlx::query(
        "WITH ev AS (
             INSERT INTO events (id, team_id, type, data, email_id)
             SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::uuid[])
             RETURNING id, team_id, type, data
         ), runs AS (
             INSERT INTO automation_runs (id, team_id, automation_id, version, contact_id, trigger_event, event_data)
             SELECT herald_uuid_v7(), a.team_id, a.id, a.current_version, c.id, a.trigger_event, ev.data
             FROM ev
             JOIN automations a ON a.team_id = ev.team_id AND a.trigger_event = 'svc:' || ev.type AND a.status = 'enabled' AND a.deleted_at IS NULL
             -- Two lookups, each by an index (an OR of the two would scan the team's contacts).
             JOIN LATERAL (
                 SELECT c.id FROM contacts c
                 WHERE ev.type = 'contact.created' AND c.team_id = ev.team_id AND c.id = (ev.data->>'id')::uuid
                 UNION
                 SELECT c.id FROM contacts c
                 WHERE ev.type LIKE 'email.%' AND c.team_id = ev.team_id
                   AND c.email = ANY (ARRAY(SELECT lower(t) FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(ev.data->'to') = 'array' THEN ev.data->'to' ELSE '[]' END) AS t))
             ) c ON true
             WHERE ev.data->'tags'->>'automation_id' IS DISTINCT FROM a.id::text
               AND ev.data->>'source' IS DISTINCT FROM 'migration'
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
