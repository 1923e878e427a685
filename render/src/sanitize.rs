//! Sanitising `html` blocks with ammonia, and reading HTML as plain text.

use crate::htmlscan::{Token, decode_entities, tokens};
use std::collections::HashSet;
use std::sync::OnceLock;

fn cleaner() -> &'static ammonia::Builder<'static> {
    static CLEANER: OnceLock<ammonia::Builder<'static>> = OnceLock::new();
    CLEANER.get_or_init(|| {
        let mut builder = ammonia::Builder::default();
        builder
            .add_tags(["font", "center"])
            .add_generic_attributes(["style", "align", "dir", "width", "height", "bgcolor", "valign"])
            .add_tag_attributes("table", ["border", "cellpadding", "cellspacing", "role", "width"])
            .add_tag_attributes("td", ["width", "height", "valign", "bgcolor"])
            .add_tag_attributes("th", ["width", "height", "valign", "bgcolor"])
            .add_tag_attributes("img", ["border"])
            .add_tag_attributes("a", ["target", "title", "name"])
            .add_tag_attributes("font", ["color", "face", "size"])
            .url_schemes(HashSet::from(["http", "https", "mailto"]))
            .link_rel(None);
        builder
    })
}

/// `html` with scripts, event handlers, style sheets (`<style>`, `<link>`), `javascript:` links and
/// embeds (`iframe`, `object`, `embed`) removed; ordinary formatting, tables, `style`
/// attributes, images and http/https/mailto links kept.
pub fn clean(html: &str) -> String {
    cleaner().clean(html).to_string()
}

const BLOCK_TAGS: [&str; 20] = [
    "p", "div", "table", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "hr",
    "center", "section", "article", "header",
];

/// Reads HTML as plain text: block elements on their own lines, `<br>` as a line break, links as
/// `text (href)`, images as their alt text; scripts and styles dropped.
pub fn to_text(html: &str) -> String {
    let mut out = String::new();
    let mut links: Vec<Option<String>> = Vec::new();
    for token in tokens(html) {
        match token {
            Token::Text(text) => {
                let text = decode_entities(text);
                let mut last_space = out.ends_with([' ', '\n']) || out.is_empty();
                for ch in text.chars() {
                    if ch.is_whitespace() {
                        if !last_space {
                            out.push(' ');
                            last_space = true;
                        }
                    } else {
                        out.push(ch);
                        last_space = false;
                    }
                }
            }
            Token::Raw(_) => {}
            Token::Open { ref name, .. } => match name.as_str() {
                "br" => line(&mut out, 1),
                "a" => links.push(token.attr("href").map(str::to_string)),
                "img" => {
                    if let Some(alt) = token.attr("alt").map(str::trim).filter(|a| !a.is_empty()) {
                        out.push_str(alt);
                    }
                }
                "li" => {
                    line(&mut out, 1);
                    out.push_str("- ");
                }
                name if BLOCK_TAGS.contains(&name) => line(&mut out, 2),
                _ => {}
            },
            Token::Close(name) => match name.as_str() {
                "a" => {
                    if let Some(Some(href)) = links.pop()
                        && !out.trim_end().ends_with(href.as_str()) {
                            out.push_str(" (");
                            out.push_str(&href);
                            out.push(')');
                        }
                }
                "td" | "th"
                    if !out.ends_with([' ', '\n']) && !out.is_empty() => {
                        out.push(' ');
                    }
                name if BLOCK_TAGS.contains(&name) || name == "li" => line(&mut out, 2),
                _ => {}
            },
        }
    }
    tidy(&out)
}

/// Ends the current line and leaves up to `blank` line breaks.
fn line(out: &mut String, breaks: usize) {
    while out.ends_with(' ') {
        out.pop();
    }
    if out.is_empty() {
        return;
    }
    let have = out.chars().rev().take_while(|c| *c == '\n').count();
    for _ in have..breaks {
        out.push('\n');
    }
}

/// Trims each line and collapses runs of blank lines.
pub(crate) fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines().map(str::trim) {
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_reads_as_text_with_link_targets() {
        let text = to_text("<h2>Hi</h2><p>Read <a href=\"https://x.test/a\">the post</a>.<br>Bye &amp; thanks</p>");
        assert_eq!(text, "Hi\n\nRead the post (https://x.test/a).\nBye & thanks");
    }

    #[test]
    fn merge_tags_in_links_survive_sanitising() {
        let html = clean("<a href=\"{{{UNSUBSCRIBE_URL}}}\">Unsubscribe</a> {{name}}");
        assert!(html.contains("href=\"{{{UNSUBSCRIBE_URL}}}\""), "{html}");
        assert!(html.contains("{{name}}"), "{html}");
    }
}
