//! Rewriting a rendered HTML body for open and click tracking: each link's `href` replaced in
//! place (the rest of the markup untouched, byte for byte), and an open pixel before `</body>`.

use crate::escape::escaped;
use crate::htmlscan::{Token, tokens};

/// `html` with the `href` of every `<a>` (and `<area>`) that `track` maps to a new address
/// replaced by that address. `track` sees the link as a mail client reads it (character
/// references decoded); a link it answers `None` for is left exactly as written.
pub fn rewrite_links(html: &str, mut track: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(html.len() + html.len() / 4);
    let mut copied = 0;
    for token in tokens(html) {
        let Token::Open { name, attrs, spans } = token else { continue };
        if name != "a" && name != "area" {
            continue;
        }
        let Some(index) = attrs.iter().position(|(attr, _)| attr == "href") else { continue };
        let span = spans[index].clone();
        if span.is_empty() {
            continue;
        }
        if let Some(tracked) = track(&attrs[index].1) {
            out.push_str(&html[copied..span.start]);
            out.push('"');
            out.push_str(&escaped(&tracked));
            out.push('"');
            copied = span.end;
        }
    }
    out.push_str(&html[copied..]);
    out
}

/// `html` with an invisible 1×1 image loading `pixel_url`, placed before the last `</body>` (at
/// the end when there is none).
pub fn add_open_pixel(html: &str, pixel_url: &str) -> String {
    let image = format!(
        "<img src=\"{}\" width=\"1\" height=\"1\" alt=\"\" style=\"display:block;width:1px;height:1px;border:0\">",
        escaped(pixel_url)
    );
    let at = html.to_ascii_lowercase().rfind("</body").unwrap_or(html.len());
    let mut out = String::with_capacity(html.len() + image.len());
    out.push_str(&html[..at]);
    out.push_str(&image);
    out.push_str(&html[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(href: &str) -> Option<String> {
        href.starts_with("https://").then(|| format!("https://t.test/c?u={href}"))
    }

    #[test]
    fn links_are_rewritten_in_place_and_everything_else_is_kept_byte_for_byte() {
        let html = "<p class=x>Hi &amp; welcome</p><A HREF='https://a.test/?x=1&amp;y=2' title=\"t\">one</A>\
                    <a href=mailto:me@a.test>mail</a><a href=https://b.test>two</a><a name=top>anchor</a>";
        let out = rewrite_links(html, track);
        assert_eq!(
            out,
            "<p class=x>Hi &amp; welcome</p><A HREF=\"https://t.test/c?u=https://a.test/?x=1&amp;y=2\" title=\"t\">one</A>\
             <a href=mailto:me@a.test>mail</a><a href=\"https://t.test/c?u=https://b.test\">two</a><a name=top>anchor</a>"
        );
    }

    #[test]
    fn links_inside_comments_and_scripts_are_not_links() {
        let html = "<!-- <a href=\"https://a.test\"> --><script>var a='<a href=\"https://b.test\">'</script>";
        assert_eq!(rewrite_links(html, track), html);
    }

    #[test]
    fn the_pixel_goes_before_the_closing_body_or_at_the_end() {
        assert_eq!(
            add_open_pixel("<html><body><p>x</p></BODY></html>", "https://t.test/o?a&b"),
            "<html><body><p>x</p><img src=\"https://t.test/o?a&amp;b\" width=\"1\" height=\"1\" alt=\"\" \
             style=\"display:block;width:1px;height:1px;border:0\"></BODY></html>"
        );
        assert!(add_open_pixel("<p>x</p>", "https://t.test/o").starts_with("<p>x</p><img src="));
    }
}
