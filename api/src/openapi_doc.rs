//! The OpenAPI document: generated from the typed handlers, upgraded to 3.1.0, given both
//! server forms, and annotated per operation with `x-svc-*` from the operation table.

use crate::operations;
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
         served at the deployment's root and under `/api/v1`.",
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
        "bearer": { "type": "http", "scheme": "bearer", "description": "`Authorization: Bearer rk_…`" }
    });
    if let Some(schemas) = doc.pointer_mut("/components/schemas") {
        upgrade_nullable(schemas);
        if let (Some(schemas), Value::Object(extra)) = (schemas.as_object_mut(), crate::openapi_webhooks::schemas()) {
            schemas.extend(extra);
        }
    }
    doc["webhooks"] = crate::openapi_webhooks::webhooks();
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else { continue };
            for (_, operation) in item.iter_mut() {
                annotate(path, operation);
                upgrade_nullable(operation);
            }
        }
    }
    doc
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
    if entry.access.needs_credential() {
        fields.insert("security".into(), json!([{ "bearer": [] }]));
    }
}

/// OpenAPI 3.0's `nullable: true` becomes a 3.1 type union.
fn upgrade_nullable(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (_, inner) in map.iter_mut() {
                upgrade_nullable(inner);
            }
            if map.remove("nullable") == Some(Value::Bool(true)) {
                make_nullable(map);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(upgrade_nullable),
        _ => {}
    }
}

fn make_nullable(map: &mut Map<String, Value>) {
    match map.get("type").cloned() {
        Some(Value::String(kind)) => {
            map.insert("type".into(), json!([kind, "null"]));
        }
        _ => {
            let original = Value::Object(std::mem::take(map));
            map.insert("anyOf".into(), json!([original, { "type": "null" }]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_types_become_type_unions() {
        let mut schema = json!({ "type": "string", "nullable": true });
        upgrade_nullable(&mut schema);
        assert_eq!(schema, json!({ "type": ["string", "null"] }));
        let mut reference = json!({ "$ref": "#/components/schemas/X", "nullable": true });
        upgrade_nullable(&mut reference);
        assert_eq!(reference, json!({ "anyOf": [{ "$ref": "#/components/schemas/X" }, { "type": "null" }] }));
    }
}
