//! The email skeleton: head, body wrapper, sections and columns (table-based, inline styles,
//! hybrid columns that stack on narrow screens without a style sheet).

use crate::brand::Style;
use crate::escape::escaped;

/// The container's width in pixels.
pub(crate) const WIDTH: u32 = 600;
/// A section's horizontal padding in pixels.
pub(crate) const SECTION_PAD: u32 = 24;
/// The page background.
pub(crate) const PAGE_BG: &str = "#f3f4f6";

/// Everything before the preheader: doctype, `<html lang>`, head, `<body>`.
pub(crate) fn head(lang: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"{lang}\" dir=\"ltr\" xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:o=\"urn:schemas-microsoft-com:office:office\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\">\n<meta name=\"x-apple-disable-message-reformatting\">\n<meta name=\"format-detection\" content=\"telephone=no,address=no,email=no,date=no,url=no\">\n<meta name=\"color-scheme\" content=\"light\">\n<!--[if mso]><noscript><xml><o:OfficeDocumentSettings><o:PixelsPerInch>96</o:PixelsPerInch></o:OfficeDocumentSettings></xml></noscript><![endif]-->\n</head>\n<body style=\"margin:0;padding:0;word-spacing:normal;-webkit-text-size-adjust:100%;-ms-text-size-adjust:100%;background-color:{PAGE_BG};\">",
        lang = escaped(lang)
    )
}

/// The hidden preview text's opening; close with [`PREHEADER_CLOSE`].
pub(crate) const PREHEADER_OPEN: &str = "<div style=\"display:none;font-size:1px;line-height:1px;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all;color:transparent;\">";

/// Padding after the preview text (so body text does not leak into the preview), and the close.
pub(crate) fn preheader_close() -> String {
    let mut out = String::with_capacity(700);
    for _ in 0..40 {
        out.push_str("&#847;&zwnj;&nbsp;");
    }
    out.push_str("</div>");
    out
}

/// From after the preheader to the first section: wrapper tables and the logo.
pub(crate) fn body_open(lang: &str, style: &Style, logo: bool) -> String {
    let mut out = format!(
        "\n<div role=\"article\" aria-roledescription=\"email\" lang=\"{lang}\" style=\"background-color:{PAGE_BG};\">\n<table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\" style=\"background-color:{PAGE_BG};\"><tr><td align=\"center\" style=\"padding:24px 12px;\">\n<!--[if mso]><table role=\"presentation\" width=\"{WIDTH}\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\" align=\"center\"><tr><td><![endif]-->\n<table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\" style=\"max-width:{WIDTH}px;margin:0 auto;background-color:#ffffff;border-radius:8px;\">\n",
        lang = escaped(lang)
    );
    if let (true, Some(logo)) = (logo, &style.logo) {
        let alt = style.company.as_deref().unwrap_or("Logo");
        out.push_str(&format!(
            "<tr><td align=\"center\" style=\"padding:24px {SECTION_PAD}px 8px;\"><img src=\"{}\" alt=\"{}\" width=\"140\" style=\"display:block;width:140px;max-width:100%;height:auto;border:0;\"></td></tr>\n",
            escaped(logo),
            escaped(alt)
        ));
    }
    out
}

/// The end of the body and document.
pub(crate) const BODY_CLOSE: &str = "</table>\n<!--[if mso]></td></tr></table><![endif]-->\n</td></tr></table>\n</div>\n</body>\n</html>\n";

/// A section row's opening.
pub(crate) fn section_open(background: Option<&str>) -> String {
    match background {
        Some(bg) => format!(
            "<tr><td bgcolor=\"{bg}\" style=\"padding:12px {SECTION_PAD}px;background-color:{bg};\">"
        ),
        None => format!("<tr><td style=\"padding:12px {SECTION_PAD}px;\">"),
    }
}

/// A section row's close.
pub(crate) const SECTION_CLOSE: &str = "</td></tr>\n";

/// Opens column `index` of `count` (hybrid: an inline-block div, a table cell in Outlook).
pub(crate) fn column_open(index: usize, count: usize) -> String {
    if count <= 1 {
        return String::new();
    }
    let width = column_width(count);
    let mso = if index == 0 {
        format!("<!--[if mso]><table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\"><tr><td width=\"{width}\" valign=\"top\"><![endif]-->")
    } else {
        format!("<!--[if mso]></td><td width=\"{width}\" valign=\"top\"><![endif]-->")
    };
    format!(
        "{mso}<div class=\"h-col\" style=\"display:inline-block;width:100%;max-width:{width}px;vertical-align:top;\"><div style=\"padding:0 8px;\">"
    )
}

/// Closes column `index` of `count`.
pub(crate) fn column_close(index: usize, count: usize) -> &'static str {
    match (count <= 1, index + 1 == count) {
        (true, _) => "",
        (false, true) => "</div></div><!--[if mso]></td></tr></table><![endif]-->",
        (false, false) => "</div></div>",
    }
}

/// A column's width in pixels.
pub(crate) fn column_width(count: usize) -> u32 {
    (WIDTH - 2 * SECTION_PAD) / u32::try_from(count.max(1)).unwrap_or(1)
}

/// The usable content width of a column.
pub(crate) fn content_width(count: usize) -> u32 {
    if count <= 1 { column_width(1) } else { column_width(count) - 16 }
}
