//! A local HTTP server speaking the few Cloudflare v4 endpoints auto-configuration uses:
//! token verification, the zones a token reaches, listing and creating DNS records.

use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Json, Path, Query};
use poem::{EndpointExt, IntoResponse, Request, Response, Route, get, handler, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A record the fake provider holds.
#[derive(Debug, Clone, PartialEq)]
pub struct CfRecord {
    pub zone_id: String,
    pub record_type: String,
    pub name: String,
    pub content: String,
    /// The whole JSON body it was created with (empty for seeded records).
    pub body: Value,
}

#[derive(Default)]
struct State {
    /// Token to the zones `(id, name)` it reaches.
    tokens: HashMap<String, Vec<(String, String)>>,
    records: Vec<CfRecord>,
}

/// The fake provider; clones share its state.
#[derive(Clone, Default)]
pub struct FakeCloudflare {
    state: Arc<Mutex<State>>,
    /// `http://127.0.0.1:port/client/v4`.
    pub base: String,
}

impl FakeCloudflare {
    pub async fn start() -> FakeCloudflare {
        let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await.unwrap();
        let port = acceptor.local_addr()[0].as_socket_addr().unwrap().port();
        let fake = FakeCloudflare { state: Arc::default(), base: format!("http://127.0.0.1:{port}/client/v4") };
        let app = Route::new()
            .at("/client/v4/user/tokens/verify", get(verify))
            .at("/client/v4/zones", get(list_zones))
            .at("/client/v4/zones/:zone/dns_records", get(list_records).post(create_record))
            .data(fake.clone());
        tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(app));
        fake
    }

    /// Issues `token` reaching the given zones (`(id, name)`).
    pub fn add_token(&self, token: &str, zones: &[(&str, &str)]) {
        let zones = zones.iter().map(|(id, name)| (id.to_string(), name.to_string())).collect();
        self.state.lock().unwrap().tokens.insert(token.to_string(), zones);
    }

    /// A record already in the zone.
    pub fn seed(&self, zone_id: &str, record_type: &str, name: &str, content: &str) {
        self.state.lock().unwrap().records.push(CfRecord {
            zone_id: zone_id.into(),
            record_type: record_type.into(),
            name: name.into(),
            content: content.into(),
            body: Value::Null,
        });
    }

    pub fn records(&self) -> Vec<CfRecord> {
        self.state.lock().unwrap().records.clone()
    }
}

fn zones_of(fake: &FakeCloudflare, request: &Request) -> Option<Vec<(String, String)>> {
    let token = request.header("authorization")?.strip_prefix("Bearer ")?;
    fake.state.lock().unwrap().tokens.get(token).cloned()
}

fn refused() -> Response {
    Json(json!({ "success": false, "errors": [{ "code": 1000, "message": "Invalid API Token" }], "result": null }))
        .with_status(StatusCode::UNAUTHORIZED)
        .into_response()
}

#[handler]
fn verify(request: &Request, fake: Data<&FakeCloudflare>) -> Response {
    match zones_of(&fake, request) {
        Some(_) => Json(json!({ "success": true, "errors": [], "result": { "id": "token-id", "status": "active" } })).into_response(),
        None => refused(),
    }
}

#[handler]
fn list_zones(request: &Request, fake: Data<&FakeCloudflare>) -> Response {
    let Some(zones) = zones_of(&fake, request) else { return refused() };
    let result: Vec<Value> = zones.iter().map(|(id, name)| json!({ "id": id, "name": name })).collect();
    Json(json!({ "success": true, "errors": [], "result": result, "result_info": { "total_count": zones.len() } })).into_response()
}

#[derive(Deserialize)]
struct NameQuery {
    name: Option<String>,
}

fn reaches(fake: &FakeCloudflare, request: &Request, zone: &str) -> bool {
    zones_of(fake, request).is_some_and(|zones| zones.iter().any(|(id, _)| id == zone))
}

#[handler]
fn list_records(request: &Request, fake: Data<&FakeCloudflare>, Path(zone): Path<String>, Query(query): Query<NameQuery>) -> Response {
    if !reaches(&fake, request, &zone) {
        return refused();
    }
    let records: Vec<Value> = fake
        .records()
        .into_iter()
        .filter(|r| r.zone_id == zone && query.name.as_ref().is_none_or(|name| *name == r.name))
        .map(|r| json!({ "id": "r", "type": r.record_type, "name": r.name, "content": r.content }))
        .collect();
    Json(json!({ "success": true, "errors": [], "result": records })).into_response()
}

#[handler]
fn create_record(request: &Request, fake: Data<&FakeCloudflare>, Path(zone): Path<String>, Json(body): Json<Value>) -> Response {
    if !reaches(&fake, request, &zone) {
        return refused();
    }
    let record = CfRecord {
        zone_id: zone,
        record_type: body["type"].as_str().unwrap_or_default().into(),
        name: body["name"].as_str().unwrap_or_default().into(),
        content: body["content"].as_str().unwrap_or_default().into(),
        body: body.clone(),
    };
    fake.state.lock().unwrap().records.push(record);
    Json(json!({ "success": true, "errors": [], "result": body })).into_response()
}
