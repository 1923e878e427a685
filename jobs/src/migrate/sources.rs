//! Reading each platform's API a page at a time. Each step reads one page, turns its records
//! into items and moves the cursor past it; the cursor is stored with the page, so a rerun
//! asks for the next page and never reads one twice. The first step of each platform reads
//! what is small (properties, lists, topics, templates, domains) into what was found.

use super::client::{Fault, Platform};
use schema::migrate::{Failed, Found, FoundTemplate, Item, files::listmonk_attributes, property_key, split_name, timestamp};
use serde_json::{Value, json};

/// Records a page asks for.
pub const MAILCHIMP_PAGE: usize = 1000;
const RESEND_PAGE: usize = 100;
const LISTMONK_PAGE: usize = 1000;

/// One page read: items and failures, or `None` when the source is exhausted.
pub type Step = Option<Vec<Result<Item, Failed>>>;

/// Reads the next page of `source`.
pub async fn step(platform: &Platform, source: &str, cursor: &mut Value, found: &mut Found) -> Result<Step, Fault> {
    match source {
        "resend" => resend(platform, cursor, found).await,
        "mailchimp" => mailchimp(platform, cursor, found).await,
        _ => listmonk(platform, cursor, found).await,
    }
}

/// The next row number, counted across pages.
fn next_row(cursor: &mut Value) -> i64 {
    let row = cursor["row"].as_i64().unwrap_or(0) + 1;
    cursor["row"] = json!(row);
    row
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value[key].as_str().filter(|s| !s.trim().is_empty())
}

fn records<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value[key].as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Every page of a Resend list (small lists: properties, topics, segments, domains, templates).
async fn resend_all(platform: &Platform, path: &str) -> Result<Vec<Value>, Fault> {
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = platform.get(&format!("{path}?limit={RESEND_PAGE}{}", after.map(|a| format!("&after={a}")).unwrap_or_default())).await?;
        let data = records(&page, "data").to_vec();
        after = data.last().and_then(|d| text(d, "id")).map(String::from);
        all.extend(data);
        if !page["has_more"].as_bool().unwrap_or(false) || after.is_none() {
            return Ok(all);
        }
    }
}

/// Resend: contact properties, topics, segments, templates and domains first; then global
/// contacts by cursor; then each segment's members (as further records of those contacts).
async fn resend(platform: &Platform, cursor: &mut Value, found: &mut Found) -> Result<Step, Fault> {
    if cursor["phase"].is_null() {
        for p in resend_all(platform, "/contact-properties").await? {
            if let Some(key) = text(&p, "key").and_then(property_key) {
                found.property(&key, if p["type"] == "number" { "number" } else { "string" });
            }
        }
        for t in resend_all(platform, "/topics").await? {
            let default = if t["default_subscription"] == "opt_in" { "opt_in" } else { "opt_out" };
            found.topics.insert(text(&t, "name").unwrap_or("Topic").to_string(), default.into());
        }
        let segments: Vec<Value> = resend_all(platform, "/segments").await?.iter().map(|s| json!([s["id"], s["name"]])).collect();
        for s in &segments {
            found.segments.insert(s[1].as_str().unwrap_or("Segment").to_string());
        }
        for listed in resend_all(platform, "/templates").await? {
            let Some(id) = text(&listed, "id") else { continue };
            let t = platform.get(&format!("/templates/{id}")).await?;
            found.templates.push(FoundTemplate {
                name: text(&t, "name").unwrap_or("Template").to_string(),
                subject: text(&t, "subject").map(String::from),
                html: text(&t, "html").map(String::from),
                text: text(&t, "text").map(String::from),
            });
        }
        found.domains = resend_all(platform, "/domains").await?.iter().filter_map(|d| text(d, "name").map(String::from)).collect();
        *cursor = json!({ "phase": "contacts", "segments": segments, "segment": 0, "row": 0 });
        return Ok(Some(Vec::new()));
    }
    let (path, segment) = if cursor["phase"] == "contacts" {
        ("/contacts".to_string(), None)
    } else {
        let index = cursor["segment"].as_u64().unwrap_or(0) as usize;
        let Some(s) = cursor["segments"].get(index).cloned() else { return Ok(None) };
        (format!("/segments/{}/contacts", s[0].as_str().unwrap_or_default()), Some(s[1].as_str().unwrap_or("Segment").to_string()))
    };
    let after = cursor["after"].as_str().map(|a| format!("&after={a}")).unwrap_or_default();
    let page = platform.get(&format!("{path}?limit={RESEND_PAGE}{after}")).await?;
    let data = records(&page, "data");
    let mut out = Vec::with_capacity(data.len());
    for contact in data {
        let row = next_row(cursor);
        let item = Item::new(row, text(contact, "email").unwrap_or_default()).map(|item| {
            let mut item = item.names(text(contact, "first_name"), text(contact, "last_name"));
            item.unsubscribed = contact["unsubscribed"].as_bool().unwrap_or(false);
            if let Some(properties) = contact["properties"].as_object() {
                for (name, value) in properties {
                    if let Some(key) = property_key(name) {
                        item.property(&key, value.clone());
                    }
                }
            }
            if let Some(name) = &segment {
                item.segments = vec![name.clone()];
                item.again = true;
            }
            item
        });
        out.push(item);
    }
    match data.last().and_then(|c| text(c, "id")) {
        Some(last) if page["has_more"].as_bool().unwrap_or(false) => cursor["after"] = json!(last),
        _ => {
            cursor.as_object_mut().map(|c| c.remove("after"));
            if cursor["phase"] == "contacts" {
                cursor["phase"] = json!("segments");
            } else {
                cursor["segment"] = json!(cursor["segment"].as_u64().unwrap_or(0) + 1);
            }
        }
    }
    Ok(Some(out))
}

/// Mailchimp: the audiences and their merge fields first; then each audience's members by
/// offset. An audience becomes a topic (subscribed members opt in, the rest opt out), tags
/// become segments, merge fields properties; `cleaned` members arrive with a `bounce`
/// suppression, and only `subscribed` ones stay subscribed; `archived` ones are left behind.
async fn mailchimp(platform: &Platform, cursor: &mut Value, found: &mut Found) -> Result<Step, Fault> {
    if cursor["phase"].is_null() {
        let mut lists = Vec::new();
        let mut offset = 0;
        loop {
            let page = platform.get(&format!("/3.0/lists?count={MAILCHIMP_PAGE}&offset={offset}")).await?;
            let data = records(&page, "lists");
            lists.extend(data.iter().map(|l| json!({ "id": l["id"], "name": l["name"], "fields": {} })));
            offset += data.len();
            if data.is_empty() || offset as i64 >= page["total_items"].as_i64().unwrap_or(0) {
                break;
            }
        }
        for list in &mut lists {
            let id = list["id"].as_str().unwrap_or_default().to_string();
            found.topics.insert(list["name"].as_str().unwrap_or("Audience").to_string(), "opt_out".into());
            let fields = platform.get(&format!("/3.0/lists/{id}/merge-fields?count={MAILCHIMP_PAGE}")).await?;
            for field in records(&fields, "merge_fields") {
                let tag = text(field, "tag").unwrap_or_default();
                if matches!(tag, "FNAME" | "LNAME") {
                    continue;
                }
                let Some(key) = property_key(tag) else { continue };
                let kind = if field["type"] == "number" { "number" } else { "string" };
                found.property(&key, kind);
                list["fields"][tag] = json!([key, kind]);
            }
        }
        *cursor = json!({ "phase": "members", "lists": lists, "list": 0, "offset": 0, "row": 0 });
        return Ok(Some(Vec::new()));
    }
    let index = cursor["list"].as_u64().unwrap_or(0) as usize;
    let Some(list) = cursor["lists"].get(index).cloned() else { return Ok(None) };
    let offset = cursor["offset"].as_u64().unwrap_or(0);
    let id = list["id"].as_str().unwrap_or_default();
    let page: MembersPage = platform.get_as(&format!("/3.0/lists/{id}/members?count={MAILCHIMP_PAGE}&offset={offset}&fields={MEMBER_FIELDS}")).await?;
    let topic = list["name"].as_str().unwrap_or("Audience").to_string();
    let mut out = Vec::with_capacity(page.members.len());
    for member in &page.members {
        if member.status == "archived" {
            continue;
        }
        let row = next_row(cursor);
        out.push(Item::new(row, &member.email_address).map(|item| mailchimp_member(item, member, &list, &topic, found)));
    }
    let next = offset + page.members.len() as u64;
    if page.members.is_empty() || next as i64 >= page.total_items {
        cursor["list"] = json!(index + 1);
        cursor["offset"] = json!(0);
    } else {
        cursor["offset"] = json!(next);
    }
    Ok(Some(out))
}

/// The member fields asked for (Mailchimp's partial responses): a page a fifth of the size.
const MEMBER_FIELDS: &str = "members.email_address,members.status,members.merge_fields,members.tags,members.timestamp_opt,\
                             members.timestamp_signup,members.ip_opt,members.ip_signup,total_items";

/// A page of an audience's members, as far as Herald reads it.
#[derive(serde::Deserialize)]
struct MembersPage {
    #[serde(default)]
    members: Vec<Member>,
    #[serde(default)]
    total_items: i64,
}

#[derive(serde::Deserialize)]
struct Member {
    #[serde(default)]
    email_address: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    merge_fields: serde_json::Map<String, Value>,
    #[serde(default)]
    tags: Vec<Tag>,
    timestamp_opt: Option<String>,
    timestamp_signup: Option<String>,
    ip_opt: Option<String>,
    ip_signup: Option<String>,
}

#[derive(serde::Deserialize)]
struct Tag {
    #[serde(default)]
    name: String,
}

fn filled(text: &Option<String>) -> Option<&str> {
    text.as_deref().filter(|t| !t.trim().is_empty())
}

fn mailchimp_member(item: Item, member: &Member, list: &Value, topic: &str, found: &mut Found) -> Item {
    let fields = &member.merge_fields;
    let name = |tag: &str| fields.get(tag).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    let mut item = item.names(name("FNAME"), name("LNAME"));
    if let Some(map) = list["fields"].as_object() {
        for (tag, spec) in map {
            let (Some(key), Some(kind)) = (spec[0].as_str(), spec[1].as_str()) else { continue };
            let value = match fields.get(tag).unwrap_or(&Value::Null) {
                Value::Object(address) => Value::String(
                    ["addr1", "addr2", "city", "state", "zip", "country"]
                        .iter()
                        .filter_map(|k| address.get(*k).and_then(Value::as_str).filter(|s| !s.trim().is_empty()))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                Value::String(s) if kind == "number" => s.trim().parse::<f64>().ok().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number),
                other => other.clone(),
            };
            item.property(key, value);
        }
    }
    let subscribed = member.status == "subscribed";
    item.unsubscribed = !subscribed;
    if member.status == "cleaned" {
        item.suppression = Some("bounce".into());
    }
    item.topics.insert(topic.to_string(), if subscribed { "opt_in" } else { "opt_out" }.into());
    if subscribed {
        item.consent_at = filled(&member.timestamp_opt).or(filled(&member.timestamp_signup)).and_then(timestamp);
        item.consent_ip = filled(&member.ip_opt).or(filled(&member.ip_signup)).map(String::from);
    }
    for tag in member.tags.iter().filter(|t| !t.name.trim().is_empty()) {
        found.segments.insert(tag.name.clone());
        item.segments.push(tag.name.clone());
    }
    item
}

/// listmonk: lists (as topics) and templates first; then subscribers by page. A subscription
/// confirmed (or unconfirmed on a single opt-in list) opts in to the list's topic, any other
/// opts out; a subscriber unsubscribed from every list, `disabled` or `blocklisted` arrives
/// unsubscribed, `blocklisted` with a `manual` suppression too.
async fn listmonk(platform: &Platform, cursor: &mut Value, found: &mut Found) -> Result<Step, Fault> {
    if cursor["phase"].is_null() {
        let lists = platform.get("/api/lists?per_page=all").await?;
        for list in records(&lists["data"], "results") {
            found.topics.insert(text(list, "name").unwrap_or("List").to_string(), "opt_out".into());
        }
        let templates = platform.get("/api/templates").await?;
        for t in records(&templates, "data") {
            found.templates.push(FoundTemplate {
                name: text(t, "name").unwrap_or("Template").to_string(),
                subject: text(t, "subject").map(String::from),
                html: text(t, "body").map(String::from),
                text: None,
            });
        }
        *cursor = json!({ "phase": "subscribers", "page": 1, "row": 0 });
        return Ok(Some(Vec::new()));
    }
    if cursor["phase"] == "done" {
        return Ok(None);
    }
    let page_number = cursor["page"].as_u64().unwrap_or(1);
    let page = platform.get(&format!("/api/subscribers?page={page_number}&per_page={LISTMONK_PAGE}&order_by=created_at&order=asc")).await?;
    let subscribers = records(&page["data"], "results");
    if subscribers.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(subscribers.len());
    for s in subscribers {
        let row = next_row(cursor);
        let (first, last) = text(s, "name").map(split_name).unwrap_or((None, None));
        out.push(Item::new(row, text(s, "email").unwrap_or_default()).map(|item| {
            let mut item = item.names(first, last);
            if let Some(attributes) = s["attribs"].as_object() {
                listmonk_attributes(&mut item, found, attributes.clone());
            }
            let lists = records(s, "lists");
            for list in lists {
                let confirmed = match text(list, "subscription_status") {
                    Some("confirmed") => true,
                    Some("unconfirmed") => list["optin"] != "double",
                    _ => false,
                };
                item.topics.insert(text(list, "name").unwrap_or("List").to_string(), if confirmed { "opt_in" } else { "opt_out" }.into());
            }
            let status = text(s, "status").unwrap_or("enabled");
            item.unsubscribed = status != "enabled" || (!lists.is_empty() && lists.iter().all(|l| l["subscription_status"] == "unsubscribed"));
            if status == "blocklisted" {
                item.suppression = Some("manual".into());
            }
            if !item.unsubscribed {
                item.consent_at = text(s, "created_at").and_then(timestamp);
            }
            item
        }));
    }
    let total = page["data"]["total"].as_u64().unwrap_or(0);
    cursor["page"] = json!(page_number + 1);
    if page_number * LISTMONK_PAGE as u64 >= total {
        cursor["phase"] = json!("done");
    }
    Ok(Some(out))
}
