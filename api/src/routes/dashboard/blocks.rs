//! What the block editor does to a template's block document before it saves it through
//! `PATCH /templates/{id}`: add, edit, move (by button or by drag and drop), remove, insert a
//! saved block, add or remove a section. These only rearrange JSON; every rule about what a
//! document may hold is the API's, whose refusal the editor shows beside the block it names.

use super::kit::{Fields, given};
use serde_json::{Map, Value, json};

/// The block types the editor adds, with the label it shows.
pub const TYPES: [(&str, &str); 14] = [
    ("heading", "Heading"),
    ("text", "Text"),
    ("image", "Image"),
    ("button", "Button"),
    ("divider", "Divider"),
    ("spacer", "Spacer"),
    ("social", "Social links"),
    ("menu", "Menu"),
    ("card", "Card"),
    ("video", "Video"),
    ("countdown", "Countdown"),
    ("footer", "Footer"),
    ("html", "HTML"),
    ("preheader", "Preheader"),
];

/// How a block field is edited.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One line of text (or a link).
    Line,
    /// Several lines.
    Lines,
    /// HTML, in a code box.
    Code,
    /// A whole number.
    Number,
    /// A yes or no.
    Flag,
    /// `left`, `center` or `right`.
    Align,
}

/// The fields the editor shows for a block type (key, label, kind); other fields and other
/// types are edited as the block's JSON.
pub fn fields(kind: &str) -> &'static [(&'static str, &'static str, Kind)] {
    use Kind::*;
    match kind {
        "preheader" => &[("text", "Preview text", Line)],
        "heading" => &[("text", "Text", Line), ("level", "Level (1 to 3)", Number), ("align", "Alignment", Align)],
        "text" => &[("text", "Text", Lines), ("align", "Alignment", Align)],
        "image" => &[("src", "Image URL", Line), ("alt", "Alternative text", Line), ("href", "Link", Line), ("width", "Width (px)", Number), ("align", "Alignment", Align)],
        "button" => &[("label", "Label", Line), ("url", "Link", Line), ("color", "Colour (#RRGGBB)", Line), ("align", "Alignment", Align)],
        "divider" => &[("color", "Colour (#RRGGBB)", Line)],
        "spacer" => &[("height", "Height (px)", Number)],
        "footer" => &[("text", "Text", Lines), ("unsubscribe", "Unsubscribe link", Flag), ("preferences", "Preferences link", Flag), ("align", "Alignment", Align)],
        "video" => &[("url", "Video link", Line), ("thumbnail", "Thumbnail URL", Line), ("alt", "Alternative text", Line), ("caption", "Caption", Line)],
        "countdown" => &[("target", "Ends at (RFC 3339)", Line), ("label", "Label", Line)],
        "html" => &[("html", "HTML", Code)],
        _ => &[],
    }
}

/// A new block of `kind`, filled enough to compile.
fn starter(kind: &str) -> Option<Value> {
    let in_a_week = (chrono::Utc::now() + chrono::Duration::days(7)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
    Some(match kind {
        "heading" => json!({ "type": "heading", "text": "A heading" }),
        "text" => json!({ "type": "text", "text": "Write something here." }),
        "image" => json!({ "type": "image", "src": "https://placehold.co/552x240.png", "alt": "" }),
        "button" => json!({ "type": "button", "label": "Read more", "url": "https://example.com" }),
        "divider" => json!({ "type": "divider" }),
        "spacer" => json!({ "type": "spacer", "height": 24 }),
        "social" => {
            json!({ "type": "social", "links": [{ "network": "website", "url": "https://example.com" }] })
        }
        "menu" => {
            json!({ "type": "menu", "items": [{ "label": "Home", "url": "https://example.com" }] })
        }
        "card" => json!({ "type": "card", "heading": "A card", "text": "What it is about." }),
        "video" => {
            json!({ "type": "video", "url": "https://example.com/video", "thumbnail": "https://placehold.co/552x310.png" })
        }
        "countdown" => json!({ "type": "countdown", "target": in_a_week, "label": "Ends in" }),
        "footer" => json!({ "type": "footer", "unsubscribe": true }),
        "html" => json!({ "type": "html", "html": "<p>Your HTML</p>" }),
        "preheader" => {
            json!({ "type": "preheader", "text": "What the inbox shows after the subject." })
        }
        _ => return None,
    })
}

/// A place in the document: section, column, and (for a block) its index.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct At {
    pub section: usize,
    pub column: usize,
    pub block: Option<usize>,
}

impl At {
    /// `"s.c"` or `"s.c.b"`.
    pub fn parse(text: &str) -> Option<At> {
        let parts: Vec<usize> = text.split('.').map(str::parse).collect::<Result<_, _>>().ok()?;
        match parts[..] {
            [section, column] => Some(At { section, column, block: None }),
            [section, column, block] => Some(At { section, column, block: Some(block) }),
            _ => None,
        }
    }

    /// The path the form carries.
    pub fn path(&self) -> String {
        match self.block {
            Some(b) => format!("{}.{}.{b}", self.section, self.column),
            None => format!("{}.{}", self.section, self.column),
        }
    }
}

/// Why an edit was not made (nothing was saved).
pub type Refusal = &'static str;

fn sections(document: &mut Value) -> Result<&mut Vec<Value>, Refusal> {
    document.get_mut("sections").and_then(Value::as_array_mut).ok_or("The template has no block document.")
}

fn column(document: &mut Value, at: At) -> Result<&mut Vec<Value>, Refusal> {
    sections(document)?
        .get_mut(at.section)
        .and_then(|s| s.get_mut("columns"))
        .and_then(Value::as_array_mut)
        .and_then(|c| c.get_mut(at.column))
        .and_then(|c| c.get_mut("blocks"))
        .and_then(Value::as_array_mut)
        .ok_or("That place is no longer in the template; reload the page.")
}

fn block(document: &mut Value, at: At) -> Result<&mut Value, Refusal> {
    let index = at.block.ok_or("Choose a block.")?;
    column(document, at)?.get_mut(index).ok_or("That block is no longer in the template; reload the page.")
}

/// Applies the form's `op` at its `path` to `document` (the template's, as read).
pub fn apply(document: &mut Value, form: &Fields) -> Result<(), Refusal> {
    let op = given(form, "op").unwrap_or_default();
    if op == "section" {
        let count = given(form, "columns").and_then(|c| c.parse::<usize>().ok()).filter(|c| (1..=3).contains(c)).ok_or("A section has one to three columns.")?;
        let columns: Vec<Value> = (0..count).map(|_| json!({ "blocks": [] })).collect();
        sections(document)?.push(json!({ "columns": columns }));
        return Ok(());
    }
    if op == "remove_section" {
        let index = given(form, "path").and_then(|p| p.parse::<usize>().ok()).ok_or("Choose a section.")?;
        let all = sections(document)?;
        (index < all.len()).then(|| all.remove(index)).ok_or("That section is no longer in the template; reload the page.")?;
        return Ok(());
    }
    let at = given(form, "path").and_then(At::parse).ok_or("Choose a block.")?;
    match op {
        "add" => {
            let kind = given(form, "type").unwrap_or_default();
            let new = starter(kind).ok_or("Choose a block type.")?;
            // The preheader is the document's first block, wherever it was asked for.
            let at = if kind == "preheader" { At { section: 0, column: 0, block: None } } else { at };
            let blocks = column(document, at)?;
            if kind == "preheader" { blocks.insert(0, new) } else { blocks.push(new) }
        }
        "saved" => {
            let id = given(form, "saved_block_id").ok_or("Choose a saved block.")?;
            column(document, at)?.push(json!({ "type": "saved", "saved_block_id": id }));
        }
        "edit" => edit(block(document, at)?, form)?,
        "json" => {
            let text = form.get("json").map_or("", String::as_str);
            let value: Value = serde_json::from_str(text).map_err(|_| "The block is not valid JSON.")?;
            if !value.is_object() {
                return Err("A block is a JSON object with a type.");
            }
            *block(document, at)? = value;
        }
        "remove" => {
            let index = at.block.ok_or("Choose a block.")?;
            let blocks = column(document, at)?;
            (index < blocks.len()).then(|| blocks.remove(index)).ok_or("That block is no longer in the template; reload the page.")?;
        }
        "up" | "down" => {
            let index = at.block.ok_or("Choose a block.")?;
            let blocks = column(document, at)?;
            let other = if op == "up" { index.checked_sub(1) } else { Some(index + 1) };
            match other.filter(|o| *o < blocks.len() && index < blocks.len()) {
                Some(other) => blocks.swap(index, other),
                None => return Err("The block cannot move further that way."),
            }
        }
        "move" => {
            let to = given(form, "to").and_then(At::parse).ok_or("Choose where the block goes.")?;
            let index = at.block.ok_or("Choose a block.")?;
            let moving = {
                let blocks = column(document, at)?;
                (index < blocks.len()).then(|| blocks.remove(index)).ok_or("That block is no longer in the template; reload the page.")?
            };
            // The block takes the target's place; dropped on a column, it goes last.
            let blocks = column(document, to)?;
            let place = to.block.unwrap_or(blocks.len()).min(blocks.len());
            blocks.insert(place, moving);
        }
        _ => return Err("Choose what to do."),
    }
    Ok(())
}

/// Sets the block's fields from the form (`f_<key>`): a blank field is removed, a number that
/// reads as one is sent as one (else as written, for the API to refuse at its path).
fn edit(block: &mut Value, form: &Fields) -> Result<(), Refusal> {
    let kind = block["type"].as_str().unwrap_or_default().to_string();
    let map: &mut Map<String, Value> = block.as_object_mut().ok_or("A block is a JSON object with a type.")?;
    for (key, _, field) in fields(&kind) {
        let raw = form.get(&format!("f_{key}")).map(|v| v.replace("\r\n", "\n"));
        let value = match (field, raw) {
            (Kind::Flag, raw) => Some(Value::Bool(raw.is_some_and(|v| v == "true"))),
            (_, None) => continue,
            (_, Some(raw)) if raw.trim().is_empty() => None,
            (Kind::Number, Some(raw)) => Some(raw.trim().parse::<i64>().map_or(Value::String(raw), Value::from)),
            (_, Some(raw)) => Some(Value::String(raw)),
        };
        match value {
            Some(value) => map.insert((*key).to_string(), value),
            None => map.remove(*key),
        };
    }
    Ok(())
}

/// The place an API error path names (`document.sections[0].columns[1].blocks[2]…`).
pub fn place_of(path: &str) -> Option<At> {
    let index = |rest: &str, name: &str| -> Option<(usize, usize)> {
        let after = rest.strip_prefix(name)?.strip_prefix('[')?;
        let end = after.find(']')?;
        Some((after[..end].parse().ok()?, name.len() + end + 2))
    };
    let rest = path.strip_prefix("document.")?;
    let (section, used) = index(rest, "sections")?;
    let rest = rest[used..].strip_prefix('.')?;
    let (column, used) = index(rest, "columns")?;
    let rest = rest[used..].strip_prefix('.')?;
    let (block, _) = index(rest, "blocks")?;
    Some(At { section, column, block: Some(block) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        json!({ "kind": "svc.blocks", "version": 1, "lang": "en", "sections": [{ "columns": [{ "blocks": [
            { "type": "heading", "text": "A" }, { "type": "text", "text": "B" }, { "type": "divider" }
        ] }] }] })
    }

    fn form(pairs: &[(&str, &str)]) -> Fields {
        pairs.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect()
    }

    fn kinds(document: &Value) -> Vec<String> {
        document["sections"][0]["columns"][0]["blocks"].as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn a_dragged_block_takes_the_place_of_the_block_it_is_dropped_on() {
        let mut d = doc();
        apply(&mut d, &form(&[("op", "move"), ("path", "0.0.0"), ("to", "0.0.2")])).unwrap();
        assert_eq!(kinds(&d), ["text", "divider", "heading"]);
        apply(&mut d, &form(&[("op", "move"), ("path", "0.0.2"), ("to", "0.0.0")])).unwrap();
        assert_eq!(kinds(&d), ["heading", "text", "divider"]);
    }

    #[test]
    fn a_preheader_is_added_first_and_other_blocks_last() {
        let mut d = doc();
        apply(&mut d, &form(&[("op", "add"), ("path", "0.0"), ("type", "button")])).unwrap();
        apply(&mut d, &form(&[("op", "add"), ("path", "0.0"), ("type", "preheader")])).unwrap();
        assert_eq!(kinds(&d), ["preheader", "heading", "text", "divider", "button"]);
    }

    #[test]
    fn an_edit_sets_numbers_as_numbers_and_removes_blank_fields() {
        let mut d = doc();
        apply(&mut d, &form(&[("op", "edit"), ("path", "0.0.0"), ("f_text", "Hello"), ("f_level", "2"), ("f_align", "")])).unwrap();
        assert_eq!(d["sections"][0]["columns"][0]["blocks"][0], json!({ "type": "heading", "text": "Hello", "level": 2 }));
    }

    #[test]
    fn moves_past_the_ends_and_stale_places_are_refused() {
        let mut d = doc();
        assert!(apply(&mut d, &form(&[("op", "up"), ("path", "0.0.0")])).is_err());
        assert!(apply(&mut d, &form(&[("op", "remove"), ("path", "0.0.9")])).is_err());
        assert!(apply(&mut d, &form(&[("op", "json"), ("path", "0.0.0"), ("json", "[1]")])).is_err());
        assert_eq!(d, doc());
    }

    #[test]
    fn an_error_path_names_its_block() {
        assert_eq!(place_of("document.sections[1].columns[0].blocks[12].url"), Some(At { section: 1, column: 0, block: Some(12) }));
        assert_eq!(place_of("subject"), None);
    }
}
