//! The flat program a template compiles into, and the render loop.

use crate::escape::push_escaped;
use crate::merge::{Merge, Path, Source};
use crate::parse::{self, Segment};
use crate::rule::Rule;
use crate::{Context, Mode, Problem, Rendered};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// At most this many items are drawn by one repeat group.
pub const LIMIT_ITEMS: usize = 50;

/// One step of a program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Node {
    /// Literal output, already escaped where needed.
    #[serde(rename = "l")]
    Lit(String),
    /// A `{{key}}` placeholder.
    #[serde(rename = "v")]
    Var(String),
    /// A `{{{...}}}` merge tag.
    #[serde(rename = "m")]
    Merge(Box<Merge>),
    /// Show the next `n` nodes only when the rule holds (per contact).
    #[serde(rename = "w")]
    Show(Box<Rule>, u32),
    /// Draw the next `n` nodes once per item of the event list at the path.
    #[serde(rename = "r")]
    Repeat(Path, u32),
}

/// One part (subject, html or text) compiled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Program {
    #[serde(rename = "n")]
    nodes: Vec<Node>,
    /// Total literal length: the output buffer's starting capacity.
    #[serde(rename = "c", default)]
    capacity: usize,
}

/// A template compiled into three programs (subject, html, text). Serializable: stored as JSONB
/// on the template version and deserialized at send time; the serialized form is compact
/// (`{"s":{"n":[...],"c":..},"h":...,"t":...}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compiled {
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub(crate) subject: Option<Program>,
    #[serde(rename = "h", default, skip_serializing_if = "Option::is_none")]
    pub(crate) html: Option<Program>,
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<Program>,
}

/// Builds a program, and beside it the display form (every block shown, no items drawn,
/// placeholders and merge tags as written).
pub(crate) struct Builder {
    nodes: Vec<Node>,
    lit: String,
    display: String,
    /// Open show/repeat nodes: (index, is_repeat).
    open: Vec<(usize, bool)>,
    repeats: u32,
}

impl Builder {
    /// An empty builder.
    pub(crate) fn new() -> Builder {
        Builder { nodes: Vec::new(), lit: String::new(), display: String::new(), open: Vec::new(), repeats: 0 }
    }

    fn flush(&mut self) {
        if !self.lit.is_empty() {
            self.nodes.push(Node::Lit(std::mem::take(&mut self.lit)));
        }
    }

    /// Appends literal output as is.
    pub(crate) fn lit(&mut self, text: &str) {
        self.lit.push_str(text);
        if self.repeats == 0 {
            self.display.push_str(text);
        }
    }

    /// Appends scanned segments: literal text through `literal` (which escapes or reshapes it),
    /// placeholders and merge tags as nodes, shown as written (escaped when `escape_raw`).
    pub(crate) fn segments(&mut self, segments: &[Segment<'_>], escape_raw: bool, literal: &dyn Fn(&str, &mut String)) {
        for segment in segments {
            let raw = match segment {
                Segment::Lit(text) => {
                    let start = self.lit.len();
                    literal(text, &mut self.lit);
                    if self.repeats == 0 {
                        self.display.push_str(&self.lit[start..]);
                    }
                    continue;
                }
                Segment::Var { key, raw } => {
                    self.flush();
                    self.nodes.push(Node::Var((*key).to_string()));
                    raw
                }
                Segment::Merge { tag, raw } => {
                    self.flush();
                    self.nodes.push(Node::Merge(Box::new(tag.clone())));
                    raw
                }
            };
            if self.repeats == 0 {
                if escape_raw {
                    push_escaped(&mut self.display, raw);
                } else {
                    self.display.push_str(raw);
                }
            }
        }
    }

    /// Ends the output with exactly one line break, when it ends in literal text.
    pub(crate) fn end_line(&mut self) {
        if self.open.is_empty() && (!self.lit.is_empty() || matches!(self.nodes.last(), Some(Node::Lit(_)))) {
            self.flush();
            if let Some(Node::Lit(last)) = self.nodes.last_mut() {
                let trimmed = last.trim_end().len();
                last.truncate(trimmed);
                last.push('\n');
            }
            let trimmed = self.display.trim_end().len();
            self.display.truncate(trimmed);
            self.display.push('\n');
        }
    }

    /// Opens a show-when scope; close it with [`Builder::close`].
    pub(crate) fn open_show(&mut self, rule: Rule) {
        self.flush();
        self.open.push((self.nodes.len(), false));
        self.nodes.push(Node::Show(Box::new(rule), 0));
    }

    /// Opens a repeat scope over an event list; close it with [`Builder::close`].
    pub(crate) fn open_repeat(&mut self, list: Path) {
        self.flush();
        self.open.push((self.nodes.len(), true));
        self.nodes.push(Node::Repeat(list, 0));
        self.repeats += 1;
    }

    /// Closes the innermost open scope.
    pub(crate) fn close(&mut self) {
        self.flush();
        let Some((at, repeat)) = self.open.pop() else { return };
        let len = u32::try_from(self.nodes.len() - at - 1).unwrap_or(u32::MAX);
        if let Some(Node::Show(_, n) | Node::Repeat(_, n)) = self.nodes.get_mut(at) { *n = len }
        if repeat {
            self.repeats -= 1;
        }
        // An empty scope is dropped, and the literal before it reopened so that what follows joins it.
        if len == 0 {
            self.nodes.truncate(at);
            if let Some(Node::Lit(_)) = self.nodes.last()
                && let Some(Node::Lit(before)) = self.nodes.pop() {
                    self.lit = before;
                }
        }
    }

    /// The program and its display form.
    pub(crate) fn finish(mut self) -> (Program, String) {
        while !self.open.is_empty() {
            self.close();
        }
        self.flush();
        let nodes = self.nodes;
        let capacity = nodes.iter().map(|n| if let Node::Lit(s) = n { s.len() } else { 16 }).sum();
        (Program { nodes, capacity }, self.display)
    }
}

/// Compiles one plain part; problems are reported at `path`.
fn plain(text: &str, path: &str, problems: &mut Vec<Problem>) -> Program {
    let (segments, bad) = parse::scan(text);
    problems.extend(bad.into_iter().map(|message| Problem::new(path, message)));
    let mut builder = Builder::new();
    builder.segments(&segments, false, &|lit, out| out.push_str(lit));
    builder.finish().0
}

impl Compiled {
    /// Plain content (no block document): parses `{{key}}` placeholders and `{{{...}}}` merge
    /// tags in each part. Problems: unreadable format suffixes (path `subject`, `html`, `text`).
    pub fn from_parts(subject: Option<&str>, html: Option<&str>, text: Option<&str>) -> Result<Compiled, Vec<Problem>> {
        let mut problems = Vec::new();
        let compiled = Compiled {
            subject: subject.map(|s| plain(s, "subject", &mut problems)),
            html: html.map(|s| plain(s, "html", &mut problems)),
            text: text.map(|s| plain(s, "text", &mut problems)),
        };
        if problems.is_empty() { Ok(compiled) } else { Err(problems) }
    }

    /// This template with `other`'s html and text appended to its own (a broadcast's plain
    /// footer): in the html, before the closing `</body>` of a whole document. The subject is
    /// this template's.
    pub fn followed_by(&self, other: &Compiled) -> Compiled {
        fn join(own: &Option<Program>, more: &Option<Program>, html: bool) -> Option<Program> {
            let (own, more) = match (own, more) {
                (Some(own), Some(more)) => (own, more),
                (own, more) => return own.clone().or_else(|| more.clone()),
            };
            let mut nodes = own.nodes.clone();
            let mut tail = None;
            if html
                && let Some(Node::Lit(last)) = nodes.last()
                && let Some(at) = last.rfind("</body>")
            {
                let (before, after) = last.split_at(at);
                tail = Some(after.to_string());
                let before = before.to_string();
                nodes.pop();
                nodes.push(Node::Lit(before));
            }
            nodes.extend(more.nodes.iter().cloned());
            nodes.extend(tail.map(Node::Lit));
            Some(Program { nodes, capacity: own.capacity + more.capacity })
        }
        Compiled { subject: self.subject.clone(), html: join(&self.html, &other.html, true), text: join(&self.text, &other.text, false) }
    }

    /// This template with `other`'s subject line instead of its own (a broadcast's subject over
    /// its template's bodies).
    pub fn with_subject_of(mut self, other: &Compiled) -> Compiled {
        self.subject = other.subject.clone();
        self
    }

    /// Compiles a subject line alone (for documents).
    pub(crate) fn subject_program(subject: &str, problems: &mut Vec<Problem>) -> Program {
        plain(subject, "subject", problems)
    }

    fn parts(&self) -> impl Iterator<Item = &Program> {
        [&self.subject, &self.html, &self.text].into_iter().flatten()
    }

    /// Every `{{key}}` placeholder used in any part, sorted, deduplicated.
    pub fn placeholders(&self) -> BTreeSet<String> {
        self.parts()
            .flat_map(|p| p.nodes.iter())
            .filter_map(|n| if let Node::Var(key) = n { Some(key.clone()) } else { None })
            .collect()
    }

    /// Every merge-tag key used in any part (as written in tags, reserved names upper-cased),
    /// sorted, deduplicated.
    pub fn merge_keys(&self) -> BTreeSet<String> {
        self.parts()
            .flat_map(|p| p.nodes.iter())
            .filter_map(|n| if let Node::Merge(m) = n { Some(m.source.key()) } else { None })
            .collect()
    }

    /// Whether the template has a subject line.
    pub fn has_subject(&self) -> bool {
        self.subject.is_some()
    }

    /// Whether the template has an HTML body.
    pub fn has_html(&self) -> bool {
        self.html.is_some()
    }

    /// Whether the template has a plain-text body.
    pub fn has_text(&self) -> bool {
        self.text.is_some()
    }

    /// The one render call: every part, for one recipient.
    pub fn render(&self, context: &Context, mode: Mode) -> Rendered {
        let run = |program: &Option<Program>, html: bool| match program {
            Some(program) => {
                let mut out = String::with_capacity(program.capacity + program.capacity / 4 + 64);
                let env = Env { context, mode, html };
                env.run(&program.nodes, None, &mut out);
                out
            }
            None => String::new(),
        };
        Rendered { subject: run(&self.subject, false), html: run(&self.html, true), text: run(&self.text, false) }
    }
}

struct Env<'c, 'a> {
    context: &'c Context<'a>,
    mode: Mode,
    html: bool,
}

impl Env<'_, '_> {
    fn run(&self, nodes: &[Node], item: Option<&Map<String, Value>>, out: &mut String) {
        let mut i = 0;
        while i < nodes.len() {
            match &nodes[i] {
                Node::Lit(text) => out.push_str(text),
                Node::Var(key) => self.value(self.context.variables.get(key), out),
                Node::Merge(merge) => self.merge(merge, item, out),
                Node::Show(rule, n) => {
                    if self.mode == Mode::PerContact
                        && !rule.holds(self.context.contact, self.context.event, item)
                    {
                        i += *n as usize;
                    }
                }
                Node::Repeat(list, n) => {
                    let end = (i + 1 + *n as usize).min(nodes.len());
                    if self.mode == Mode::PerContact {
                        let items = self.context.event.and_then(|e| list.lookup(e)).and_then(Value::as_array);
                        for entry in items.into_iter().flatten().take(LIMIT_ITEMS) {
                            self.run(&nodes[i + 1..end], entry.as_object(), out);
                        }
                    }
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
    }

    fn push(&self, text: &str, out: &mut String) {
        if self.html { push_escaped(out, text) } else { out.push_str(text) }
    }

    /// A variable by JSON type: strings as written, numbers, booleans, objects and lists as
    /// compact JSON; missing or null renders empty.
    fn value(&self, value: Option<&Value>, out: &mut String) {
        match value {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => self.push(text, out),
            Some(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Some(Value::Number(n)) => out.push_str(&n.to_string()),
            Some(other) => self.push(&other.to_string(), out),
        }
    }

    fn merge(&self, merge: &Merge, item: Option<&Map<String, Value>>, out: &mut String) {
        let contact = self.context.contact;
        let mut property_key: Option<&str> = None;
        let found: Option<Found<'_>> = match &merge.source {
            Source::FirstName => contact.and_then(|c| c.first_name.as_deref()).map(Found::Text),
            Source::LastName => contact.and_then(|c| c.last_name.as_deref()).map(Found::Text),
            Source::Email => contact.map(|c| Found::Text(&c.email)),
            Source::UnsubscribeUrl => contact.and_then(|c| c.unsubscribe_url.as_deref()).map(Found::Text),
            Source::PreferencesUrl => contact.and_then(|c| c.preferences_url.as_deref()).map(Found::Text),
            Source::Property(key) => {
                property_key = Some(key);
                contact.and_then(|c| lookup_ignoring_case(&c.properties, key)).map(Found::Json)
            }
            Source::Event(path) => self.context.event.and_then(|e| path.lookup(e)).map(Found::Json),
            Source::Item(path) => item.and_then(|i| path.lookup(i)).map(Found::Json),
        };
        let found = found.filter(|f| match f {
            Found::Text(s) => !s.is_empty(),
            Found::Json(v) => !v.is_null() && v.as_str() != Some(""),
        });
        let fallback = || -> Option<&str> {
            merge.fallback.as_deref().or_else(|| {
                let key = property_key?;
                let fallbacks = &contact?.fallbacks;
                fallbacks
                    .get(key)
                    .or_else(|| fallbacks.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v))
                    .map(String::as_str)
            })
        };
        let push_fallback = |out: &mut String| {
            if let Some(fb) = fallback() {
                match merge.format.as_ref().and_then(|f| f.apply_text(fb)) {
                    Some(formatted) => self.push(&formatted, out),
                    None => self.push(fb, out),
                }
            }
        };
        let push_found = |found: &Found<'_>, out: &mut String| match found {
            Found::Text(text) => self.push(text, out),
            Found::Json(value) => self.value(Some(value), out),
        };
        match (found, &merge.format) {
            (None, _) => push_fallback(out),
            (Some(found), Some(format)) => {
                let formatted = match &found {
                    Found::Text(text) => format.apply_text(text),
                    Found::Json(value) => format.apply(value),
                };
                match formatted {
                    Some(formatted) => self.push(&formatted, out),
                    None if fallback().is_some() => push_fallback(out),
                    None => push_found(&found, out),
                }
            }
            (Some(found), None) => push_found(&found, out),
        }
    }
}

/// A merge tag's value before formatting.
enum Found<'x> {
    Text(&'x str),
    Json(&'x Value),
}

/// The value at `key`, matched exactly and then ignoring ASCII case.
fn lookup_ignoring_case<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    map.get(key).or_else(|| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v))
}
