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
        committed == api::openapi_doc::document_json(),
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
    let mut table: Vec<(String, String, String)> = api::operations::OPERATIONS
        .iter()
        .map(|op| (op.id.to_string(), op.method.to_string(), op.path.to_string()))
        .collect();
    documented.sort();
    table.sort();
    assert_eq!(documented, table);
    for (method, path, operation) in openapi::operations(&doc) {
        let entry = api::operations::by_id(operation["operationId"].as_str().unwrap()).unwrap();
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
