//! The block editor's HTML: each section's columns as ordered lists of blocks, each block with
//! its fields (or its JSON), buttons to move it up or down, remove it or keep it as a saved
//! block, and forms to add a block, insert a saved block or add a section. Blocks can also be
//! dragged onto another block's place (`app.js` submits the hidden move form); the buttons do
//! the same without a mouse.

use super::blocks::{At, Kind, TYPES, fields, place_of};
use super::client::Answer;
use crate::routes::pages::html::escape;
use serde_json::Value;

/// What every editor form carries: the session's CSRF token and the `updated_at` the page was
/// read at (sent as `If-Match`, so a second tab's edit is told of the first).
pub struct Stamp<'a> {
    pub action: &'a str,
    pub csrf: &'a str,
    pub read_at: &'a str,
    /// Whether the team's AI assist is on (headings, text and buttons get a rewrite).
    pub ai: bool,
}

impl Stamp<'_> {
    fn open(&self, class: &str) -> String {
        format!(
            "<form class=\"{class}\" method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"updated_at\" value=\"{}\">",
            escape(self.action),
            escape(self.csrf),
            escape(self.read_at)
        )
    }
}

/// The editor for `document`; `saved` is the team's saved blocks (id and name) and `refused`
/// the API's answer to the last edit, whose errors stand beside the block they name.
pub fn editor(document: &Value, saved: &[(String, String)], stamp: &Stamp, refused: Option<&Answer>) -> String {
    let errors: Vec<(At, String)> = refused
        .and_then(|a| a.body["errors"].as_array())
        .map(|errors| errors.iter().filter_map(|e| Some((place_of(e["path"].as_str()?)?, e["message"].as_str()?.to_string()))).collect())
        .unwrap_or_default();
    let sections = document["sections"].as_array().map_or(&[][..], Vec::as_slice);
    let mut html = String::new();
    for (s, section) in sections.iter().enumerate() {
        let inner = match section["columns"].as_array() {
            Some(columns) => columns.iter().enumerate().map(|(c, column)| column_html(s, c, column, saved, stamp, &errors)).collect::<String>(),
            None => format!("<p class=\"muted\">A saved section ({}).</p>", saved_name(section, saved)),
        };
        let remove =
            format!("{}<input type=\"hidden\" name=\"path\" value=\"{s}\"><button type=\"submit\" name=\"op\" value=\"remove_section\">Remove section {}</button></form>", stamp.open("inline"), s + 1);
        html.push_str(&format!("<fieldset class=\"section\"><legend>Section {}</legend><div class=\"columns\">{inner}</div>{remove}</fieldset>", s + 1));
    }
    let add_section = format!(
        "{}<label for=\"new-section\">New section</label><select id=\"new-section\" name=\"columns\"><option value=\"1\">One column</option><option value=\"2\">Two columns</option><option value=\"3\">Three columns</option></select>\
         <button type=\"submit\" name=\"op\" value=\"section\">Add section</button></form>",
        stamp.open("row")
    );
    // Filled in and submitted by app.js when a block is dropped on another.
    let mover = format!(
        "{}<input type=\"hidden\" name=\"op\" value=\"move\"><input type=\"hidden\" name=\"path\"><input type=\"hidden\" name=\"to\"></form>",
        stamp.open("mover").replacen("<form ", "<form id=\"block-mover\" hidden ", 1)
    );
    format!("<div class=\"editor\">{html}{add_section}{mover}</div>")
}

fn column_html(s: usize, c: usize, column: &Value, saved: &[(String, String)], stamp: &Stamp, errors: &[(At, String)]) -> String {
    let blocks = column["blocks"].as_array().map_or(&[][..], Vec::as_slice);
    let items: String = blocks
        .iter()
        .enumerate()
        .map(|(b, block)| {
            let at = At { section: s, column: c, block: Some(b) };
            let error = errors.iter().find(|(place, _)| *place == at).map(|(_, message)| message.as_str());
            block_html(at, block, saved, stamp, error)
        })
        .collect();
    let empty = if blocks.is_empty() { "<li class=\"muted\">No block yet.</li>" } else { "" };
    let types: String = TYPES.iter().map(|(value, label)| format!("<option value=\"{value}\">{label}</option>")).collect();
    let id = format!("add-{s}-{c}");
    let add = format!(
        "{}<input type=\"hidden\" name=\"path\" value=\"{s}.{c}\"><label for=\"{id}\">Block</label><select id=\"{id}\" name=\"type\">{types}</select><button type=\"submit\" name=\"op\" value=\"add\">Add block</button></form>",
        stamp.open("row")
    );
    let insert = if saved.is_empty() {
        String::new()
    } else {
        let options: String = saved.iter().map(|(id, name)| format!("<option value=\"{}\">{}</option>", escape(id), escape(name))).collect();
        format!(
            "{}<input type=\"hidden\" name=\"path\" value=\"{s}.{c}\"><label for=\"saved-{s}-{c}\">Saved block</label><select id=\"saved-{s}-{c}\" name=\"saved_block_id\">{options}</select><button type=\"submit\" name=\"op\" value=\"saved\">Insert</button></form>",
            stamp.open("row")
        )
    };
    format!("<div class=\"column\" data-column=\"{s}.{c}\"><ol class=\"blocks\">{items}{empty}</ol>{add}{insert}</div>")
}

fn label_of(kind: &str) -> &str {
    TYPES.iter().find(|(value, _)| *value == kind).map_or(if kind == "saved" { "Saved block" } else { kind }, |(_, label)| label)
}

fn saved_name(block: &Value, saved: &[(String, String)]) -> String {
    let id = block["saved_block_id"].as_str().unwrap_or_default();
    escape(saved.iter().find(|(s, _)| s == id).map_or(id, |(_, name)| name.as_str()))
}

/// What a block says in its summary line: its text, label or name, shortened.
fn gist(block: &Value, saved: &[(String, String)]) -> String {
    if block["type"] == "saved" {
        return saved_name(block, saved);
    }
    let text = ["text", "label", "heading", "alt", "html"].iter().find_map(|k| block[*k].as_str()).unwrap_or_default();
    let short: String = text.chars().take(60).collect();
    escape(&short)
}

fn block_html(at: At, block: &Value, saved: &[(String, String)], stamp: &Stamp, error: Option<&str>) -> String {
    let kind = block["type"].as_str().unwrap_or_default();
    let path = at.path();
    let slug = path.replace('.', "-");
    let label = label_of(kind);
    let named = format!("{label} {}", at.block.map_or(0, |b| b + 1));
    let error_html = error.map_or_else(String::new, |e| format!("<p class=\"error\" role=\"alert\" id=\"block-{slug}-error\">{}</p>", escape(e)));
    let described = if error.is_some() { format!(" aria-describedby=\"block-{slug}-error\"") } else { String::new() };
    let inputs: String = fields(kind)
        .iter()
        .map(|(key, field_label, field)| {
            let id = format!("b-{slug}-{key}");
            let value = match &block[*key] {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => String::new(),
            };
            let value = escape(&value);
            let name = format!("f_{key}");
            match field {
                Kind::Lines | Kind::Code => {
                    let class = if *field == Kind::Code { " class=\"code\"" } else { "" };
                    format!("<label for=\"{id}\">{field_label}</label><textarea id=\"{id}\" name=\"{name}\" rows=\"4\"{class}{described}>{value}</textarea>")
                }
                Kind::Flag => {
                    let checked = if block[*key] == true { " checked" } else { "" };
                    format!("<label class=\"check\" for=\"{id}\"><input id=\"{id}\" type=\"checkbox\" name=\"{name}\" value=\"true\"{checked}>{field_label}</label>")
                }
                Kind::Align => {
                    let options: String = ["", "left", "center", "right"]
                        .iter()
                        .map(|a| format!("<option value=\"{a}\"{}>{}</option>", if value == *a { " selected" } else { "" }, if a.is_empty() { "default" } else { a }))
                        .collect();
                    format!("<label for=\"{id}\">{field_label}</label><select id=\"{id}\" name=\"{name}\">{options}</select>")
                }
                Kind::Number => format!("<label for=\"{id}\">{field_label}</label><input id=\"{id}\" name=\"{name}\" inputmode=\"numeric\" value=\"{value}\"{described}>"),
                Kind::Line => format!("<label for=\"{id}\">{field_label}</label><input id=\"{id}\" name=\"{name}\" value=\"{value}\"{described}>"),
            }
        })
        .collect();
    let edit = if inputs.is_empty() {
        String::new()
    } else {
        format!("{}<input type=\"hidden\" name=\"path\" value=\"{path}\">{inputs}<button type=\"submit\" name=\"op\" value=\"edit\">Save {label}</button></form>", stamp.open("stack"))
    };
    let json = serde_json::to_string_pretty(block).unwrap_or_default();
    let raw = format!(
        "<details><summary>Edit as JSON</summary>{}<input type=\"hidden\" name=\"path\" value=\"{path}\"><label for=\"b-{slug}-json\">The block as JSON</label>\
         <textarea id=\"b-{slug}-json\" name=\"json\" rows=\"8\" class=\"code\">{}</textarea><button type=\"submit\" name=\"op\" value=\"json\">Save JSON</button></form></details>",
        stamp.open("stack"),
        escape(&json)
    );
    let keep = if kind == "saved" {
        String::new()
    } else {
        format!(
            "<label for=\"b-{slug}-keep\">Saved block name</label><input id=\"b-{slug}-keep\" name=\"name\" maxlength=\"200\" placeholder=\"{label}\"><button type=\"submit\" name=\"op\" value=\"keep\">Keep as saved block</button>"
        )
    };
    let tools = format!(
        "{}<input type=\"hidden\" name=\"path\" value=\"{path}\"><button type=\"submit\" name=\"op\" value=\"up\" aria-label=\"Move {named} up\">↑</button>\
         <button type=\"submit\" name=\"op\" value=\"down\" aria-label=\"Move {named} down\">↓</button><button type=\"submit\" name=\"op\" value=\"remove\" aria-label=\"Remove {named}\">Remove</button>{keep}</form>",
        stamp.open("row")
    );
    let rewrite = if stamp.ai && matches!(kind, "heading" | "text" | "button") {
        let presets: String = ["shorter", "longer", "friendlier", "formal"].iter().map(|p| format!("<option>{p}</option>")).collect();
        format!(
            "{}<input type=\"hidden\" name=\"path\" value=\"{path}\"><label for=\"b-{slug}-preset\">Rewrite with AI</label><select id=\"b-{slug}-preset\" name=\"preset\">{presets}</select>\
             <button type=\"submit\" name=\"op\" value=\"ai_rewrite\">Rewrite</button></form>",
            stamp.open("row")
        )
    } else {
        String::new()
    };
    let open = if error.is_some() { " open" } else { "" };
    format!(
        "<li class=\"block\" id=\"block-{slug}\" draggable=\"true\" data-path=\"{path}\"><details{open}><summary><b>{named}</b> <span class=\"muted\">{}</span></summary>{error_html}{edit}{rewrite}{raw}</details>{tools}</li>",
        gist(block, saved)
    )
}
