//! The platforms Herald migrates from, for the migration tests: one server on a free port that
//! serves Resend (under `/resend`), the Mailchimp Marketing API v3 (under `/mailchimp/3.0`) and
//! listmonk (under `/listmonk/api`), each in its own wire format for the calls Herald makes, as
//! `docs/migrations-research.md` records them: auth and its refusals, paging (Resend's cursors,
//! Mailchimp's `offset`/`count`, listmonk's `page`/`per_page`), the envelopes and the error
//! bodies. Tests seed an account per platform, make the next calls fail with 429 or 5xx, and read
//! back every request received. A Mailchimp audience can be generated on demand (a million
//! members are never held in memory) for the volume tests.

use base64::Engine;
use poem::http::{HeaderValue, Method, StatusCode};
use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::Data;
use poem::{EndpointExt, Request, Response, Route, handler};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// The Resend API key Herald is given (a full-access key).
pub const RESEND_KEY: &str = "re_test_123";
/// The Mailchimp API key Herald is given (its `-us6` suffix names the datacenter).
pub const MAILCHIMP_KEY: &str = "0123456789abcdef0123456789abcdef-us6";
/// The listmonk API user Herald is given.
pub const LISTMONK_USER: &str = "herald";
/// The listmonk API user's token.
pub const LISTMONK_TOKEN: &str = "lm-token-1";

/// One request the stand-in received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `"resend"`, `"mailchimp"`, `"listmonk"`, or `""` for a path under none of them.
    pub platform: String,
    /// The HTTP method, e.g. `"GET"`.
    pub method: String,
    /// The path as received, platform prefix and query included, e.g. `/resend/contacts?limit=100`.
    pub path: String,
    /// The `Authorization` header's value, if one was sent.
    pub authorization: Option<String>,
}

/// A Resend team's data, as its API answers it. Objects carry their own `id`s; lists page by
/// the position of an id in the order given here.
#[derive(Debug, Clone, Default)]
pub struct ResendAccount {
    /// Contact objects (`id`, `email`, `first_name`, `last_name`, `unsubscribed`, `created_at`,
    /// `properties`); `object`, and missing names, flag and properties are filled in.
    pub contacts: Vec<Value>,
    /// Segments (`{id, name, created_at}`) with the emails of the contacts in each.
    pub segments: Vec<(Value, Vec<String>)>,
    /// Topics (`{id, name, description, default_subscription, visibility, created_at}`).
    pub topics: Vec<Value>,
    /// Contact properties (`{id, key, type, fallback_value, created_at}`).
    pub properties: Vec<Value>,
    /// Domains (`{id, name, status, created_at, region}`).
    pub domains: Vec<Value>,
    /// Full template objects (`GET /templates/{id}`); the list answers a summary of each.
    pub templates: Vec<Value>,
    /// A contact's own choice on a topic: (contact email, topic id, `"opt_in"` | `"opt_out"`),
    /// answered by `GET /contacts/{id}/topics`; other topics answer their default.
    pub contact_topics: Vec<(String, String, String)>,
}

/// A Mailchimp account: its audiences (lists).
#[derive(Debug, Clone, Default)]
pub struct MailchimpAccount {
    /// The audiences, in the order `GET /lists` answers them.
    pub lists: Vec<MailchimpList>,
}

/// One Mailchimp audience.
#[derive(Debug, Clone)]
pub struct MailchimpList {
    /// The list id (10 hex characters in Mailchimp).
    pub id: String,
    /// The audience's name.
    pub name: String,
    /// Merge fields, at least `{tag, name, type}` each; `merge_id`, `display_order`, `required`,
    /// `default_value`, `public`, `options`, `help_text` and `list_id` are filled in.
    pub merge_fields: Vec<Value>,
    /// The members.
    pub members: Members,
}

/// The members of a Mailchimp audience.
#[derive(Debug, Clone)]
pub enum Members {
    /// As given (full member objects; the stand-in fills any missing standard field).
    Given(Vec<Value>),
    /// `n` members generated on demand from their number `i` in `1..=n`, so a million never sits
    /// in memory: email `member{i}@bulk.example`, FNAME `First{i}`, LNAME `Last{i}`; status
    /// `cleaned` when `i % 97 == 0`, else `unsubscribed` when `i % 50 == 0`, else `subscribed`;
    /// tags `[{"id":1,"name":"Customers"}]` when `i % 10 == 0`; `ip_opt` `198.51.100.{i % 254 + 1}`
    /// and `timestamp_opt` 2024-01-01T00:00:00+00:00 plus `i` minutes.
    Generated(usize),
}

/// A listmonk instance's data, as its API answers it (objects as given, in this order).
#[derive(Debug, Clone, Default)]
pub struct ListmonkAccount {
    /// List objects (`id, uuid, name, type, optin, status, tags, description, subscriber_count, ...`).
    pub lists: Vec<Value>,
    /// Subscriber objects (`id, uuid, email, name, attribs, status, ..., lists: [...]`).
    pub subscribers: Vec<Value>,
    /// Template objects (`id, name, type, subject, body, body_source, is_default, ...`).
    pub templates: Vec<Value>,
}

#[derive(Debug, Clone, Copy)]
struct Failure {
    status: u16,
    retry_after: Option<u64>,
}

#[derive(Clone, Default)]
struct Accounts {
    resend: Arc<ResendAccount>,
    mailchimp: Arc<MailchimpAccount>,
    listmonk: Arc<ListmonkAccount>,
}

#[derive(Default)]
struct State {
    accounts: Accounts,
    failures: HashMap<String, VecDeque<Failure>>,
    seen: Vec<Seen>,
}

impl State {
    /// Records a request; answers the failure it is to meet, if any, and the accounts.
    fn admit(&mut self, seen: Seen) -> (Option<Failure>, Accounts) {
        let failure = self.failures.get_mut(&seen.platform).and_then(VecDeque::pop_front);
        self.seen.push(seen);
        (failure, self.accounts.clone())
    }
}

/// The running stand-in.
pub struct Platforms {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<Mutex<State>>,
}

impl Platforms {
    /// Starts the server on a free port, with empty accounts.
    pub async fn start() -> Platforms {
        let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await.unwrap();
        let port = acceptor.local_addr()[0].as_socket_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let app = Route::new().at("/*path", serve).data(state.clone());
        tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(app));
        Platforms { base: format!("http://127.0.0.1:{port}"), state }
    }

    /// What Herald is given as `HERALD_MIGRATION_RESEND_API_BASE`: `{base}/resend`.
    pub fn resend_base(&self) -> String {
        format!("{}/resend", self.base)
    }

    /// What Herald is given as `HERALD_MIGRATION_MAILCHIMP_API_BASE`: `{base}/mailchimp`
    /// (Herald appends `/3.0/...`).
    pub fn mailchimp_base(&self) -> String {
        format!("{}/mailchimp", self.base)
    }

    /// listmonk's `base_url`: `{base}/listmonk` (Herald appends `/api/...`).
    pub fn listmonk_base(&self) -> String {
        format!("{}/listmonk", self.base)
    }

    /// Replaces the Resend account.
    pub fn seed_resend(&self, mut account: ResendAccount) {
        account.contacts = account.contacts.into_iter().map(complete_contact).collect();
        self.state.lock().unwrap().accounts.resend = Arc::new(account);
    }

    /// Replaces the Mailchimp account (filling in the members' and merge fields' missing fields).
    pub fn seed_mailchimp(&self, account: MailchimpAccount) {
        let lists = account.lists.into_iter().map(complete_list).collect();
        self.state.lock().unwrap().accounts.mailchimp = Arc::new(MailchimpAccount { lists });
    }

    /// Replaces the listmonk account.
    pub fn seed_listmonk(&self, account: ListmonkAccount) {
        self.state.lock().unwrap().accounts.listmonk = Arc::new(account);
    }

    /// The next `times` requests to `platform` (`"resend"` | `"mailchimp"` | `"listmonk"`)
    /// answer `status` (429 or 5xx) with the platform's error body; with `retry_after` a
    /// `Retry-After: N` header (and for Resend also `ratelimit-limit`, `ratelimit-remaining: 0`,
    /// `ratelimit-reset`). Failures come before the auth check.
    pub fn fail_next(&self, platform: &str, status: u16, retry_after: Option<u64>, times: usize) {
        let mut state = self.state.lock().unwrap();
        let queue = state.failures.entry(platform.to_string()).or_default();
        queue.extend(std::iter::repeat_n(Failure { status, retry_after }, times));
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }
}

#[handler]
fn serve(request: &Request, state: Data<&Arc<Mutex<State>>>) -> Response {
    let (platform, rest) = split_platform(request.uri().path());
    let authorization = request.header("authorization");
    let seen = Seen {
        platform: platform.to_string(),
        method: request.method().to_string(),
        path: request.uri().path_and_query().map_or_else(|| request.uri().path().to_string(), |p| p.as_str().to_string()),
        authorization: authorization.map(str::to_string),
    };
    let (failure, accounts) = state.lock().unwrap().admit(seen);
    if let Some(failure) = failure {
        return failed(platform, failure);
    }
    let call = Call { authorization, get: request.method() == Method::GET, path: segments(rest), query: query_pairs(request.uri().query()) };
    match platform {
        "resend" => resend::serve(&call, &accounts.resend),
        "mailchimp" => mailchimp::serve(&call, &accounts.mailchimp),
        "listmonk" => listmonk::serve(&call, &accounts.listmonk),
        _ => Response::builder().status(StatusCode::NOT_FOUND).body("not found"),
    }
}

/// What a platform's handler needs of a request.
struct Call<'a> {
    authorization: Option<&'a str>,
    get: bool,
    /// The path's segments after the platform prefix, percent-decoded.
    path: Vec<String>,
    query: Vec<(String, String)>,
}

impl Call<'_> {
    fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    fn route(&self) -> Vec<&str> {
        self.path.iter().map(String::as_str).collect()
    }
}

fn split_platform(path: &str) -> (&'static str, &str) {
    let trimmed = path.trim_start_matches('/');
    let (first, rest) = trimmed.split_once('/').unwrap_or((trimmed, ""));
    let platform = ["resend", "mailchimp", "listmonk"].into_iter().find(|p| *p == first).unwrap_or("");
    (platform, rest)
}

fn segments(rest: &str) -> Vec<String> {
    rest.split('/').filter(|s| !s.is_empty()).map(percent_decode).collect()
}

fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()).into_owned().collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        match (bytes[i], hex) {
            (b'%', Some(hex)) => {
                out.push(u8::from_str_radix(std::str::from_utf8(hex).unwrap(), 16).unwrap());
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `user:password` from a Basic credential.
fn basic_pair(credentials: &str) -> Option<(String, String)> {
    let decoded = base64::engine::general_purpose::STANDARD.decode(credentials.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

fn json_response(status: StatusCode, content_type: &str, body: impl Into<poem::Body>) -> Response {
    Response::builder().status(status).content_type(content_type).body(body)
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// The answer to a request told to fail, in the platform's error format.
fn failed(platform: &str, failure: Failure) -> Response {
    let status = status_code(failure.status);
    let limited = status == StatusCode::TOO_MANY_REQUESTS;
    let mut response = match platform {
        "resend" if limited => resend::error(status, "rate_limit_exceeded", "Too many requests. You can only make 2 requests per second. See rate limit response headers for more information. Or contact support to increase rate limit."),
        "resend" => resend::error(status, "application_error", "An unexpected error occurred."),
        "mailchimp" if limited => mailchimp::problem(status, "Too Many Requests", "You have exceeded the limit of 10 simultaneous connections."),
        "mailchimp" => mailchimp::problem(status, status.canonical_reason().unwrap_or("Internal Server Error"), "An unexpected internal error has occurred. Please contact Support for more information."),
        _ => listmonk::error(status, status.canonical_reason().unwrap_or("Internal Server Error")),
    };
    if let Some(seconds) = failure.retry_after {
        let headers = response.headers_mut();
        headers.insert("retry-after", HeaderValue::from(seconds));
        if platform == "resend" {
            headers.insert("ratelimit-limit", HeaderValue::from(2u64));
            headers.insert("ratelimit-remaining", HeaderValue::from(0u64));
            headers.insert("ratelimit-reset", HeaderValue::from(seconds));
        }
    }
    response
}

/// Adds each of `defaults`' keys that `value` (an object) lacks.
fn fill(value: &mut Value, defaults: Value) {
    if let (Some(object), Value::Object(defaults)) = (value.as_object_mut(), defaults) {
        for (key, default) in defaults {
            object.entry(key).or_insert(default);
        }
    }
}

fn complete_contact(mut contact: Value) -> Value {
    fill(&mut contact, json!({ "object": "contact", "first_name": null, "last_name": null, "unsubscribed": false, "created_at": "2025-11-30 20:41:40.84216+00", "properties": {} }));
    contact
}

/// Lower-case hex of the SHA-256 of `text`. Mailchimp's member `id` is the MD5 of the
/// lower-cased email; the tests crate has no MD5, so its first 32 hex characters stand in.
fn hash_hex(text: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(text.as_bytes()) {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    hex
}

fn complete_list(mut list: MailchimpList) -> MailchimpList {
    list.merge_fields = list.merge_fields.into_iter().enumerate().map(|(i, field)| complete_merge_field(i, field, &list.id)).collect();
    let tags: Vec<String> = list.merge_fields.iter().filter_map(|f| f["tag"].as_str().map(str::to_string)).collect();
    list.members = match list.members {
        Members::Given(members) => Members::Given(members.into_iter().enumerate().map(|(i, m)| complete_member(i, m, &list.id, &tags)).collect()),
        generated => generated,
    };
    list
}

fn complete_merge_field(index: usize, mut field: Value, list_id: &str) -> Value {
    fill(&mut field, json!({
        "merge_id": index + 1, "required": false, "default_value": "", "public": true, "display_order": index + 2,
        "options": {}, "help_text": "", "list_id": list_id, "_links": [],
    }));
    field
}

fn complete_member(index: usize, mut member: Value, list_id: &str, tags: &[String]) -> Value {
    let email = member["email_address"].as_str().unwrap_or_default().to_lowercase();
    let hash = hash_hex(&email);
    let merge = member.get("merge_fields").cloned().unwrap_or_else(|| json!({}));
    let names: Vec<&str> = ["FNAME", "LNAME"].iter().filter_map(|t| merge[*t].as_str()).filter(|n| !n.is_empty()).collect();
    let changed = member["timestamp_opt"].as_str().filter(|t| !t.is_empty()).unwrap_or("2024-01-01T00:00:00+00:00").to_string();
    let tags_count = member["tags"].as_array().map_or(0, Vec::len);
    fill(&mut member, json!({
        "id": &hash[..32], "unique_email_id": &hash[32..42], "contact_id": &hash[32..], "full_name": names.join(" "),
        "web_id": 500_000 + index, "email_type": "html", "status": "subscribed", "consents_to_one_to_one_messaging": true,
        "merge_fields": {}, "interests": {}, "stats": { "avg_open_rate": 0, "avg_click_rate": 0 },
        "ip_signup": "", "timestamp_signup": "", "ip_opt": "", "timestamp_opt": "", "member_rating": 2,
        "last_changed": changed, "language": "", "vip": false, "email_client": "",
        "location": { "latitude": 0, "longitude": 0, "gmtoff": 0, "dstoff": 0, "country_code": "", "timezone": "", "region": "" },
        "marketing_permissions": [], "source": "API - Generic", "tags_count": tags_count, "tags": [], "list_id": list_id,
    }));
    let blanks = Value::Object(tags.iter().map(|t| (t.clone(), json!(""))).collect());
    fill(&mut member["merge_fields"], blanks);
    member
}

/// Resend: bearer auth, cursor paging, `{statusCode, name, message}` errors.
mod resend {
    use super::*;

    /// An error in Resend's format.
    pub(super) fn error(status: StatusCode, name: &str, message: &str) -> Response {
        let body = json!({ "statusCode": status.as_u16(), "name": name, "message": message });
        json_response(status, "application/json", body.to_string())
    }

    fn ok(body: Value) -> Response {
        json_response(StatusCode::OK, "application/json", body.to_string())
    }

    fn not_found(what: &str) -> Response {
        error(StatusCode::NOT_FOUND, "not_found", &format!("{what} not found"))
    }

    fn denied(authorization: Option<&str>) -> Option<Response> {
        match authorization.and_then(|h| h.trim().strip_prefix("Bearer ")) {
            None => Some(error(StatusCode::UNAUTHORIZED, "missing_api_key", "Missing API key in the authorization header.")),
            Some(key) if key.trim() == RESEND_KEY => None,
            // Resend answers 403, not 401, for a key it does not know.
            Some(_) => Some(error(StatusCode::FORBIDDEN, "invalid_api_key", "API key is invalid")),
        }
    }

    /// Answers one call to the Resend API.
    pub(super) fn serve(call: &Call, account: &ResendAccount) -> Response {
        if let Some(denied) = denied(call.authorization) {
            return denied;
        }
        if !call.get {
            return error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "Method not allowed");
        }
        match call.route().as_slice() {
            ["contacts"] => contacts(call, account),
            ["contacts", key] => find_contact(account, key).map_or_else(|| not_found("Contact"), |c| ok(c.clone())),
            ["contacts", key, "segments"] => contact_segments(call, account, key),
            ["contacts", key, "topics"] => contact_topics(call, account, key),
            ["segments"] => page(call, &account.segments.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>(), true),
            ["segments", id, "contacts"] => segment_contacts(call, account, id),
            ["topics"] => page(call, &account.topics, false),
            ["contact-properties"] => page(call, &account.properties, false),
            ["domains"] => page(call, &account.domains, true),
            ["templates"] => page(call, &account.templates.iter().map(template_item).collect::<Vec<_>>(), false),
            ["templates", key] => template(account, key),
            _ => error(StatusCode::NOT_FOUND, "not_found", "Route not found"),
        }
    }

    /// One page of `items`: `{object: "list", has_more, data}`.
    fn page(call: &Call, items: &[Value], everything_by_default: bool) -> Response {
        match window(call, items, everything_by_default) {
            Ok((start, end, has_more)) => ok(json!({ "object": "list", "has_more": has_more, "data": &items[start..end] })),
            Err(message) => error(StatusCode::UNPROCESSABLE_ENTITY, "validation_error", &message),
        }
    }

    /// The range a request's `limit`, `after` and `before` select, and whether more lie beyond
    /// it (past its end, or before its start when paging with `before`). The endpoints that
    /// predate paging (contacts, segments, domains) answer everything without a `limit`; the
    /// newer ones (topics, contact properties, templates) default to 20. The cursor's own item
    /// is excluded. An unknown cursor is refused (what Resend does then is unconfirmed).
    fn window(call: &Call, items: &[Value], everything_by_default: bool) -> Result<(usize, usize, bool), String> {
        let limit = match call.param("limit") {
            None if everything_by_default => usize::MAX,
            None => 20,
            Some(text) => text.parse::<usize>().ok().filter(|n| (1..=100).contains(n)).ok_or("The `limit` parameter must be a number between 1 and 100.")?,
        };
        let position = |id: &str| items.iter().position(|item| item["id"] == id).ok_or(format!("No item has the id `{id}`."));
        match (call.param("after"), call.param("before")) {
            (Some(_), Some(_)) => Err("You can only use either `after` or `before`, not both.".into()),
            (Some(after), None) => {
                let start = position(after)? + 1;
                let end = start.saturating_add(limit).min(items.len());
                Ok((start, end, end < items.len()))
            }
            (None, Some(before)) => {
                let end = position(before)?;
                let start = end.saturating_sub(limit);
                Ok((start, end, start > 0))
            }
            (None, None) => {
                let end = limit.min(items.len());
                Ok((0, end, end < items.len()))
            }
        }
    }

    fn find_contact<'a>(account: &'a ResendAccount, key: &str) -> Option<&'a Value> {
        account.contacts.iter().find(|c| c["id"] == key || c["email"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(key)))
    }

    fn in_segment(emails: &[String], contact: &Value) -> bool {
        contact["email"].as_str().is_some_and(|e| emails.iter().any(|m| m.eq_ignore_ascii_case(e)))
    }

    fn members(account: &ResendAccount, segment_id: &str) -> Option<Vec<Value>> {
        let (_, emails) = account.segments.iter().find(|(s, _)| s["id"] == segment_id)?;
        Some(account.contacts.iter().filter(|c| in_segment(emails, c)).cloned().collect())
    }

    fn contacts(call: &Call, account: &ResendAccount) -> Response {
        match call.param("segment_id") {
            None => page(call, &account.contacts, true),
            Some(id) => segment_contacts(call, account, id),
        }
    }

    fn segment_contacts(call: &Call, account: &ResendAccount, id: &str) -> Response {
        members(account, id).map_or_else(|| not_found("Segment"), |contacts| page(call, &contacts, true))
    }

    fn contact_segments(call: &Call, account: &ResendAccount, key: &str) -> Response {
        let Some(contact) = find_contact(account, key) else { return not_found("Contact") };
        let segments: Vec<Value> = account.segments.iter().filter(|(_, emails)| in_segment(emails, contact)).map(|(s, _)| s.clone()).collect();
        page(call, &segments, false)
    }

    fn contact_topics(call: &Call, account: &ResendAccount, key: &str) -> Response {
        let Some(contact) = find_contact(account, key) else { return not_found("Contact") };
        let email = contact["email"].as_str().unwrap_or_default();
        let topics: Vec<Value> = account.topics.iter().map(|topic| contact_topic(account, email, topic)).collect();
        page(call, &topics, false)
    }

    fn contact_topic(account: &ResendAccount, email: &str, topic: &Value) -> Value {
        let chosen = account.contact_topics.iter().find(|(e, id, _)| e.eq_ignore_ascii_case(email) && topic["id"] == id.as_str());
        let subscription = chosen.map_or_else(|| topic["default_subscription"].clone(), |(_, _, s)| json!(s));
        json!({ "id": topic["id"], "name": topic["name"], "description": topic["description"], "subscription": subscription })
    }

    fn template_item(template: &Value) -> Value {
        let fields = ["id", "name", "alias", "status", "published_at", "created_at", "updated_at"];
        Value::Object(fields.iter().map(|f| (f.to_string(), template[*f].clone())).collect())
    }

    fn template(account: &ResendAccount, key: &str) -> Response {
        let Some(found) = account.templates.iter().find(|t| t["id"] == key || t["alias"] == key) else { return not_found("Template") };
        let mut found = found.clone();
        fill(&mut found, json!({ "object": "template" }));
        ok(found)
    }
}

/// Mailchimp Marketing API v3: Basic (any user, the key as password) or bearer auth,
/// `offset`/`count` paging, problem+json errors.
mod mailchimp {
    use super::*;
    use std::fmt::Write;

    const ERRORS: &str = "https://mailchimp.com/developer/marketing/docs/errors/";

    /// An error in Mailchimp's problem+json format.
    pub(super) fn problem(status: StatusCode, title: &str, detail: &str) -> Response {
        problem_with(status, title, detail, None)
    }

    fn problem_with(status: StatusCode, title: &str, detail: &str, errors: Option<Value>) -> Response {
        let mut body = json!({ "type": ERRORS, "title": title, "status": status.as_u16(), "detail": detail, "instance": uuid::Uuid::new_v4().to_string() });
        if let Some(errors) = errors {
            body["errors"] = errors;
        }
        json_response(status, "application/problem+json", body.to_string())
    }

    fn ok(body: impl Into<poem::Body>) -> Response {
        json_response(StatusCode::OK, "application/json; charset=utf-8", body)
    }

    fn not_found() -> Response {
        problem(StatusCode::NOT_FOUND, "Resource Not Found", "The requested resource could not be found.")
    }

    /// Whether the header carries the key (Basic with any user, `Bearer`, `apikey` or `OAuth`).
    fn holds_key(header: &str) -> bool {
        let Some((scheme, credentials)) = header.trim().split_once(' ') else { return false };
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => basic_pair(credentials).is_some_and(|(_, password)| password == MAILCHIMP_KEY),
            "bearer" | "apikey" | "oauth" => credentials.trim() == MAILCHIMP_KEY,
            _ => false,
        }
    }

    fn denied(authorization: Option<&str>) -> Option<Response> {
        match authorization {
            None => Some(problem(StatusCode::UNAUTHORIZED, "API Key Missing", "Your request did not include an API key.")),
            Some(header) if holds_key(header) => None,
            Some(_) => Some(problem(StatusCode::UNAUTHORIZED, "API Key Invalid", "Your API key may be invalid, or you've attempted to access the wrong datacenter.")),
        }
    }

    /// Answers one call to the Marketing API.
    pub(super) fn serve(call: &Call, account: &MailchimpAccount) -> Response {
        if let Some(denied) = denied(call.authorization) {
            return denied;
        }
        if !call.get {
            return problem(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed", "The requested method and resource are not compatible. See the Allow header for this resource's available methods.");
        }
        match call.route().as_slice() {
            ["3.0", "lists"] => lists(call, account),
            ["3.0", "lists", id] => find(account, id).map_or_else(not_found, |i| ok(list_object(i, &account.lists[i]).to_string())),
            ["3.0", "lists", id, "merge-fields"] => find(account, id).map_or_else(not_found, |i| merge_fields(call, &account.lists[i])),
            ["3.0", "lists", id, "members"] => find(account, id).map_or_else(not_found, |i| members(call, &account.lists[i])),
            _ => not_found(),
        }
    }

    fn find(account: &MailchimpAccount, id: &str) -> Option<usize> {
        account.lists.iter().position(|l| l.id == id)
    }

    /// `offset` (default 0) and `count` (default 10, at most 1000), or the field refused and why.
    fn paging(call: &Call) -> Result<(usize, usize), (&'static str, &'static str)> {
        let number = |name: &'static str, default: usize| match call.param(name) {
            None => Ok(default),
            Some(text) => text.parse::<usize>().map_err(|_| (name, "This value should be a non-negative integer.")),
        };
        let (offset, count) = (number("offset", 0)?, number("count", 10)?);
        if count > 1000 {
            return Err(("count", "This value should be 1000 or less."));
        }
        Ok((offset, count))
    }

    fn invalid((field, message): (&str, &str)) -> Response {
        let errors = json!([{ "field": field, "message": message }]);
        problem_with(StatusCode::BAD_REQUEST, "Invalid Resource", "The resource submitted could not be validated. For field-specific details, see the 'errors' array.", Some(errors))
    }

    fn slice<T>(items: &[T], offset: usize, count: usize) -> &[T] {
        let start = offset.min(items.len());
        &items[start..start.saturating_add(count).min(items.len())]
    }

    fn lists(call: &Call, account: &MailchimpAccount) -> Response {
        let (offset, count) = match paging(call) {
            Ok(paging) => paging,
            Err(refused) => return invalid(refused),
        };
        let all: Vec<Value> = account.lists.iter().enumerate().map(|(i, l)| list_object(i, l)).collect();
        let constraints = json!({ "may_create": true, "max_instances": -1, "current_total_instances": all.len() });
        ok(json!({ "lists": slice(&all, offset, count), "total_items": all.len(), "constraints": constraints, "_links": [] }).to_string())
    }

    /// (subscribed, unsubscribed, cleaned) counts.
    fn counts(members: &Members) -> (usize, usize, usize) {
        match members {
            Members::Given(all) => {
                let count = |status: &str| all.iter().filter(|m| m["status"] == status).count();
                (count("subscribed"), count("unsubscribed"), count("cleaned"))
            }
            Members::Generated(n) => (bulk_count(*n, "subscribed"), bulk_count(*n, "unsubscribed"), bulk_count(*n, "cleaned")),
        }
    }

    fn list_object(index: usize, list: &MailchimpList) -> Value {
        let (subscribed, unsubscribed, cleaned) = counts(&list.members);
        let stats = json!({
            "member_count": subscribed, "unsubscribe_count": unsubscribed, "cleaned_count": cleaned,
            "member_count_since_send": subscribed, "unsubscribe_count_since_send": unsubscribed, "cleaned_count_since_send": cleaned,
            "campaign_count": 0, "campaign_last_sent": "", "merge_field_count": list.merge_fields.len(),
            "avg_sub_rate": 0, "avg_unsub_rate": 0, "target_sub_rate": 0, "open_rate": 0, "click_rate": 0,
            "last_sub_date": "2024-03-01T10:00:00+00:00", "last_unsub_date": "",
        });
        json!({
            "id": list.id, "web_id": 100_000 + index, "name": list.name,
            "contact": { "company": "Acme", "address1": "1 Main St", "address2": "", "city": "Springfield", "state": "IL", "zip": "62701", "country": "US", "phone": "" },
            "permission_reminder": "You signed up on our website.", "use_archive_bar": true,
            "campaign_defaults": { "from_name": "Acme", "from_email": "news@example.com", "subject": "", "language": "en" },
            "notify_on_subscribe": "", "notify_on_unsubscribe": "", "date_created": "2024-01-15T09:00:00+00:00", "list_rating": 3,
            "email_type_option": false, "subscribe_url_short": "https://eepurl.com/abc123", "subscribe_url_long": "https://example.us6.list-manage.com/subscribe?u=0&id=0",
            "beamer_address": "", "visibility": "pub", "double_optin": false, "has_welcome": false, "marketing_permissions": false,
            "modules": [], "stats": stats, "_links": [],
        })
    }

    fn merge_fields(call: &Call, list: &MailchimpList) -> Response {
        let (offset, count) = match paging(call) {
            Ok(paging) => paging,
            Err(refused) => return invalid(refused),
        };
        let page = slice(&list.merge_fields, offset, count);
        ok(json!({ "merge_fields": page, "list_id": list.id, "total_items": list.merge_fields.len(), "_links": [] }).to_string())
    }

    #[derive(Serialize)]
    struct MembersPage<'a, T: Serialize> {
        members: Vec<T>,
        list_id: &'a str,
        total_items: usize,
        #[serde(rename = "_links")]
        links: [u8; 0],
    }

    fn members(call: &Call, list: &MailchimpList) -> Response {
        let (offset, count) = match paging(call) {
            Ok(paging) => paging,
            Err(refused) => return invalid(refused),
        };
        let status = call.param("status");
        let body = match &list.members {
            Members::Given(all) => {
                let matching: Vec<&Value> = all.iter().filter(|m| status.is_none_or(|s| m["status"] == s)).collect();
                let total_items = matching.len();
                let members = slice(&matching, offset, count).to_vec();
                serde_json::to_vec(&MembersPage { members, list_id: &list.id, total_items, links: [] })
            }
            Members::Generated(n) => {
                let (numbers, total_items) = bulk_numbers(*n, status, offset, count);
                Ok(bulk_page(&numbers, &list.id, total_items))
            }
        };
        ok(body.unwrap())
    }

    fn bulk_status(i: usize) -> &'static str {
        if i.is_multiple_of(97) {
            "cleaned"
        } else if i.is_multiple_of(50) {
            "unsubscribed"
        } else {
            "subscribed"
        }
    }

    /// How many of the generated members `1..=m` have `status`.
    fn bulk_count(m: usize, status: &str) -> usize {
        let unsubscribed = m / 50 - m / (50 * 97);
        match status {
            "cleaned" => m / 97,
            "unsubscribed" => unsubscribed,
            "subscribed" => m - m / 97 - unsubscribed,
            _ => 0,
        }
    }

    /// The numbers of one page of `n` generated members (of `status`, if given), and the total.
    fn bulk_numbers(n: usize, status: Option<&str>, offset: usize, count: usize) -> (Vec<usize>, usize) {
        let Some(status) = status else {
            let end = offset.saturating_add(count).min(n);
            return ((offset + 1..=end).collect(), n);
        };
        let total = bulk_count(n, status);
        if offset >= total {
            return (Vec::new(), total);
        }
        // The first member of the page: the smallest m with more than `offset` matches in 1..=m.
        let (mut low, mut high) = (1, n);
        while low < high {
            let middle = low + (high - low) / 2;
            if bulk_count(middle, status) > offset { high = middle } else { low = middle + 1 }
        }
        ((low..=n).filter(|i| bulk_status(*i) == status).take(count).collect(), total)
    }

    /// One page of generated members as the JSON body, written by hand rather than through
    /// serde_json: the tests crate is built without optimisation, where serde_json's serialiser
    /// takes ~40 ms for a page of 1,000 members and `std::fmt` (optimised, in std) a fraction of
    /// that. Every generated value is ASCII with no quote or backslash; the list id is escaped.
    fn bulk_page(numbers: &[usize], list_id: &str, total_items: usize) -> Vec<u8> {
        let list_id = serde_json::to_string(list_id).unwrap();
        let mut out = String::with_capacity(numbers.len() * 900 + 100);
        out.push_str(r#"{"members":["#);
        for (k, i) in numbers.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            write_bulk_member(&mut out, *i, &list_id);
        }
        let _ = write!(out, r#"],"list_id":{list_id},"total_items":{total_items},"_links":[]}}"#);
        out.into_bytes()
    }

    /// Generated member `i`; `list_id` is already a JSON string.
    fn write_bulk_member(out: &mut String, i: usize, list_id: &str) {
        let hash = hash_hex(&format!("member{i}@bulk.example"));
        let opted = bulk_time(i);
        let tagged = i.is_multiple_of(10);
        let _ = write!(
            out,
            concat!(
                r#"{{"id":"{id}","email_address":"member{i}@bulk.example","unique_email_id":"{unique}","contact_id":"{contact}","#,
                r#""full_name":"First{i} Last{i}","web_id":{web},"email_type":"html","status":"{status}","#,
                r#""consents_to_one_to_one_messaging":true,"merge_fields":{{"FNAME":"First{i}","LNAME":"Last{i}"}},"interests":{{}},"#,
                r#""stats":{{"avg_open_rate":0,"avg_click_rate":0}},"ip_signup":"","timestamp_signup":"","ip_opt":"198.51.100.{ip}","#,
                r#""timestamp_opt":"{opted}","member_rating":2,"last_changed":"{opted}","language":"","vip":false,"email_client":"","#,
                r#""location":{{"latitude":0,"longitude":0,"gmtoff":0,"dstoff":0,"country_code":"","timezone":"","region":""}},"#,
                r#""marketing_permissions":[],"source":"Import","tags_count":{tags_count},"tags":{tags},"list_id":{list_id}}}"#,
            ),
            id = &hash[..32],
            i = i,
            unique = &hash[32..42],
            contact = &hash[32..],
            web = 1_000_000 + i,
            status = bulk_status(i),
            ip = i % 254 + 1,
            opted = opted,
            tags_count = usize::from(tagged),
            tags = if tagged { r#"[{"id":1,"name":"Customers"}]"# } else { "[]" },
            list_id = list_id,
        );
    }

    /// 2024-01-01T00:00:00+00:00 plus `i` minutes (civil-from-days arithmetic; chrono's
    /// formatter is slow unoptimised).
    fn bulk_time(i: usize) -> String {
        let minutes = i as i64;
        let (year, month, day) = civil_from_days(19_723 + minutes.div_euclid(1440));
        let minute_of_day = minutes.rem_euclid(1440);
        format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:00+00:00", minute_of_day / 60, minute_of_day % 60)
    }

    /// (year, month, day) of a count of days since 1970-01-01 (Howard Hinnant's algorithm).
    fn civil_from_days(days: i64) -> (i64, i64, i64) {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        (year, month, day)
    }
}

/// listmonk: `token user:token` or Basic auth, `{"data": ...}` envelopes, `page`/`per_page`
/// paging, `{"message": ...}` errors.
mod listmonk {
    use super::*;

    /// An error in listmonk's format.
    pub(super) fn error(status: StatusCode, message: &str) -> Response {
        json_response(status, "application/json; charset=UTF-8", json!({ "message": message }).to_string())
    }

    fn ok(data: Value) -> Response {
        json_response(StatusCode::OK, "application/json; charset=UTF-8", json!({ "data": data }).to_string())
    }

    /// The (user, token) an `Authorization` header names, or listmonk's reason for refusing it
    /// (`parseAuthHeader`: its `echo.HTTPError`'s text, which listmonk passes on).
    fn credentials(header: &str) -> Result<(String, String), String> {
        let payload = if let Some(rest) = header.strip_prefix("token") {
            rest.trim().to_string()
        } else if let Some(rest) = header.strip_prefix("Basic") {
            let decoded = base64::engine::general_purpose::STANDARD.decode(rest.trim()).ok().and_then(|d| String::from_utf8(d).ok());
            decoded.ok_or("code=400, message=invalid Base64 value in Basic Authorization header")?
        } else {
            return Err("code=400, message=unknown Authorization scheme".into());
        };
        match payload.split_once(':') {
            None => Err("code=400, message=api_key:token missing".into()),
            Some((user, token)) if user.is_empty() || token.is_empty() => Err("code=400, message=empty `api_key` or `token`".into()),
            Some((user, token)) => Ok((user.to_string(), token.to_string())),
        }
    }

    /// listmonk (v4+, `internal/auth/auth.go`) answers 403 for every refusal: a malformed header
    /// (with the inner error's text), unknown credentials, or no header and no session.
    fn denied(authorization: Option<&str>) -> Option<Response> {
        let Some(header) = authorization.map(str::trim).filter(|h| !h.is_empty()) else {
            return Some(error(StatusCode::FORBIDDEN, "invalid session"));
        };
        match credentials(header) {
            Ok((user, token)) if user == LISTMONK_USER && token == LISTMONK_TOKEN => None,
            Ok(_) => Some(error(StatusCode::FORBIDDEN, "invalid API credentials")),
            Err(message) => Some(error(StatusCode::FORBIDDEN, &message)),
        }
    }

    /// Answers one call to the listmonk API.
    pub(super) fn serve(call: &Call, account: &ListmonkAccount) -> Response {
        if let Some(denied) = denied(call.authorization) {
            return denied;
        }
        if !call.get {
            return error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        }
        match call.route().as_slice() {
            ["api", "lists"] => paged(call, &account.lists),
            ["api", "subscribers"] => paged(call, &account.subscribers),
            ["api", "templates"] => ok(json!(account.templates)),
            _ => error(StatusCode::NOT_FOUND, "Not Found"),
        }
    }

    /// knadh/paginator as listmonk sets it up: `per_page` defaults to 20, `all` or a negative
    /// number means everything (answered as `per_page: 0`), larger numbers pass uncapped;
    /// `page` below 1 is 1.
    fn paged(call: &Call, items: &[Value]) -> Response {
        let asked: i64 = match call.param("per_page") {
            Some("all") => -1,
            text => text.and_then(|t| t.parse().ok()).unwrap_or(0),
        };
        let per_page = if asked < 0 { 0 } else if asked < 1 { 20 } else { asked as usize };
        let page = call.param("page").and_then(|p| p.parse::<i64>().ok()).unwrap_or(1).max(1) as usize;
        let results: Vec<&Value> = match per_page {
            0 => items.iter().collect(),
            _ => items.iter().skip((page - 1).saturating_mul(per_page)).take(per_page).collect(),
        };
        ok(json!({ "results": results, "query": "", "total": items.len(), "per_page": per_page, "page": page }))
    }
}

// ---------------------------------------------------------------------------------------------
// Sample accounts.

fn resend_contact(id: &str, email: &str, names: (Option<&str>, Option<&str>), unsubscribed: bool, properties: Value) -> Value {
    json!({
        "object": "contact", "id": id, "email": email, "first_name": names.0, "last_name": names.1,
        "created_at": "2025-11-30 20:41:40.84216+00", "unsubscribed": unsubscribed, "properties": properties,
    })
}

/// Resend segment "Customers".
pub const RESEND_SEGMENT_ID: &str = "78261eea-8f8b-4381-83c6-79fa7120f1cf";
/// Resend topic "Product news".
pub const RESEND_TOPIC_ID: &str = "b6d24b8e-af0b-4c3c-be0c-359bbd97381e";
/// Resend template "Welcome".
pub const RESEND_TEMPLATE_ID: &str = "34a080c9-b17d-4187-ad80-5af20266e535";

fn resend_contacts() -> Vec<Value> {
    vec![
        resend_contact("e169aa45-1ecf-4183-9955-b1499d5701d1", "ada@example.com", (Some("Ada"), Some("Lovelace")), false, json!({ "company": "Acme", "seats": 3 })),
        resend_contact("e169aa45-1ecf-4183-9955-b1499d5701d2", "bob@example.com", (Some("Bob"), Some("Brown")), true, json!({})),
        resend_contact("e169aa45-1ecf-4183-9955-b1499d5701d3", "cleo@example.com", (Some("Cleo"), None), false, json!({})),
        resend_contact("e169aa45-1ecf-4183-9955-b1499d5701d4", "dan@example.com", (None, None), false, json!({})),
    ]
}

fn resend_properties() -> Vec<Value> {
    vec![
        json!({ "id": "b6d24b8e-af0b-4c3c-be0c-359bbd9738a1", "key": "company", "type": "string", "fallback_value": null, "created_at": "2025-11-01 09:00:00.000+00" }),
        json!({ "id": "b6d24b8e-af0b-4c3c-be0c-359bbd9738a2", "key": "seats", "type": "number", "fallback_value": 1, "created_at": "2025-11-01 09:00:01.000+00" }),
    ]
}

fn resend_template() -> Value {
    json!({
        "object": "template", "id": RESEND_TEMPLATE_ID, "name": "Welcome", "alias": "welcome",
        "subject": "Welcome aboard", "html": "<p>Hi {{{FIRST_NAME}}}</p>", "text": "Hi {{{FIRST_NAME}}}",
        "from": "Acme <hello@mail.example.com>", "reply_to": null, "status": "published",
        "variables": [{ "id": "9f3c1d2e-0000-4000-8000-000000000001", "key": "FIRST_NAME", "type": "string", "fallback_value": "there" }],
        "published_at": "2025-11-02 10:00:00.000+00", "created_at": "2025-11-02 09:00:00.000+00", "updated_at": "2025-11-02 10:00:00.000+00",
    })
}

/// A small Resend team (contacts in this order):
/// - `ada@example.com`: Ada Lovelace, subscribed (`unsubscribed: false`), properties
///   `{"company": "Acme", "seats": 3}`, in segment "Customers" ([`RESEND_SEGMENT_ID`]);
/// - `bob@example.com`: Bob Brown, `unsubscribed: true`, no properties;
/// - `cleo@example.com`: first name Cleo, no last name, subscribed, no properties;
/// - `dan@example.com`: no names, subscribed, opted in to topic "Product news".
///
/// Contact properties `company` (string, fallback null) and `seats` (number, fallback 1); topic
/// "Product news" ([`RESEND_TOPIC_ID`], `default_subscription: "opt_out"`, public); domain
/// `mail.example.com` (verified, us-east-1); template "Welcome" ([`RESEND_TEMPLATE_ID`], alias
/// `welcome`, published, subject "Welcome aboard", html `<p>Hi {{{FIRST_NAME}}}</p>`).
pub fn sample_resend() -> ResendAccount {
    ResendAccount {
        contacts: resend_contacts(),
        segments: vec![(json!({ "id": RESEND_SEGMENT_ID, "name": "Customers", "created_at": "2025-11-01 08:00:00.000+00" }), vec!["ada@example.com".into()])],
        topics: vec![json!({
            "id": RESEND_TOPIC_ID, "name": "Product news", "description": "New features, once a month",
            "default_subscription": "opt_out", "visibility": "public", "created_at": "2025-11-01 08:30:00.000+00",
        })],
        properties: resend_properties(),
        domains: vec![json!({
            "id": "d91cd9bd-1176-453e-8fc1-35364d380206", "name": "mail.example.com", "status": "verified",
            "created_at": "2025-10-20 12:00:00.000+00", "region": "us-east-1", "open_tracking": false, "click_tracking": false,
            "capabilities": { "sending": "enabled", "receiving": "disabled" },
        })],
        templates: vec![resend_template()],
        contact_topics: vec![("dan@example.com".into(), RESEND_TOPIC_ID.into(), "opt_in".into())],
    }
}

/// The sample Mailchimp audience "Acme Newsletter".
pub const MAILCHIMP_LIST_ID: &str = "a1b2c3d4e5";
/// The sample Mailchimp audience "Beta testers".
pub const MAILCHIMP_BETA_LIST_ID: &str = "f6e5d4c3b2";

fn mailchimp_merge_fields() -> Vec<Value> {
    vec![
        json!({ "tag": "FNAME", "name": "First Name", "type": "text" }),
        json!({ "tag": "LNAME", "name": "Last Name", "type": "text" }),
        json!({ "tag": "COMPANY", "name": "Company", "type": "text" }),
        json!({ "tag": "SEATS", "name": "Seats", "type": "number" }),
    ]
}

fn mailchimp_members() -> Vec<Value> {
    let london = json!({ "latitude": 51.5072, "longitude": -0.1276, "gmtoff": 0, "dstoff": 1, "country_code": "GB", "timezone": "Europe/London", "region": "England" });
    vec![
        json!({
            "email_address": "ada@example.com", "status": "subscribed",
            "merge_fields": { "FNAME": "Ada", "LNAME": "Lovelace", "COMPANY": "Acme", "SEATS": 3 },
            "ip_signup": "203.0.113.7", "timestamp_signup": "2024-03-01T09:58:00+00:00",
            "ip_opt": "203.0.113.7", "timestamp_opt": "2024-03-01T10:00:00+00:00", "member_rating": 4,
            "language": "en", "location": london, "source": "Hosted Signup Form", "tags": [{ "id": 101, "name": "Customers" }],
        }),
        json!({
            "email_address": "bob@example.com", "status": "unsubscribed", "unsubscribe_reason": "No longer interested",
            "merge_fields": { "FNAME": "Bob", "LNAME": "Brown" }, "ip_opt": "198.51.100.4", "timestamp_opt": "2024-02-10T08:30:00+00:00",
        }),
        json!({ "email_address": "cleo@example.com", "status": "cleaned", "merge_fields": { "FNAME": "Cleo" }, "timestamp_opt": "2024-01-20T15:00:00+00:00" }),
        json!({ "email_address": "dan@example.com", "status": "subscribed", "timestamp_opt": "2024-04-02T12:00:00+00:00", "source": "Import" }),
        json!({ "email_address": "eve@example.com", "status": "pending", "merge_fields": { "FNAME": "Eve" }, "ip_signup": "192.0.2.55", "timestamp_signup": "2024-04-10T07:45:00+00:00" }),
    ]
}

/// A small Mailchimp account with two audiences.
///
/// "Acme Newsletter" ([`MAILCHIMP_LIST_ID`]; merge fields FNAME, LNAME, COMPANY text, SEATS number):
/// - `ada@example.com`: subscribed, FNAME Ada, LNAME Lovelace, COMPANY Acme, SEATS 3, tag
///   "Customers" (id 101), `ip_opt` 203.0.113.7, `timestamp_opt` 2024-03-01T10:00:00+00:00,
///   `ip_signup` 203.0.113.7, `timestamp_signup` 2024-03-01T09:58:00+00:00, rating 4, language en;
/// - `bob@example.com`: unsubscribed, Bob Brown, `ip_opt` 198.51.100.4, opted in 2024-02-10T08:30:00+00:00;
/// - `cleo@example.com`: cleaned, FNAME Cleo;
/// - `dan@example.com`: subscribed, no names (every merge value ""), opted in 2024-04-02T12:00:00+00:00, no IP;
/// - `eve@example.com`: pending, FNAME Eve, signed up 2024-04-10T07:45:00+00:00 from 192.0.2.55.
///
/// "Beta testers" ([`MAILCHIMP_BETA_LIST_ID`]; merge fields FNAME, LNAME):
/// - `ada@example.com`: subscribed, Ada Lovelace, opted in 2024-05-01T10:00:00+00:00.
pub fn sample_mailchimp() -> MailchimpAccount {
    let beta = json!({
        "email_address": "ada@example.com", "status": "subscribed", "merge_fields": { "FNAME": "Ada", "LNAME": "Lovelace" },
        "ip_opt": "203.0.113.7", "timestamp_opt": "2024-05-01T10:00:00+00:00",
    });
    MailchimpAccount {
        lists: vec![
            MailchimpList { id: MAILCHIMP_LIST_ID.into(), name: "Acme Newsletter".into(), merge_fields: mailchimp_merge_fields(), members: Members::Given(mailchimp_members()) },
            MailchimpList { id: MAILCHIMP_BETA_LIST_ID.into(), name: "Beta testers".into(), merge_fields: mailchimp_merge_fields()[..2].to_vec(), members: Members::Given(vec![beta]) },
        ],
    }
}

/// A Mailchimp account with one audience, "Bulk" (id `b0b0b0b0b0`, merge fields FNAME and
/// LNAME), of `n` generated members (see [`Members::Generated`]).
pub fn bulk_mailchimp(n: usize) -> MailchimpAccount {
    let fields = mailchimp_merge_fields()[..2].to_vec();
    MailchimpAccount { lists: vec![MailchimpList { id: "b0b0b0b0b0".into(), name: "Bulk".into(), merge_fields: fields, members: Members::Generated(n) }] }
}

fn listmonk_lists() -> Vec<Value> {
    vec![
        json!({
            "id": 1, "uuid": "5e2d7b4a-1f3c-4d8e-9a6b-0c1d2e3f4a01", "name": "Newsletter", "type": "public", "optin": "double",
            "status": "active", "tags": ["monthly"], "description": "The monthly newsletter", "subscriber_count": 3,
            "subscriber_statuses": { "confirmed": 1, "unsubscribed": 2 },
            "created_at": "2024-01-10T09:00:00.000000Z", "updated_at": "2024-01-10T09:00:00.000000Z",
        }),
        json!({
            "id": 2, "uuid": "5e2d7b4a-1f3c-4d8e-9a6b-0c1d2e3f4a02", "name": "Beta", "type": "private", "optin": "single",
            "status": "active", "tags": [], "description": "", "subscriber_count": 1, "subscriber_statuses": { "unconfirmed": 1 },
            "created_at": "2024-01-11T09:00:00.000000Z", "updated_at": "2024-01-11T09:00:00.000000Z",
        }),
    ]
}

/// A subscriber's `lists[]` item: the list with its subscription.
fn membership(list: &Value, status: &str, at: &str) -> Value {
    let mut item = list.clone();
    if let Some(object) = item.as_object_mut() {
        object.remove("subscriber_count");
        object.remove("subscriber_statuses");
        object.insert("subscription_status".into(), json!(status));
        object.insert("subscription_created_at".into(), json!(at));
        object.insert("subscription_updated_at".into(), json!(at));
        object.insert("subscription_meta".into(), json!({}));
    }
    item
}

fn listmonk_subscriber(id: u64, email: &str, name: &str, status: &str, attribs: Value, lists: Vec<Value>) -> Value {
    json!({
        "id": id, "uuid": format!("9b1f6c2e-7a4d-4e3b-8c5a-1d2e3f4a5b{id:02}"), "email": email, "name": name,
        "attribs": attribs, "status": status, "lists": lists,
        "created_at": "2024-03-01T10:00:00.123456Z", "updated_at": "2024-03-01T10:00:00.123456Z",
    })
}

fn listmonk_templates() -> Vec<Value> {
    vec![
        json!({
            "id": 1, "name": "Monthly", "type": "campaign", "subject": "", "body": "<p>{{ TemplateContent }}</p>", "body_source": null,
            "is_default": false, "created_at": "2024-01-10T09:00:00.000000Z", "updated_at": "2024-01-10T09:00:00.000000Z",
        }),
        json!({
            "id": 2, "name": "Order receipt", "type": "tx", "subject": "Your receipt", "body": "<p>Order {{ .Tx.Data.order_id }}</p>", "body_source": null,
            "is_default": false, "created_at": "2024-01-12T09:00:00.000000Z", "updated_at": "2024-01-12T09:00:00.000000Z",
        }),
    ]
}

/// A small listmonk instance.
///
/// Lists: 1 "Newsletter" (public, double opt-in, tag `monthly`) and 2 "Beta" (private, single
/// opt-in). Subscribers (ids 1–4, in this order):
/// - `ada@example.com`: "Ada Lovelace", enabled, attribs `{"company": "Acme", "seats": 3}`,
///   Newsletter confirmed, Beta unconfirmed;
/// - `bob@example.com`: "Bob Brown", enabled, attribs `{}`, Newsletter unsubscribed;
/// - `cleo@example.com`: "Cleo Park", blocklisted, attribs `{}`, Newsletter unsubscribed;
/// - `dan@example.com`: "Dan", enabled, attribs `{}`, no lists.
///
/// Templates: 1 "Monthly" (campaign, body `<p>{{ TemplateContent }}</p>`) and 2 "Order receipt"
/// (tx, subject "Your receipt"); neither is the default.
pub fn sample_listmonk() -> ListmonkAccount {
    let lists = listmonk_lists();
    let (newsletter, beta) = (&lists[0], &lists[1]);
    let at = "2024-03-01T10:00:00.123456Z";
    let subscribers = vec![
        listmonk_subscriber(1, "ada@example.com", "Ada Lovelace", "enabled", json!({ "company": "Acme", "seats": 3 }), vec![membership(newsletter, "confirmed", at), membership(beta, "unconfirmed", at)]),
        listmonk_subscriber(2, "bob@example.com", "Bob Brown", "enabled", json!({}), vec![membership(newsletter, "unsubscribed", at)]),
        listmonk_subscriber(3, "cleo@example.com", "Cleo Park", "blocklisted", json!({}), vec![membership(newsletter, "unsubscribed", at)]),
        listmonk_subscriber(4, "dan@example.com", "Dan", "enabled", json!({}), Vec::new()),
    ];
    ListmonkAccount { lists, subscribers, templates: listmonk_templates() }
}
