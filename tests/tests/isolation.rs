//! The cross-team probe. Generated from the operation table, so a route added later is probed
//! without editing this file: team B calls every route whose path takes a parameter with team
//! A's ids (and, on nested paths, with B's own parent and A's child, or the reverse). Every
//! answer must be `404 not_found`; nothing of team A may change; no request of B may be logged
//! under A or enqueue a job naming A's rows.
//!
//! A's ids are found generically: a parameter's value is `data[0].id` of the list at the path
//! before it, read as the owning team (`/webhooks/{webhook_id}/events/{event_id}` takes its
//! event from `GET /webhooks/{A's webhook}/events`). A parameter that cannot be found that way
//! fails the test naming the operation: give both teams that resource in [`populate`]. Bodies
//! are generated from the OpenAPI request schema (required properties with minimal valid
//! values), so that body validation does not answer before the existence check.

use api::http::operations::{Access, OPERATIONS, Operation};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::Method;
use serde_json::{Map, Value, json};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};
use tests::TestApp;
use tests::mail::{self, SENDING_DOMAIN};
use tests::receiver::Receiver;
use tests::smtp::SmtpSink;
use uuid::Uuid;

/// How long background work (delivery, webhooks, imports, log batches) may take.
const WAIT: Duration = Duration::from_secs(20);

/// Parameters that accept another field of the listed item besides its id; team B tries each.
const OTHER_FORMS: &[(&str, &str)] = &[("contact", "email"), ("suppression", "email"), ("template_id", "alias"), ("id_or_name", "name")];

/// Path parameters that are no id but a number under the id before them (a template's version
/// number): only the id is swapped for the other team's.
const UNSCOPED_PARAMETERS: &[&str] = &["version"];

/// Path parameters that name one of a fixed set (an add-on's code), not a row: such a route
/// acts on the caller's own team (its subscription), so there is no other team's value to try.
const FIXED_CODES: &[&str] = &["addon_code"];

/// String properties whose meaning no schema format states, with a value valid for them.
const NAMED_STRINGS: &[(&str, &str)] = &[("scheduled_at", "in 1 hour")];

/// Tables of team A not compared row by row, and why.
const UNCOMPARED_TABLES: &[(&str, &str)] = &[
    // Written off the request path in batches, so A's own setup calls may land during the
    // probe. Checked precisely instead: each of B's requests, by its request id, is logged
    // under B and none under A.
    ("public.request_logs", "checked by request id"),
    // A's token bucket: bookkeeping of A's own request budget, which the rate limiter may
    // write outside any request of A's; not data of A that a route exposes.
    ("public.rate_limits", "rate-limit bookkeeping"),
];

/// Columns refreshed as bookkeeping of A's own use of its keys, possibly after the call.
const UNCOMPARED_COLUMNS: &[&str] = &["last_used_at", "last_used_request_log_id"];

/// A team and its full-access key.
struct Team {
    label: &'static str,
    id: Uuid,
    key: String,
    /// A session of the team's admin (cookie token, CSRF token), for the session's routes.
    session: (String, String),
}

impl Team {
    /// The team's contact: the addresses differ between teams, so that B looking up A's
    /// address can only reach A's contact.
    fn contact(&self) -> String {
        format!("reader@{}.example", self.label)
    }
}

/// A request body.
#[derive(Debug, Clone)]
enum Payload {
    Empty,
    Json(Value),
    Form(Vec<(String, String)>),
    Raw { content_type: String, bytes: Vec<u8> },
}

/// An answer: status, body (JSON when it is JSON) and request id.
struct Reply {
    status: u16,
    body: Value,
    request_id: Option<String>,
}

impl Reply {
    fn name(&self) -> &str {
        self.body["name"].as_str().unwrap_or_default()
    }

    fn is_not_found(&self) -> bool {
        self.status == 404 && self.name() == "not_found"
    }

    fn summary(&self) -> String {
        format!("{} {}", self.status, self.body)
    }
}

/// A request of `team`: with its admin's session on the session's routes and the Inbox's (the
/// team's key has no Inbox access), else with its key.
async fn call(app: &TestApp, team: &Team, method: &Method, path: &str, payload: &Payload) -> Reply {
    let route = api::http::operations::route(&poem::http::Method::from_bytes(method.as_str().as_bytes()).unwrap(), path.split('?').next().unwrap());
    let by_session = matches!(route, api::http::operations::Routing::Found(op) if matches!(op.access, Access::Session | Access::Inbox));
    let request = if by_session {
        let (token, csrf) = &team.session;
        app.client.request(method.clone(), app.url(path)).header("cookie", format!("herald_session={token}")).header("x-csrf-token", csrf)
    } else {
        app.request_as(&team.key, method.clone(), path)
    };
    let request = match payload {
        Payload::Empty => request,
        Payload::Json(body) => request.json(body),
        Payload::Form(pairs) => request.form(pairs),
        Payload::Raw { content_type, bytes } => request.header("content-type", content_type).body(bytes.clone()),
    };
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    // The request log holds API calls; the session's requests are not in it.
    let request_id = response.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_string).filter(|_| !by_session);
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Reply { status, body, request_id }
}

/// A person who administers only this team, signed in: their session's cookie and CSRF tokens.
async fn admin_session(app: &TestApp, team_id: Uuid, label: &str) -> (String, String) {
    let person = Uuid::now_v7();
    sqlx::query("INSERT INTO people (id, email, name, password_hash) VALUES ($1, $2, 'Admin', 'unused')").bind(person).bind(format!("admin@{label}.example")).execute(&app.pool).await.unwrap();
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) VALUES ($1, $2, 'admin')").bind(team_id).bind(person).execute(&app.pool).await.unwrap();
    let (token, csrf) = (format!("hs_probe_{}", person.simple()), format!("csrf_{label}"));
    sqlx::query("INSERT INTO sessions (id, token_hash, person_id, team_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4, $5, now() + interval '1 day')")
        .bind(Uuid::now_v7())
        .bind(schema::secret::hash(&token))
        .bind(person)
        .bind(team_id)
        .bind(&csrf)
        .execute(&app.pool)
        .await
        .unwrap();
    // A grant of that admin's to an agent in the team, for `/oauth/grants`.
    let client = Uuid::now_v7();
    sqlx::query("INSERT INTO oauth_clients (id, client_id, registration_token_hash, client_name, redirect_uris, grant_types, response_types) VALUES ($1, $2, $3, 'Agent', '{https://agent.example/cb}', '{authorization_code}', '{code}')")
        .bind(client)
        .bind(format!("rkoc_probe_{label}"))
        .bind(schema::secret::hash(&format!("rkor_probe_{label}")))
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO oauth_grants (id, team_id, person_id, client_id, scopes) VALUES ($1, $2, $3, $4, '{domains:read}')")
        .bind(Uuid::now_v7())
        .bind(team_id)
        .bind(person)
        .bind(client)
        .execute(&app.pool)
        .await
        .unwrap();
    (token, csrf)
}

/// A 2xx answer's body, else a panic naming the call.
async fn created(app: &TestApp, team: &Team, path: &str, body: Value) -> Value {
    let reply = call(app, team, &Method::POST, path, &Payload::Json(body)).await;
    assert!((200..300).contains(&reply.status), "team {} POST {path}: {}", team.label, reply.summary());
    reply.body
}

async fn get(app: &TestApp, team: &Team, path: &str) -> Value {
    let reply = call(app, team, &Method::GET, path, &Payload::Empty).await;
    assert_eq!(reply.status, 200, "team {} GET {path}: {}", team.label, reply.summary());
    reply.body
}

/// Polls `probe` until it returns `Some`, for at most [`WAIT`].
async fn waited<T, F: std::future::Future<Output = Option<T>>>(what: &str, mut probe: impl FnMut() -> F) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(started.elapsed() < WAIT, "{what}: not within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A `multipart/form-data` body: `(name, file name, content)`.
fn multipart(parts: &[(String, Option<&str>, Vec<u8>)]) -> Payload {
    let borrowed: Vec<(&str, Option<&str>, &[u8])> = parts.iter().map(|(name, file, content)| (name.as_str(), *file, content.as_slice())).collect();
    let (content_type, bytes) = tests::multipart(&borrowed);
    Payload::Raw { content_type, bytes }
}

/// Gives `team` at least one of every resource a route names, and waits for the background
/// work they start (delivery, the webhook's attempt, the import) to finish. A route naming a
/// new kind of resource needs it added here.
async fn populate(app: &TestApp, team: &Team, domain: &str, receiver: &Receiver) {
    // An API key besides the team's own, which the probe must not revoke.
    created(app, team, "/api-keys", json!({ "name": "probe target", "permission": "sending_access" })).await;
    created(app, team, "/team/invitations", json!({ "email": format!("invitee@{}.example", team.label), "role": "member" })).await;
    created(app, team, "/team/identities", json!({ "email": format!("tester@{}.example", team.label) })).await;
    let topic = created(app, team, "/topics", json!({ "name": "News", "default_subscription": "opt_out" })).await;
    created(app, team, "/contact-properties", json!({ "key": "plan", "type": "string" })).await;
    let segment = created(app, team, "/segments", json!({ "name": "Readers" })).await;
    let contact = json!({
        "email": team.contact(),
        "first_name": "Reader",
        "properties": { "plan": "pro" },
        "topics": [{ "id": topic["id"], "subscription": "opt_in" }],
        "segments": [{ "id": segment["id"] }],
    });
    let contact = created(app, team, "/contacts", contact).await;
    // A custom event, an automation it triggers, and one run parked on its delay.
    created(app, team, "/events", json!({ "name": format!("probe.{}", team.label) })).await;
    let automation = json!({ "name": "Probe flow", "status": "enabled",
        "steps": [{ "key": "start", "type": "trigger", "config": { "event_name": format!("probe.{}", team.label) } },
                  { "key": "wait", "type": "delay", "config": { "duration": "1 day" } }],
        "connections": [{ "from": "start", "to": "wait" }] });
    created(app, team, "/automations", automation).await;
    created(app, team, "/events/send", json!({ "event": format!("probe.{}", team.label), "contact_id": contact["id"] })).await;
    created(app, team, "/suppressions", json!({ "email": format!("gone@{}.example", team.label) })).await;
    created(app, team, "/exports", json!({ "kind": "suppressions" })).await;
    let saved = created(app, team, "/saved-blocks", json!({ "name": "Footer", "content": { "type": "text", "text": "Bye" } })).await;
    let document = json!({ "kind": "svc.blocks", "version": 1, "lang": "en", "sections": [{ "columns": [{ "blocks": [
        { "type": "text", "text": "Hi {{name}}" }, { "type": "saved", "saved_block_id": saved["id"] }
    ] }] }] });
    let template = json!({ "name": "Probe", "alias": format!("probe-{}", team.label), "subject": "Hi", "document": document, "variables": [{ "key": "name" }] });
    let template = created(app, team, "/templates", template).await;
    created(app, team, &format!("/templates/{}/publish", template["id"].as_str().unwrap()), json!({})).await;
    let broadcast = json!({ "name": "News", "from": format!("News <news@{domain}>"), "subject": "News", "segment_id": segment["id"], "html": "<p>Hi</p>" });
    created(app, team, "/broadcasts", broadcast).await;

    // An import of the same contact (so that it stays the team's only one).
    let csv = format!("email,first_name\n{},Reader\n", team.contact()).into_bytes();
    let upload = multipart(&[("file".to_string(), Some("contacts.csv"), csv)]);
    let import = call(app, team, &Method::POST, "/contacts/imports", &upload).await;
    assert!((200..300).contains(&import.status), "import: {}", import.summary());
    let import_path = format!("/contacts/imports/{}", import.body["id"].as_str().unwrap());
    // A migration from a file of the same contact, left in review.
    let csv = format!("email,first_name\n{},Reader\n", team.contact()).into_bytes();
    let upload = multipart(&[("source".to_string(), None, b"resend".to_vec()), ("file".to_string(), Some("contacts.csv"), csv)]);
    let migration = call(app, team, &Method::POST, "/migrations", &upload).await;
    assert_eq!(migration.status, 201, "migration: {}", migration.summary());
    let migration_path = format!("/migrations/{}", migration.body["id"].as_str().unwrap());

    let webhook = created(app, team, "/webhooks", json!({ "endpoint": receiver.url(&format!("/{}", team.label)), "events": ["email.sent"] })).await;
    let email = created(
        app,
        team,
        "/emails",
        json!({
            "from": format!("Billing <billing@{domain}>"),
            "to": "delivered@simulator.herald.test",
            "subject": "Your receipt",
            "text": "Thanks for your order.",
            "attachments": [{ "filename": "receipt.txt", "content": STANDARD.encode("42") }],
        }),
    )
    .await;
    let email_id = email["id"].as_str().unwrap().to_string();
    created(app, team, &format!("/emails/{email_id}/share"), json!({})).await;

    // A received email, over SMTP to the team's domain with receiving on.
    let domains = get(app, team, "/domains").await;
    let domain_id = domains["data"].as_array().unwrap().iter().find(|d| d["name"] == domain).unwrap()["id"].as_str().unwrap().to_string();
    let on = call(app, team, &Method::PATCH, &format!("/domains/{domain_id}"), &Payload::Json(json!({ "capabilities": { "receiving": "enabled" } }))).await;
    assert_eq!(on.status, 200, "receiving on: {}", on.summary());
    // An Inbox channel at that address, so that the mail opens a conversation.
    let desk = created(app, team, "/inbox/channels", json!({ "name": "Desk", "address": format!("inbox@{domain}") })).await;
    created(app, team, "/inbox/labels", json!({ "name": "Urgent", "channel_id": desk["id"] })).await;
    created(app, team, "/inbox/folders", json!({ "name": "Billing", "channel_id": desk["id"] })).await;
    let port = app.start_inbound(|_| {}).await;
    let raw = format!("From: someone@sender.example\r\nTo: inbox@{domain}\r\nSubject: Hello\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nHi.\r\n--b\r\nContent-Type: application/pdf\r\n\
Content-Disposition: attachment; filename=a.pdf\r\n\r\n%PDF\r\n--b--\r\n");
    let to = format!("inbox@{domain}");
    tests::smtp::submit(port, "someone@sender.example", &to, raw.as_bytes()).await.expect("the inbound server takes it");

    waited("the import finishes", || async {
        let import = get(app, team, &import_path).await;
        matches!(import["status"].as_str(), Some("completed" | "failed")).then_some(())
    })
    .await;
    waited("the migration is in review", || async { (get(app, team, &migration_path).await["status"] == "review").then_some(()) }).await;
    waited("the email is delivered", || async {
        (get(app, team, &format!("/emails/{email_id}")).await["last_event"] == "delivered").then_some(())
    })
    .await;
    let events = format!("/webhooks/{}/events", webhook["id"].as_str().unwrap());
    waited("the webhook's event is delivered", || async {
        (get(app, team, &events).await["data"][0]["status"] == "success").then_some(())
    })
    .await;
    waited("the team's calls are logged", || async { get(app, team, "/logs").await["data"].as_array().is_some_and(|d| !d.is_empty()).then_some(()) })
        .await;
}

/// One parameter's value in each form the route accepts, `id` first.
type Forms = Vec<(&'static str, String)>;

/// The team's value of every parameter of `template`, each found in the list at the path
/// before it (with the team's own earlier values filled in).
async fn resolve(app: &TestApp, team: &Team, template: &str, lists: &mut HashMap<(Uuid, String), Reply>) -> Result<Vec<Forms>, String> {
    let mut built = String::new();
    let mut values = Vec::new();
    for segment in template.split('/').skip(1) {
        let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
            built.push('/');
            built.push_str(segment);
            continue;
        };
        let collection = if built.is_empty() { "/".to_string() } else { built.clone() };
        if let Entry::Vacant(entry) = lists.entry((team.id, collection.clone())) {
            entry.insert(call(app, team, &Method::GET, &collection, &Payload::Empty).await);
        }
        let list = &lists[&(team.id, collection.clone())];
        if list.status != 200 {
            return Err(format!("{{{name}}}: GET {collection} as team {} answered {}", team.label, list.summary()));
        }
        let item = &list.body["data"][0];
        // A template's versions are named by their number.
        let number = (name == "version").then(|| item["version"].as_i64().map(|n| n.to_string())).flatten();
        let Some(id) = item["id"].as_str().or(item["user_id"].as_str()).or(number.as_deref()) else {
            return Err(format!("{{{name}}}: GET {collection} lists nothing of team {} ({})", team.label, list.body));
        };
        let mut forms: Forms = vec![("id", id.to_string())];
        for (parameter, field) in OTHER_FORMS {
            if *parameter == name {
                let value = item[*field].as_str().ok_or_else(|| format!("{{{name}}}: GET {collection} items have no `{field}`"))?;
                forms.push((field, value.to_string()));
            }
        }
        built.push('/');
        built.push_str(id);
        values.push(forms);
    }
    Ok(values)
}

/// `template` with its parameters replaced in order.
fn fill(template: &str, values: &[String]) -> String {
    let mut values = values.iter();
    template
        .split('/')
        .map(|segment| if segment.starts_with('{') { values.next().expect("a value per parameter").as_str() } else { segment })
        .collect::<Vec<_>>()
        .join("/")
}

/// A value no team holds, in the form of `form`.
fn unknown(form: &str) -> String {
    match form {
        "email" => format!("nobody-{}@example.com", Uuid::now_v7().simple()),
        _ => Uuid::now_v7().to_string(),
    }
}

/// The operation's entry in the OpenAPI document.
fn documented<'a>(doc: &'a Value, operation: &Operation) -> Option<&'a Value> {
    doc["paths"][operation.path].get(operation.method.as_str().to_ascii_lowercase())
}

fn dereferenced<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/")) {
        Some(pointer) => dereferenced(doc, doc.pointer(&format!("/{pointer}")).unwrap_or(&Value::Null)),
        None => schema,
    }
}

/// A minimal valid value of `schema`: required properties only, the first of an enum, the
/// minimum of a number, a plausible value of a string's format.
fn example(doc: &Value, schema: &Value, name: &str) -> Value {
    let schema = dereferenced(doc, schema);
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(first) = schema["enum"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(option) = schema[key].as_array().and_then(|o| o.iter().find(|o| dereferenced(doc, o)["type"] != "null")) {
            return example(doc, option, name);
        }
    }
    if let Some(parts) = schema["allOf"].as_array() {
        let mut merged = Map::new();
        for part in parts {
            if let Value::Object(object) = example(doc, part, name) {
                merged.extend(object);
            }
        }
        return Value::Object(merged);
    }
    let kind = match &schema["type"] {
        Value::String(kind) => kind.as_str(),
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).find(|k| *k != "null").unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "object" => {
            let mut object = Map::new();
            for required in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                object.insert(required.to_string(), example(doc, &schema["properties"][required], required));
            }
            Value::Object(object)
        }
        "array" => {
            let count = schema["minItems"].as_u64().unwrap_or(1).max(1);
            Value::Array((0..count).map(|_| example(doc, &schema["items"], name)).collect())
        }
        "integer" => json!(schema["minimum"].as_i64().unwrap_or(1)),
        "number" => json!(schema["minimum"].as_f64().unwrap_or(1.0)),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => Value::String(string_example(schema, name)),
    }
}

fn string_example(schema: &Value, name: &str) -> String {
    match schema["format"].as_str() {
        Some("email") => "probe@example.com".into(),
        Some("uuid") => Uuid::now_v7().to_string(),
        Some("date-time") => (chrono::Utc::now() + chrono::TimeDelta::hours(1)).to_rfc3339(),
        Some("date") => chrono::Utc::now().format("%Y-%m-%d").to_string(),
        Some("uri" | "url") => "https://example.com/".into(),
        _ => match NAMED_STRINGS.iter().find(|(property, _)| *property == name) {
            Some((_, value)) => value.to_string(),
            None => "x".repeat(schema["minLength"].as_u64().unwrap_or(1).max(1) as usize),
        },
    }
}

/// The body a request to `operation` carries: one valid for the resource, from the document.
fn body_for(doc: &Value, operation: &Operation) -> Result<Payload, String> {
    let documented = documented(doc, operation).ok_or_else(|| "the OpenAPI document does not describe it".to_string())?;
    let content = &documented["requestBody"]["content"];
    if let Some(json) = content.get("application/json") {
        return Ok(Payload::Json(example(doc, &json["schema"], "")));
    }
    if let Some(form) = content.get("application/x-www-form-urlencoded") {
        let Value::Object(fields) = example(doc, &form["schema"], "") else { return Err("a form body that is not an object".into()) };
        return Ok(Payload::Form(fields.into_iter().map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_string))).collect()));
    }
    if let Some(form) = content.get("multipart/form-data") {
        let schema = dereferenced(doc, &form["schema"]);
        let Value::Object(fields) = example(doc, schema, "") else { return Err("a multipart body that is not an object".into()) };
        let parts: Vec<(String, Option<&str>, Vec<u8>)> = fields
            .into_iter()
            .map(|(name, value)| {
                let file = (schema["properties"][&name]["format"] == "binary").then_some("probe.csv");
                let text = value.as_str().map_or_else(|| value.to_string(), str::to_string);
                (name, file, if file.is_some() { b"email\nprobe@example.com\n".to_vec() } else { text.into_bytes() })
            })
            .collect();
        return Ok(multipart(&parts));
    }
    if let Some(other) = content.as_object().and_then(|c| c.keys().next()) {
        return Err(format!("a {other} body, which the probe cannot write yet"));
    }
    Ok(if [Method::POST, Method::PATCH, Method::PUT].contains(&method_of(operation)) { Payload::Json(json!({})) } else { Payload::Empty })
}

fn method_of(operation: &Operation) -> Method {
    Method::from_bytes(operation.method.as_str().as_bytes()).unwrap()
}

fn parameters(template: &str) -> Vec<&str> {
    template.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))).collect()
}

/// One request of team B.
struct Probe {
    operation: &'static Operation,
    method: Method,
    path: String,
    /// Each parameter as `name=A.id` or `name=B.id`.
    owners: String,
    /// The same request with A's values replaced by unknown ones.
    unknown_path: String,
    payload: Payload,
}

/// Every request B makes: for each operation with parameters, each assignment of A's or B's
/// value to its parameters with at least one of A's, and each form of A's values.
async fn probes(app: &TestApp, a: &Team, b: &Team, failures: &mut Vec<String>, notes: &mut Vec<String>) -> Vec<Probe> {
    let doc = api::document::document();
    let mut lists = HashMap::new();
    let mut probes = Vec::new();
    for operation in OPERATIONS {
        let names = parameters(operation.path);
        if names.iter().all(|name| FIXED_CODES.contains(&&name[..])) {
            continue;
        }
        match operation.access {
            // No credential: `{token}` on these pages is a signed token Herald handed out, not a
            // team's id; who holds the link may use it, whatever team they are in.
            Access::Public | Access::Page => continue,
            // An OAuth client is no team's: its registration access token alone manages it.
            Access::Registration => continue,
            Access::SendingAccess | Access::FullAccess => {}
            Access::Session | Access::Inbox => {}
            access @ Access::TokenOnly => {
                failures.push(format!("{}: team B has no {access:?} credential in this probe; give it one", operation.id));
                continue;
            }
        }
        let payload = match body_for(&doc, operation) {
            Ok(payload) => payload,
            Err(problem) => {
                failures.push(format!("{}: {problem}", operation.id));
                continue;
            }
        };
        let (theirs, ours) = match (resolve(app, a, operation.path, &mut lists).await, resolve(app, b, operation.path, &mut lists).await) {
            (Ok(theirs), Ok(ours)) => (theirs, ours),
            (Err(problem), _) | (_, Err(problem)) => {
                failures.push(format!("{}: cannot find {problem}; give both teams one in `populate`", operation.id));
                continue;
            }
        };
        // A's own request, where it reads: it must find what B is refused, or B's 404 proves nothing.
        if method_of(operation) == Method::GET {
            let values: Vec<String> = theirs.iter().map(|forms| forms[0].1.clone()).collect();
            let path = fill(operation.path, &values);
            let own = call(app, a, &Method::GET, &path, &Payload::Empty).await;
            if own.status != 200 {
                notes.push(format!("{}: team A's own GET {path} answers {} (B's 404 there is vacuous)", operation.id, own.summary()));
            }
        }
        let n = names.len();
        for mask in 1u32..(1 << n) {
            if names.iter().enumerate().any(|(i, name)| mask & (1 << i) != 0 && UNSCOPED_PARAMETERS.contains(&&name[..])) {
                continue;
            }
            // Per parameter, the choices: (`name=owner.form`, value, an unknown value of that form).
            let mut combinations: Vec<Vec<(String, String, String)>> = vec![vec![]];
            for (i, name) in names.iter().enumerate() {
                let choices: Vec<(String, String, String)> = if mask & (1 << i) != 0 {
                    theirs[i].iter().map(|(form, value)| (format!("{name}=A.{form}"), value.clone(), unknown(form))).collect()
                } else {
                    vec![(format!("{name}=B.id"), ours[i][0].1.clone(), ours[i][0].1.clone())]
                };
                combinations = combinations
                    .into_iter()
                    .flat_map(|prefix| {
                        choices.iter().map(move |choice| {
                            let mut next = prefix.clone();
                            next.push(choice.clone());
                            next
                        })
                    })
                    .collect();
            }
            for combination in combinations {
                let owners = combination.iter().map(|(owner, _, _)| owner.as_str()).collect::<Vec<_>>().join(" ");
                let values: Vec<String> = combination.iter().map(|(_, value, _)| value.clone()).collect();
                let unknowns: Vec<String> = combination.iter().map(|(_, _, value)| value.clone()).collect();
                probes.push(Probe {
                    operation,
                    method: method_of(operation),
                    path: fill(operation.path, &values),
                    owners,
                    unknown_path: fill(operation.path, &unknowns),
                    payload: payload.clone(),
                });
            }
        }
    }
    probes
}

/// For each table holding team data, the condition selecting team A's rows (`$1` is A's id):
/// its `team_id`, or a foreign key into rows of A in another table (so that a row of B's
/// pointing at A's, or a child row with no `team_id`, counts as A's too).
async fn ownership(pool: &sqlx::PgPool) -> BTreeMap<String, String> {
    let with_team: Vec<String> = sqlx::query_scalar(
        "SELECT format('%I.%I', c.table_schema, c.table_name) FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
         WHERE c.column_name = 'team_id' AND t.table_type = 'BASE TABLE'
           AND c.table_schema NOT IN ('pg_catalog', 'information_schema')",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let keys: Vec<(String, String, String, String)> = sqlx::query_as(
        "SELECT format('%I.%I', cn.nspname, cl.relname), quote_ident(a.attname), format('%I.%I', pn.nspname, pl.relname), quote_ident(pa.attname)
         FROM pg_constraint c
         JOIN pg_class cl ON cl.oid = c.conrelid JOIN pg_namespace cn ON cn.oid = cl.relnamespace
         JOIN pg_class pl ON pl.oid = c.confrelid JOIN pg_namespace pn ON pn.oid = pl.relnamespace
         JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
         JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = c.confkey[1]
         WHERE c.contype = 'f' AND cardinality(c.conkey) = 1",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let teams = "public.teams".to_string();
    let tables: BTreeSet<String> = with_team.iter().cloned().chain(keys.iter().map(|(child, ..)| child.clone())).filter(|t| *t != teams).collect();
    let mut owned = BTreeMap::from([(teams.clone(), "id = $1".to_string())]);
    // Each round reaches one foreign key further from `teams`.
    for _ in 0..4 {
        let mut next = BTreeMap::from([(teams.clone(), "id = $1".to_string())]);
        for table in &tables {
            let mut conditions = Vec::new();
            if with_team.contains(table) {
                conditions.push("team_id = $1".to_string());
            }
            for (child, column, parent, parent_column) in &keys {
                if child != table || child == parent {
                    continue;
                }
                if *parent == teams {
                    if column != "team_id" {
                        conditions.push(format!("{column} = $1"));
                    }
                } else if let Some(condition) = owned.get(parent) {
                    conditions.push(format!("{column} IN (SELECT {parent_column} FROM {parent} WHERE {condition})"));
                }
            }
            if !conditions.is_empty() {
                next.insert(table.clone(), conditions.join(" OR "));
            }
        }
        owned = next;
    }
    owned.retain(|table, _| !UNCOMPARED_TABLES.iter().any(|(skipped, _)| skipped == table));
    owned
}

type Snapshot = BTreeMap<String, Vec<String>>;

/// Team A's rows, each as JSON text without the uncompared columns, sorted.
async fn snapshot(pool: &sqlx::PgPool, owned: &BTreeMap<String, String>, team: Uuid) -> Snapshot {
    let skipped: Vec<String> = UNCOMPARED_COLUMNS.iter().map(|c| c.to_string()).collect();
    let mut rows = Snapshot::new();
    for (table, condition) in owned {
        let sql = format!("SELECT (to_jsonb(t) - $2::text[])::text FROM {table} t WHERE {condition}");
        let mut found: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(team).bind(&skipped).fetch_all(pool).await.unwrap();
        found.sort();
        rows.insert(table.clone(), found);
    }
    rows
}

/// A snapshot that holds still for half a second (background work has finished).
async fn settled(pool: &sqlx::PgPool, owned: &BTreeMap<String, String>, team: Uuid) -> Snapshot {
    let started = Instant::now();
    let mut last = snapshot(pool, owned, team).await;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = snapshot(pool, owned, team).await;
        if now == last {
            return now;
        }
        assert!(started.elapsed() < WAIT, "team A's rows keep changing: {}", differences(&last, &now));
        last = now;
    }
}

fn differences(before: &Snapshot, after: &Snapshot) -> String {
    let mut said = Vec::new();
    for (table, rows) in after {
        let old = before.get(table).cloned().unwrap_or_default();
        if old != *rows {
            let gone: Vec<&String> = old.iter().filter(|r| !rows.contains(r)).collect();
            let new: Vec<&String> = rows.iter().filter(|r| !old.contains(r)).collect();
            said.push(format!("{table}:\n  before: {gone:?}\n  after:  {new:?}"));
        }
    }
    said.join("\n")
}

/// Every id-looking string in A's rows.
fn ids_in(snapshot: &Snapshot) -> BTreeSet<String> {
    fn walk(value: &Value, found: &mut BTreeSet<String>) {
        match value {
            Value::String(s) if Uuid::parse_str(s).is_ok() => {
                found.insert(s.clone());
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            Value::Object(fields) => fields.values().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = BTreeSet::new();
    for row in snapshot.values().flatten() {
        walk(&serde_json::from_str(row).unwrap(), &mut found);
    }
    found
}

async fn jobs(pool: &sqlx::PgPool) -> BTreeMap<String, String> {
    sqlx::query_as::<_, (String, String)>("SELECT id::text, convert_from(job, 'UTF8') FROM apalis.jobs").fetch_all(pool).await.unwrap().into_iter().collect()
}

#[tokio::test]
async fn another_teams_ids_answer_404_on_every_route_and_change_nothing() {
    let mail = mail::setup_with(SmtpSink::start().await, |config| config.webhook_allow_private = true).await;
    let app = &mail.app;
    let receiver = Receiver::start().await;
    let a = Team { label: "a", id: app.team_id, key: app.key.clone(), session: admin_session(app, app.team_id, "a").await };
    let (b_id, b_key) = api::cli::create_team(&app.pool, "Team B").await.unwrap();
    let b = Team { label: "b", id: b_id, key: b_key, session: admin_session(app, b_id, "b").await };
    sqlx::query("UPDATE teams SET plan_code = 'pro', sandbox_regions = '{}' WHERE id = $1").bind(b.id).execute(&app.pool).await.unwrap();
    tests::mail::verified_domain_as(app, &b.key, "beta.test", json!({})).await;
    populate(app, &a, SENDING_DOMAIN, &receiver).await;
    populate(app, &b, "beta.test", &receiver).await;

    let mut failures = Vec::new();
    let mut notes = Vec::new();
    let probes = probes(app, &a, &b, &mut failures, &mut notes).await;

    let owned = ownership(&app.pool).await;
    eprintln!("team A's rows compared in: {:?}", owned.keys().collect::<Vec<_>>());
    let before = settled(&app.pool, &owned, a.id).await;
    let jobs_before = jobs(&app.pool).await;

    let mut request_ids = Vec::new();
    for probe in &probes {
        let reply = call(app, &b, &probe.method, &probe.path, &probe.payload).await;
        request_ids.extend(reply.request_id.clone());
        let at = format!("{} {} {} [{}]", probe.operation.id, probe.method, probe.path, probe.owners);
        if reply.is_not_found() {
            eprintln!("404 {at}");
            continue;
        }
        // A handler may check the body before looking the id up: then an unknown id must get
        // the very same refusal, so that the answer says nothing about A's resource.
        let control = call(app, &b, &probe.method, &probe.unknown_path, &probe.payload).await;
        request_ids.extend(control.request_id.clone());
        if (400..500).contains(&reply.status) && (control.status, control.name()) == (reply.status, reply.name()) {
            notes.push(format!("{at}: answers {} for A's id and an unknown one alike (the body is checked first)", reply.summary()));
        } else {
            failures.push(format!("{at}: answered {}; an unknown id answers {}", reply.summary(), control.summary()));
        }
    }

    let after = settled(&app.pool, &owned, a.id).await;
    if before != after {
        failures.push(format!("team A's rows changed:\n{}", differences(&before, &after)));
    }
    let theirs = ids_in(&after);
    for (id, job) in jobs(&app.pool).await {
        if !jobs_before.contains_key(&id) && theirs.iter().any(|their| job.contains(their.as_str())) {
            failures.push(format!("a job naming team A's rows was enqueued: {job}"));
        }
    }
    let logged: Vec<(Uuid, i64)> = waited("team B's requests are logged", || async {
        let logged: Vec<(Uuid, i64)> = sqlx::query_as("SELECT team_id, count(*) FROM request_logs WHERE request_id = ANY($1) GROUP BY team_id")
            .bind(&request_ids)
            .fetch_all(&app.pool)
            .await
            .unwrap();
        (logged.iter().map(|(_, n)| *n).sum::<i64>() >= request_ids.len() as i64).then_some(logged)
    })
    .await;
    if logged.iter().any(|(team, _)| *team != b.id) {
        failures.push(format!("team B's requests were logged under another team: {logged:?}"));
    }

    let probed: BTreeSet<&str> = probes.iter().map(|p| p.operation.id).collect();
    eprintln!("{} requests over {} operations: {probed:?}", probes.len(), probed.len());
    for note in &notes {
        eprintln!("note: {note}");
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
