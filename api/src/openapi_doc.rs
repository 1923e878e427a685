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
        upgrade_schemas(schemas);
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
                upgrade_schemas(operation);
            }
        }
    }
    doc
}

/// The 3.0 → 3.1 rewrites of every schema under `value`, innermost first:
/// - [`unwrap_annotated_ref`]: poem-openapi puts a field's description on an enum or object
///   reference as `allOf [$ref, {description}]`; 3.1 lets a `$ref` carry it as a sibling;
/// - `nullable: true` becomes a type union ([`make_nullable`]);
/// - [`drop_union_object_type`]: poem-openapi's `Union` adds `type: object` to a `oneOf` of
///   non-objects (`Addresses`), which no value matches.
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

/// A `oneOf`/`anyOf` schema without properties takes its type from its alternatives.
fn drop_union_object_type(map: &mut Map<String, Value>) {
    let union = map.contains_key("oneOf") || map.contains_key("anyOf");
    if union && map.get("type") == Some(&json!("object")) && !map.contains_key("properties") {
        map.remove("type");
    }
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
    fn a_one_of_of_non_objects_has_no_object_type() {
        let mut addresses = json!({ "type": "object", "oneOf": [{ "type": "string" }, { "type": "array" }] });
        upgrade_schemas(&mut addresses);
        assert_eq!(addresses, json!({ "oneOf": [{ "type": "string" }, { "type": "array" }] }));
    }

    /// Every schema in `value`, with where it is.
    fn schemas<'a>(value: &'a Value, at: String, out: &mut Vec<(String, &'a Map<String, Value>)>) {
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

    #[test]
    fn no_schema_wraps_a_single_reference_in_all_of_or_is_an_object_and_a_union() {
        let doc = document();
        let mut all = Vec::new();
        schemas(&doc, String::new(), &mut all);
        for (at, map) in all {
            if let Some(Value::Array(all_of)) = map.get("allOf") {
                let refs = all_of.iter().filter(|s| s.get("$ref").is_some()).count();
                let annotations_only = all_of.iter().filter(|s| s.get("$ref").is_none()).all(|s| {
                    s.as_object().is_some_and(|s| s.keys().all(|k| ANNOTATIONS.contains(&k.as_str())))
                });
                assert!(!(refs == 1 && annotations_only), "{at}: allOf around one $ref");
            }
            let union = map.contains_key("oneOf") || map.contains_key("anyOf");
            assert!(!(union && map.get("type") == Some(&json!("object")) && !map.contains_key("properties")), "{at}: object and union");
            assert!(!map.contains_key("nullable"), "{at}: 3.0 nullable");
        }
    }
}
