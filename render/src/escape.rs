//! HTML escaping.

/// Appends `text` to `out` with `& < > " '` escaped, safe in text and in quoted attributes.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&text[start..i]);
        out.push_str(rep);
        start = i + 1;
    }
    out.push_str(&text[start..]);
}

/// `text` escaped for HTML.
pub(crate) fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    push_escaped(&mut out, text);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_five_special_characters_are_escaped() {
        assert_eq!(super::escaped(r#"<a href="x">&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    }
}
