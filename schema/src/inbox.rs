//! Rules of the support Inbox shared by the API and the inbound server: the events a
//! conversation's life emits, and Message-IDs as threading compares them.

use crate::store::events::NewEvent;
use serde_json::json;
use uuid::Uuid;

/// A Message-ID as stored and compared: no angle brackets, no surrounding space.
pub fn message_id(raw: &str) -> String {
    raw.trim().trim_start_matches('<').trim_end_matches('>').trim().to_string()
}

/// The ids a message's `In-Reply-To` and `References` name, normalised, latest first.
pub fn thread_ids(in_reply_to: &[String], references: &[String]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for id in in_reply_to.iter().chain(references.iter().rev()).map(|id| message_id(id)) {
        if !id.is_empty() && !ids.contains(&id) && ids.len() < 100 {
            ids.push(id);
        }
    }
    ids
}

/// The words of an HTML body for search (tags dropped).
pub fn html_words(html: &str) -> String {
    let mut words = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                words.push(' ');
            }
            c if !in_tag => words.push(c),
            _ => {}
        }
    }
    words
}

/// What a conversation's events say about it.
pub struct Facts<'a> {
    pub team_id: Uuid,
    pub conversation_id: Uuid,
    pub channel_id: Uuid,
    pub subject: &'a str,
}

impl Facts<'_> {
    fn event(&self, event_type: &'static str, mut data: serde_json::Value) -> NewEvent {
        data["conversation_id"] = json!(self.conversation_id);
        data["channel_id"] = json!(self.channel_id);
        data["subject"] = json!(self.subject);
        NewEvent { team_id: self.team_id, event_type, data, email_id: None }
    }

    /// `inbox.conversation.created`.
    pub fn created(&self, customer_email: &str, customer_name: &str, external_id: Option<&str>) -> NewEvent {
        self.event("inbox.conversation.created", json!({ "customer": { "email": customer_email, "name": customer_name }, "external_id": external_id }))
    }

    /// `inbox.message.received`: a customer's message, by mail (`received_email_id`) or the API.
    pub fn received(&self, message_id: Uuid, from: &str, received_email_id: Option<Uuid>) -> NewEvent {
        self.event("inbox.message.received", json!({ "message_id": message_id, "from": from, "received_email_id": received_email_id }))
    }

    /// `inbox.reply.sent`: a reply accepted for sending as `email_id`.
    pub fn reply(&self, message_id: Uuid, email_id: Option<Uuid>) -> NewEvent {
        self.event("inbox.reply.sent", json!({ "message_id": message_id, "email_id": email_id }))
    }

    /// `inbox.note.created`.
    pub fn note(&self, message_id: Uuid, author: serde_json::Value) -> NewEvent {
        self.event("inbox.note.created", json!({ "message_id": message_id, "author": author }))
    }

    /// `inbox.conversation.assigned`.
    pub fn assigned(&self, assignee_id: Option<Uuid>, previous_assignee_id: Option<Uuid>) -> NewEvent {
        self.event("inbox.conversation.assigned", json!({ "assignee_id": assignee_id, "previous_assignee_id": previous_assignee_id }))
    }

    /// `inbox.conversation.status_changed`.
    pub fn status_changed(&self, status: &str, previous_status: &str) -> NewEvent {
        self.event("inbox.conversation.status_changed", json!({ "status": status, "previous_status": previous_status }))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn threading_ids_drop_brackets_and_put_the_direct_parent_first() {
        let ids = super::thread_ids(&["<b@x>".into()], &["<a@x>".into(), " <b@x> ".into()]);
        assert_eq!(ids, vec!["b@x".to_string(), "a@x".to_string()]);
    }
}
