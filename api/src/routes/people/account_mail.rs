//! Account mail: the messages Herald sends people about their account (address verification,
//! password reset, invitations). They go through the ordinary delivery path, from
//! `HERALD_SYSTEM_FROM`, as emails of the team that holds that sender's verified domain, in the
//! transaction that made the link they carry.

use crate::http::error::ApiResult;
use crate::routes::pages::html::escape;
use crate::config::Config;
use chrono::Utc;
use schema::email::Mailbox;
use schema::jobs::Deliver;
use schema::store::emails::{self, NewEmail, NewRecipient};
use serde_json::json;
use sqlx::PgConnection;

/// One message to a person: a subject, a paragraph, and a link with its button label.
pub struct AccountMail<'a> {
    pub subject: &'a str,
    pub intro: &'a str,
    pub action: &'a str,
    pub link: &'a str,
    /// What happens if the person does nothing (expiry, ignoring it).
    pub outro: &'a str,
}

/// Queues `mail` to `to` in `conn`'s transaction. Answers `false`, and logs why, when account
/// mail is off: `HERALD_SYSTEM_FROM` unset or unparsable, or its domain not verified here.
pub async fn send(conn: &mut PgConnection, config: &Config, to: &str, mail: &AccountMail<'_>) -> ApiResult<bool> {
    let Some(system_from) = config.account_sender() else {
        tracing::warn!(subject = mail.subject, "account mail is off: set HERALD_SYSTEM_FROM to a sender on a verified domain");
        return Ok(false);
    };
    let Ok(from) = Mailbox::parse(&system_from) else {
        tracing::error!(%system_from, "HERALD_SYSTEM_FROM is not an email address; account mail is not sent");
        return Ok(false);
    };
    let Some(domain) = schema::store::domains::system_sender(conn, from.domain(), config.is_development()).await? else {
        tracing::error!(domain = from.domain(), "HERALD_SYSTEM_FROM's domain is not a verified sending domain here; account mail is not sent");
        return Ok(false);
    };
    let recipient = Mailbox::parse(to).map_err(|e| anyhow::anyhow!("an account address does not parse: {e}"))?;
    let text = format!("{}\n\n{}: {}\n\n{}\n", mail.intro, mail.action, mail.link, mail.outro);
    let html = format!(
        "<!doctype html><html><body style=\"font-family:sans-serif\"><p>{}</p><p><a href=\"{}\">{}</a></p><p style=\"color:#555\">{}</p></body></html>",
        escape(mail.intro),
        escape(mail.link),
        escape(mail.action),
        escape(mail.outro)
    );
    let id = schema::ids::new_id();
    let email = NewEmail {
        id,
        team_id: domain.team_id,
        api_key_id: None,
        domain_id: domain.id,
        from_header: system_from.clone(),
        from_email: from.key(),
        subject: mail.subject.to_string(),
        size_bytes: (html.len() + text.len()) as i32,
        html: Some(html),
        text: Some(text),
        reply_to: Vec::new(),
        headers: json!({}),
        tags: json!({ "herald": "account" }),
        message_id: format!("{id}@{}", domain.name),
        scheduled_at: None,
        created_at: Utc::now(),
        template: None,
        broadcast_id: None,
        recipients: vec![NewRecipient { kind: "to", address: to.to_string(), email: recipient.key(), suppressed: None }],
        attachments: Vec::new(),
        inbox_channel_id: None,
        unsubscribe_link: false,
    };
    emails::insert_many(conn, std::slice::from_ref(&email), None).await?;
    schema::jobs::enqueue(conn, &Deliver { email_id: id }).await.map_err(anyhow::Error::from)?;
    Ok(true)
}
