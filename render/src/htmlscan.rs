//! A small, careful HTML tokenizer: tags with single-, double- or unquoted attributes, comments,
//! and raw-text elements (`script`, `style`, `title`, `textarea`). Used to read HTML for the
//! content checks and the plain-text version of `html` blocks; never to produce HTML.

/// One token of HTML.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token<'a> {
    /// Text between tags, entities not decoded.
    Text(&'a str),
    /// The content of a raw-text element (script, style, title, textarea).
    Raw(&'a str),
    /// A start tag: lower-cased name and attributes (lower-cased names, decoded values), with
    /// where each attribute's value stands in the input (quotes included; empty when it has
    /// none), for rewriting one value in place.
    Open { name: String, attrs: Vec<(String, String)>, spans: Vec<std::ops::Range<usize>> },
    /// An end tag, lower-cased name.
    Close(String),
}

impl Token<'_> {
    /// The decoded value of attribute `name` on a start tag.
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        match self {
            Token::Open { attrs, .. } => attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()),
            _ => None,
        }
    }
}

/// Splits `html` into tokens.
pub(crate) fn tokens(html: &str) -> Vec<Token<'_>> {
    let bytes = html.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut text_start = 0;
    while i < bytes.len() {
        if bytes[i] != b'<' {
            i += 1;
            continue;
        }
        let next = bytes.get(i + 1).copied().unwrap_or(0);
        let tag_start = i;
        let consumed: Option<usize> = if html[i..].starts_with("<!--") {
            Some(html[i + 4..].find("-->").map_or(bytes.len(), |e| i + 4 + e + 3))
        } else if next == b'!' || next == b'?' {
            Some(html[i..].find('>').map_or(bytes.len(), |e| i + e + 1))
        } else if next == b'/' && bytes.get(i + 2).is_some_and(u8::is_ascii_alphabetic) {
            let end = html[i..].find('>').map_or(bytes.len(), |e| i + e + 1);
            let name: String = html[i + 2..end]
                .chars()
                .take_while(|c| !c.is_ascii_whitespace() && *c != '>' && *c != '/')
                .collect::<String>()
                .to_ascii_lowercase();
            push_text(&mut out, &html[text_start..tag_start]);
            out.push(Token::Close(name));
            text_start = end;
            i = end;
            continue;
        } else if next.is_ascii_alphabetic() {
            let (token, end) = open_tag(html, i);
            push_text(&mut out, &html[text_start..tag_start]);
            let raw_name = match &token {
                Token::Open { name, .. } if matches!(name.as_str(), "script" | "style" | "title" | "textarea") => {
                    Some(name.clone())
                }
                _ => None,
            };
            out.push(token);
            i = end;
            text_start = end;
            if let Some(name) = raw_name {
                let close = format!("</{name}");
                let stop = find_ignoring_case(&html[end..], &close).map_or(bytes.len(), |e| end + e);
                if stop > end {
                    out.push(Token::Raw(&html[end..stop]));
                }
                i = stop;
                text_start = stop;
            }
            continue;
        } else {
            None
        };
        match consumed {
            Some(end) => {
                push_text(&mut out, &html[text_start..tag_start]);
                i = end;
                text_start = end;
            }
            None => i += 1,
        }
    }
    push_text(&mut out, &html[text_start..]);
    out
}

fn push_text<'a>(out: &mut Vec<Token<'a>>, text: &'a str) {
    if !text.is_empty() {
        out.push(Token::Text(text));
    }
}

fn find_ignoring_case(haystack: &str, needle: &str) -> Option<usize> {
    let hay = haystack.as_bytes();
    let needle = needle.as_bytes();
    (0..hay.len().saturating_sub(needle.len() - 1)).find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

/// Reads a start tag at `start` (which holds `<`); returns the token and the index after `>`.
fn open_tag(html: &str, start: usize) -> (Token<'_>, usize) {
    let bytes = html.as_bytes();
    let mut i = start + 1;
    while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' && bytes[i] != b'/' {
        i += 1;
    }
    let name = html[start + 1..i].to_ascii_lowercase();
    let mut attrs = Vec::new();
    let mut spans = Vec::new();
    loop {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        if bytes[i] == b'>' {
            i += 1;
            break;
        }
        let name_start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && !matches!(bytes[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        // A lone `/` or `=` that starts nothing: step over it.
        if i == name_start {
            i += 1;
            continue;
        }
        let attr = html[name_start..i].to_ascii_lowercase();
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if bytes.get(j) != Some(&b'=') {
            attrs.push((attr, String::new()));
            spans.push(i..i);
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        let value = match bytes.get(j) {
            Some(&quote @ (b'"' | b'\'')) => {
                let end = html[j + 1..].find(quote as char).map_or(bytes.len(), |e| j + 1 + e);
                let value = &html[j + 1..end];
                i = (end + 1).min(bytes.len());
                value
            }
            _ => {
                let end = html[j..].find(|c: char| c.is_ascii_whitespace() || c == '>').map_or(bytes.len(), |e| j + e);
                let value = &html[j..end];
                i = end;
                value
            }
        };
        attrs.push((attr, decode_entities(value)));
        spans.push(j..i);
    }
    (Token::Open { name, attrs, spans }, i)
}

/// Decodes the character references that matter for reading text and links.
pub(crate) fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest[1..].find(|c: char| !c.is_ascii_alphanumeric() && c != '#').map(|e| e + 1).unwrap_or(rest.len());
        let name = &rest[1..end];
        let decoded = match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some('\u{a0}'),
            "colon" => Some(':'),
            "Tab" => Some('\t'),
            "NewLine" => Some('\n'),
            "zwnj" => Some('\u{200c}'),
            _ => name.strip_prefix('#').and_then(|num| {
                let code = match num.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => num.parse::<u32>().ok(),
                };
                code.and_then(char::from_u32)
            }),
        };
        match decoded {
            Some(ch) => {
                out.push(ch);
                rest = &rest[end..];
                if rest.starts_with(';') {
                    rest = &rest[1..];
                }
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_read_in_every_quoting() {
        let tokens = tokens(r#"<a href='x"y' title="it's" data-x=plain checked>hi</a>"#);
        assert_eq!(tokens[0].attr("href"), Some("x\"y"));
        assert_eq!(tokens[0].attr("title"), Some("it's"));
        assert_eq!(tokens[0].attr("data-x"), Some("plain"));
        assert_eq!(tokens[0].attr("checked"), Some(""));
        assert_eq!(tokens[1], Token::Text("hi"));
        assert_eq!(tokens[2], Token::Close("a".into()));
    }

    #[test]
    fn comments_and_script_bodies_are_not_tags() {
        let tokens = tokens("<!-- <a href=x> --><script>if (a<b) {}</script>ok<br/>");
        assert_eq!(tokens.len(), 5, "{tokens:?}");
        assert_eq!(tokens[1], Token::Raw("if (a<b) {}"));
        assert_eq!(tokens[3], Token::Text("ok"));
    }

    #[test]
    fn entities_are_decoded_in_attributes() {
        let tokens = tokens("<a href=\"java&#x73;cript&colon;x\">");
        assert_eq!(tokens[0].attr("href"), Some("javascript:x"));
    }
}
