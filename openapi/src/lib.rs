//! The committed OpenAPI document (`openapi.json`, written by `herald openapi`) and the checks
//! every operation must pass: an `operationId`, `x-svc-permission` and `x-svc-scope`, and
//! `x-svc-inbox-access` on `/inbox` operations.

use serde_json::Value;

/// The HTTP methods an OpenAPI path item may hold.
const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Every `(method, path, operation)` of a document.
pub fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut found = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            for method in METHODS {
                if let Some(operation) = item.get(*method) {
                    found.push((method.to_string(), path.clone(), operation));
                }
            }
        }
    }
    found
}

/// What is missing from the document's annotations; empty when it is complete.
pub fn annotation_problems(doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for (method, path, operation) in operations(doc) {
        let at = format!("{} {path}", method.to_uppercase());
        if operation["operationId"].as_str().is_none_or(str::is_empty) {
            problems.push(format!("{at}: no operationId"));
        }
        for key in ["x-svc-permission", "x-svc-scope"] {
            if operation.get(key).is_none() {
                problems.push(format!("{at}: no {key}"));
            }
        }
        match operation.get("x-svc-permission") {
            Some(Value::Null) | None => {}
            Some(Value::String(p)) if ["sending_access", "full_access", "session", "none"].contains(&p.as_str()) => {}
            Some(other) => problems.push(format!("{at}: x-svc-permission {other} is not a permission")),
        }
        if path.starts_with("/inbox") && operation.get("x-svc-inbox-access").is_none() {
            problems.push(format!("{at}: no x-svc-inbox-access"));
        }
    }
    problems
}

/// Keywords that describe a schema without constraining it.
const ANNOTATIONS: &[&str] = &["description", "title", "default", "example", "examples", "deprecated", "readOnly", "writeOnly", "$comment"];

/// Whether `schema` leaves its shape open: an empty schema (annotations at most), an object
/// without `properties` (a map, whatever its values), or `additionalProperties: true` or `{}`
/// without `properties`. A `$ref`, and an object closed with `additionalProperties: false`,
/// are not.
fn is_free_form(schema: &serde_json::Map<String, Value>) -> bool {
    if schema.contains_key("$ref") || schema.contains_key("properties") {
        return false;
    }
    if schema.keys().all(|key| ANNOTATIONS.contains(&key.as_str())) {
        return true;
    }
    let object = match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.contains(&Value::from("object")),
        _ => false,
    };
    let open = matches!(schema.get("additionalProperties"), Some(Value::Bool(true))) || schema.get("additionalProperties").is_some_and(|a| a.as_object().is_some_and(|a| a.is_empty()));
    (object && schema.get("additionalProperties") != Some(&Value::Bool(false))) || open
}

/// Every free-form schema (see [`is_free_form`]) a response of the document can hold, by where
/// it is: `Component.property` (`[]` for an array's items, `{}` for a typed map's values) in the
/// component schemas the responses reach through `$ref`, or `METHOD /path status` and the same
/// suffixes for a schema written inline in a response.
pub fn free_form_response_schemas(doc: &Value) -> std::collections::BTreeSet<String> {
    struct Walk<'a> {
        doc: &'a Value,
        seen: std::collections::BTreeSet<String>,
        found: std::collections::BTreeSet<String>,
    }
    impl Walk<'_> {
        fn schema(&mut self, schema: &Value, at: &str) {
            let Some(map) = schema.as_object() else {
                if schema == &Value::Bool(true) {
                    self.found.insert(at.to_string());
                }
                return;
            };
            if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                if let Some(name) = reference.strip_prefix("#/components/schemas/")
                    && self.seen.insert(name.to_string())
                {
                    let component = &self.doc["components"]["schemas"][name];
                    self.schema(component, name);
                }
                return;
            }
            if is_free_form(map) {
                self.found.insert(at.to_string());
            }
            for (name, property) in map.get("properties").and_then(Value::as_object).into_iter().flatten() {
                self.schema(property, &format!("{at}.{name}"));
            }
            if let Some(items) = map.get("items") {
                self.schema(items, &format!("{at}[]"));
            }
            if let Some(values) = map.get("additionalProperties").filter(|a| a.as_object().is_some_and(|a| !a.is_empty())) {
                self.schema(values, &format!("{at}{{}}"));
            }
            for key in ["oneOf", "anyOf", "allOf"] {
                for alternative in map.get(key).and_then(Value::as_array).into_iter().flatten() {
                    self.schema(alternative, at);
                }
            }
        }
    }
    let mut walk = Walk { doc, seen: Default::default(), found: Default::default() };
    for (method, path, operation) in operations(doc) {
        for (status, response) in operation["responses"].as_object().into_iter().flatten() {
            for (_, content) in response["content"].as_object().into_iter().flatten() {
                if let Some(schema) = content.get("schema") {
                    walk.schema(schema, &format!("{} {path} {status}", method.to_uppercase()));
                }
            }
        }
    }
    walk.found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn free_form_schemas_a_response_reaches_are_found_by_where_they_are() {
        let doc = json!({
            "paths": {
                "/a": { "get": { "responses": {
                    "200": { "content": { "application/json": { "schema": { "$ref": "#/components/schemas/A" } } } },
                    "400": { "content": { "application/json": { "schema": { "type": "object", "properties": {
                        "extra": { "description": "anything" }
                    } } } } }
                } } },
                "/b": { "post": {
                    "requestBody": { "content": { "application/json": { "schema": { "$ref": "#/components/schemas/OnlyAsked" } } } },
                    "responses": { "204": { "description": "none" } }
                } }
            },
            "components": { "schemas": {
                "A": { "type": "object", "properties": {
                    "typed": { "type": "string" },
                    "map": { "type": "object", "additionalProperties": { "type": "string" } },
                    "open": { "additionalProperties": true },
                    "closed": { "type": "object", "additionalProperties": false },
                    "maybe": { "anyOf": [{ "type": ["object", "null"] }, { "type": "null" }] },
                    "list": { "type": "array", "items": { "$ref": "#/components/schemas/B" } },
                    "again": { "$ref": "#/components/schemas/A" }
                } },
                "B": { "type": "object", "properties": {
                    "values": { "type": "object", "additionalProperties": {} },
                    "scalar": { "oneOf": [{ "type": "string" }, { "type": "number" }] }
                } },
                "OnlyAsked": { "type": "object", "properties": { "anything": {} } }
            } }
        });
        let found: Vec<String> = free_form_response_schemas(&doc).into_iter().collect();
        assert_eq!(found, ["A.map", "A.maybe", "A.open", "B.values", "GET /a 400.extra"]);
    }

    #[test]
    fn an_operation_without_annotations_is_reported() {
        let doc = json!({ "paths": { "/inbox/x": { "get": { "operationId": "x" } } } });
        let problems = annotation_problems(&doc);
        assert_eq!(problems.len(), 3, "{problems:?}");
    }

    #[test]
    fn a_fully_annotated_operation_passes() {
        let doc = json!({ "paths": { "/a": { "get": {
            "operationId": "a", "x-svc-permission": "full_access", "x-svc-scope": null } } } });
        assert!(annotation_problems(&doc).is_empty());
    }
}
