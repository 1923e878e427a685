//! The hosted preference page and RFC 8058 one-click unsubscribe, reached by signed links
//! (`preferences_url` and `unsubscribe_url` on a contact). Plain HTML forms that work without
//! JavaScript. Every change writes a consent record with the person's IP address and user
//! agent; none is a `contact.updated` event.

use crate::http::error::ApiResult;
use crate::http::form::FormBody;
use crate::routes::Tag;
use crate::routes::audience::consent::{Origin, consent};
use crate::routes::pages::html::{PageResponse, escape};
use crate::state::AppState;
use poem::Request;
use poem::web::Data;
use poem_openapi::param::Path;
use schema::links::{self, Link};
use schema::store::contacts::{self, Contact};
use schema::store::automations::SegmentWatch;
use schema::store::{emails, suppressions};
use schema::store::topics::{self, Choice};
use sqlx::PgConnection;

pub struct PreferencesApi;

#[poem_openapi::OpenApi(tag = "Tag::Pages")]
impl PreferencesApi {
    /// The preference page (`text/html`): the team's public topics and the private ones the
    /// contact is subscribed to, each a checkbox, and a global unsubscribe.
    #[oai(path = "/preferences/:token", method = "get", operation_id = "view-preferences")]
    async fn view(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<PageResponse> {
        let mut conn = state.pool.acquire().await?;
        let Some((contact, _)) = linked(&state, &mut conn, &token.0, false).await? else { return Ok(PageResponse::not_found()) };
        let shown = shown_topics(&mut conn, &contact).await?;
        Ok(preference_page(&contact, &shown, None))
    }

    /// Saves the preference form: a checked topic is `opt_in`, an unchecked one `opt_out`;
    /// `unsubscribe_all` sets the global opt-out (unchecked clears it). Segments the contact
    /// enters start their `svc:segment.entered` runs.
    #[oai(path = "/preferences/:token", method = "post", operation_id = "save-preferences")]
    async fn save(&self, state: Data<&AppState>, request: &Request, token: Path<String>, form: FormBody) -> ApiResult<PageResponse> {
        let mut tx = state.pool.begin().await?;
        let Some((contact, _)) = linked(&state, &mut tx, &token.0, true).await? else { return Ok(PageResponse::not_found()) };
        let watch = SegmentWatch::before(&mut tx, contact.team_id, Some(contact.id)).await?;
        let origin = origin(request, "preference_page");
        let mut shown = shown_topics(&mut tx, &contact).await?;
        let checked: Vec<&str> = form.all("topic").collect();
        let mut changes = Vec::new();
        for choice in &mut shown {
            let wanted = if checked.contains(&choice.topic.id.to_string().as_str()) { "opt_in" } else { "opt_out" };
            if wanted != choice.effective() {
                changes.push((choice.topic.id, wanted.to_string()));
                // The page shows what was saved, and keeps showing a private topic just left.
                choice.own = Some(wanted.to_string());
            }
        }
        for (topic_id, subscription) in topics::choose(&mut tx, contact.id, &changes).await? {
            consent(&mut tx, &contact, Some(topic_id), if subscription == "opt_in" { "opt_in" } else { "opt_out" }, &origin).await?;
        }
        let unsubscribed = form.first("unsubscribe_all").is_some();
        if unsubscribed != contact.unsubscribed {
            contacts::set_unsubscribed(&mut tx, contact.id, unsubscribed).await?;
            consent(&mut tx, &contact, None, if unsubscribed { "unsubscribed" } else { "subscribed" }, &origin).await?;
        }
        let contact = Contact { unsubscribed, ..contact };
        if let Some(watch) = watch {
            watch.enrol_entered(&mut tx, contact.id).await?;
        }
        tx.commit().await?;
        Ok(preference_page(&contact, &shown, Some("Your preferences are saved.")))
    }

    /// The unsubscribe link opened in a browser (`text/html`): a button to confirm, so that
    /// link scanners that fetch it change nothing.
    #[oai(path = "/unsubscribe/:token", method = "get", operation_id = "view-unsubscribe")]
    async fn confirm(&self, state: Data<&AppState>, token: Path<String>) -> ApiResult<PageResponse> {
        let mut conn = state.pool.acquire().await?;
        if let Some(link) = links::verify_address(&state.link_key, &token.0) {
            if emails::by_id(&mut conn, link.email_id).await?.is_none() {
                return Ok(PageResponse::not_found());
            }
            return Ok(PageResponse::form_page("Unsubscribe", &confirm_body("emails from this sender", &link.email)));
        }
        let Some((contact, link)) = linked(&state, &mut conn, &token.0, false).await? else { return Ok(PageResponse::not_found()) };
        let what = topic_name(&mut conn, &contact, link).await?.map_or("all emails".to_string(), |name| format!("“{}”", escape(&name)));
        Ok(PageResponse::form_page("Unsubscribe", &confirm_body(&what, &contact.email)))
    }

    /// RFC 8058 one-click unsubscribe: a `POST` whose body is `List-Unsubscribe=One-Click`
    /// unsubscribes the contact (from the link's topic only, for a topic's link); the link of
    /// a transactional send's `unsubscribe_link` suppresses its address for the team (origin
    /// `unsubscribe`).
    #[oai(path = "/unsubscribe/:token", method = "post", operation_id = "one-click-unsubscribe")]
    async fn unsubscribe(&self, state: Data<&AppState>, request: &Request, token: Path<String>, form: FormBody) -> ApiResult<PageResponse> {
        if form.first("List-Unsubscribe") != Some("One-Click") {
            let body = "<main><h1>Nothing changed</h1><p>This address takes a one-click unsubscribe request.</p></main>";
            return Ok(PageResponse::form_page("Nothing changed", body));
        }
        let mut tx = state.pool.begin().await?;
        if let Some(link) = links::verify_address(&state.link_key, &token.0) {
            if suppressions::unsubscribe_address(&mut tx, None, &link).await?.is_none() {
                return Ok(PageResponse::not_found());
            }
            tx.commit().await?;
            return Ok(unsubscribed_page(&link.email, "any more emails from this sender"));
        }
        let Some((contact, link)) = linked(&state, &mut tx, &token.0, true).await? else { return Ok(PageResponse::not_found()) };
        let watch = SegmentWatch::before(&mut tx, contact.team_id, Some(contact.id)).await?;
        let origin = origin(request, "one_click");
        let what = match topic_name(&mut tx, &contact, link).await? {
            Some(name) => {
                let topic_id = link.topic_id.unwrap_or_default();
                for (topic_id, _) in topics::choose(&mut tx, contact.id, &[(topic_id, "opt_out".into())]).await? {
                    consent(&mut tx, &contact, Some(topic_id), "opt_out", &origin).await?;
                }
                format!("“{}”", escape(&name))
            }
            None => {
                if !contact.unsubscribed {
                    contacts::set_unsubscribed(&mut tx, contact.id, true).await?;
                    consent(&mut tx, &contact, None, "unsubscribed", &origin).await?;
                }
                "any more emails".to_string()
            }
        };
        if let Some(watch) = watch {
            watch.enrol_entered(&mut tx, contact.id).await?;
        }
        tx.commit().await?;
        Ok(unsubscribed_page(&contact.email, &what))
    }
}

/// The unsubscribe page's question (`what`: already escaped) and its one-click form.
fn confirm_body(what: &str, email: &str) -> String {
    format!(
        "<main><h1>Unsubscribe</h1><p>Stop sending {what} to <strong>{}</strong>?</p>\
         <form method=\"post\"><input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\">\
         <button type=\"submit\">Unsubscribe</button></form></main>",
        escape(email)
    )
}

/// The answer to an unsubscribe (`what`: already escaped).
fn unsubscribed_page(email: &str, what: &str) -> PageResponse {
    let body = format!("<main><h1>You are unsubscribed</h1><p class=\"notice\"><strong>{}</strong> will not receive {what}.</p></main>", escape(email));
    PageResponse::form_page("Unsubscribed", &body)
}

/// The contact (locked for a change when `lock`) and link a token names; `None` for a bad
/// token or an erased contact.
async fn linked(state: &AppState, conn: &mut PgConnection, token: &str, lock: bool) -> ApiResult<Option<(Contact, Link)>> {
    let Some(link) = links::verify(&state.link_key, token) else { return Ok(None) };
    Ok(contacts::by_id(conn, link.contact_id, lock).await?.map(|contact| (contact, link)))
}

/// The name of the link's topic, when it names a live topic of the contact's team.
async fn topic_name(conn: &mut PgConnection, contact: &Contact, link: Link) -> ApiResult<Option<String>> {
    let Some(topic_id) = link.topic_id else { return Ok(None) };
    Ok(topics::get(conn, contact.team_id, topic_id).await?.map(|t| t.name))
}

/// Public topics, and private ones the contact is subscribed to.
async fn shown_topics(conn: &mut PgConnection, contact: &Contact) -> ApiResult<Vec<Choice>> {
    let all = topics::choices(conn, contact.team_id, contact.id).await?;
    Ok(all.into_iter().filter(|c| c.topic.visibility == "public" || c.effective() == "opt_in").collect())
}

fn origin(request: &Request, source: &'static str) -> Origin {
    let (ip_address, user_agent) = crate::routes::pages::html::visitor(request);
    Origin { source, ip_address, user_agent }
}

fn preference_page(contact: &Contact, shown: &[Choice], notice: Option<&str>) -> PageResponse {
    let mut body = format!("<main><h1>Email preferences</h1><p>For <strong>{}</strong></p>", escape(&contact.email));
    if let Some(notice) = notice {
        body.push_str(&format!("<p class=\"notice\" role=\"status\">{}</p>", escape(notice)));
    }
    body.push_str("<form method=\"post\">");
    if !shown.is_empty() {
        body.push_str("<fieldset><legend>Topics</legend>");
        for choice in shown {
            let checked = if choice.effective() == "opt_in" { " checked" } else { "" };
            body.push_str(&format!(
                "<label><input type=\"checkbox\" name=\"topic\" value=\"{}\"{checked}> {}</label>",
                choice.topic.id,
                escape(&choice.topic.name)
            ));
            if let Some(description) = &choice.topic.description {
                body.push_str(&format!("<small>{}</small>", escape(description)));
            }
        }
        body.push_str("</fieldset>");
    }
    let all = if contact.unsubscribed { " checked" } else { "" };
    body.push_str(&format!(
        "<label><input type=\"checkbox\" name=\"unsubscribe_all\" value=\"yes\"{all}> Unsubscribe from all emails</label>\
         <p><button type=\"submit\">Save preferences</button></p></form></main>"
    ));
    PageResponse::form_page("Email preferences", &body)
}
