//! The export files a migration can start from: a Resend contacts CSV (Herald's own contacts
//! export is one), a Mailchimp audience export ZIP, a listmonk subscribers CSV. A ZIP is opened
//! in memory: no entry is written to disk, an entry named outside the archive's root refuses the
//! file, and unpacking stops at [`MAX_UNPACKED`] bytes whatever the entries claim.

use super::{Failed, Found, Item, boolean, property_key, split_name, timestamp, typed};
use crate::import;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;

/// Most bytes a ZIP may unpack to.
pub const MAX_UNPACKED: u64 = 200 * 1024 * 1024;
/// Most entries a ZIP may hold.
const MAX_ENTRIES: usize = 100;

/// Why a file cannot be used: a message, and the fields at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub message: String,
    pub errors: Vec<(String, String)>,
}

impl Problem {
    fn new(message: impl Into<String>) -> Problem {
        let message = message.into();
        Problem { errors: vec![("file".into(), message.clone())], message }
    }
}

/// One CSV of a file: the status its name says (Mailchimp's `subscribed`, `unsubscribed`,
/// `cleaned`, `nonsubscribed`; `contacts` for the others), its column names and its bytes.
struct Sheet {
    status: String,
    header: Vec<String>,
    data: Vec<u8>,
}

/// Checks that the file is the named platform's export; nothing is kept.
pub fn check(source: &str, file: &[u8]) -> Result<(), Problem> {
    sheets(source, file).map(|_| ())
}

/// Every record of the file, as an item or a failure, and what it found besides.
pub fn read(source: &str, file: &[u8], found: &mut Found) -> Result<Vec<Result<Item, Failed>>, Problem> {
    let mut out = Vec::new();
    for sheet in sheets(source, file)? {
        match source {
            "mailchimp" => mailchimp(&sheet, found, &mut out),
            "listmonk" => listmonk(&sheet, found, &mut out),
            _ => resend(&sheet, found, &mut out),
        }
    }
    Ok(out)
}

fn sheets(source: &str, file: &[u8]) -> Result<Vec<Sheet>, Problem> {
    let sheets = if source == "mailchimp" { unzip(file)? } else { vec![sheet("contacts", file.to_vec())?] };
    let required: &[&str] = match source {
        "mailchimp" => &["Email Address"],
        "listmonk" => &["email", "name", "attributes", "status"],
        _ => &["email"],
    };
    for sheet in &sheets {
        let missing: Vec<&str> = required.iter().copied().filter(|c| !sheet.header.iter().any(|h| h.eq_ignore_ascii_case(c))).collect();
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|c| format!("`{c}`")).collect();
            let message = format!("The file is not a {} export: it has no column {}.", platform(source), names.join(", "));
            return Err(Problem { errors: missing.iter().map(|c| ("file".to_string(), format!("column `{c}` is missing"))).collect(), message });
        }
    }
    Ok(sheets)
}

fn platform(source: &str) -> &'static str {
    match source {
        "mailchimp" => "Mailchimp audience",
        "listmonk" => "listmonk subscribers",
        _ => "Resend contacts",
    }
}

fn sheet(status: &str, data: Vec<u8>) -> Result<Sheet, Problem> {
    let header = import::header(&data).map_err(|why| Problem::new(format!("The file {why}.")))?;
    Ok(Sheet { status: status.into(), header, data })
}

/// The CSVs of a Mailchimp export, matched by the status word their names start with.
fn unzip(file: &[u8]) -> Result<Vec<Sheet>, Problem> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(file))
        .map_err(|_| Problem::new("The file is not a Mailchimp audience export: it is not a ZIP archive."))?;
    if archive.len() > MAX_ENTRIES {
        return Err(Problem::new(format!("The archive holds more than {MAX_ENTRIES} entries.")));
    }
    let mut budget = MAX_UNPACKED;
    let mut sheets = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|e| Problem::new(format!("The archive cannot be read: {e}.")))?;
        let Some(path) = entry.enclosed_name() else {
            return Err(Problem::new(format!("The archive holds a path outside its root: `{}`.", entry.name())));
        };
        if entry.is_dir() {
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_ascii_lowercase();
        let Some(status) = ["nonsubscribed", "unsubscribed", "subscribed", "cleaned", "transactional"].into_iter().find(|s| name.starts_with(&format!("{s}_"))) else {
            continue;
        };
        if !name.ends_with(".csv") {
            continue;
        }
        if entry.size() > budget {
            return Err(too_big());
        }
        let mut data = Vec::new();
        (&mut entry).take(budget + 1).read_to_end(&mut data).map_err(|e| Problem::new(format!("The archive cannot be read: {e}.")))?;
        if data.len() as u64 > budget {
            return Err(too_big());
        }
        budget -= data.len() as u64;
        sheets.push(sheet(status, data)?);
    }
    if sheets.is_empty() {
        return Err(Problem::new(
            "The file is not a Mailchimp audience export: it holds no subscribed, unsubscribed or cleaned CSV.",
        ));
    }
    Ok(sheets)
}

fn too_big() -> Problem {
    Problem::new(format!("The archive unpacks to more than {} MB.", MAX_UNPACKED / 1024 / 1024))
}

/// Column positions by name (any case).
fn at(header: &[String], name: &str) -> Option<usize> {
    header.iter().position(|h| h.eq_ignore_ascii_case(name))
}

/// Each data row as text cells, with its row number (the header is row 1).
fn rows(sheet: &Sheet) -> impl Iterator<Item = (i64, Vec<String>)> + '_ {
    import::reader(&sheet.data).into_byte_records().enumerate().filter_map(|(i, record)| {
        let record = record.ok()?;
        Some((i as i64 + 2, record.iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect()))
    })
}

/// The types of the property columns, from their values: a column whose every filled cell is a
/// number is a number, every one a boolean a boolean, else a string.
fn column_kinds(sheet: &Sheet, columns: &[(usize, String)]) -> BTreeMap<usize, &'static str> {
    let mut kinds: BTreeMap<usize, &'static str> = columns.iter().map(|(i, _)| (*i, "")).collect();
    for (_, cells) in rows(sheet) {
        for (i, kind) in kinds.iter_mut() {
            let Some(cell) = cells.get(*i).map(|c| c.trim()).filter(|c| !c.is_empty()) else { continue };
            let this = if typed(cell, "number").is_some() { "number" } else if boolean(cell).is_some() { "boolean" } else { "string" };
            *kind = match (*kind, this) {
                ("", this) => this,
                (a, b) if a == b => a,
                _ => "string",
            };
        }
    }
    kinds.into_iter().map(|(i, k)| (i, if k.is_empty() { "string" } else { k })).collect()
}

/// Sets the property columns of a row.
fn properties(item: &mut Item, cells: &[String], columns: &[(usize, String)], kinds: &BTreeMap<usize, &'static str>) {
    for (i, key) in columns {
        let Some(cell) = cells.get(*i).filter(|c| !c.trim().is_empty()) else { continue };
        if let Some(value) = typed(cell, kinds[i]) {
            item.property(key, value);
        }
    }
}

/// Columns outside `known` that become properties, keyed.
fn property_columns(header: &[String], known: impl Fn(&str) -> bool) -> Vec<(usize, String)> {
    header.iter().enumerate().filter(|(_, h)| !known(h)).filter_map(|(i, h)| property_key(h).map(|k| (i, k))).collect()
}

/// A Resend contacts CSV: `email`, `first_name`, `last_name`, `unsubscribed`, and any other
/// column as a property; Herald's export adds `topic:<name>` columns and the consent columns.
fn resend(sheet: &Sheet, found: &mut Found, out: &mut Vec<Result<Item, Failed>>) {
    let h = &sheet.header;
    let (email, first, last, unsub, consent_at) = (at(h, "email"), at(h, "first_name"), at(h, "last_name"), at(h, "unsubscribed"), at(h, "consent_at"));
    let topics: Vec<(usize, String)> = h.iter().enumerate().filter_map(|(i, c)| c.strip_prefix("topic:").map(|n| (i, n.to_string()))).collect();
    let known = |c: &str| {
        ["email", "first_name", "last_name", "unsubscribed", "created_at", "consent_source", "consent_at", "id"].iter().any(|k| c.eq_ignore_ascii_case(k))
            || c.starts_with("topic:")
    };
    let columns = property_columns(h, known);
    let kinds = column_kinds(sheet, &columns);
    for (i, key) in &columns {
        found.property(key, kinds[i]);
    }
    for (_, name) in &topics {
        found.topics.entry(name.clone()).or_insert_with(|| "opt_out".into());
    }
    for (row, cells) in rows(sheet) {
        let cell = |i: Option<usize>| i.and_then(|i| cells.get(i)).map(String::as_str).filter(|c| !c.trim().is_empty());
        let mut item = match Item::new(row, cell(email).unwrap_or_default()) {
            Ok(item) => item.names(cell(first), cell(last)),
            Err(failed) => {
                out.push(Err(failed));
                continue;
            }
        };
        item.unsubscribed = cell(unsub).and_then(boolean).unwrap_or(false);
        item.consent_at = cell(consent_at).and_then(timestamp);
        for (i, name) in &topics {
            if let Some(choice) = cell(Some(*i)).filter(|c| matches!(c.trim(), "opt_in" | "opt_out")) {
                item.topics.insert(name.clone(), choice.trim().to_string());
            }
        }
        properties(&mut item, &cells, &columns, &kinds);
        out.push(Ok(item));
    }
}

/// Mailchimp's system columns, which are not merge fields.
const MAILCHIMP_SYSTEM: &[&str] = &[
    "Email Address", "First Name", "Last Name", "MEMBER_RATING", "OPTIN_TIME", "OPTIN_IP", "CONFIRM_TIME", "CONFIRM_IP", "LATITUDE",
    "LONGITUDE", "GMTOFF", "DSTOFF", "TIMEZONE", "CC", "REGION", "LAST_CHANGED", "LEID", "EUID", "NOTES", "TAGS",
];

/// One CSV of a Mailchimp audience export: `subscribed` members arrive subscribed,
/// `unsubscribed` and `nonsubscribed` ones unsubscribed, `cleaned` ones unsubscribed with a
/// `bounce` suppression; merge fields become properties, `TAGS` segments, the confirm (else
/// opt-in) time and IP the consent record.
fn mailchimp(sheet: &Sheet, found: &mut Found, out: &mut Vec<Result<Item, Failed>>) {
    let h = &sheet.header;
    let known = |c: &str| MAILCHIMP_SYSTEM.iter().any(|k| c.eq_ignore_ascii_case(k)) || c.starts_with("UNSUB_") || c.starts_with("CLEAN_");
    let columns = property_columns(h, known);
    let kinds = column_kinds(sheet, &columns);
    for (i, key) in &columns {
        found.property(key, kinds[i]);
    }
    let (email, first, last, tags) = (at(h, "Email Address"), at(h, "First Name"), at(h, "Last Name"), at(h, "TAGS"));
    let (optin_at, optin_ip, confirm_at, confirm_ip) = (at(h, "OPTIN_TIME"), at(h, "OPTIN_IP"), at(h, "CONFIRM_TIME"), at(h, "CONFIRM_IP"));
    for (row, cells) in rows(sheet) {
        let cell = |i: Option<usize>| i.and_then(|i| cells.get(i)).map(String::as_str).filter(|c| !c.trim().is_empty());
        let mut item = match Item::new(row, cell(email).unwrap_or_default()) {
            Ok(item) => item.names(cell(first), cell(last)),
            Err(failed) => {
                out.push(Err(failed));
                continue;
            }
        };
        item.unsubscribed = sheet.status != "subscribed";
        if sheet.status == "cleaned" {
            item.suppression = Some("bounce".into());
        }
        if sheet.status == "subscribed" {
            item.consent_at = cell(confirm_at).or(cell(optin_at)).and_then(timestamp);
            item.consent_ip = cell(confirm_ip).or(cell(optin_ip)).map(|ip| ip.trim().to_string());
        }
        item.segments = cell(tags).map(tag_names).unwrap_or_default();
        for name in &item.segments {
            found.segments.insert(name.clone());
        }
        properties(&mut item, &cells, &columns, &kinds);
        out.push(Ok(item));
    }
}

/// The names in a `TAGS` cell: `"VIP","Blog"`.
fn tag_names(cell: &str) -> Vec<String> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(cell.as_bytes());
    let mut names: Vec<String> = reader.records().flatten().flat_map(|r| r.iter().map(|t| t.trim().to_string()).collect::<Vec<_>>()).collect();
    names.retain(|n| !n.is_empty());
    names.dedup();
    names
}

/// A listmonk subscribers export: `name` split into first and last, `attributes` (JSON) as
/// properties, `blocklisted` unsubscribed with a `manual` suppression, `disabled` unsubscribed.
fn listmonk(sheet: &Sheet, found: &mut Found, out: &mut Vec<Result<Item, Failed>>) {
    let h = &sheet.header;
    let (email, name, attributes, status) = (at(h, "email"), at(h, "name"), at(h, "attributes"), at(h, "status"));
    for (row, cells) in rows(sheet) {
        let cell = |i: Option<usize>| i.and_then(|i| cells.get(i)).map(String::as_str).filter(|c| !c.trim().is_empty());
        let (first, last) = cell(name).map(split_name).unwrap_or((None, None));
        let mut item = match Item::new(row, cell(email).unwrap_or_default()) {
            Ok(item) => item.names(first, last),
            Err(failed) => {
                out.push(Err(failed));
                continue;
            }
        };
        if let Some(Ok(Value::Object(attributes))) = cell(attributes).map(serde_json::from_str::<Value>) {
            listmonk_attributes(&mut item, found, attributes);
        }
        match cell(status).map(str::trim) {
            Some("blocklisted") => {
                item.unsubscribed = true;
                item.suppression = Some("manual".into());
            }
            Some("disabled") => item.unsubscribed = true,
            _ => {}
        }
        out.push(Ok(item));
    }
}

/// listmonk's `attribs` as properties (nested values as JSON text).
pub fn listmonk_attributes(item: &mut Item, found: &mut Found, attributes: serde_json::Map<String, Value>) {
    for (name, value) in attributes {
        let Some(key) = property_key(&name) else { continue };
        let value = match value {
            Value::Array(_) | Value::Object(_) => Value::String(value.to_string()),
            other => other,
        };
        if let Some(kind) = super::kind_of(&value) {
            found.property(&key, kind);
            item.property(&key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resend_csv_types_its_columns_from_their_values() {
        let file = b"email,first_name,unsubscribed,seats,company,topic:News\nada@example.com,Ada,false,3,Acme,opt_in\nbob@x.test,,true,,Initech,\nnot-an-address,,,,,\n";
        let mut found = Found::default();
        let items = read("resend", file, &mut found).unwrap();
        assert_eq!(found.properties.get("seats").map(String::as_str), Some("number"));
        assert_eq!(found.properties.get("company").map(String::as_str), Some("string"));
        let ada = items[0].as_ref().unwrap();
        assert_eq!((ada.properties["seats"].as_i64(), ada.topics.get("News").map(String::as_str)), (Some(3), Some("opt_in")));
        assert!(items[1].as_ref().unwrap().unsubscribed);
        assert_eq!(items[2].as_ref().unwrap_err().row, 4);
    }

    #[test]
    fn a_file_without_the_platforms_columns_names_them() {
        let problem = check("listmonk", b"email,first\nada@example.com,Ada\n").unwrap_err();
        assert!(problem.message.contains("`name`") && problem.message.contains("`status`"), "{}", problem.message);
    }

    #[test]
    fn tags_cells_and_timestamps_read_as_the_platforms_write_them() {
        assert_eq!(tag_names(r#""VIP","Blog""#), vec!["VIP", "Blog"]);
        assert!(timestamp("2025-11-30 20:41:40.84216+00").is_some());
        assert!(timestamp("2024-03-01 10:00:00.123456 +0000 UTC").is_some());
        assert!(timestamp("2024-03-01 10:00:00").is_some());
        assert_eq!(property_key("Phone Number"), Some("phone_number".into()));
        assert_eq!(property_key("2nd"), Some("_2nd".into()));
    }
}
