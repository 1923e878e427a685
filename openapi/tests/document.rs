//! The committed document cannot drift, every operation is annotated from the operation table,
//! and the document is valid OpenAPI 3.1.

use serde_json::Value;
use std::path::PathBuf;

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi.json")
}

fn committed() -> Value {
    serde_json::from_str(&std::fs::read_to_string(committed_path()).unwrap()).unwrap()
}

#[test]
fn the_committed_document_is_what_herald_openapi_prints() {
    let committed = std::fs::read_to_string(committed_path()).unwrap();
    assert!(
        committed == api::document::document_json(),
        "openapi/openapi.json is stale: run `cargo run -q --bin herald -- openapi > openapi/openapi.json`"
    );
}

#[test]
fn the_document_is_openapi_3_1_titled_as_the_api_with_both_server_forms() {
    let doc = committed();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "Herald API");
    assert_eq!(doc["info"]["version"], "1.0.0");
    let servers: Vec<&str> = doc["servers"].as_array().unwrap().iter().map(|s| s["url"].as_str().unwrap()).collect();
    assert_eq!(servers.len(), 2);
    assert!(servers[1].ends_with("/api/v1"));
}

#[test]
fn every_operation_has_an_operation_id_and_its_x_svc_annotations() {
    let problems = openapi::annotation_problems(&committed());
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_document_and_the_operation_table_list_the_same_operations() {
    let doc = committed();
    let mut documented: Vec<(String, String, String)> = openapi::operations(&doc)
        .into_iter()
        .map(|(method, path, op)| (op["operationId"].as_str().unwrap().to_string(), method.to_uppercase(), path))
        .collect();
    let mut table: Vec<(String, String, String)> = api::http::operations::OPERATIONS
        .iter()
        .map(|op| (op.id.to_string(), op.method.to_string(), op.path.to_string()))
        .collect();
    documented.sort();
    table.sort();
    assert_eq!(documented, table);
    for (method, path, operation) in openapi::operations(&doc) {
        let entry = api::http::operations::by_id(operation["operationId"].as_str().unwrap()).unwrap();
        let expected = entry.access.annotation().map_or(Value::Null, |p| Value::String(p.into()));
        assert_eq!(operation["x-svc-permission"], expected, "{method} {path}");
    }
}

/// The validator installed by `scripts/test` (`openapi-spec-validator` from PyPI).
fn validator() -> PathBuf {
    if let Ok(path) = std::env::var("HERALD_OPENAPI_VALIDATOR") {
        return PathBuf::from(path);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/openapi-spec-validator")
}

#[test]
fn the_document_is_valid_openapi_3_1() {
    let validator = validator();
    assert!(validator.exists(), "{} is missing: scripts/test installs it", validator.display());
    let output = std::process::Command::new(&validator).arg(committed_path()).output().unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn every_subscribable_event_type_has_a_webhooks_entry_with_its_envelope() {
    let doc = committed();
    let webhooks = doc["webhooks"].as_object().expect("a webhooks section");
    for event_type in schema::store::webhooks::EVENT_TYPES {
        let body = &webhooks[*event_type]["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["properties"]["type"]["const"], *event_type);
        assert!(body["required"].as_array().unwrap().len() == 3, "{event_type}");
    }
    assert_eq!(webhooks.len(), schema::store::webhooks::EVENT_TYPES.len());
    let bounced = &webhooks["email.bounced"]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]["data"];
    assert_eq!(bounced["allOf"][1]["required"], serde_json::json!(["bounce"]));
}

/// Every schema in `value`, with where it is.
fn schemas<'a>(value: &'a Value, at: String, out: &mut Vec<(String, &'a serde_json::Map<String, Value>)>) {
    match value {
        Value::Object(map) => {
            out.push((at.clone(), map));
            for (key, inner) in map {
                schemas(inner, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                schemas(inner, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn component<'a>(doc: &'a Value, name: &str) -> &'a Value {
    &doc["components"]["schemas"][name]
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

fn nullable(property: &Value) -> bool {
    property["type"].as_array().is_some_and(|t| t.contains(&Value::from("null")))
        || property["anyOf"].as_array().is_some_and(|any| any.contains(&serde_json::json!({ "type": "null" })))
}

#[test]
fn no_schema_is_an_object_and_a_union_or_wraps_one_reference_in_all_of() {
    let doc = committed();
    let mut all = Vec::new();
    schemas(&doc, String::new(), &mut all);
    for (at, map) in all {
        let union = map.contains_key("oneOf") || map.contains_key("anyOf");
        assert!(!(union && map.get("type") == Some(&Value::from("object")) && !map.contains_key("properties")), "{at}");
        if let Some(Value::Array(all_of)) = map.get("allOf") {
            let references = all_of.iter().filter(|s| s.get("$ref").is_some()).count();
            assert!(!(all_of.len() <= 2 && references == 1 && all_of.iter().all(|s| s.get("$ref").is_some() || s.get("properties").is_none() && s.get("required").is_none())),
                "{at}: allOf around a single $ref (a $ref carries its description as a sibling in 3.1)");
        }
        assert!(!map.contains_key("nullable"), "{at}: OpenAPI 3.0 `nullable`");
    }
    let addresses = component(&doc, "Addresses");
    assert!(addresses.get("type").is_none() && addresses["oneOf"].as_array().unwrap().len() == 2, "{addresses}");
}

#[test]
fn a_send_lists_its_required_fields_and_answers_typed_ids() {
    let doc = committed();
    let send = component(&doc, "SendEmail");
    // `from` and `subject` may come from a template, so only `to` is always required.
    assert_eq!(required(send), vec!["to"], "{send}");
    let answer = |path: &str| doc["paths"][path]["post"]["responses"]["200"]["content"]["application/json; charset=utf-8"]["schema"]["$ref"].clone();
    assert_eq!(answer("/emails"), "#/components/schemas/Sent");
    assert_eq!(answer("/emails/batch"), "#/components/schemas/SentBatch");
    assert_eq!(required(component(&doc, "Sent")), vec!["id"]);
}

#[test]
fn response_fields_that_answer_null_are_required_and_nullable() {
    let doc = committed();
    for (schema, field) in [
        ("ApiKeyItem", "domain_id"),
        ("ApiKeyItem", "last_used_at"),
        ("EmailView", "html"),
        ("DnsRecord", "found"),
        ("WebhookView", "disabled_reason"),
        ("DomainView", "dkim_rotation"),
        ("ContactView", "first_name"),
    ] {
        let schema_value = component(&doc, schema);
        assert!(required(schema_value).contains(&field), "{schema}.{field} is not required");
        assert!(nullable(&schema_value["properties"][field]), "{schema}.{field} is not nullable");
    }
}

/// Response fields left out of an answer (rather than `null`) when they have no value.
const ABSENT_WHEN_EMPTY: &[(&str, &str)] = &[
    // Only with `dimensions=period`, as the Resend SDKs read it (absent otherwise).
    ("EmailMetrics", "data"),
    // Answered once, at registration (RFC 7591); never again.
    ("ClientView", "registration_access_token"),
    ("ContactView", "properties"),
    ("ContactView", "preferences_url"),
    ("ContactView", "unsubscribe_url"),
    ("ImportView", "error"),
    ("ImportView", "failed_rows"),
    ("MigrationView", "failed_items"),
    ("SegmentView", "filter"),
    ("SentBatch", "errors"),
    ("Error", "errors"),
    ("Error", "code"),
    ("Error", "claimable"),
    ("Error", "details"),
    ("ReceivedAttachmentLink", "download_url"),
    ("ReceivedAttachmentLink", "expires_at"),
    ("AutomationView", "steps"),
    ("AutomationView", "connections"),
    ("AutomationView", "step_counts"),
    ("RunView", "steps"),
];

#[test]
fn every_response_field_is_required_unless_it_is_left_out_when_empty() {
    let doc = committed();
    let mut names = std::collections::BTreeSet::new();
    for (_, _, operation) in openapi::operations(&doc) {
        let mut found = Vec::new();
        schemas(&operation["responses"], String::new(), &mut found);
        let mut todo: Vec<String> = found
            .iter()
            .filter_map(|(_, map)| map.get("$ref").and_then(Value::as_str))
            .map(|r| r.trim_start_matches("#/components/schemas/").to_string())
            .collect();
        while let Some(name) = todo.pop() {
            if names.insert(name.clone()) {
                let mut inner = Vec::new();
                schemas(component(&doc, &name), String::new(), &mut inner);
                todo.extend(
                    inner
                        .iter()
                        .filter_map(|(_, map)| map.get("$ref").and_then(Value::as_str))
                        .map(|r| r.trim_start_matches("#/components/schemas/").to_string()),
                );
            }
        }
    }
    let mut optional = Vec::new();
    for name in &names {
        let schema = component(&doc, name);
        for field in schema["properties"].as_object().into_iter().flat_map(|p| p.keys()) {
            if !required(schema).contains(&field.as_str()) && !ABSENT_WHEN_EMPTY.contains(&(name.as_str(), field.as_str())) {
                optional.push(format!("{name}.{field}"));
            }
        }
    }
    assert!(
        optional.is_empty(),
        "answers always carry these fields (poem-openapi writes `None` as null): make them `Nullable<T>`, or list \
         them in ABSENT_WHEN_EMPTY if the answer leaves them out: {optional:?}"
    );
}

/// Lists whose items have no id: their cursor is the item's key (a version number, a slug, a link).
const KEYED_LISTS: &[&str] = &["list-template-versions", "list-starters", "list-broadcast-clicked-links"];

#[test]
fn every_paged_list_bounds_its_limit_and_types_its_cursors() {
    let doc = committed();
    let mut lists = 0;
    for (method, path, operation) in openapi::operations(&doc) {
        let parameters = operation["parameters"].as_array().cloned().unwrap_or_default();
        let Some(limit) = parameters.iter().find(|p| p["name"] == "limit") else { continue };
        lists += 1;
        assert_eq!((limit["schema"]["minimum"].clone(), limit["schema"]["maximum"].clone()), (Value::from(1), Value::from(100)), "{method} {path}");
        for cursor in ["after", "before"] {
            let cursor = parameters.iter().find(|p| p["name"] == cursor).unwrap_or_else(|| panic!("{method} {path}: no {cursor}"));
            if KEYED_LISTS.contains(&operation["operationId"].as_str().unwrap_or_default()) {
                assert_eq!((cursor["schema"]["type"].as_str(), cursor["schema"]["maxLength"].as_u64()), (Some("string"), Some(2048)), "{method} {path}");
            } else {
                assert_eq!(cursor["schema"]["format"], "uuid", "{method} {path}");
            }
        }
    }
    assert!(lists >= 12, "{lists} paged lists");
}

#[test]
fn every_free_text_path_and_query_parameter_refuses_control_characters() {
    let doc = committed();
    for (method, path, operation) in openapi::operations(&doc) {
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            let schema = &parameter["schema"];
            if !matches!(parameter["in"].as_str(), Some("path" | "query")) || schema["type"] != "string" {
                continue;
            }
            let typed = ["pattern", "enum", "format", "anyOf"].iter().any(|k| schema.get(*k).is_some());
            assert!(typed, "{method} {path} {}: {schema}", parameter["name"]);
            if let Some(pattern) = schema["pattern"].as_str() {
                assert!(pattern.contains(r"\u0000-\u001F\u007F-\u009F") || pattern.starts_with("^[0-9A-Fa-f]") || pattern.starts_with("^ *("),
                    "{method} {path} {}: {pattern}", parameter["name"]);
            }
        }
    }
}

#[test]
fn closed_lists_and_lengths_the_handlers_enforce_are_in_the_document() {
    let doc = committed();
    let property = |schema: &str, field: &str| component(&doc, schema)["properties"][field].clone();
    let enum_of = |reference: &Value| -> Vec<String> {
        let reference = reference["$ref"].as_str().or_else(|| reference["anyOf"][0]["$ref"].as_str()).expect("a $ref");
        let name = reference.trim_start_matches("#/components/schemas/");
        component(&doc, name)["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    assert_eq!(enum_of(&property("UpdateWebhook", "status")), ["enabled", "disabled"]);
    assert_eq!(enum_of(&property("TopicChoice", "subscription")), ["opt_in", "opt_out"]);
    assert_eq!(enum_of(&property("CreateProperty", "type")), ["string", "number", "boolean"]);
    assert_eq!(enum_of(&property("CreateWebhook", "events")["items"]).len(), schema::store::webhooks::EVENT_TYPES.len());
    assert_eq!(property("CreateApiKey", "name")["maxLength"], 255);
    assert_eq!(property("CreateContact", "first_name")["maxLength"], 200);
    assert_eq!(property("CreateTopic", "name")["maxLength"], 50);
    assert_eq!(property("SendEmail", "attachments")["maxItems"], 100);
    assert_eq!(property("SendEmail", "tags")["maxItems"], 50);
    let idempotency = doc["paths"]["/emails"]["post"]["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "Idempotency-Key").unwrap().clone();
    assert_eq!((idempotency["schema"]["minLength"].clone(), idempotency["schema"]["maxLength"].clone()), (Value::from(1), Value::from(256)));
}

#[test]
fn optional_request_fields_take_null_and_bodies_requiring_nothing_are_optional() {
    let doc = committed();
    assert!(nullable(&component(&doc, "CreateContact")["properties"]["unsubscribed"]));
    assert!(nullable(&component(&doc, "CreateTopic")["properties"]["visibility"]));
    assert!(!nullable(&component(&doc, "SendEmail")["properties"]["to"]), "a required field refuses null");
    assert_eq!(doc["paths"]["/topics/{topic_id}"]["patch"]["requestBody"]["required"], false);
    assert_eq!(doc["paths"]["/emails"]["post"]["requestBody"]["required"], true);
}

/// The section of `docs/decisions.md` listing the free-form response schemas allowed, one bullet
/// each: "- `Location`: reason".
const FREE_FORM_SECTION: &str = "Free-form response schemas";

/// The allowed free-form response schemas and their reasons, from `docs/decisions.md`.
fn allowed_free_form() -> std::collections::BTreeMap<String, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/decisions.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let heading = |line: &str| line.starts_with('#');
    let mut lines = text.lines().skip_while(|line| !(heading(line) && line.trim_start_matches('#').trim().starts_with(FREE_FORM_SECTION)));
    assert!(lines.next().is_some(), "{} has no section headed {FREE_FORM_SECTION:?}", path.display());
    let mut allowed = std::collections::BTreeMap::new();
    for line in lines.take_while(|line| !heading(line)) {
        let Some(bullet) = line.strip_prefix("- ") else { continue };
        let (location, reason) = bullet
            .strip_prefix('`')
            .and_then(|rest| rest.split_once("`:"))
            .unwrap_or_else(|| panic!("a {FREE_FORM_SECTION} bullet reads \"- `Location`: reason\", not {line:?}"));
        assert!(!reason.trim().is_empty(), "{location} is listed without a reason");
        assert!(allowed.insert(location.to_string(), reason.trim().to_string()).is_none(), "{location} is listed twice");
    }
    allowed
}

#[test]
fn every_free_form_response_schema_is_one_the_decisions_list_with_a_reason() {
    let found = openapi::free_form_response_schemas(&committed());
    let allowed = allowed_free_form();
    let unlisted: Vec<&String> = found.iter().filter(|at| !allowed.contains_key(*at)).collect();
    let gone: Vec<&String> = allowed.keys().filter(|at| !found.contains(*at)).collect();
    assert!(
        unlisted.is_empty(),
        "free-form response schemas: type them, or list each under \"{FREE_FORM_SECTION}\" in docs/decisions.md with the \
         reason it cannot be typed: {unlisted:?}"
    );
    assert!(gone.is_empty(), "docs/decisions.md lists free-form response schemas the document no longer has: {gone:?}");
}

#[test]
fn every_property_of_every_schema_has_a_description() {
    let doc = committed();
    let mut undescribed = Vec::new();
    for (name, schema) in doc["components"]["schemas"].as_object().expect("components.schemas") {
        for (property, value) in schema["properties"].as_object().into_iter().flatten() {
            if value.get("description").is_none() {
                undescribed.push(format!("{name}.{property}"));
            }
        }
    }
    assert!(
        undescribed.is_empty(),
        "every property says what it holds: give each of these fields a one-line `///` doc comment: {undescribed:#?}"
    );
}
