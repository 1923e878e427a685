//! Declaring a template's variables as its content changes: the API refuses content whose
//! `{{key}}` placeholders and declared `variables` disagree, naming each key; the editor sends
//! the content once more with those keys declared (as strings, no fallback) or dropped, so a
//! block that starts using `{{plan}}` saves in one step. The rule stays the API's: this only
//! reads its answer.

use super::client::Answer;
use serde_json::{Value, json};

/// The variables to send again after `refused`, when every error it names is a variable's:
/// the `current` ones it did not name, and the keys it named that were not declared.
pub fn redeclared(refused: &Answer, current: &Value) -> Option<Value> {
    let errors = refused.body["errors"].as_array().filter(|e| !e.is_empty())?;
    let named: Vec<&str> = errors.iter().map(|e| e["path"].as_str().and_then(|p| p.strip_prefix("variables."))).collect::<Option<_>>()?;
    let current = current.as_array().map_or(&[][..], Vec::as_slice);
    let declared = |key: &str| current.iter().any(|v| v["key"] == key);
    let kept = current.iter().filter(|v| !named.iter().any(|k| v["key"] == *k)).map(|v| json!({ "key": v["key"], "type": v["type"], "fallback_value": v["fallback_value"] }));
    let added = named.iter().filter(|k| !declared(k)).map(|k| json!({ "key": k }));
    Some(Value::Array(kept.chain(added).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(paths: &[&str]) -> Answer {
        Answer { status: 422, body: json!({ "errors": paths.iter().map(|p| json!({ "path": p, "message": "" })).collect::<Vec<_>>() }), set_cookie: Vec::new() }
    }

    #[test]
    fn a_new_placeholder_is_declared_and_an_unused_variable_dropped() {
        let current = json!([{ "key": "old", "type": "string", "fallback_value": null }, { "key": "kept", "type": "number", "fallback_value": 1 }]);
        let again = redeclared(&refusal(&["variables.old", "variables.plan"]), &current).unwrap();
        assert_eq!(again, json!([{ "key": "kept", "type": "number", "fallback_value": 1 }, { "key": "plan" }]));
    }

    #[test]
    fn any_other_error_is_left_to_the_person() {
        assert!(redeclared(&refusal(&["variables.plan", "document.sections[0]"]), &json!([])).is_none());
        assert!(redeclared(&refusal(&[]), &json!([])).is_none());
    }
}
