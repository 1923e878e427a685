//! Shared helpers for the integration tests.
#![allow(dead_code)]

use render::{Brand, Catalog, Compiled, Contact, Context, Mode, Problem, Rendered, Visual};
use serde_json::{Map, Value, json};

/// A document of one section and one column holding `blocks`.
pub fn doc(blocks: Value) -> Value {
    json!({ "kind": "svc.blocks", "version": 1, "lang": "en", "sections": [ { "columns": [ { "blocks": blocks } ] } ] })
}

/// A document of the given sections.
pub fn doc_sections(sections: Value) -> Value {
    json!({ "kind": "svc.blocks", "version": 1, "lang": "en", "sections": sections })
}

/// Compiles with the default brand; panics with the problems on failure.
pub fn compile(document: &Value, catalog: &Catalog) -> Visual {
    match Compiled::from_document(Some("Hello"), document, &Brand::default(), catalog) {
        Ok(visual) => visual,
        Err(problems) => panic!("unexpected problems: {problems:#?}"),
    }
}

/// The problems compiling reports.
pub fn problems(document: &Value, catalog: &Catalog) -> Vec<Problem> {
    match Compiled::from_document(None, document, &Brand::default(), catalog) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    }
}

/// Whether some problem sits exactly at `path`.
pub fn has_problem_at(problems: &[Problem], path: &str) -> bool {
    problems.iter().any(|p| p.path == path)
}

/// The variables map from a JSON object.
pub fn vars(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// Renders with no variables.
pub fn render(compiled: &Compiled, contact: Option<&Contact>, event: Option<&Map<String, Value>>, mode: Mode) -> Rendered {
    let variables = Map::new();
    compiled.render(&Context { variables: &variables, contact, event }, mode)
}

/// A contact named Ada.
pub fn ada() -> Contact {
    Contact { email: "ada@example.com".into(), first_name: Some("Ada".into()), ..Contact::default() }
}
