//! Splits template text into literal text, `{{key}}` placeholders and `{{{...}}}` merge tags.

use crate::merge::{self, Merge, Parsed};

/// One piece of template text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Segment<'a> {
    /// Text as written.
    Lit(&'a str),
    /// A `{{key}}` placeholder; `raw` is the text as written.
    Var { key: &'a str, raw: &'a str },
    /// A merge tag; `raw` is the text as written.
    Merge { tag: Merge, raw: &'a str },
}

/// A placeholder key: `^[A-Za-z0-9_]+$`.
pub(crate) fn is_key(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Scans `text`. Text that looks like `{{` but is not a valid placeholder or merge tag stays
/// literal; a merge tag whose suffix can't be read is reported in the second list (and kept literal).
pub(crate) fn scan(text: &str) -> (Vec<Segment<'_>>, Vec<String>) {
    let mut segments = Vec::new();
    let mut problems = Vec::new();
    let bytes = text.as_bytes();
    let mut lit_start = 0;
    let mut i = 0;
    while let Some(offset) = text[i..].find("{{") {
        let at = i + offset;
        if bytes.get(at + 2) == Some(&b'{') {
            if let Some(end) = text[at + 3..].find("}}}") {
                let inner = &text[at + 3..at + 3 + end];
                let stop = at + 3 + end + 3;
                match merge::parse(inner) {
                    Parsed::Tag(tag) => {
                        if lit_start < at {
                            segments.push(Segment::Lit(&text[lit_start..at]));
                        }
                        segments.push(Segment::Merge { tag, raw: &text[at..stop] });
                        i = stop;
                        lit_start = stop;
                        continue;
                    }
                    Parsed::Bad(message) => {
                        problems.push(message);
                        i = stop;
                        continue;
                    }
                    Parsed::NotATag => {}
                }
            }
            i = at + 1;
            continue;
        }
        if let Some(end) = text[at + 2..].find("}}") {
            let inner = &text[at + 2..at + 2 + end];
            let key = inner.trim_matches([' ', '\t']);
            if is_key(key) {
                let stop = at + 2 + end + 2;
                if lit_start < at {
                    segments.push(Segment::Lit(&text[lit_start..at]));
                }
                segments.push(Segment::Var { key, raw: &text[at..stop] });
                i = stop;
                lit_start = stop;
                continue;
            }
        }
        i = at + 1;
    }
    if lit_start < text.len() {
        segments.push(Segment::Lit(&text[lit_start..]));
    }
    (segments, problems)
}

/// Whether `text` starts with a placeholder or merge tag.
pub(crate) fn starts_with_tag(text: &str) -> bool {
    matches!(scan(text).0.first(), Some(Segment::Var { .. } | Segment::Merge { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<String> {
        scan(text)
            .0
            .iter()
            .map(|s| match s {
                Segment::Lit(t) => format!("L({t})"),
                Segment::Var { key, .. } => format!("V({key})"),
                Segment::Merge { raw, .. } => format!("M({raw})"),
            })
            .collect()
    }

    #[test]
    fn placeholders_are_read_with_either_spacing() {
        assert_eq!(kinds("Hi {{name}} and {{ other }}!"), ["L(Hi )", "V(name)", "L( and )", "V(other)", "L(!)"]);
    }

    #[test]
    fn invalid_braces_stay_literal() {
        assert_eq!(kinds("{{ not valid! }} {{}} {{a b}}"), ["L({{ not valid! }} {{}} {{a b}})"]);
        assert_eq!(kinds("{{{name}}"), ["L({)", "V(name)"]);
        assert_eq!(kinds("{{name}}}"), ["V(name)", "L(})"]);
    }

    #[test]
    fn merge_tags_are_read_beside_placeholders() {
        assert_eq!(kinds("{{{FIRST_NAME|there}}}, {{x}}"), ["M({{{FIRST_NAME|there}}})", "L(, )", "V(x)"]);
    }

    #[test]
    fn an_unreadable_suffix_is_a_problem() {
        let (_, problems) = scan("{{{event.n|number:9}}}");
        assert_eq!(problems.len(), 1);
    }
}
