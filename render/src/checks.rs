//! Content checks run before sending: variables, links, link types, subject, preview text, alt
//! text, image weight, text and images, unsubscribe. Links are read as written, never fetched.

use crate::htmlscan::{Token, decode_entities, tokens};
use crate::merge::Source;
use crate::parse::{self, Segment};
use std::collections::{HashMap, HashSet};

/// Subject lines longer than this many characters warn.
pub const SUBJECT_MAX: usize = 60;
/// Preview text longer than this many characters warns.
pub const PREVIEW_MAX: usize = 150;
/// Uploaded images heavier than this in total warn (1 MB).
pub const IMAGE_WEIGHT_MAX: u64 = 1_048_576;
/// An email with images and fewer visible text characters than this per image is "mostly pictures".
pub const TEXT_PER_IMAGE: usize = 200;

/// One content check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The check's name, e.g. `links`.
    pub name: &'static str,
    /// Pass, warn or fail.
    pub status: Status,
    /// What was found, for a person.
    pub message: String,
}

/// A check's outcome.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    /// Nothing to fix.
    Pass,
    /// Worth a look; does not block.
    Warn,
    /// Must be fixed.
    Fail,
}

impl Status {
    /// `pass`, `warn` or `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// What the checks read.
pub struct Input<'a> {
    /// The subject line.
    pub subject: Option<&'a str>,
    /// The HTML body.
    pub html: Option<&'a str>,
    /// The plain-text body.
    pub text: Option<&'a str>,
    /// The preview text (or the preheader block's text).
    pub preview_text: Option<&'a str>,
    /// Declared contact properties: key -> kind.
    pub properties: &'a HashMap<String, String>,
    /// The size in bytes of an image uploaded to the service, by its `src`; `None` for others.
    pub uploaded_image_bytes: &'a dyn Fn(&str) -> Option<u64>,
}

/// What the HTML holds, read once.
#[derive(Default)]
struct Reading {
    hrefs: Vec<String>,
    images: Vec<(String, Option<String>)>,
    visible_chars: usize,
}

const HIDDEN_CONTAINERS: [&str; 5] = ["head", "title", "script", "style", "template"];

fn read(html: &str) -> Reading {
    let mut reading = Reading::default();
    // Elements whose text is not visible: (tag name, nesting depth of that tag).
    let mut hidden: Option<(String, usize)> = None;
    let mut last_space = true;
    for token in tokens(html) {
        match &token {
            Token::Open { name, .. } => {
                if let Some((hidden_name, depth)) = &mut hidden {
                    if hidden_name == name {
                        *depth += 1;
                    }
                } else {
                    let style = token.attr("style").unwrap_or_default().to_ascii_lowercase().replace(' ', "");
                    if HIDDEN_CONTAINERS.contains(&name.as_str()) || style.contains("display:none") {
                        hidden = Some((name.clone(), 1));
                    }
                }
                match name.as_str() {
                    "a" | "area" => {
                        if let Some(href) = token.attr("href") {
                            reading.hrefs.push(href.to_string());
                        }
                    }
                    "img" => {
                        let src = token.attr("src").unwrap_or_default().to_string();
                        reading.images.push((src, token.attr("alt").map(str::to_string)));
                    }
                    _ => {}
                }
            }
            Token::Close(name) => {
                if let Some((hidden_name, depth)) = &mut hidden
                    && hidden_name == name {
                        *depth -= 1;
                        if *depth == 0 {
                            hidden = None;
                        }
                    }
            }
            Token::Text(text) if hidden.is_none() => {
                for ch in decode_entities(text).chars() {
                    let space = ch.is_whitespace() || ch == '\u{200c}' || ch == '\u{34f}';
                    // Runs of white space count as one character.
                    if !space || !last_space {
                        reading.visible_chars += 1;
                    }
                    last_space = space;
                }
            }
            Token::Text(_) | Token::Raw(_) => {}
        }
    }
    reading
}

fn check(name: &'static str, status: Status, message: impl Into<String>) -> Check {
    Check { name, status, message: message.into() }
}

/// The scheme of an href as a mail client would read it: entities decoded, whitespace and
/// control characters dropped, lower-cased.
fn scheme(href: &str) -> String {
    let cleaned: String = decode_entities(href).chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    match cleaned.split_once(':') {
        Some((scheme, _)) if scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) => scheme.to_ascii_lowercase(),
        _ => String::new(),
    }
}

const CODE_SCHEMES: [&str; 3] = ["javascript", "vbscript", "data"];

fn is_full_link(href: &str) -> bool {
    let href = href.trim();
    if href.starts_with("{{") && parse::starts_with_tag(href) {
        return true;
    }
    let lower = href.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://")) {
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        return !host.is_empty() && (host.contains('.') || host.starts_with("localhost") || host.contains("{{"));
    }
    ["mailto:", "tel:"].iter().any(|p| lower.strip_prefix(p).is_some_and(|r| !r.is_empty()))
}

fn list(items: &[String]) -> String {
    let mut shown: Vec<String> = items.iter().take(5).map(|i| format!("`{i}`")).collect();
    if items.len() > 5 {
        shown.push(format!("and {} more", items.len() - 5));
    }
    shown.join(", ")
}

/// Runs the content checks, in this order with these names: variables, links, link_types,
/// subject, preview_text, alt_text, image_weight, text_and_images, unsubscribe.
pub fn run(input: &Input) -> Vec<Check> {
    let reading = input.html.map(read).unwrap_or_default();
    let merge_tags = |parts: &[Option<&str>]| -> Vec<crate::merge::Merge> {
        let mut tags = Vec::new();
        for part in parts.iter().flatten() {
            for segment in parse::scan(part).0 {
                if let Segment::Merge { tag, .. } = segment {
                    tags.push(tag);
                }
            }
        }
        tags
    };
    let tags = merge_tags(&[input.subject, input.html, input.text]);
    let body_tags = merge_tags(&[input.html, input.text]);
    vec![
        variables(input, &tags),
        links(&reading),
        link_types(&reading),
        subject(input),
        preview_text(input),
        alt_text(&reading),
        image_weight(input, &reading),
        text_and_images(&reading),
        unsubscribe(input, &reading, &body_tags),
    ]
}

fn variables(input: &Input, tags: &[crate::merge::Merge]) -> Check {
    let mut unknown: Vec<String> = Vec::new();
    for tag in tags {
        if let Source::Property(key) = &tag.source {
            let declared = input.properties.keys().any(|k| k.eq_ignore_ascii_case(key));
            if !declared && tag.fallback.is_none() && !unknown.contains(key) {
                unknown.push(key.clone());
            }
        }
    }
    if unknown.is_empty() {
        check("variables", Status::Pass, "Every merge tag names a contact field or property, or has a default.")
    } else {
        check(
            "variables",
            Status::Fail,
            format!("{} names no contact field or property and has no default; add `|default` or declare the property", list(&unknown)),
        )
    }
}

fn links(reading: &Reading) -> Check {
    let bad: Vec<String> = reading
        .hrefs
        .iter()
        .filter(|h| !CODE_SCHEMES.contains(&scheme(h).as_str()) && !is_full_link(h))
        .cloned()
        .collect();
    match (bad.is_empty(), reading.hrefs.len()) {
        (true, 0) => check("links", Status::Pass, "No links."),
        (true, n) => check("links", Status::Pass, format!("{n} links, all full web addresses.")),
        (false, _) => check(
            "links",
            Status::Fail,
            format!("{} link(s) are empty, `#` or not a full web address: {}", bad.len(), list(&bad)),
        ),
    }
}

fn link_types(reading: &Reading) -> Check {
    let code: Vec<String> = reading.hrefs.iter().filter(|h| CODE_SCHEMES.contains(&scheme(h).as_str())).cloned().collect();
    let plain: Vec<String> = reading.hrefs.iter().filter(|h| scheme(h) == "http").cloned().collect();
    if !code.is_empty() {
        check("link_types", Status::Fail, format!("{} link(s) run code and will be blocked: {}", code.len(), list(&code)))
    } else if !plain.is_empty() {
        check("link_types", Status::Warn, format!("{} link(s) use unencrypted http: {}", plain.len(), list(&plain)))
    } else {
        check("link_types", Status::Pass, "No link runs code or uses plain http.")
    }
}

fn subject(input: &Input) -> Check {
    match input.subject.map(str::trim).filter(|s| !s.is_empty()) {
        None => check("subject", Status::Fail, "The subject line is missing."),
        Some(s) if s.chars().count() > SUBJECT_MAX => check(
            "subject",
            Status::Warn,
            format!("The subject line has {} characters; past {SUBJECT_MAX} it is cut off in most inboxes.", s.chars().count()),
        ),
        Some(s) => check("subject", Status::Pass, format!("The subject line has {} characters.", s.chars().count())),
    }
}

fn preview_text(input: &Input) -> Check {
    match input.preview_text.map(str::trim).filter(|s| !s.is_empty()) {
        None => check("preview_text", Status::Warn, "No preview text: inboxes will show the start of the body instead."),
        Some(p) if p.chars().count() > PREVIEW_MAX => check(
            "preview_text",
            Status::Warn,
            format!("The preview text has {} characters; past {PREVIEW_MAX} it is cut off.", p.chars().count()),
        ),
        Some(p) => check("preview_text", Status::Pass, format!("The preview text has {} characters.", p.chars().count())),
    }
}

fn alt_text(reading: &Reading) -> Check {
    let missing: Vec<String> = reading
        .images
        .iter()
        .filter(|(_, alt)| alt.as_deref().is_none_or(|a| a.trim().is_empty()))
        .map(|(src, _)| src.clone())
        .collect();
    if missing.is_empty() {
        check("alt_text", Status::Pass, format!("{} image(s), all with alt text.", reading.images.len()))
    } else {
        check("alt_text", Status::Warn, format!("{} image(s) have no alt text: {}", missing.len(), list(&missing)))
    }
}

fn image_weight(input: &Input, reading: &Reading) -> Check {
    let mut seen = HashSet::new();
    let total: u64 = reading
        .images
        .iter()
        .filter(|(src, _)| seen.insert(src.as_str()))
        .filter_map(|(src, _)| (input.uploaded_image_bytes)(src))
        .sum();
    let kb = total.div_ceil(1024);
    if total > IMAGE_WEIGHT_MAX {
        check("image_weight", Status::Warn, format!("Uploaded images weigh {kb} KB in total; keep them under 1 MB."))
    } else {
        check("image_weight", Status::Pass, format!("Uploaded images weigh {kb} KB in total."))
    }
}

fn text_and_images(reading: &Reading) -> Check {
    let images = reading.images.len();
    if images > 0 && reading.visible_chars < TEXT_PER_IMAGE * images {
        check(
            "text_and_images",
            Status::Warn,
            format!(
                "Mostly pictures: {} visible text characters for {images} image(s) (under {TEXT_PER_IMAGE} per image); spam filters and image-blocking clients prefer more text.",
                reading.visible_chars
            ),
        )
    } else {
        check("text_and_images", Status::Pass, format!("{} visible text characters, {images} image(s).", reading.visible_chars))
    }
}

fn unsubscribe(input: &Input, reading: &Reading, tags: &[crate::merge::Merge]) -> Check {
    let by_tag = tags.iter().any(|t| matches!(t.source, Source::UnsubscribeUrl | Source::PreferencesUrl));
    let by_href = reading.hrefs.iter().any(|h| h.to_ascii_lowercase().contains("unsubscribe"));
    let in_text = input.text.is_some_and(|t| {
        t.split_whitespace().any(|word| {
            let word = word.to_ascii_lowercase();
            word.starts_with("http") && word.contains("unsubscribe")
        })
    });
    if by_tag || by_href || in_text {
        check("unsubscribe", Status::Pass, "The body has an unsubscribe link.")
    } else {
        check(
            "unsubscribe",
            Status::Warn,
            "The body has no unsubscribe link of its own: add {{{UNSUBSCRIBE_URL}}} or {{{PREFERENCES_URL}}} (required for marketing email).",
        )
    }
}
