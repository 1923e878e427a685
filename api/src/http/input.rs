//! Characters no field takes, refused once at the edge for every body, query and path.
//!
//! PostgreSQL cannot store NUL in `text` or `jsonb`, and no email, name or identifier has a
//! use for control characters, so they are refused before any handler runs:
//! - a JSON body: NUL and the C0 controls other than tab, line feed and carriage return, in
//!   any string or key, are `400 validation_error` naming the field; line feeds and carriage
//!   returns are refused too, except in the fields that hold multi-line text ([`MULTI_LINE`])
//!   and inside free-form maps ([`FREE_FORM`]);
//! - a query parameter or a path segment (after percent-decoding): any control character is
//!   `422 invalid_parameter` naming the parameter.

use crate::http::error::ApiError;
use serde_json::Value;

/// Fields whose text may span lines: bodies, attachment content, descriptions.
const MULTI_LINE: &[&str] = &["html", "text", "content", "react", "description"];

/// Maps whose values are the caller's own data (contact properties, event payloads, header
/// values checked by the send itself).
const FREE_FORM: &[&str] = &["properties", "payload", "headers", "data", "metadata"];

/// Checks every string and key of a JSON body; the first offending one is the error.
pub fn check_body(value: &Value) -> Result<(), ApiError> {
    walk(value, &mut String::new(), false)
}

fn walk(value: &Value, path: &mut String, multi_line: bool) -> Result<(), ApiError> {
    match value {
        Value::String(text) => check_text(text, multi_line).map_err(|what| refusal(path, what)),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{index}]"));
                walk(item, path, multi_line)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, inner) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                check_text(key, false).map_err(|what| refusal(path, what))?;
                let inner_multi_line = multi_line || MULTI_LINE.contains(&key.as_str()) || FREE_FORM.contains(&key.as_str());
                walk(inner, path, inner_multi_line)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// What is wrong with a text, if anything.
fn check_text(text: &str, multi_line: bool) -> Result<(), &'static str> {
    for c in text.chars() {
        match c {
            '\0' => return Err("must not contain a NUL character"),
            '\t' => {}
            '\n' | '\r' if multi_line => {}
            '\n' | '\r' => return Err("must be one line (no line breaks)"),
            c if c.is_control() => return Err("must not contain control characters"),
            _ => {}
        }
    }
    Ok(())
}

fn refusal(path: &str, what: &str) -> ApiError {
    let path = if path.is_empty() { "body" } else { path };
    ApiError::invalid_field(path, what)
}

/// A name-like field: trimmed, 1 to `max` characters, on one line and without control
/// characters (form posts reach here unchecked by the edge); `None` when it is not.
pub fn one_line(text: &str, max: usize) -> Option<String> {
    let text = text.trim();
    (!text.is_empty() && text.chars().count() <= max && !text.chars().any(char::is_control)).then(|| text.to_string())
}

/// What a path segment that takes an id or an address names; `404 not_found` naming `what` for
/// anything else, like a missing row. The one parser of `{id or address}` segments.
pub fn id_or_address(raw: &str, what: &str) -> Result<schema::email::IdOrEmail, ApiError> {
    schema::email::IdOrEmail::parse(raw).ok_or_else(|| ApiError::not_found(what))
}

/// Checks every query parameter (percent-decoded; `+` is a space).
pub fn check_query(query: &str) -> Result<(), ApiError> {
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if let Some(what) = control_in(&name).or_else(|| control_in(&value)) {
            return Err(ApiError::invalid_parameter(&name.replace(|c: char| c.is_control(), "\u{fffd}"), what));
        }
    }
    Ok(())
}

/// Checks every `{parameter}` segment of `path` against the operation's `template`.
pub fn check_path(template: &str, path: &str) -> Result<(), ApiError> {
    for (part, segment) in template.split('/').zip(path.split('/')) {
        let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) else { continue };
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
        if let Some(what) = control_in(&decoded) {
            return Err(ApiError::invalid_parameter(name, what));
        }
    }
    Ok(())
}

fn control_in(text: &str) -> Option<&'static str> {
    text.chars().any(char::is_control).then_some("must not contain control characters")
}

/// An absolute https URL of at most 2,048 characters, or `422 validation_error` naming `field`.
pub fn https_url(field: &str, raw: &str) -> Result<url::Url, ApiError> {
    if raw.len() > 2048 {
        return Err(ApiError::refused_field(field, "must be at most 2048 characters"));
    }
    match url::Url::parse(raw) {
        Ok(url) if url.scheme() == "https" && url.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        _ => Err(ApiError::refused_field(field, "must be an absolute https URL")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_nul_anywhere_in_a_body_is_refused_naming_the_field() {
        let error = check_body(&json!({ "first_name": "a\u{0}b" })).unwrap_err();
        assert_eq!((error.status.as_u16(), error.name, error.errors[0].path.as_str()), (400, "validation_error", "first_name"));
        let error = check_body(&json!([{ "to": ["x@y.z"] }, { "html": "<p>\u{0}</p>" }])).unwrap_err();
        assert_eq!(error.errors[0].path, "[1].html");
        let error = check_body(&json!({ "properties": { "a\u{0}": 1 } })).unwrap_err();
        assert_eq!(error.errors[0].path, "properties.a\u{0}");
    }

    #[test]
    fn line_breaks_are_refused_in_one_line_fields_only() {
        assert_eq!(check_body(&json!({ "subject": "a\r\nBcc: x@y.z" })).unwrap_err().errors[0].path, "subject");
        assert!(check_body(&json!({ "text": "one\r\ntwo\n", "html": "<p>\n</p>", "name": "tab\tok" })).is_ok());
        assert!(check_body(&json!({ "properties": { "address": "1 Main St\nTown" } })).is_ok());
        assert!(check_body(&json!({ "attachments": [{ "content": "QUJD\nREVG" }] })).is_ok());
    }

    #[test]
    fn other_control_characters_are_refused_even_in_multi_line_fields() {
        assert!(check_body(&json!({ "text": "bell\u{7}" })).is_err());
        assert!(check_body(&json!({ "name": "del\u{7f}" })).is_err());
    }

    #[test]
    fn query_and_path_parameters_with_control_characters_are_invalid_parameters() {
        let error = check_query("limit=2&search=a%00b").unwrap_err();
        assert_eq!((error.status.as_u16(), error.name, error.errors[0].path.as_str()), (422, "invalid_parameter", "search"));
        assert!(check_query("search=a+b%2Bc").is_ok());
        let error = check_path("/contacts/{contact}", "/contacts/a%00b@x.y").unwrap_err();
        assert_eq!(error.errors[0].path, "contact");
        assert!(check_path("/contacts/{contact}", "/contacts/a%2Bb@x.y").is_ok());
    }
}
