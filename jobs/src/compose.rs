//! One contact's email, for every send that mails contacts (broadcast pages and automation
//! `send_email` steps): the contact's signed unsubscribe and preferences links, the content
//! rendered for the contact, the one-click unsubscribe headers, and the email row that the
//! send inserts. The callers decide who receives it and what it says; this decides how.

use chrono::{DateTime, Utc};
use render::{Compiled, Mode};
use schema::email::Mailbox;
use schema::links::{self, Link};
use schema::store::contacts;
use schema::store::domains::Domain;
use schema::store::emails::{NewEmail, NewRecipient};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;

/// What every email of one send shares: its content, its sender and where its links point.
pub(crate) struct Composer {
    pub team_id: Uuid,
    /// The content, subject included.
    pub compiled: Compiled,
    /// Which bodies the email carries.
    pub has_html: bool,
    pub has_text: bool,
    /// The template and version the content came from.
    pub template: Option<(Uuid, i32)>,
    /// Template variables (the declared fallbacks, then the send's own values).
    pub variables: Map<String, Value>,
    /// The team's property fallbacks, for `{{{PROPERTY}}}` merge tags.
    pub fallbacks: HashMap<String, String>,
    pub sender: Sender,
    pub reply_to: Vec<String>,
    /// The topic an unsubscribe link leaves (`None`: every marketing email).
    pub topic_id: Option<Uuid>,
    pub link_key: Arc<[u8]>,
    /// `HERALD_PUBLIC_URL`, where the hosted pages answer.
    pub public_url: String,
}

/// The sending domain and the `From` of a send.
pub(crate) struct Sender {
    pub domain_id: Uuid,
    pub domain_name: String,
    /// The return-path host: the bounce and `mailto:` unsubscribe address's domain.
    pub return_path: String,
    pub from_header: String,
    pub from: Mailbox,
}

impl Sender {
    /// The sender of `from_header`, which names an address on `domain`.
    pub fn new(domain: &Domain, from_header: String, from: Mailbox) -> Sender {
        Sender {
            domain_id: domain.id,
            domain_name: domain.name.clone(),
            return_path: format!("{}.{}", domain.custom_return_path, domain.name),
            from_header,
            from,
        }
    }
}

/// One contact as the renderer sees it.
pub(crate) struct Addressee {
    pub contact_id: Uuid,
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub unsubscribed: bool,
    pub created_at: DateTime<Utc>,
    pub properties: Map<String, Value>,
    pub topics: HashMap<Uuid, bool>,
    pub segments: HashMap<Uuid, bool>,
}

/// What differs between the kinds of send on the email row.
pub(crate) struct Origin {
    pub tags: Value,
    pub broadcast_id: Option<Uuid>,
    /// The suppression origin when the address is suppressed (the email records it, nothing is delivered).
    pub suppressed: Option<String>,
}

impl Composer {
    /// The email `id` to `to`, rendered for the contact (with the triggering event's data, for
    /// an automation).
    pub fn compose(&self, id: Uuid, to: Addressee, event: Option<&Map<String, Value>>, origin: Origin) -> NewEmail {
        let links = contact_links(&self.link_key, &self.public_url, to.contact_id, self.topic_id, &self.sender.return_path);
        let key = to.email.to_lowercase();
        let contact = render::Contact {
            email: to.email.clone(),
            first_name: to.first_name,
            last_name: to.last_name,
            unsubscribed: to.unsubscribed,
            created_at: Some(to.created_at),
            properties: to.properties,
            fallbacks: self.fallbacks.clone(),
            topics: to.topics,
            segments: to.segments,
            unsubscribe_url: Some(links.unsubscribe_url.clone()),
            preferences_url: Some(links.preferences_url.clone()),
        };
        let context = render::Context { variables: &self.variables, contact: Some(&contact), event };
        let rendered = self.compiled.render(&context, Mode::PerContact);
        let html = self.has_html.then_some(rendered.html);
        let text = self.has_text.then_some(rendered.text);
        let size = html.as_ref().map_or(0, String::len) + text.as_ref().map_or(0, String::len);
        NewEmail {
            id,
            team_id: self.team_id,
            api_key_id: None,
            domain_id: self.sender.domain_id,
            from_header: self.sender.from_header.clone(),
            from_email: self.sender.from.key(),
            subject: rendered.subject.replace(['\r', '\n'], " "),
            html,
            text,
            reply_to: self.reply_to.clone(),
            headers: links.headers.clone(),
            tags: origin.tags,
            message_id: format!("{id}@{}", self.sender.domain_name),
            scheduled_at: None,
            size_bytes: size.min(i32::MAX as usize) as i32,
            created_at: Utc::now(),
            template: self.template,
            broadcast_id: origin.broadcast_id,
            recipients: vec![NewRecipient { kind: "to", address: to.email, email: key, suppressed: origin.suppressed }],
            attachments: Vec::new(),
            inbox_channel_id: None,
            unsubscribe_link: false,
        }
    }
}

/// A template's declared variables that have a fallback, as the values a send starts from.
pub(crate) fn template_defaults(declared: Option<&Value>) -> Map<String, Value> {
    declared
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| Some((v["key"].as_str()?.to_string(), v.get("fallback_value").filter(|f| !f.is_null())?.clone())))
        .collect()
}

/// The team's property fallbacks as text, for `{{{PROPERTY}}}` merge tags.
pub(crate) fn property_fallbacks(properties: &[contacts::Property]) -> HashMap<String, String> {
    properties.iter().filter_map(|p| Some((p.key.clone(), fallback_text(p.fallback_value.as_ref()?)?))).collect()
}

fn fallback_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// A contact's unsubscribe and preferences links.
struct ContactLinks {
    unsubscribe_url: String,
    preferences_url: String,
    /// The one-click unsubscribe headers of RFC 8058.
    headers: Value,
}

/// The signed links of one contact (`topic_id`: the topic an unsubscribe leaves).
fn contact_links(link_key: &[u8], public_url: &str, contact_id: Uuid, topic_id: Option<Uuid>, return_path: &str) -> ContactLinks {
    let public = public_url.trim_end_matches('/');
    let token = links::token(link_key, Link { contact_id, topic_id });
    let unsubscribe_url = links::unsubscribe_url(public, &token);
    let preferences_url = format!("{public}/preferences/{}", links::token(link_key, Link { contact_id, topic_id: None }));
    let headers = links::unsubscribe_headers(public, &token, return_path);
    ContactLinks { unsubscribe_url, preferences_url, headers }
}
