//! Block documents: validation and compilation into HTML and text programs.

mod blocks;
mod layout;
mod saved;

use crate::brand::{Style, is_color, is_web_url};
use crate::merge::Path;
use crate::parse::{self, Segment};
use crate::program::Builder;
use crate::{Brand, Catalog, Compiled, Problem, rule};
use serde_json::{Map, Value};

/// At most this many sections in a document (saved sections count once each).
pub const LIMIT_SECTIONS: usize = 100;
/// At most this many blocks in a document, counting blocks in groups and saved copies.
pub const LIMIT_BLOCKS: usize = 500;
/// Groups nest at most this deep.
pub(crate) const LIMIT_DEPTH: usize = 4;
/// At most this many links in a `social` or `menu` block.
pub(crate) const LIMIT_LINKS: usize = 12;

/// The result of compiling a block document.
#[derive(Debug, Clone)]
pub struct Visual {
    /// The programs to store and render at send time.
    pub compiled: Compiled,
    /// Display HTML: every block shown, no items drawn, placeholders and merge tags as written.
    pub html: String,
    /// Display text, the same way.
    pub text: String,
    /// The normalized document: saved-block references keep their id and embed the current copy as `content`.
    pub document: Value,
    /// The saved blocks referenced, in first-use order, without repeats.
    pub saved_blocks: Vec<uuid::Uuid>,
}

impl Visual {
    /// The preheader block's text as written (for the `preview_text` content check), if the
    /// document has one.
    pub fn preheader(&self) -> Option<&str> {
        let mut first = self.document.get("sections")?.get(0)?;
        if first.get("saved_block_id").is_some() {
            first = first.get("content")?;
        }
        let block = first.get("columns")?.get(0)?.get("blocks")?.get(0)?;
        (block.get("type")?.as_str()? == "preheader").then(|| block.get("text")?.as_str())?
    }
}

impl Compiled {
    /// A block document: validates it (every problem, paths starting `document.`) and compiles it
    /// with the brand. `subject` as in [`Compiled::from_parts`].
    pub fn from_document(subject: Option<&str>, document: &Value, brand: &Brand, catalog: &Catalog) -> Result<Visual, Vec<Problem>> {
        let mut problems = Vec::new();
        let subject = subject.map(|s| Compiled::subject_program(s, &mut problems));
        let Some(root) = document.as_object() else {
            problems.insert(0, Problem::new("document", "must be a JSON object"));
            return Err(problems);
        };
        if root.get("kind").and_then(Value::as_str) != Some("svc.blocks") {
            problems.push(Problem::new("document.kind", "must be \"svc.blocks\""));
        }
        if root.get("version").and_then(Value::as_u64) != Some(1) {
            problems.push(Problem::new("document.version", "must be 1"));
        }
        let lang = match root.get("lang").and_then(Value::as_str) {
            Some(lang) if is_lang(lang) => lang,
            Some(_) => {
                problems.push(Problem::new("document.lang", "must be a language tag such as en or pt-BR"));
                "en"
            }
            None => {
                problems.push(Problem::new("document.lang", "is required (a language tag such as en)"));
                "en"
            }
        };
        let logo = match root.get("logo") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                problems.push(Problem::new("document.logo", "must be true or false"));
                true
            }
        };
        let mut normalized = document.clone();
        let saved_blocks = saved::embed(&mut normalized, catalog, &mut problems);
        let sections = match normalized.get("sections").and_then(Value::as_array) {
            Some(sections) => {
                if sections.len() > LIMIT_SECTIONS {
                    problems.push(Problem::new(
                        "document.sections",
                        format!("has {} sections; at most {LIMIT_SECTIONS}", sections.len()),
                    ));
                }
                sections.as_slice()
            }
            None => {
                problems.push(Problem::new("document.sections", "must be a list of sections"));
                &[]
            }
        };
        let mut compiler = Compiler::new(Style::of(brand), catalog, problems);
        compiler.document(lang, logo, sections);
        let Compiler { problems, html, text, blocks, .. } = compiler;
        let mut problems = problems;
        if blocks > LIMIT_BLOCKS {
            problems.push(Problem::new("document.sections", format!("has {blocks} blocks; at most {LIMIT_BLOCKS}")));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let (html, html_display) = html.finish();
        let (text, text_display) = text.finish();
        Ok(Visual {
            compiled: Compiled { subject, html: Some(html), text: Some(text) },
            html: html_display,
            text: text_display,
            document: normalized,
            saved_blocks,
        })
    }
}

/// A BCP 47-ish tag: 2–3 letters, then `-` and 1–8 alphanumerics, repeated.
fn is_lang(tag: &str) -> bool {
    let mut parts = tag.split('-');
    let first_ok = parts.next().is_some_and(|p| (2..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphabetic()));
    first_ok && parts.all(|p| (1..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// What kind of address a link field takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkKind {
    /// http, https or mailto (or a placeholder / merge tag).
    Link,
    /// http or https (or a placeholder / merge tag).
    Image,
}

/// Whether `text` is an acceptable address: http(s), mailto for links, or starting with a
/// placeholder or merge tag.
pub(crate) fn link_ok(text: &str, kind: LinkKind) -> bool {
    let text = text.trim();
    if text.starts_with("{{") && parse::starts_with_tag(text) {
        return true;
    }
    if is_web_url(text) {
        return true;
    }
    kind == LinkKind::Link && text.get(..7).is_some_and(|p| p.eq_ignore_ascii_case("mailto:")) && text.len() > 7
}

/// Walks a document, checking it and writing both programs.
pub(crate) struct Compiler<'a> {
    pub(crate) style: Style,
    pub(crate) catalog: &'a Catalog,
    pub(crate) problems: Vec<Problem>,
    pub(crate) html: Builder,
    pub(crate) text: Builder,
    pub(crate) blocks: usize,
    repeats: u32,
    preheaders: usize,
    first_block: Option<String>,
    /// The content width of the current column, for images.
    pub(crate) width: u32,
}

impl<'a> Compiler<'a> {
    fn new(style: Style, catalog: &'a Catalog, problems: Vec<Problem>) -> Compiler<'a> {
        Compiler {
            style,
            catalog,
            problems,
            html: Builder::new(),
            text: Builder::new(),
            blocks: 0,
            repeats: 0,
            preheaders: 0,
            first_block: None,
            width: layout::content_width(1),
        }
    }

    /// Records a problem.
    pub(crate) fn problem(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem::new(path, message));
    }

    fn document(&mut self, lang: &str, logo: bool, sections: &[Value]) {
        self.html.lit(&layout::head(lang));
        // The preheader, when it is where it must be, opens the body.
        let first = sections.first().map(|s| s.get("content").filter(|_| s.get("saved_block_id").is_some()).unwrap_or(s));
        let first_path = match sections.first() {
            Some(s) if s.get("saved_block_id").is_some() => "document.sections[0].content.columns[0].blocks[0]",
            _ => "document.sections[0].columns[0].blocks[0]",
        };
        let first_block = first
            .and_then(|s| s.get("columns"))
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("blocks"))
            .and_then(|b| b.get(0));
        if let Some(block) = first_block.filter(|b| b.get("type").and_then(Value::as_str) == Some("preheader")) {
            self.first_block = Some(first_path.to_string());
            self.preheaders = 1;
            self.preheader(block, first_path);
        }
        self.html.lit(&layout::body_open(lang, &self.style, logo));
        for (i, section) in sections.iter().enumerate() {
            self.section(section, &format!("document.sections[{i}]"), false);
        }
        self.html.lit(layout::BODY_CLOSE);
        self.text.end_line();
    }

    fn preheader(&mut self, block: &Value, path: &str) {
        for key in ["show_when", "repeat"] {
            if block.get(key).is_some_and(|v| !v.is_null()) {
                self.problem(format!("{path}.{key}"), "a preheader is always shown once");
            }
        }
        let Some(map) = block.as_object() else { return };
        let Some(text) = self.string(map, "text", path, true) else { return };
        let segments = self.template(text, &format!("{path}.text"));
        self.html.lit(layout::PREHEADER_OPEN);
        self.html.segments(&segments, true, &|t, o| crate::escape::push_escaped(o, t));
        self.html.lit(&layout::preheader_close());
    }

    /// Applies a node's `show_when` and `repeat` around `body`.
    fn wrapped(&mut self, map: &Map<String, Value>, path: &str, body: impl FnOnce(&mut Self)) {
        let rule = map
            .get("show_when")
            .filter(|v| !v.is_null())
            .and_then(|v| rule::parse(v, &format!("{path}.show_when"), self.catalog, self.repeats > 0, &mut self.problems));
        let list = map.get("repeat").filter(|v| !v.is_null()).and_then(|v| self.repeat(v, path));
        if let Some(rule) = &rule {
            self.html.open_show(rule.clone());
            self.text.open_show(rule.clone());
        }
        if let Some(list) = &list {
            self.html.open_repeat(list.clone());
            self.text.open_repeat(list.clone());
            self.repeats += 1;
        }
        body(self);
        if list.is_some() {
            self.repeats -= 1;
            self.html.close();
            self.text.close();
        }
        if rule.is_some() {
            self.html.close();
            self.text.close();
        }
    }

    fn repeat(&mut self, value: &Value, path: &str) -> Option<Path> {
        let path = format!("{path}.repeat");
        if self.repeats > 0 {
            self.problem(&path, "a repeat group cannot sit inside another repeat group");
            return None;
        }
        let list = value.get("list").and_then(Value::as_str);
        match list.and_then(|l| l.strip_prefix("event.")).and_then(Path::parse) {
            Some(list) => Some(list),
            None => {
                self.problem(format!("{path}.list"), "must name a list of the trigger event, e.g. event.items");
                None
            }
        }
    }

    fn section(&mut self, value: &Value, path: &str, in_saved: bool) {
        let Some(map) = value.as_object() else {
            self.problem(path, "a section is an object");
            return;
        };
        if map.contains_key("saved_block_id") {
            if in_saved {
                self.problem(format!("{path}.saved_block_id"), "saved content cannot itself contain saved references");
                return;
            }
            // The normalizer embedded the content, or reported why it could not.
            if let Some(content) = map.get("content").filter(|c| c.is_object()) {
                self.wrapped(map, path, |c| c.section(content, &format!("{path}.content"), true));
            }
            return;
        }
        let background = self.color(map, "background", path);
        let columns = match map.get("columns").and_then(Value::as_array) {
            Some(columns) => columns.as_slice(),
            None => {
                self.problem(format!("{path}.columns"), "must be a list of one to three columns");
                return;
            }
        };
        if columns.is_empty() || columns.len() > 3 {
            self.problem(format!("{path}.columns"), format!("a section has one to three columns, not {}", columns.len()));
        }
        let count = columns.len();
        self.wrapped(map, path, |c| {
            c.html.lit(&layout::section_open(background.as_deref()));
            for (j, column) in columns.iter().enumerate() {
                let column_path = format!("{path}.columns[{j}]");
                let Some(blocks) = column.get("blocks").and_then(Value::as_array) else {
                    c.problem(format!("{column_path}.blocks"), "a column is an object with a list of blocks");
                    continue;
                };
                c.html.lit(&layout::column_open(j, count));
                c.width = layout::content_width(count);
                for (k, block) in blocks.iter().enumerate() {
                    c.block(block, &format!("{column_path}.blocks[{k}]"), in_saved, 0);
                }
                c.html.lit(layout::column_close(j, count));
            }
            c.html.lit(layout::SECTION_CLOSE);
        });
    }

    fn block(&mut self, value: &Value, path: &str, in_saved: bool, depth: usize) {
        let Some(map) = value.as_object() else {
            self.problem(path, "a block is an object");
            return;
        };
        self.blocks += 1;
        let Some(kind) = map.get("type").and_then(Value::as_str) else {
            self.problem(format!("{path}.type"), "is required");
            return;
        };
        match kind {
            "saved" => {
                if in_saved {
                    self.problem(format!("{path}.saved_block_id"), "saved content cannot itself contain saved references");
                    return;
                }
                if let Some(content) = map.get("content").filter(|c| c.is_object()) {
                    self.wrapped(map, path, |c| c.block(content, &format!("{path}.content"), true, depth));
                }
            }
            "group" => {
                if depth + 1 >= LIMIT_DEPTH {
                    self.problem(path, format!("groups nest at most {LIMIT_DEPTH} deep"));
                    return;
                }
                let Some(children) = map.get("blocks").and_then(Value::as_array) else {
                    self.problem(format!("{path}.blocks"), "a group holds a list of blocks");
                    return;
                };
                self.wrapped(map, path, |c| {
                    for (i, child) in children.iter().enumerate() {
                        c.block(child, &format!("{path}.blocks[{i}]"), in_saved, depth + 1);
                    }
                });
            }
            "preheader" => {
                if self.first_block.as_deref() == Some(path) {
                    return;
                }
                let message = if self.preheaders > 0 {
                    "a second preheader: a document has at most one"
                } else {
                    "a preheader must be the first block of the first column of the first section"
                };
                self.preheaders += 1;
                self.problem(path, message);
            }
            kind if blocks::KINDS.contains(&kind) => self.wrapped(map, path, |c| c.content(kind, map, path)),
            other => self.problem(format!("{path}.type"), format!("unknown block type `{other}`")),
        }
    }

    /// Scans template text at `path`, reporting unreadable formats and `item.` tags outside a repeat group.
    pub(crate) fn template<'t>(&mut self, text: &'t str, path: &str) -> Vec<Segment<'t>> {
        let (segments, bad) = parse::scan(text);
        for message in bad {
            self.problem(path, message);
        }
        if self.repeats == 0 {
            for segment in &segments {
                if let Segment::Merge { tag, raw } = segment
                    && matches!(tag.source, crate::merge::Source::Item(_)) {
                        self.problem(path, format!("`{raw}` can only be used inside a repeat group"));
                    }
            }
        }
        segments
    }

    /// A string field; `None` (and a problem when required) if missing, blank or not a string.
    pub(crate) fn string<'v>(&mut self, map: &'v Map<String, Value>, key: &str, path: &str, required: bool) -> Option<&'v str> {
        match map.get(key) {
            None | Some(Value::Null) => {
                if required {
                    self.problem(format!("{path}.{key}"), "is required");
                }
                None
            }
            Some(Value::String(text)) if text.trim().is_empty() => {
                if required {
                    self.problem(format!("{path}.{key}"), "is required");
                }
                None
            }
            Some(Value::String(text)) => Some(text),
            Some(_) => {
                self.problem(format!("{path}.{key}"), "must be a string");
                None
            }
        }
    }

    /// A link field: a string that [`link_ok`] accepts.
    pub(crate) fn link<'v>(&mut self, map: &'v Map<String, Value>, key: &str, path: &str, required: bool, kind: LinkKind) -> Option<&'v str> {
        let text = self.string(map, key, path, required)?;
        if link_ok(text, kind) {
            Some(text.trim())
        } else {
            let allowed = if kind == LinkKind::Link { "an http, https or mailto address" } else { "an http or https address" };
            self.problem(format!("{path}.{key}"), format!("must be {allowed} or start with a placeholder"));
            None
        }
    }

    /// An optional `#rgb`/`#rrggbb` colour field.
    pub(crate) fn color(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        let text = self.string(map, key, path, false)?;
        if is_color(text) {
            Some(text.to_string())
        } else {
            self.problem(format!("{path}.{key}"), "must be a #rgb or #rrggbb colour");
            None
        }
    }

    /// An optional whole-number field within `range`.
    pub(crate) fn number(&mut self, map: &Map<String, Value>, key: &str, path: &str, range: std::ops::RangeInclusive<u64>) -> Option<u64> {
        let value = map.get(key).filter(|v| !v.is_null())?;
        match value.as_u64().filter(|n| range.contains(n)) {
            Some(n) => Some(n),
            None => {
                self.problem(format!("{path}.{key}"), format!("must be a whole number from {} to {}", range.start(), range.end()));
                None
            }
        }
    }

    /// An optional boolean field.
    pub(crate) fn flag(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> bool {
        match map.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                self.problem(format!("{path}.{key}"), "must be true or false");
                false
            }
        }
    }

    /// An optional `align` field: left, center or right.
    pub(crate) fn align(&mut self, map: &Map<String, Value>, path: &str, default: &'static str) -> &'static str {
        match map.get("align").and_then(Value::as_str) {
            None => {
                if map.get("align").is_some_and(|v| !v.is_null()) {
                    self.problem(format!("{path}.align"), "must be left, center or right");
                }
                default
            }
            Some("left") => "left",
            Some("center") => "center",
            Some("right") => "right",
            Some(_) => {
                self.problem(format!("{path}.align"), "must be left, center or right");
                default
            }
        }
    }
}
