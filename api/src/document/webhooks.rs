//! The document's `webhooks` section: one entry per event type an endpoint can subscribe to,
//! with the signed envelope Herald POSTs and each family's `data`.

use schema::store::webhooks::EVENT_TYPES;
use serde_json::{Map, Value, json};

/// The extra key each `email.*` type adds to `data`, with its fields (document C).
const EMAIL_EXTRAS: &[(&str, &str, &[&str])] = &[
    ("email.bounced", "bounce", &["type", "subType", "message", "diagnosticCode"]),
    ("email.opened", "open", &["ipAddress", "timestamp", "userAgent"]),
    ("email.clicked", "click", &["ipAddress", "link", "timestamp", "userAgent"]),
    ("email.failed", "failed", &["reason"]),
    ("email.suppressed", "suppressed", &["reason", "type", "message", "diagnosticCode"]),
    ("email.delivery_delayed", "delay", &["type", "expirationTime", "delayedRecipients"]),
];

/// Schemas the entries refer to, for `components.schemas`.
pub fn schemas() -> Value {
    json!({
        "WebhookEmailEventData": {
            "type": "object",
            "description": "`data` of every `email.*` event. For per-recipient events `to` lists only the recipients the event concerns; `tags` and `headers` appear when the email had them.",
            "required": ["email_id", "from", "to", "subject", "message_id", "created_at"],
            "properties": {
                "email_id": { "type": "string", "description": "The email's id." },
                "from": { "type": "string", "description": "The email's From, as sent." },
                "to": { "type": "array", "items": { "type": "string" }, "description": "The recipients the event concerns." },
                "subject": { "type": "string", "description": "The email's subject line." },
                "message_id": { "type": "string", "description": "The Message-ID header's value (without angle brackets)." },
                "created_at": { "type": "string", "format": "date-time", "description": "The email's own time." },
                "tags": { "type": "object", "additionalProperties": { "type": "string" }, "description": "The email's tags, name to value; absent when it had none." },
                "headers": { "type": "object", "additionalProperties": { "type": "string" }, "description": "The email's custom headers, name to value; absent when it had none." }
            }
        },
        "WebhookContactEventData": {
            "type": "object",
            "description": "`data` of `contact.*` events: the contact as it is (on delete, as it was just before).",
            "required": ["id", "email", "first_name", "last_name", "unsubscribed", "properties", "created_at", "updated_at", "segment_ids", "audience_id"],
            "properties": {
                "id": { "type": "string", "description": "The contact's id." },
                "email": { "type": "string", "description": "The contact's address." },
                "first_name": { "type": ["string", "null"], "description": "The first name, or `null`." },
                "last_name": { "type": ["string", "null"], "description": "The last name, or `null`." },
                "unsubscribed": { "type": "boolean", "description": "Whether the contact is unsubscribed from all marketing mail." },
                "properties": { "type": "object", "additionalProperties": { "type": ["string", "number", "boolean"] }, "description": "Property key to value." },
                "created_at": { "type": "string", "format": "date-time", "description": "When the contact was created." },
                "updated_at": { "type": "string", "format": "date-time", "description": "When the contact last changed." },
                "segment_ids": { "type": "array", "items": { "type": "string" }, "description": "Every live segment holding the contact, by filter or by membership." },
                "audience_id": { "type": "string", "description": "The first of `segment_ids`, or `\"\"` when there is none (the field the Resend SDKs read)." },
                "source": { "type": "string", "enum": ["migration"], "description": "`migration` on `contact.created` for a contact a migration brought; absent otherwise." }
            }
        },
        "WebhookAutomationRunEventData": {
            "type": "object",
            "description": "`data` of `automation.run.*` events.",
            "required": ["id", "object", "automation_id", "version", "contact_id", "trigger", "event_id", "status", "error", "created_at", "completed_at"],
            "properties": {
                "id": { "type": "string", "description": "The run's id." },
                "object": { "type": "string", "const": "automation_run", "description": "Always `automation_run`." },
                "automation_id": { "type": "string", "description": "The automation's id." },
                "version": { "type": "integer", "description": "The version the run started on and keeps." },
                "contact_id": { "type": "string", "description": "The contact the run carries." },
                "trigger": { "type": "string", "description": "The trigger's event name (a custom event's, or a built-in `svc:` one)." },
                "event_id": { "type": ["string", "null"], "description": "The recorded custom event, or `null` for a built-in trigger." },
                "status": { "type": "string", "enum": ["running", "completed", "failed", "cancelled"], "description": "The run's status when the event was made." },
                "error": { "type": ["string", "null"], "description": "Why the run failed, or `null`." },
                "created_at": { "type": "string", "format": "date-time", "description": "When the run started." },
                "completed_at": { "type": ["string", "null"], "format": "date-time", "description": "When it completed or failed, or `null`." }
            }
        },
        "WebhookInboxEventData": {
            "type": "object",
            "description": "`data` of `inbox.*` events: the conversation, and what happened to it (the fields each type adds are named on them).",
            "required": ["conversation_id", "channel_id", "subject"],
            "properties": {
                "conversation_id": { "type": "string", "description": "The conversation's id." },
                "channel_id": { "type": "string", "description": "The channel it came in on." },
                "subject": { "type": "string", "description": "The conversation's subject." },
                "customer": { "type": "object", "properties": { "email": { "type": "string" }, "name": { "type": ["string", "null"] } }, "description": "`inbox.conversation.created`: who wrote." },
                "external_id": { "type": ["string", "null"], "description": "`inbox.conversation.created`: the id a conversation made through the API was given." },
                "message_id": { "type": "string", "description": "`inbox.message.received`, `inbox.reply.sent`, `inbox.note.created`: the message's id." },
                "from": { "type": "string", "description": "`inbox.message.received`: the sender." },
                "received_email_id": { "type": ["string", "null"], "description": "`inbox.message.received`: the received email it came as." },
                "email_id": { "type": ["string", "null"], "description": "`inbox.reply.sent`: the sent email it went out as." },
                "author": { "type": "object", "description": "`inbox.note.created`: who wrote the note." },
                "assignee_id": { "type": ["string", "null"], "description": "`inbox.conversation.assigned`: the new assignee, or `null`." },
                "previous_assignee_id": { "type": ["string", "null"], "description": "`inbox.conversation.assigned`: the previous assignee, or `null`." },
                "status": { "type": "string", "description": "`inbox.conversation.status_changed`: the new status." },
                "previous_status": { "type": "string", "description": "`inbox.conversation.status_changed`: the previous status." }
            }
        },
        "WebhookDomainEventData": {
            "type": "object",
            "description": "`data` of `domain.*` events (on delete, the domain as it was).",
            "required": ["id", "name", "status", "region", "created_at", "records"],
            "properties": {
                "id": { "type": "string", "description": "The domain's id." },
                "name": { "type": "string", "description": "The domain's name." },
                "status": { "type": "string", "description": "The domain's state, as `GET /domains/{domain_id}` shows it." },
                "region": { "type": "string", "description": "Where the domain's mail leaves from." },
                "created_at": { "type": "string", "format": "date-time", "description": "When the domain was added." },
                "records": { "type": "array", "description": "Each of the domain's records with what its last check found.", "items": { "type": "object", "properties": {
                    "record": { "type": "string", "description": "`DKIM`, `SPF` (the mail-from record), `Receiving MX` or `Tracking`, as the Resend SDKs name them." },
                    "kind": { "type": "string", "description": "`dkim`, `mail_from`, `receiving` or `tracking`." },
                    "type": { "type": "string", "description": "`TXT`, `CNAME` or `MX`." },
                    "status": { "type": "string", "description": "What DNS said about the record at its last check." }
                } } }
            }
        },
        "WebhookSuppressionEventData": {
            "type": "object",
            "description": "`data` of `suppression.added` and `suppression.removed`.",
            "required": ["id", "email", "origin", "created_at"],
            "properties": {
                "id": { "type": "string", "description": "The suppression's id." },
                "email": { "type": "string", "description": "The suppressed address." },
                "origin": { "type": "string", "enum": ["bounce", "complaint", "manual", "unsubscribe"], "description": "Why the address is suppressed." },
                "source_id": { "type": ["string", "null"], "description": "The email that caused it, or `null` when none did." },
                "created_at": { "type": "string", "format": "date-time", "description": "When the address was suppressed." }
            }
        }
    })
}

/// The `webhooks` section.
pub fn webhooks() -> Value {
    let mut entries = Map::new();
    for event_type in EVENT_TYPES {
        let data = data_schema(event_type);
        let operation = json!({
            "operationId": format!("webhook-{}", event_type.replace('.', "-")),
            "summary": format!("`{event_type}`"),
            "description": "POSTed to every enabled endpoint subscribed to this type. Verify `hook-signature` over the raw body: base64 HMAC-SHA256 of `<hook-id>.<hook-timestamp>.<body>` under the base64-decoded secret without `whsec_`; any `v1,` entry may match. Reject timestamps more than 300 s away; dedupe on `hook-id`.",
            "parameters": [
                { "name": "hook-id", "in": "header", "required": true, "schema": { "type": "string" }, "description": "The event's id; the same on every retry and replay." },
                { "name": "hook-timestamp", "in": "header", "required": true, "schema": { "type": "string" }, "description": "Unix seconds." },
                { "name": "hook-signature", "in": "header", "required": true, "schema": { "type": "string" }, "description": "`v1,<base64>` entries separated by spaces (two during a secret rotation)." },
                { "name": "webhook-id", "in": "header", "required": true, "schema": { "type": "string" }, "description": "`hook-id` under its Standard Webhooks name." },
                { "name": "webhook-timestamp", "in": "header", "required": true, "schema": { "type": "string" }, "description": "`hook-timestamp` under its Standard Webhooks name." },
                { "name": "webhook-signature", "in": "header", "required": true, "schema": { "type": "string" }, "description": "`hook-signature` under its Standard Webhooks name: `standardwebhooks`, `svix` and the Resend SDKs verify with it." },
                { "name": "user-agent", "in": "header", "required": true, "schema": { "type": "string", "const": "Service-Webhooks/1.0" } }
            ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": {
                "type": "object",
                "required": ["type", "created_at", "data"],
                "properties": {
                    "type": { "type": "string", "const": event_type },
                    "created_at": { "type": "string", "format": "date-time", "description": "The event's own time." },
                    "data": data
                }
            } } } },
            "responses": {
                "2XX": { "description": "Acknowledged. Anything else, a timeout or a refused connection is retried on the schedule." }
            }
        });
        entries.insert(event_type.to_string(), json!({ "post": operation }));
    }
    Value::Object(entries)
}

fn data_schema(event_type: &str) -> Value {
    if let Some((_, key, fields)) = EMAIL_EXTRAS.iter().find(|(t, _, _)| *t == event_type) {
        let properties: Map<String, Value> = fields.iter().map(|f| (f.to_string(), json!({}))).collect();
        return json!({ "allOf": [
            { "$ref": "#/components/schemas/WebhookEmailEventData" },
            { "type": "object", "required": [key], "properties": { *key: { "type": "object", "properties": properties } } }
        ] });
    }
    if event_type == "email.received" {
        let strings = json!({ "type": "array", "items": { "type": "string" } });
        let nullable = json!({ "type": ["string", "null"] });
        let attachment = json!({ "type": "object", "required": ["id", "filename", "content_type", "content_disposition", "size"], "properties": {
            "id": { "type": "string", "format": "uuid" }, "filename": { "type": "string" }, "content_type": { "type": "string" },
            "content_disposition": { "type": "string" }, "size": { "type": "integer" } } });
        return json!({
            "type": "object",
            "description": "A received message (as `GET /emails/receiving/{email_id}` lists it, with `received_for`).",
            "required": ["email_id", "created_at", "from", "to", "cc", "bcc", "reply_to", "received_for", "subject", "message_id", "dropped_reason", "attachments"],
            "properties": {
                "email_id": { "type": "string", "format": "uuid" }, "created_at": { "type": "string", "format": "date-time" },
                "from": { "type": "string" }, "to": strings, "cc": strings, "bcc": strings, "reply_to": strings, "received_for": strings,
                "subject": { "type": "string" }, "message_id": nullable,
                "dropped_reason": { "type": ["string", "null"], "enum": ["storage_quota", "daily_cap", "virus", "parse_failed", "no_mailbox", "team_blocked", null] },
                "attachments": { "type": "array", "items": attachment }
            }
        });
    }
    match event_type.split('.').next() {
        Some("email") => json!({ "$ref": "#/components/schemas/WebhookEmailEventData" }),
        Some("domain") => json!({ "$ref": "#/components/schemas/WebhookDomainEventData" }),
        Some("suppression") => json!({ "$ref": "#/components/schemas/WebhookSuppressionEventData" }),
        Some("contact") => json!({ "$ref": "#/components/schemas/WebhookContactEventData" }),
        Some("automation") => json!({ "$ref": "#/components/schemas/WebhookAutomationRunEventData" }),
        Some("inbox") => json!({ "$ref": "#/components/schemas/WebhookInboxEventData" }),
        _ => json!({ "type": "object", "description": "The event's data." }),
    }
}
