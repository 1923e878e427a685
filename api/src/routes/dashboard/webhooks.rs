//! Webhooks: the endpoints, a new one (its signing secret shown once), one endpoint's
//! deliveries with their attempts, replaying a delivery and rotating the secret, each through
//! `/webhooks` as the session.

use super::client::{Answer, Api, Session};
use super::kit::urlencoding;
use super::kit::{self, Fields, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Path, Query};
use poem::{Request, Response, handler};
use serde_json::{Value, json};

/// The events a new endpoint subscribes to unless the person picks others.
const DEFAULT_EVENTS: [&str; 4] = ["email.delivered", "email.bounced", "email.complained", "email.failed"];

/// Every event an endpoint can subscribe to (document A's list).
const EVENTS: [&str; 29] = [
    "email.sent", "email.scheduled", "email.delivered", "email.delivery_delayed", "email.bounced", "email.complained", "email.opened", "email.clicked", "email.failed", "email.suppressed",
    "email.canceled", "domain.created", "domain.updated", "domain.deleted", "suppression.added", "suppression.removed", "contact.created", "contact.updated", "contact.deleted",
    "email.received", "automation.run.started", "automation.run.completed", "automation.run.failed", "inbox.conversation.created", "inbox.message.received", "inbox.reply.sent",
    "inbox.note.created", "inbox.conversation.assigned", "inbox.conversation.status_changed",
];

/// `GET /app/webhooks`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    listing(req, &api, &session, &paging, "", &DEFAULT_EVENTS.map(String::from), None).await
}

async fn listing(req: &Request, api: &Api, session: &Session, paging: &Paging, endpoint: &str, chosen: &[String], refused: Option<&Answer>) -> poem::Result<Response> {
    let answer = api.get(req, &paging.path("/webhooks", 50)).await?;
    let table = kit::table(
        &["Endpoint", "Events", "Status", "Created"],
        &kit::rows(&answer),
        |w| {
            let events = w["events"].as_array().map_or(0, Vec::len);
            vec![kit::link(&format!("/app/webhooks/{}", kit::id(&w["id"])), w["endpoint"].as_str().unwrap_or_default()), events.to_string(), kit::status(w), time(&w["created_at"])]
        },
        "No endpoint yet. Add one here and Herald posts each event to it, signed.",
    );
    let form = if session.can_write() { kit::card("new-endpoint", "New endpoint", &new_form(&session.csrf, endpoint, chosen, refused)) } else { String::new() };
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!("<h1>Webhooks</h1>{alert}{form}{table}{}", kit::pager("/app/webhooks", &answer));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Webhooks", Some(session), &body))
}

fn new_form(csrf: &str, endpoint: &str, chosen: &[String], refused: Option<&Answer>) -> String {
    let error = |field: &str| refused.and_then(|a| a.field_error(field)).map_or_else(String::new, |e| format!("<span class=\"error\" id=\"{field}-error\">{}</span>", escape(&e)));
    let boxes: String = EVENTS
        .iter()
        .map(|e| format!("<label class=\"check\"><input type=\"checkbox\" name=\"events\" value=\"{e}\"{}> {e}</label>", if chosen.iter().any(|c| c == e) { " checked" } else { "" }))
        .collect();
    format!(
        "<form class=\"stack\" method=\"post\" action=\"/app/webhooks\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label for=\"endpoint\">Endpoint URL</label><input id=\"endpoint\" name=\"endpoint\" type=\"url\" required maxlength=\"2048\" value=\"{}\" placeholder=\"https://example.com/herald\">{}\
         <fieldset><legend>Events</legend><div class=\"checks\">{boxes}</div>{}</fieldset><button type=\"submit\">Add endpoint</button></form>",
        escape(csrf),
        escape(endpoint),
        error("endpoint"),
        error("events")
    )
}

/// `POST /app/webhooks`: `POST /webhooks`; the signing secret is shown on this page only.
#[handler]
pub async fn create(req: &Request, api: Data<&Api>, Form(pairs): Form<Vec<(String, String)>>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let events: Vec<String> = pairs.iter().filter(|(k, _)| k == "events").map(|(_, v)| v.clone()).collect();
    let form: Fields = pairs.into_iter().filter(|(k, _)| k != "events").collect();
    let endpoint = form.get("endpoint").cloned().unwrap_or_default();
    let answer = kit::write(req, &api, Method::POST, "/webhooks", Some(&json!({ "endpoint": endpoint, "events": events })), &form).await?;
    if !answer.ok() {
        return listing(req, &api, &session, &Paging::default(), &endpoint, &events, Some(&answer)).await;
    }
    let id = answer.body["id"].as_str().unwrap_or_default().to_string();
    Ok(secret_page(&session, StatusCode::CREATED, "Your new endpoint", &id, &answer.body))
}

fn secret_page(session: &Session, status: StatusCode, title: &str, id: &str, answer: &Value) -> Response {
    let secret = answer["signing_secret"].as_str().unwrap_or_default();
    let body = format!(
        "<h1>{}</h1><section class=\"card\"><p><b>Copy the signing secret now: it is not shown again.</b> Check each delivery's signature with it.</p>\
         <p><code class=\"value\">{}</code> <button type=\"button\" data-copy=\"{}\" aria-label=\"Copy the signing secret\">Copy</button></p>\
         <p><a href=\"/app/webhooks/{}\">Done</a></p></section>",
        escape(title),
        escape(secret),
        escape(secret),
        escape(&urlencoding(id))
    );
    page(status, title, Some(session), &body)
}

/// `GET /app/webhooks/{id}`: the endpoint and its deliveries, newest first.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let path = format!("/webhooks/{}", urlencoding(&id));
    let webhook = match kit::one(req, &api, &session, &path).await? {
        Ok(webhook) => webhook,
        Err(page) => return Ok(page),
    };
    let events = api.get(req, &paging.path(&format!("{path}/events"), 25)).await?;
    let base = format!("/app/webhooks/{}", urlencoding(&id));
    let table = kit::table(
        &["Event", "Status", "Attempts", "Created"],
        &kit::rows(&events),
        |e| vec![kit::link(&format!("{base}/events/{}", kit::id(&e["id"])), e["type"].as_str().unwrap_or_default()), kit::status(e), kit::text(&e["attempts"]), time(&e["created_at"])],
        "No delivery yet: events the endpoint subscribes to show up here as they happen.",
    );
    let subscribed: String = webhook["events"].as_array().into_iter().flatten().filter_map(Value::as_str).map(|e| format!("<li><code>{}</code></li>", escape(e))).collect();
    let actions = if session.can_write() { kit::button(&format!("{base}/rotate"), &session.csrf, "Rotate the signing secret") } else { String::new() };
    let facts = kit::facts(&[("Status", kit::status(&webhook)), ("Disabled because", kit::text(&webhook["disabled_reason"])), ("Created", time(&webhook["created_at"]))]);
    let body = format!(
        "<p><a href=\"/app/webhooks\">← Webhooks</a></p><h1>{}</h1><section class=\"card\">{facts}{actions}</section>{}{}",
        escape(webhook["endpoint"].as_str().unwrap_or_default()),
        kit::card("events", "Subscribed events", &format!("<ul class=\"columns\">{subscribed}</ul>")),
        kit::card("deliveries", "Deliveries", &format!("{table}{}", kit::pager(&base, &events)))
    );
    Ok(page(StatusCode::OK, "Webhook", Some(&session), &body))
}

/// `GET /app/webhooks/{id}/events/{event_id}`: one delivery, its payload and attempts.
#[handler]
pub async fn event(req: &Request, api: Data<&Api>, Path((id, event_id)): Path<(String, String)>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    event_page(req, &api, &session, &id, &event_id, None).await
}

async fn event_page(req: &Request, api: &Api, session: &Session, id: &str, event_id: &str, outcome: Option<&Answer>) -> poem::Result<Response> {
    let path = format!("/webhooks/{}/events/{}", urlencoding(id), urlencoding(event_id));
    let delivery = match kit::one(req, api, session, &path).await? {
        Ok(delivery) => delivery,
        Err(page) => return Ok(page),
    };
    let attempts = api.get(req, &format!("{path}/attempts?limit=100")).await?;
    let table = kit::table(
        &["Sent", "HTTP status", "Latency", "Response"],
        &kit::rows(&attempts),
        |a| {
            let status = a["http_status_code"].as_i64().filter(|s| *s > 0).map_or_else(|| "no answer".to_string(), |s| s.to_string());
            let latency = a["latency_ms"].as_i64().map_or_else(|| "—".to_string(), |ms| format!("{ms} ms"));
            vec![time(&a["sent_at"]), status, latency, format!("<code>{}</code>{}", kit::text(&a["response"]), a["error"].as_str().map_or_else(String::new, |e| format!(" <span class=\"error\">{}</span>", escape(e))))]
        },
        "Not attempted yet.",
    );
    let base = format!("/app/webhooks/{}", urlencoding(id));
    let replay_button = if session.can_write() { kit::button(&format!("{base}/events/{}/replay", urlencoding(event_id)), &session.csrf, "Replay") } else { String::new() };
    let outcome = outcome.map_or_else(String::new, |a| if a.ok() { kit::note(true, "Queued again: a new attempt follows.") } else { kit::note(false, &a.message()) });
    let payload = serde_json::to_string_pretty(&delivery["payload"]).unwrap_or_default();
    let facts = kit::facts(&[("Status", kit::status(&delivery)), ("Attempts", kit::text(&delivery["attempts"])), ("Next attempt", time(&delivery["next_attempt_at"])), ("Created", time(&delivery["created_at"]))]);
    let body = format!(
        "<p><a href=\"{}\">← The endpoint</a></p><h1>{}</h1>{outcome}<section class=\"card\">{facts}{replay_button}</section>{}{}",
        escape(&base),
        escape(delivery["type"].as_str().unwrap_or("Delivery")),
        kit::card("attempts", "Attempts", &table),
        kit::card("payload", "Payload", &format!("<pre>{}</pre>", escape(&payload)))
    );
    Ok(page(StatusCode::OK, "Delivery", Some(session), &body))
}

/// `POST /app/webhooks/{id}/events/{event_id}/replay`.
#[handler]
pub async fn replay(req: &Request, api: Data<&Api>, Path((id, event_id)): Path<(String, String)>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let path = format!("/webhooks/{}/events/{}/replay", urlencoding(&id), urlencoding(&event_id));
    let answer = kit::write(req, &api, Method::POST, &path, None, &form).await?;
    if answer.ok() {
        return Ok(kit::see_other(&format!("/app/webhooks/{}/events/{}", urlencoding(&id), urlencoding(&event_id))));
    }
    let mut response = event_page(req, &api, &session, &id, &event_id, Some(&answer)).await?;
    if response.status() == StatusCode::OK {
        response.set_status(kit::status_of(&answer));
    }
    Ok(response)
}

/// `POST /app/webhooks/{id}/rotate`: a new signing secret, shown once.
#[handler]
pub async fn rotate(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::POST, &format!("/webhooks/{}/signing-secret/rotate", urlencoding(&id)), None, &form).await?;
    if answer.status == 404 || answer.status == 422 {
        return Ok(super::layout::not_found(&session));
    }
    if !answer.ok() {
        return Ok(kit::refused_page(&session, &answer));
    }
    Ok(secret_page(&session, StatusCode::OK, "A new signing secret", &id, &answer.body))
}
