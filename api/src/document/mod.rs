//! The OpenAPI document: generated from the typed handlers, upgraded to 3.1.0, given both
//! server forms, and annotated per operation with `x-svc-*` from the operation table.

pub mod webhooks;

use crate::http::operations;
use crate::routes::{self, Apis};
use poem_openapi::OpenApiService;
use serde_json::{Map, Value, json};

/// Title of the document.
pub const TITLE: &str = "Herald API";

/// The poem-openapi service holding every route.
pub fn service() -> OpenApiService<Apis, ()> {
    OpenApiService::new(routes::apis(), TITLE, env!("CARGO_PKG_VERSION")).description(
        "Herald is a self-hostable email platform: transactional sending from verified domains, \
         signed webhooks, request logs, templates, an audience and a shared Inbox. Every route is \
         served at the deployment's root and under `/api/v1`.\n\n\
         Control characters are refused everywhere: in a path segment or query parameter (after \
         percent-decoding) any is `422 invalid_parameter`; in a JSON body NUL and the C0 controls \
         other than tab, line feed and carriage return are `400 validation_error` in any string or \
         key, and line feed and carriage return too except in multi-line text (`html`, `text`, \
         `content`, `description`) and in free-form maps (`properties`, `headers`, `data`, \
         `metadata`). Request bodies may carry fields the document does not list; they are ignored.",
    )
}

/// The finished document.
pub fn document() -> Value {
    let mut doc: Value = serde_json::from_str(&service().spec()).expect("poem-openapi writes JSON");
    doc["openapi"] = json!("3.1.0");
    doc["servers"] = json!([
        {
            "url": "{base_url}",
            "description": "The deployment's own host.",
            "variables": { "base_url": { "default": "http://127.0.0.1:8080" } }
        },
        {
            "url": "{base_url}/api/v1",
            "description": "The deployment-specific versioned base.",
            "variables": { "base_url": { "default": "http://127.0.0.1:8080" } }
        }
    ]);
    doc["components"]["securitySchemes"] = json!({
        "bearer": { "type": "http", "scheme": "bearer", "description": "`Authorization: Bearer rk_…`" },
        "session": {
            "type": "apiKey", "in": "cookie", "name": crate::http::credentials::COOKIE,
            "description": "The dashboard session cookie set by `POST /auth/signup` and `POST /auth/login`; writes also send its CSRF token as `X-CSRF-Token`."
        },
        "registration": { "type": "http", "scheme": "bearer", "description": "An OAuth client's registration access token, `Authorization: Bearer rkor_…` (RFC 7592)" },
        "oauth": {
            "type": "oauth2",
            "description": "An OAuth 2.1 access token (`rko_…`) acting as its member in its team, within its scopes (`x-svc-scope`).",
            "flows": { "authorizationCode": {
                "authorizationUrl": "/oauth/authorize", "tokenUrl": "/oauth/token", "refreshUrl": "/oauth/token",
                "scopes": operations::SCOPES.iter().map(|s| (s.to_string(), json!(format!("`{s}`")))).collect::<serde_json::Map<_, _>>()
            } }
        }
    });
    if let Some(schemas) = doc.pointer_mut("/components/schemas") {
        upgrade_schemas(schemas);
        if let (Some(schemas), Value::Object(extra)) = (schemas.as_object_mut(), crate::document::webhooks::schemas()) {
            schemas.extend(extra);
        }
    }
    doc["webhooks"] = crate::document::webhooks::webhooks();
    doc["paths"]["/mcp"] = mcp_path();
    optional_request_fields_take_null(&mut doc);
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else { continue };
            for (_, operation) in item.iter_mut() {
                annotate(path, operation);
                upgrade_schemas(operation);
                refuse_control_characters_in_parameters(operation);
            }
        }
    }
    optional_bodies(&mut doc);
    doc
}

/// `POST /mcp`, served by the MCP server rather than a documented route: JSON-RPC 2.0 messages
/// of the Model Context Protocol's streamable HTTP transport.
fn mcp_path() -> Value {
    let message = json!({ "type": "object", "description": "A JSON-RPC 2.0 message (`jsonrpc`, `id`, `method`, `params`, or `result`/`error`).", "additionalProperties": true });
    let error = json!({ "$ref": "#/components/schemas/Error" });
    json!({ "post": {
        "operationId": "mcp",
        "tags": ["OAuth"],
        "summary": "The remote MCP server (streamable HTTP, stateless).",
        "description": "The Model Context Protocol over streamable HTTP: `initialize`, `tools/list` and `tools/call` with the tools `send_email`, `list_emails`, `get_email`, `list_domains`, `get_domain`, `find_contacts`, `upsert_contact`, `list_segments` and `create_broadcast_draft`. Each tool is the call of its route with this token, logged with source `mcp`. Only an OAuth access token reaches it; a request without one is `401` with `WWW-Authenticate: Bearer resource_metadata=\"…/.well-known/oauth-protected-resource\"`.",
        "requestBody": { "required": true, "content": { "application/json": { "schema": message } } },
        "responses": {
            "200": { "description": "The JSON-RPC answer.", "content": { "application/json": { "schema": message } } },
            "202": { "description": "A notification or response was accepted." },
            "401": { "description": "No token, or an unknown one.", "content": { "application/json": { "schema": error } } },
            "403": { "description": "An API key: only OAuth access tokens reach the MCP server.", "content": { "application/json": { "schema": error } } }
        }
    } })
}

/// The names of the component schemas `value` refers to, and those they refer to in turn.
fn referenced(doc: &Value, value: &Value) -> std::collections::BTreeSet<String> {
    fn direct(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    match (key.as_str(), inner.as_str().and_then(|r| r.strip_prefix("#/components/schemas/"))) {
                        ("$ref", Some(name)) => out.push(name.to_string()),
                        _ => direct(inner, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| direct(i, out)),
            _ => {}
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = Vec::new();
    direct(value, &mut todo);
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            direct(&doc["components"]["schemas"][&name], &mut todo);
        }
    }
    seen
}

/// Every JSON request body and every response of the document's operations.
fn bodies(doc: &Value) -> (Vec<&Value>, Vec<&Value>) {
    let (mut requests, mut responses) = (Vec::new(), Vec::new());
    for item in doc["paths"].as_object().into_iter().flat_map(|paths| paths.values()) {
        for operation in item.as_object().into_iter().flat_map(|item| item.values()) {
            if let Some(json) = operation.pointer("/requestBody/content/application~1json") {
                requests.push(json);
            }
            if let Some(answers) = operation.get("responses") {
                responses.push(answers);
            }
        }
    }
    (requests, responses)
}

/// JSON bodies are read with serde, which takes `null` for an absent optional field: in the
/// schemas only request bodies use, a property that is neither required nor given a `default`
/// also takes `null`. (A `Nullable` response field is required; `MaybeUndefined` fields are
/// nullable already.)
fn optional_request_fields_take_null(doc: &mut Value) {
    let (requests, responses) = bodies(doc);
    let in_requests: std::collections::BTreeSet<String> = requests.iter().flat_map(|body| referenced(doc, body)).collect();
    let in_responses: std::collections::BTreeSet<String> = responses.iter().flat_map(|body| referenced(doc, body)).collect();
    let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) else { return };
    for name in in_requests.difference(&in_responses) {
        let Some(schema) = schemas.get_mut(name) else { continue };
        let required: Vec<Value> = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
        let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else { continue };
        for (field, property) in properties.iter_mut() {
            let Some(property) = property.as_object_mut() else { continue };
            if required.contains(&json!(field)) || property.contains_key("default") {
                continue;
            }
            let already = match property.get("type") {
                Some(Value::Array(kinds)) => kinds.contains(&json!("null")),
                _ => property.get("anyOf").and_then(Value::as_array).is_some_and(|any| any.contains(&json!({ "type": "null" }))),
            };
            if !already {
                make_nullable(property);
            }
        }
    }
}

/// A JSON request body whose schema requires nothing may be left out: an empty body reads as
/// `{}`. (poem-openapi marks every body required.)
fn optional_bodies(doc: &mut Value) {
    let schemas = doc["components"]["schemas"].clone();
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for operation in item.values_mut() {
            let Some(body) = operation.get_mut("requestBody") else { continue };
            let Some(schema) = body.pointer("/content/application~1json/schema") else { continue };
            let schema = match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
                Some(name) => &schemas[name],
                None => schema,
            };
            let requires_nothing = schema["type"] == "object" && schema["required"].as_array().is_none_or(Vec::is_empty);
            if requires_nothing {
                body["required"] = json!(false);
            }
        }
    }
}

/// What a path segment or query parameter may hold: no control character (`char::is_control`,
/// refused at the edge by [`crate::http::input`]).
pub const NO_CONTROL_CHARACTERS: &str = r"^[^\u0000-\u001F\u007F-\u009F]*$";

/// Gives every free-text string path and query parameter (no `pattern`, `enum` or `format` of its
/// own) the [`NO_CONTROL_CHARACTERS`] pattern the edge enforces.
fn refuse_control_characters_in_parameters(operation: &mut Value) {
    let Some(parameters) = operation.get_mut("parameters").and_then(Value::as_array_mut) else { return };
    for parameter in parameters {
        if !matches!(parameter["in"].as_str(), Some("path" | "query")) {
            continue;
        }
        let Some(schema) = parameter.get_mut("schema").and_then(Value::as_object_mut) else { continue };
        let free_text = schema.get("type") == Some(&json!("string"))
            && !["pattern", "enum", "format", "anyOf", "oneOf"].iter().any(|k| schema.contains_key(*k));
        if free_text {
            schema.insert("pattern".into(), json!(NO_CONTROL_CHARACTERS));
        }
    }
}

/// The 3.0 → 3.1 rewrites of every schema under `value`, innermost first:
/// - [`unwrap_annotated_ref`]: poem-openapi puts a field's description on an enum or object
///   reference as `allOf [$ref, {description}]`; 3.1 lets a `$ref` carry it as a sibling;
/// - `nullable: true` becomes a type union ([`make_nullable`]);
/// - [`drop_union_object_type`]: poem-openapi's `Union` adds `type: object` to a `oneOf` of
///   non-objects (`Addresses`), which no value matches;
/// - [`whole_number_bounds`]: `maximum: 100.0` becomes `maximum: 100`.
fn upgrade_schemas(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (_, inner) in map.iter_mut() {
                upgrade_schemas(inner);
            }
            unwrap_annotated_ref(map);
            if map.remove("nullable") == Some(Value::Bool(true)) {
                make_nullable(map);
            }
            drop_union_object_type(map);
            whole_number_bounds(map);
        }
        Value::Array(items) => items.iter_mut().for_each(upgrade_schemas),
        _ => {}
    }
}

/// Keywords that describe a schema without constraining it.
const ANNOTATIONS: &[&str] = &["description", "title", "default", "example", "examples", "deprecated", "readOnly", "writeOnly", "nullable"];

/// `{ allOf: [{ $ref }, { annotations }], annotations }` becomes `{ $ref, annotations }`.
fn unwrap_annotated_ref(map: &mut Map<String, Value>) {
    let Some(Value::Array(all_of)) = map.get("allOf") else { return };
    let reference = match all_of.as_slice() {
        [Value::Object(first), rest @ ..]
            if first.len() == 1
                && first.contains_key("$ref")
                && rest.len() <= 1
                && rest.iter().all(|r| r.as_object().is_some_and(|r| r.keys().all(|k| ANNOTATIONS.contains(&k.as_str())))) =>
        {
            first["$ref"].clone()
        }
        _ => return,
    };
    let Some(Value::Array(all_of)) = map.remove("allOf") else { return };
    if let Some(Value::Object(annotations)) = all_of.into_iter().nth(1) {
        for (key, value) in annotations {
            map.entry(key).or_insert(value);
        }
    }
    map.insert("$ref".into(), reference);
}

/// poem-openapi writes every bound as a float; an integer's bounds read better as integers.
fn whole_number_bounds(map: &mut Map<String, Value>) {
    for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
        if let Some(bound) = map.get_mut(key)
            && let Some(float) = bound.as_f64()
            && float.fract() == 0.0
            && float.abs() < 1e15
        {
            *bound = json!(float as i64);
        }
    }
}

/// A `oneOf`/`anyOf` schema without properties takes its type from its alternatives.
fn drop_union_object_type(map: &mut Map<String, Value>) {
    let union = map.contains_key("oneOf") || map.contains_key("anyOf");
    if union && map.get("type") == Some(&json!("object")) && !map.contains_key("properties") {
        map.remove("type");
    }
}

/// The browsable reference served at `/docs`: Swagger UI, whose script and style poem-openapi
/// bundles into the binary, showing [`document`] embedded in the page. Given the document
/// itself (not its URL), Swagger UI fetches nothing, not even its online validator badge.
pub fn reference_page() -> &'static str {
    static PAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PAGE.get_or_init(|| {
        let service = service();
        // The page embeds poem-openapi's own spec; put the finished document in its place
        // (`<\/` keeps a `</script>` in any text from closing the script element).
        let finished = serde_json::to_string(&document()).expect("a JSON value serializes").replace("</", "<\\/");
        service
            .swagger_ui_html()
            .replacen(&service.spec(), &finished, 1)
            .replacen("<title>Swagger UI</title>", &format!("<title>{TITLE}</title>"), 1)
    })
}

/// The document as committed at `openapi/openapi.json`.
pub fn document_json() -> String {
    let mut text = serde_json::to_string_pretty(&document()).expect("a JSON value serializes");
    text.push('\n');
    text
}

fn annotate(path: &str, operation: &mut Value) {
    let id = operation.get("operationId").and_then(Value::as_str).unwrap_or_default().to_string();
    let Some(entry) = operations::by_id(&id) else { return };
    let Some(fields) = operation.as_object_mut() else { return };
    fields.insert("x-svc-permission".into(), entry.access.annotation().map_or(Value::Null, |p| json!(p)));
    fields.insert("x-svc-scope".into(), entry.scope.map_or(Value::Null, |s| json!(s)));
    if path.starts_with("/inbox") {
        fields.insert("x-svc-inbox-access".into(), entry.inbox_access.map_or(Value::Null, |a| json!(a)));
    }
    let security = match (entry.access, entry.scope) {
        (operations::Access::Session, _) => Some(json!([{ "session": [] }])),
        (operations::Access::Registration, _) => Some(json!([{ "registration": [] }])),
        (operations::Access::TokenOnly, _) => Some(json!([{ "oauth": [] }])),
        (operations::Access::Inbox, Some(scope)) => Some(json!([{ "bearer": [] }, { "oauth": [scope] }, { "session": [] }])),
        (access, Some(scope)) if access.needs_credential() => Some(json!([{ "bearer": [] }, { "oauth": [scope] }])),
        (access, None) if access.needs_credential() => Some(json!([{ "bearer": [] }])),
        _ => None,
    };
    if let Some(security) = security {
        fields.insert("security".into(), security);
    }
}

/// OpenAPI 3.0's `nullable: true` becomes a 3.1 type union: `type: [T, "null"]`, or for a
/// reference or union `anyOf [the schema, { type: null }]` with the annotations kept outside.
/// A schema without a type already admits `null`.
fn make_nullable(map: &mut Map<String, Value>) {
    match map.get("type").cloned() {
        Some(Value::String(kind)) => {
            map.insert("type".into(), json!([kind, "null"]));
            if let Some(Value::Array(values)) = map.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
        }
        Some(_) => {}
        // Disjoint alternatives (`fields::Scalar`) take `null` as one more.
        None if map.get("oneOf").is_some_and(Value::is_array) && !["$ref", "allOf", "anyOf"].iter().any(|k| map.contains_key(*k)) => {
            if let Some(Value::Array(alternatives)) = map.get_mut("oneOf") {
                alternatives.push(json!({ "type": "null" }));
            }
        }
        None if ["$ref", "allOf", "oneOf", "anyOf"].iter().any(|k| map.contains_key(*k)) => {
            let (annotations, schema): (Map<String, Value>, Map<String, Value>) =
                std::mem::take(map).into_iter().partition(|(key, _)| ANNOTATIONS.contains(&key.as_str()));
            *map = annotations;
            map.insert("anyOf".into(), json!([schema, { "type": "null" }]));
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_types_become_type_unions() {
        let mut schema = json!({ "type": "string", "nullable": true });
        upgrade_schemas(&mut schema);
        assert_eq!(schema, json!({ "type": ["string", "null"] }));
        let mut reference = json!({ "$ref": "#/components/schemas/X", "nullable": true, "description": "d" });
        upgrade_schemas(&mut reference);
        assert_eq!(
            reference,
            json!({ "anyOf": [{ "$ref": "#/components/schemas/X" }, { "type": "null" }], "description": "d" })
        );
        let mut any = json!({ "nullable": true, "description": "d" });
        upgrade_schemas(&mut any);
        assert_eq!(any, json!({ "description": "d" }));
    }

    #[test]
    fn a_described_reference_is_a_ref_with_a_sibling_description_not_an_all_of() {
        let mut field = json!({
            "allOf": [{ "$ref": "#/components/schemas/Tls" }, { "description": "d" }],
            "description": "d"
        });
        upgrade_schemas(&mut field);
        assert_eq!(field, json!({ "$ref": "#/components/schemas/Tls", "description": "d" }));
        let mut nullable = json!({
            "allOf": [{ "$ref": "#/components/schemas/Tls" }, { "nullable": true, "description": "d" }],
            "nullable": true,
            "description": "d"
        });
        upgrade_schemas(&mut nullable);
        assert_eq!(
            nullable,
            json!({ "anyOf": [{ "$ref": "#/components/schemas/Tls" }, { "type": "null" }], "description": "d" })
        );
        let mut constrained = json!({ "allOf": [{ "$ref": "#/components/schemas/A" }, { "maxLength": 3 }] });
        let before = constrained.clone();
        upgrade_schemas(&mut constrained);
        assert_eq!(constrained, before, "only annotations move beside a $ref");
    }

    #[test]
    fn free_text_parameters_refuse_control_characters_as_the_edge_does() {
        let mut operation = json!({ "parameters": [
            { "in": "path", "name": "id", "schema": { "type": "string" } },
            { "in": "query", "name": "after", "schema": { "type": "string", "format": "uuid" } },
            { "in": "header", "name": "Idempotency-Key", "schema": { "type": "string" } }
        ] });
        refuse_control_characters_in_parameters(&mut operation);
        assert_eq!(operation["parameters"][0]["schema"]["pattern"], NO_CONTROL_CHARACTERS);
        assert!(operation["parameters"][1]["schema"].get("pattern").is_none());
        assert!(operation["parameters"][2]["schema"].get("pattern").is_none());
        let pattern = regex_lite(NO_CONTROL_CHARACTERS);
        assert!(pattern("any text, even ünïcode"));
        assert!(!pattern("a\u{0}b") && !pattern("tab\there") && !pattern("c1\u{85}"));
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(pattern(&c.to_string()), !c.is_control(), "{c:?}");
        }
    }

    /// The one pattern above, read as the character class it is.
    fn regex_lite(pattern: &str) -> impl Fn(&str) -> bool {
        assert_eq!(pattern, r"^[^\u0000-\u001F\u007F-\u009F]*$");
        |text: &str| text.chars().all(|c| !matches!(c as u32, 0x00..=0x1F | 0x7F..=0x9F))
    }

    #[test]
    fn optional_request_fields_take_null_and_a_body_requiring_nothing_is_optional() {
        let mut doc = json!({
            "paths": { "/a": { "post": {
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/In" } } } },
                "responses": { "200": { "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Out" } } } } }
            } } },
            "components": { "schemas": {
                "In": { "type": "object", "properties": {
                    "kind": { "$ref": "#/components/schemas/Kind", "description": "d" },
                    "name": { "type": "string" },
                    "keep": { "type": "boolean", "default": false },
                    "clear": { "type": ["string", "null"] }
                } },
                "Out": { "type": "object", "required": ["kind"], "properties": { "kind": { "$ref": "#/components/schemas/Kind" } } },
                "Kind": { "type": "string", "enum": ["a"] }
            } }
        });
        optional_request_fields_take_null(&mut doc);
        optional_bodies(&mut doc);
        let properties = &doc["components"]["schemas"]["In"]["properties"];
        assert_eq!(properties["name"]["type"], json!(["string", "null"]));
        assert_eq!(properties["kind"], json!({ "anyOf": [{ "$ref": "#/components/schemas/Kind" }, { "type": "null" }], "description": "d" }));
        assert_eq!(properties["keep"]["type"], "boolean", "a field with a default refuses null");
        assert_eq!(properties["clear"]["type"], json!(["string", "null"]));
        assert_eq!(doc["components"]["schemas"]["Kind"], json!({ "type": "string", "enum": ["a"] }), "shared with an answer");
        assert_eq!(doc["paths"]["/a"]["post"]["requestBody"]["required"], false);
    }

    #[test]
    fn the_reference_page_embeds_the_finished_document_in_place_of_the_raw_spec() {
        let page = reference_page();
        let finished = serde_json::to_string(&document()).unwrap().replace("</", "<\\/");
        assert!(page.contains(&finished), "the finished document is not in the page");
        assert!(!page.contains(&service().spec()), "poem-openapi's raw spec is still in the page");
        assert!(page.contains(&format!("<title>{TITLE}</title>")));
    }

    #[test]
    fn a_nullable_one_of_takes_null_as_one_more_alternative() {
        let mut scalar = json!({ "oneOf": [{ "type": "string" }, { "type": "number" }], "nullable": true, "description": "d" });
        upgrade_schemas(&mut scalar);
        assert_eq!(scalar, json!({ "oneOf": [{ "type": "string" }, { "type": "number" }, { "type": "null" }], "description": "d" }));
    }

    #[test]
    fn a_one_of_of_non_objects_has_no_object_type() {
        let mut addresses = json!({ "type": "object", "oneOf": [{ "type": "string" }, { "type": "array" }] });
        upgrade_schemas(&mut addresses);
        assert_eq!(addresses, json!({ "oneOf": [{ "type": "string" }, { "type": "array" }] }));
    }
}
