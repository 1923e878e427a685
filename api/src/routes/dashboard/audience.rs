//! The audience: contacts (a new one, one contact's properties, topics and segments, removing
//! one), segments with their members, and topics, through the API's routes as the session.

use super::client::{Answer, Api, Session};
use super::kit::urlencoding;
use super::kit::{self, Field, Fields, Input, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path, Query};
use poem::{Request, Response, handler};
use serde_json::{Value, json};

const FIELDS: &[Field] = &[
    Field { name: "email", label: "Address", input: Input::Email, required: true, max: Some(320) },
    Field::text("first_name", "First name", 255).optional(),
    Field::text("last_name", "Last name", 255).optional(),
];

fn name_of(c: &Value) -> String {
    [c["first_name"].as_str(), c["last_name"].as_str()].into_iter().flatten().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
}

/// `GET /app/contacts`.
#[handler]
pub async fn contacts(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    listing(req, &api, &session, &paging, &Fields::new(), None).await
}

async fn listing(req: &Request, api: &Api, session: &Session, paging: &Paging, values: &Fields, refused: Option<&Answer>) -> poem::Result<Response> {
    let answer = api.get(req, &paging.unsearched().path("/contacts", 50)).await?;
    let table = kit::table(
        &["Address", "Name", "Subscribed", "Added"],
        &kit::rows(&answer),
        |c| {
            vec![
                kit::link(&format!("/app/contacts/{}", kit::id(&c["id"])), c["email"].as_str().unwrap_or_default()),
                escape(&name_of(c)),
                if c["unsubscribed"] == true { "unsubscribed".into() } else { "yes".into() },
                time(&c["created_at"]),
            ]
        },
        "No contact yet. Add one here, import a CSV, or create them with <code>POST /contacts</code>.",
    );
    let form = if session.can_write() { kit::card("new-contact", "New contact", &kit::form("/app/contacts", &session.csrf, FIELDS, values, refused, "Add contact")) } else { String::new() };
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!(
        "<h1>Contacts</h1><p><a href=\"/app/contacts/imports\">Import a CSV</a> · <a href=\"/app/segments\">Segments</a> · <a href=\"/app/topics\">Topics</a></p>{alert}{form}{table}{}",
        kit::pager("/app/contacts", &answer)
    );
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Contacts", Some(session), &body))
}

/// `POST /app/contacts`: `POST /contacts`.
#[handler]
pub async fn create(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let mut body = json!({ "email": form.get("email").cloned().unwrap_or_default() });
    for name in ["first_name", "last_name"] {
        if let Some(value) = form.get(name).filter(|v| !v.is_empty()) {
            body[name] = json!(value);
        }
    }
    let answer = kit::write(req, &api, Method::POST, "/contacts", Some(&body), &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &Paging::default(), &form, Some(&answer)).await;
    }
    Ok(kit::see_other(&format!("/app/contacts/{}", kit::id(&answer.body["id"]))))
}

/// `GET /app/contacts/{id}`: the contact, its properties, topics, segments and consent history.
#[handler]
pub async fn contact(req: &Request, api: Data<&Api>, Path(id): Path<String>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let path = format!("/contacts/{}", urlencoding(&id));
    let contact = match kit::one(req, &api, &session, &path).await? {
        Ok(contact) => contact,
        Err(page) => return Ok(page),
    };
    let their_topics = api.get(req, &format!("{path}/topics?limit=100")).await?;
    let their_segments = api.get(req, &format!("{path}/segments?limit=100")).await?;
    let properties: Vec<(&str, String)> = contact["properties"].as_object().into_iter().flatten().map(|(k, v)| (k.as_str(), if v.is_string() { kit::text(v) } else { escape(&v.to_string()) })).collect();
    let properties: String = properties.iter().map(|(k, v)| format!("<dt>{}</dt><dd>{v}</dd>", escape(k))).collect();
    let properties = if properties.is_empty() { "<p class=\"muted\">No property set.</p>".to_string() } else { format!("<dl>{properties}</dl>") };
    let topic_table = kit::table(&["Topic", "Subscription"], &kit::rows(&their_topics), |t| vec![kit::text(&t["name"]), kit::word(&t["subscription"])], "No topic in this team.");
    let segment_table = kit::table(&["Segment", "Since"], &kit::rows(&their_segments), |s| vec![kit::link(&format!("/app/segments/{}", kit::id(&s["id"])), s["name"].as_str().unwrap_or_default()), time(&s["created_at"])], "In no segment.");
    let consents = api.get(req, &format!("{path}/consents?limit=50")).await?;
    let topic_name = |id: &serde_json::Value| {
        kit::rows(&their_topics).iter().find(|t| t["id"] == *id).map_or_else(|| "a deleted topic".to_string(), |t| kit::text(&t["name"]))
    };
    let consent_table = if consents.ok() {
        kit::table(
            &["When", "Choice", "Of", "Where", "Client"],
            &kit::rows(&consents),
            |c| {
                let of = if c["topic_id"].is_null() { "All mail".to_string() } else { topic_name(&c["topic_id"]) };
                let client = [&c["ip_address"], &c["user_agent"]].iter().filter_map(|v| v.as_str()).map(escape).collect::<Vec<_>>().join(" · ");
                vec![time(&c["created_at"]), kit::word(&c["choice"]), of, kit::text(&c["source"]), if client.is_empty() { "—".into() } else { client }]
            },
            "No consent change recorded yet.",
        )
    } else {
        kit::note(false, &consents.message())
    };
    let remove = if session.can_write() { kit::button(&format!("/app/contacts/{}/delete", urlencoding(&id)), &session.csrf, "Delete contact") } else { String::new() };
    let name = name_of(&contact);
    let facts = kit::facts(&[
        ("Name", if name.is_empty() { "—".into() } else { escape(&name) }),
        ("Unsubscribed from everything", kit::text(&contact["unsubscribed"])),
        ("Added", time(&contact["created_at"])),
    ]);
    let title = contact["email"].as_str().unwrap_or("Contact").to_string();
    let body = format!(
        "<p><a href=\"/app/contacts\">← Contacts</a></p><h1>{}</h1><section class=\"card\">{facts}{remove}</section>{}{}{}{}",
        escape(&title),
        kit::card("properties", "Properties", &properties),
        kit::card("topics", "Topics", &topic_table),
        kit::card("segments", "Segments", &segment_table),
        kit::card("consent", "Consent history", &consent_table)
    );
    Ok(page(StatusCode::OK, &title, Some(&session), &body))
}

/// `POST /app/contacts/{id}/delete`: `DELETE /contacts/{id}`.
#[handler]
pub async fn delete(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::DELETE, &format!("/contacts/{}", urlencoding(&id)), None, &form).await?;
    if matches!(answer.status, 404 | 422) {
        return Ok(super::layout::not_found(&session));
    }
    if !answer.ok() {
        return Ok(kit::refused_page(&session, &answer));
    }
    Ok(kit::see_other("/app/contacts"))
}

/// `GET /app/segments/{id}`: the segment's filter and its members.
#[handler]
pub async fn segment(req: &Request, api: Data<&Api>, Path(id): Path<String>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let path = format!("/segments/{}", urlencoding(&id));
    let segment = match kit::one(req, &api, &session, &path).await? {
        Ok(segment) => segment,
        Err(page) => return Ok(page),
    };
    let members = api.get(req, &paging.unsearched().path(&format!("{path}/contacts"), 50)).await?;
    let table = kit::table(
        &["Address", "Name"],
        &kit::rows(&members),
        |c| vec![kit::link(&format!("/app/contacts/{}", kit::id(&c["id"])), c["email"].as_str().unwrap_or_default()), escape(&name_of(c))],
        "No contact matches this segment yet.",
    );
    let filter = if segment["filter"].is_null() { "<p class=\"muted\">Members are added by hand.</p>".to_string() } else { format!("<pre>{}</pre>", escape(&serde_json::to_string_pretty(&segment["filter"]).unwrap_or_default())) };
    let title = segment["name"].as_str().unwrap_or("Segment").to_string();
    let body = format!(
        "<p><a href=\"/app/segments\">← Segments</a></p><h1>{}</h1>{}{}",
        escape(&title),
        kit::card("filter", "Filter", &filter),
        kit::card("members", "Members", &format!("{table}{}", kit::pager(&format!("/app/segments/{}", urlencoding(&id)), &members)))
    );
    Ok(page(StatusCode::OK, &title, Some(&session), &body))
}

/// `GET /app/topics`.
#[handler]
pub async fn topics(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = api.get(req, &paging.unsearched().path("/topics", 50)).await?;
    let table = kit::table(
        &["Topic", "Description", "Default", "Visibility"],
        &kit::rows(&answer),
        |t| vec![kit::text(&t["name"]), kit::text(&t["description"]), kit::word(&t["default_subscription"]), kit::word(&t["visibility"])],
        "No topic yet. Topics let contacts choose what they hear about on their preferences page.",
    );
    let body = format!("<p><a href=\"/app/contacts\">← Contacts</a></p><h1>Topics</h1>{table}{}", kit::pager("/app/topics", &answer));
    Ok(page(StatusCode::OK, "Topics", Some(&session), &body))
}
