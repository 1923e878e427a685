//! Pieces of the Inbox tests: a sending team whose domain receives mail, people of the team
//! signed in to the dashboard, keys with Inbox access, channels, and mail through real SMTP.

use crate::mail::{self, Mail, SENDING_DOMAIN};
use crate::smtp::SmtpSink;
use crate::{Answer, TestApp};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

/// A person of the team signed in to the dashboard: their id, session cookie and CSRF token.
#[derive(Debug, Clone)]
pub struct Person {
    pub id: Uuid,
    pub cookie: String,
    pub csrf: String,
}

/// A team whose sending domain (`acme.test`) also receives mail, with its inbound SMTP port
/// and an admin signed in.
pub struct Desk {
    pub mail: Mail,
    pub smtp_port: u16,
    pub admin: Person,
}

impl Desk {
    pub fn app(&self) -> &TestApp {
        &self.mail.app
    }
}

pub async fn desk() -> Desk {
    let mail = mail::setup_with(SmtpSink::start().await, |c| c.webhook_allow_private = true).await;
    let domain = mail.domain["id"].as_str().unwrap().to_string();
    let receiving = mail.app.patch(&format!("/domains/{domain}"), json!({ "capabilities": { "receiving": "enabled" } })).await;
    assert_eq!(receiving.status, 200, "{}", receiving.body);
    let smtp_port = mail.app.start_inbound(|_| {}).await;
    let admin = person(&mail.app, mail.app.team_id, "admin", "Ada").await;
    Desk { mail, smtp_port, admin }
}

/// A person with `role` in `team_id`, signed in with that team current.
pub async fn person(app: &TestApp, team_id: Uuid, role: &str, name: &str) -> Person {
    let id = Uuid::now_v7();
    sqlx::query("INSERT INTO people (id, email, name, password_hash) VALUES ($1, $2, $3, 'unused')")
        .bind(id)
        .bind(format!("{}@people.example", id.simple()))
        .bind(name)
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO memberships (team_id, person_id, role) VALUES ($1, $2, $3)").bind(team_id).bind(id).bind(role).execute(&app.pool).await.unwrap();
    let (cookie, csrf) = (format!("hs_inbox_{}", id.simple()), format!("csrf_{}", id.simple()));
    sqlx::query("INSERT INTO sessions (id, token_hash, person_id, team_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4, $5, now() + interval '1 day')")
        .bind(Uuid::now_v7())
        .bind(schema::secret::hash(&cookie))
        .bind(id)
        .bind(team_id)
        .bind(&csrf)
        .execute(&app.pool)
        .await
        .unwrap();
    Person { id, cookie, csrf }
}

/// A call with the person's session (no key).
pub async fn as_person(app: &TestApp, person: &Person, method: Method, path: &str, body: Option<Value>) -> Answer {
    let mut request = app.client.request(method, app.url(path)).header("cookie", format!("herald_session={}", person.cookie)).header("x-csrf-token", &person.csrf);
    if let Some(body) = body {
        request = request.json(&body);
    }
    Answer::from(request.send().await.unwrap()).await
}

/// A call with an API key.
pub async fn as_key(app: &TestApp, key: &str, method: Method, path: &str, body: Option<Value>) -> Answer {
    let mut request = app.request_as(key, method, path);
    if let Some(body) = body {
        request = request.json(&body);
    }
    Answer::from(request.send().await.unwrap()).await
}

/// A key of the team with `inbox_access` (and a channel limit), made by the signed-in admin.
pub async fn inbox_key(app: &TestApp, admin: &Person, access: &str, channel_ids: Option<Vec<String>>) -> String {
    let body = json!({ "name": format!("{access} desk key"), "inbox_access": access, "inbox_channel_ids": channel_ids });
    let answer = app
        .request(Method::POST, "/api-keys")
        .header("cookie", format!("herald_session={}", admin.cookie))
        .header("x-csrf-token", &admin.csrf)
        .json(&body)
        .send()
        .await
        .unwrap();
    let answer = Answer::from(answer).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body["token"].as_str().unwrap().to_string()
}

/// A channel at `local@acme.test`, added by the admin; answers its id.
pub async fn channel(desk: &Desk, local: &str, extra: Value) -> String {
    let mut body = json!({ "name": format!("{local} desk"), "address": format!("{local}@{SENDING_DOMAIN}") });
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let answer = as_person(desk.app(), &desk.admin, Method::POST, "/inbox/channels", Some(body)).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body["id"].as_str().unwrap().to_string()
}

/// Mails `to` (a local part at acme.test) from `from` through the inbound server; `headers`
/// are extra header lines (`In-Reply-To: <...>`).
pub async fn write_in(desk: &Desk, from: &str, to: &str, subject: &str, message_id: &str, headers: &str) {
    let raw = format!(
        "From: Customer <{from}>\r\nTo: {to}@{SENDING_DOMAIN}\r\nSubject: {subject}\r\nMessage-ID: <{message_id}>\r\n{headers}MIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nHello about {subject}.\r\n"
    );
    crate::smtp::submit(desk.smtp_port, from, &format!("{to}@{SENDING_DOMAIN}"), raw.as_bytes()).await.expect("the inbound server takes the message");
}

/// An OAuth access token of `person` in `team_id` with `scopes`, as an agent's approved grant
/// would hold (written as the token endpoint writes it).
pub async fn token(app: &TestApp, person: &Person, team_id: Uuid, scopes: &[&str]) -> String {
    let (client, grant) = (Uuid::now_v7(), Uuid::now_v7());
    sqlx::query("INSERT INTO oauth_clients (id, client_id, registration_token_hash, client_name, redirect_uris, grant_types, response_types) VALUES ($1, $2, $3, 'Desk agent', '{https://agent.example/cb}', '{authorization_code}', '{code}')")
        .bind(client)
        .bind(format!("rkoc_{}", client.simple()))
        .bind(schema::secret::hash(&format!("rkor_{}", client.simple())))
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO oauth_grants (id, team_id, person_id, client_id, scopes) VALUES ($1, $2, $3, $4, $5)")
        .bind(grant)
        .bind(team_id)
        .bind(person.id)
        .bind(client)
        .bind(scopes)
        .execute(&app.pool)
        .await
        .unwrap();
    let token = format!("rko_{}", Uuid::now_v7().simple());
    sqlx::query("INSERT INTO oauth_tokens (id, token_hash, kind, grant_id, family_id, scopes, expires_at) VALUES ($1, $2, 'access', $3, $1, $4, now() + interval '1 hour')")
        .bind(Uuid::now_v7())
        .bind(schema::secret::hash(&token))
        .bind(grant)
        .bind(scopes)
        .execute(&app.pool)
        .await
        .unwrap();
    token
}

/// Calls an MCP tool over `/mcp` (JSON-RPC, stateless) with `token`; answers whether it
/// failed and its text.
pub async fn tool(app: &TestApp, token: &str, name: &str, arguments: Value) -> (bool, String) {
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": name, "arguments": arguments } });
    let answer = app.request_as(token, Method::POST, "/mcp").header("accept", "application/json, text/event-stream").json(&call).send().await.unwrap();
    let body: Value = answer.json().await.unwrap();
    let result = &body["result"];
    assert!(result.is_object(), "{body}");
    (result["isError"] == true, result["content"][0]["text"].as_str().unwrap_or_default().to_string())
}
