//! Reading an import's CSV: the header check made at upload, and each data row turned into a
//! contact row or a failure (no usable address, a value that does not fit its type).

use crate::email::Mailbox;
use crate::store::imports::ColumnMap;
use serde_json::{Map, Value};

/// Longest first or last name.
const MAX_NAME: usize = 200;

/// A reader over a file: comma-separated, a header row, rows of any length.
pub fn reader(file: &[u8]) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().flexible(true).from_reader(file)
}

/// The file's column names, or why it is not a CSV file (binary content, no header).
pub fn header(file: &[u8]) -> Result<Vec<String>, String> {
    let sample = &file[..file.len().min(64 * 1024)];
    if sample.is_empty() {
        return Err("is empty".into());
    }
    if sample.contains(&0) {
        return Err("is not a CSV file: it holds binary data".into());
    }
    let text = match std::str::from_utf8(sample) {
        Ok(text) => text,
        // A sample cut inside a multi-byte character is still text.
        Err(error) if error.error_len().is_none() => std::str::from_utf8(&sample[..error.valid_up_to()]).unwrap_or_default(),
        Err(_) => return Err("is not a CSV file: it is not UTF-8 text".into()),
    };
    let mut reader = reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| format!("is not a CSV file: {e}"))?;
    let names: Vec<String> = headers.iter().map(|h| h.trim().trim_start_matches('\u{feff}').to_string()).collect();
    if names.iter().all(String::is_empty) {
        return Err("is not a CSV file: its first row names no columns".into());
    }
    Ok(names)
}

/// Where each mapped column sits in a row.
#[derive(Debug, Clone)]
pub struct Positions {
    email: usize,
    first_name: Option<usize>,
    last_name: Option<usize>,
    unsubscribed: Option<usize>,
    /// Key, position, type.
    properties: Vec<(String, usize, String)>,
}

impl Positions {
    /// Finds every mapped column in the header; the names of those missing.
    pub fn find(map: &ColumnMap, header: &[String]) -> Result<Positions, Vec<(String, String)>> {
        let mut missing = Vec::new();
        let mut at = |path: String, column: &str| -> Option<usize> {
            let found = header.iter().position(|h| h == column);
            if found.is_none() {
                missing.push((path, column.to_string()));
            }
            found
        };
        let email = at("column_map.email".into(), &map.email);
        let first_name = map.first_name.as_ref().and_then(|c| at("column_map.first_name".into(), c));
        let last_name = map.last_name.as_ref().and_then(|c| at("column_map.last_name".into(), c));
        let unsubscribed = map.unsubscribed.as_ref().and_then(|c| at("column_map.unsubscribed".into(), c));
        let properties: Vec<(String, usize, String)> = map
            .properties
            .iter()
            .filter_map(|(key, p)| at(format!("column_map.properties.{key}"), &p.column).map(|i| (key.clone(), i, p.kind.clone())))
            .collect();
        match email {
            Some(email) if missing.is_empty() => Ok(Positions { email, first_name, last_name, unsubscribed, properties }),
            _ => Err(missing),
        }
    }
}

/// A data row read: the contact's fields (`unsubscribed` only when the cell says so).
#[derive(Debug, Clone, PartialEq)]
pub struct Fields {
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub unsubscribed: Option<bool>,
    pub properties: Map<String, Value>,
}

/// Why a row failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// `invalid_email`, `type_mismatch` or `contact_limit`.
    pub reason: &'static str,
    pub message: String,
}

/// Reads one row; empty cells leave their field unset.
pub fn fields(record: &csv::ByteRecord, at: &Positions) -> Result<Fields, (String, Failure)> {
    let cell = |i: usize| -> String { String::from_utf8_lossy(record.get(i).unwrap_or_default()).trim().to_string() };
    let optional = |i: Option<usize>| i.map(cell).filter(|v| !v.is_empty());
    let raw_email = cell(at.email);
    let mismatch = |message: String| (raw_email.clone(), Failure { reason: "type_mismatch", message });
    let email = match Mailbox::parse(&raw_email) {
        Ok(mailbox) if !raw_email.is_empty() => mailbox.key(),
        _ => return Err((raw_email.clone(), Failure { reason: "invalid_email", message: "no usable email address".into() })),
    };
    let first_name = optional(at.first_name);
    let last_name = optional(at.last_name);
    for (field, value) in [("first_name", &first_name), ("last_name", &last_name)] {
        if value.as_ref().is_some_and(|v| v.chars().count() > MAX_NAME) {
            return Err(mismatch(format!("{field} is longer than {MAX_NAME} characters")));
        }
    }
    let unsubscribed = match optional(at.unsubscribed) {
        None => None,
        Some(text) => Some(boolean(&text).ok_or_else(|| mismatch(format!("unsubscribed `{text}` is not a boolean")))?),
    };
    let mut properties = Map::new();
    for (key, i, kind) in &at.properties {
        let Some(text) = optional(Some(*i)) else { continue };
        let value = match kind.as_str() {
            "number" => text.parse::<f64>().ok().filter(|n| n.is_finite()).and_then(|n| {
                if n.fract() == 0.0 && n.abs() < 9.0e15 { Some(Value::from(n as i64)) } else { serde_json::Number::from_f64(n).map(Value::Number) }
            }),
            "boolean" => boolean(&text).map(Value::Bool),
            _ => Some(Value::String(text.clone())),
        };
        let value = value.ok_or_else(|| mismatch(format!("{key} `{text}` is not a {kind}")))?;
        properties.insert(key.clone(), value);
    }
    Ok(Fields { email, first_name, last_name, unsubscribed, properties })
}

fn boolean(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" | "y" => Some(true),
        "false" | "no" | "0" | "n" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::imports::PropertyColumn;

    fn map() -> ColumnMap {
        let mut properties = std::collections::BTreeMap::new();
        properties.insert("age".into(), PropertyColumn { column: "Age".into(), kind: "number".into() });
        ColumnMap { email: "Email".into(), first_name: Some("First".into()), last_name: None, unsubscribed: Some("Unsub".into()), properties }
    }

    fn row(cells: &[&str]) -> Result<Fields, (String, Failure)> {
        let header: Vec<String> = ["Email", "First", "Unsub", "Age"].map(String::from).to_vec();
        fields(&csv::ByteRecord::from(cells.to_vec()), &Positions::find(&map(), &header).unwrap())
    }

    #[test]
    fn a_row_becomes_typed_fields_and_empty_cells_stay_unset() {
        let read = row(&["Ann@Example.com ", "Ann", "", "31"]).unwrap();
        assert_eq!((read.email.as_str(), read.first_name.as_deref(), read.unsubscribed), ("ann@example.com", Some("Ann"), None));
        assert_eq!(read.properties["age"], Value::from(31));
        assert_eq!(row(&["b@example.com", "", "yes", ""]).unwrap().unsubscribed, Some(true));
    }

    #[test]
    fn bad_cells_fail_the_row_with_a_reason() {
        assert_eq!(row(&["not an address", "A", "", ""]).unwrap_err().1.reason, "invalid_email");
        assert_eq!(row(&["a@example.com", "A", "maybe", ""]).unwrap_err().1.reason, "type_mismatch");
        assert_eq!(row(&["a@example.com", "A", "", "thirty"]).unwrap_err().1.reason, "type_mismatch");
    }

    #[test]
    fn binary_files_and_missing_columns_are_refused() {
        assert!(header(b"\x89PNG\r\n\x1a\n\0\0\0").is_err());
        assert!(header(b"").is_err());
        let header = header(b"Email,First\na@b.c,A\n").unwrap();
        let missing = Positions::find(&map(), &header).unwrap_err();
        let paths: Vec<&str> = missing.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["column_map.unsubscribed", "column_map.properties.age"]);
    }
}
