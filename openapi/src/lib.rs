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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
