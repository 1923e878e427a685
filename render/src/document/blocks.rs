//! Each block type's fields, HTML and plain text.

use super::{Compiler, LIMIT_LINKS, LinkKind};
use crate::escape::{escaped, push_escaped};
use crate::parse::Segment;
use serde_json::{Map, Value};

/// The block types with content of their own (`group`, `saved` and `preheader` are handled by the walker).
pub(crate) const KINDS: [&str; 13] = [
    "heading", "text", "image", "button", "divider", "spacer", "social", "footer", "card", "video", "menu", "countdown",
    "html",
];

const TEXT_COLOR: &str = "#374151";
const MUTED: &str = "#6b7280";
const BORDER: &str = "#e5e7eb";

fn html_text(text: &str, out: &mut String) {
    push_escaped(out, text);
}

/// Escapes, and turns line breaks into `<br>`.
fn html_lines(text: &str, out: &mut String) {
    let mut first = true;
    for line in text.split('\n') {
        if !first {
            out.push_str("<br>");
        }
        first = false;
        push_escaped(out, line.trim_end_matches('\r'));
    }
}

fn raw(text: &str, out: &mut String) {
    out.push_str(text);
}

fn network_name(network: &str) -> Option<&'static str> {
    Some(match network {
        "facebook" => "Facebook",
        "instagram" => "Instagram",
        "x" | "twitter" => "X",
        "linkedin" => "LinkedIn",
        "youtube" => "YouTube",
        "tiktok" => "TikTok",
        "github" => "GitHub",
        "mastodon" => "Mastodon",
        "bluesky" => "Bluesky",
        "threads" => "Threads",
        "pinterest" => "Pinterest",
        "discord" => "Discord",
        "website" => "Website",
        _ => return None,
    })
}

/// Scanned template text of a field.
type Text<'t> = Vec<Segment<'t>>;

impl Compiler<'_> {
    /// Writes template text to the HTML program (escaped) and the text program (as is).
    fn both(&mut self, segments: &[Segment<'_>]) {
        self.html.segments(segments, true, &html_text);
        self.text.segments(segments, false, &raw);
    }

    /// A required or optional template field, scanned.
    fn field<'v>(&mut self, map: &'v Map<String, Value>, key: &str, path: &str, required: bool) -> Option<Text<'v>> {
        let text = self.string(map, key, path, required)?;
        Some(self.template(text, &format!("{path}.{key}")))
    }

    /// A link field, scanned.
    fn link_field<'v>(&mut self, map: &'v Map<String, Value>, key: &str, path: &str, required: bool, kind: LinkKind) -> Option<Text<'v>> {
        let text = self.link(map, key, path, required, kind)?;
        Some(self.template(text, &format!("{path}.{key}")))
    }

    fn block_open(&mut self, align: &str, padding: &str) {
        self.html.lit(&format!(
            "<table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\"><tr><td align=\"{align}\" style=\"padding:{padding};\">"
        ));
    }

    fn block_close(&mut self) {
        self.html.lit("</td></tr></table>\n");
        self.text.lit("\n\n");
    }

    fn anchor_open(&mut self, href: &[Segment<'_>], style: &str) {
        self.html.lit("<a href=\"");
        self.html.segments(href, true, &html_text);
        self.html.lit(&format!("\" target=\"_blank\" style=\"{style}\">"));
    }

    /// Writes one block's content (its rules are already applied).
    pub(crate) fn content(&mut self, kind: &str, map: &Map<String, Value>, path: &str) {
        match kind {
            "heading" => self.heading(map, path),
            "text" => self.paragraphs(map, path),
            "image" => self.image(map, path),
            "button" => self.button(map, path),
            "divider" => self.divider(map, path),
            "spacer" => self.spacer(map, path),
            "social" => self.links(map, path, "links", true),
            "menu" => self.links(map, path, "items", false),
            "footer" => self.footer(map, path),
            "card" => self.card(map, path),
            "video" => self.video(map, path),
            "countdown" => self.countdown(map, path),
            _ => self.html_block(map, path),
        }
    }

    fn heading(&mut self, map: &Map<String, Value>, path: &str) {
        let text = self.field(map, "text", path, true);
        let level = self.number(map, "level", path, 1..=3).unwrap_or(1);
        let align = self.align(map, path, "left");
        let Some(text) = text else { return };
        let size = [28, 22, 18][(level - 1) as usize];
        self.block_open(align, "8px 0");
        self.html.lit(&format!(
            "<h{level} style=\"margin:0;font-family:{font};font-size:{size}px;line-height:1.3;font-weight:700;color:{color};text-align:{align};\">",
            font = self.style.font,
            color = self.style.primary
        ));
        self.both(&text);
        self.html.lit(&format!("</h{level}>"));
        let written = map.get("text").and_then(Value::as_str).map_or(0, |t| t.chars().count()).clamp(3, 60);
        let underline = if level == 1 { "=" } else { "-" };
        self.text.lit(&format!("\n{}", underline.repeat(written)));
        self.block_close();
    }

    fn paragraphs(&mut self, map: &Map<String, Value>, path: &str) {
        let align = self.align(map, path, "left");
        let Some(text) = self.string(map, "text", path, true) else { return };
        let text = text.replace("\r\n", "\n");
        let paragraphs: Vec<&str> = text.split("\n\n").map(|p| p.trim_matches('\n')).filter(|p| !p.trim().is_empty()).collect();
        self.block_open(align, "4px 0");
        let last = paragraphs.len().saturating_sub(1);
        let field_path = format!("{path}.text");
        for (i, paragraph) in paragraphs.iter().enumerate() {
            let segments = self.template(paragraph, &field_path);
            let margin = if i == last { "0" } else { "0 0 12px 0" };
            self.html.lit(&format!(
                "<p style=\"margin:{margin};font-family:{font};font-size:16px;line-height:1.6;color:{TEXT_COLOR};text-align:{align};\">",
                font = self.style.font
            ));
            self.html.segments(&segments, true, &html_lines);
            self.html.lit("</p>");
            if i > 0 {
                self.text.lit("\n\n");
            }
            self.text.segments(&segments, false, &raw);
        }
        self.block_close();
    }

    /// `<img>` (inside a link when `href` is given).
    fn img(&mut self, src: &[Segment<'_>], alt: &[Segment<'_>], href: Option<&[Segment<'_>]>, width: u32, center: bool, radius: &str) {
        if let Some(href) = href {
            self.anchor_open(href, "text-decoration:none;");
        }
        self.html.lit("<img src=\"");
        self.html.segments(src, true, &html_text);
        self.html.lit("\" alt=\"");
        self.html.segments(alt, true, &html_text);
        let margin = if center { "margin:0 auto;" } else { "" };
        self.html.lit(&format!(
            "\" width=\"{width}\" style=\"display:block;width:100%;max-width:{width}px;height:auto;border:0;outline:none;text-decoration:none;{margin}{radius}\">"
        ));
        if href.is_some() {
            self.html.lit("</a>");
        }
    }

    /// The text version of a link: `label: target`, or the target alone.
    fn text_link(&mut self, label: &[Segment<'_>], target: &[Segment<'_>]) {
        if !label.is_empty() {
            self.text.segments(label, false, &raw);
            self.text.lit(": ");
        }
        self.text.segments(target, false, &raw);
    }

    fn image(&mut self, map: &Map<String, Value>, path: &str) {
        let src = self.link_field(map, "src", path, true, LinkKind::Image);
        let alt = self.field(map, "alt", path, false).unwrap_or_default();
        let href = self.link_field(map, "href", path, false, LinkKind::Link);
        let width = self.number(map, "width", path, 1..=600).map_or(self.width, |w| (w as u32).min(self.width));
        let align = self.align(map, path, "center");
        let Some(src) = src else { return };
        self.block_open(align, "8px 0");
        self.img(&src, &alt, href.as_deref(), width, align == "center", "");
        match &href {
            Some(href) => self.text_link(&alt, href),
            None => self.text.segments(&alt, false, &raw),
        }
        self.block_close();
    }

    fn button_html(&mut self, label: &[Segment<'_>], url: &[Segment<'_>], color: &str) {
        let radius = self.style.radius;
        self.html.lit(&format!(
            "<table role=\"presentation\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\" style=\"border-collapse:separate;display:inline-table;\"><tr><td align=\"center\" bgcolor=\"{color}\" style=\"border-radius:{radius};background-color:{color};\">"
        ));
        let style = format!(
            "display:inline-block;padding:12px 24px;font-family:{font};font-size:16px;font-weight:600;line-height:1.2;color:#ffffff;text-decoration:none;border-radius:{radius};background-color:{color};",
            font = self.style.font
        );
        self.anchor_open(url, &style);
        self.html.segments(label, true, &html_text);
        self.html.lit("</a></td></tr></table>");
    }

    fn button(&mut self, map: &Map<String, Value>, path: &str) {
        let label = self.field(map, "label", path, true);
        let url = self.link_field(map, "url", path, true, LinkKind::Link);
        let color = self.color(map, "color", path).unwrap_or_else(|| self.style.accent.clone());
        let align = self.align(map, path, "center");
        let (Some(label), Some(url)) = (label, url) else { return };
        self.block_open(align, "12px 0");
        self.button_html(&label, &url, &color);
        self.text_link(&label, &url);
        self.block_close();
    }

    fn divider(&mut self, map: &Map<String, Value>, path: &str) {
        let color = self.color(map, "color", path).unwrap_or_else(|| BORDER.to_string());
        self.block_open("left", "12px 0");
        self.html.lit(&format!(
            "<table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\"><tr><td style=\"border-top:1px solid {color};font-size:1px;line-height:1px;\">&nbsp;</td></tr></table>"
        ));
        self.text.lit("----------");
        self.block_close();
    }

    fn spacer(&mut self, map: &Map<String, Value>, path: &str) {
        let height = self.number(map, "height", path, 4..=200).unwrap_or(24);
        self.html.lit(&format!(
            "<table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\"><tr><td height=\"{height}\" style=\"height:{height}px;font-size:1px;line-height:{height}px;\">&nbsp;</td></tr></table>\n"
        ));
    }

    /// `social` (links of `{network, url, label?}`) and `menu` (items of `{label, url}`): a row of links.
    fn links(&mut self, map: &Map<String, Value>, path: &str, key: &str, social: bool) {
        let align = self.align(map, path, "center");
        let Some(list) = map.get(key).and_then(Value::as_array).filter(|l| !l.is_empty() && l.len() <= LIMIT_LINKS) else {
            self.problem(format!("{path}.{key}"), format!("must be a list of 1 to {LIMIT_LINKS} links"));
            return;
        };
        let mut links = Vec::new();
        for (i, entry) in list.iter().enumerate() {
            let entry_path = format!("{path}.{key}[{i}]");
            let Some(entry) = entry.as_object() else {
                self.problem(entry_path, "a link is an object");
                continue;
            };
            let url = self.link_field(entry, "url", &entry_path, true, LinkKind::Link);
            let label: Option<Text<'_>> = if social {
                let network = self.string(entry, "network", &entry_path, false).map(str::to_ascii_lowercase);
                match (self.field(entry, "label", &entry_path, false), network.as_deref().and_then(network_name)) {
                    (Some(label), _) => Some(label),
                    (None, Some(name)) => Some(vec![Segment::Lit(name)]),
                    (None, None) => {
                        self.problem(format!("{entry_path}.network"), "name a known network (facebook, instagram, x, linkedin, youtube, tiktok, github, mastodon, bluesky, threads, pinterest, discord, website) or give a label");
                        None
                    }
                }
            } else {
                self.field(entry, "label", &entry_path, true)
            };
            if let (Some(label), Some(url)) = (label, url) {
                links.push((label, url));
            }
        }
        self.block_open(align, "8px 0");
        self.html.lit(&format!(
            "<p style=\"margin:0;font-family:{font};font-size:14px;line-height:1.8;color:{MUTED};text-align:{align};\">",
            font = self.style.font
        ));
        let link_style = format!("color:{};text-decoration:none;font-weight:600;", self.style.accent);
        for (i, (label, url)) in links.iter().enumerate() {
            if i > 0 {
                self.html.lit(if social { "&nbsp;&nbsp;&middot;&nbsp;&nbsp;" } else { "&nbsp;&nbsp;|&nbsp;&nbsp;" });
                self.text.lit("\n");
            }
            self.anchor_open(url, &link_style);
            self.html.segments(label, true, &html_text);
            self.html.lit("</a>");
            self.text_link(label, url);
        }
        self.html.lit("</p>");
        self.block_close();
    }

    fn footer(&mut self, map: &Map<String, Value>, path: &str) {
        let own = self.string(map, "text", path, false).map(|t| t.replace("\r\n", "\n"));
        let own_segments = own.as_deref().map(|t| self.template(t, &format!("{path}.text")));
        let unsubscribe = self.flag(map, "unsubscribe", path);
        let preferences = self.flag(map, "preferences", path);
        let align = self.align(map, path, "center");
        self.block_open(align, "16px 0 8px");
        self.html.lit(&format!(
            "<p style=\"margin:0;font-family:{font};font-size:12px;line-height:1.6;color:{MUTED};text-align:{align};\">",
            font = self.style.font
        ));
        let mut lines = 0;
        let brand_lines = [
            self.style.company.clone().map(|c| format!("<strong>{}</strong>", escaped(&c))).zip(self.style.company.clone()),
            self.style.address.clone().map(|a| { let mut s = String::new(); html_lines(&a, &mut s); s }).zip(self.style.address.clone()),
            self.style.footer_text.clone().map(|f| { let mut s = String::new(); html_lines(&f, &mut s); s }).zip(self.style.footer_text.clone()),
        ];
        for (html, text) in brand_lines.into_iter().flatten() {
            if lines > 0 {
                self.html.lit("<br>");
                self.text.lit("\n");
            }
            self.html.lit(&html);
            self.text.lit(&text);
            lines += 1;
        }
        if let Some(segments) = &own_segments {
            if lines > 0 {
                self.html.lit("<br>");
                self.text.lit("\n");
            }
            self.html.segments(segments, true, &html_lines);
            self.text.segments(segments, false, &raw);
            lines += 1;
        }
        let link_style = format!("color:{MUTED};text-decoration:underline;");
        let mut links = Vec::new();
        if unsubscribe {
            links.push(("Unsubscribe", "{{{UNSUBSCRIBE_URL}}}"));
        }
        if preferences {
            links.push(("Manage preferences", "{{{PREFERENCES_URL}}}"));
        }
        for (i, (label, tag)) in links.into_iter().enumerate() {
            let (target, _) = crate::parse::scan(tag);
            if i == 0 && lines > 0 {
                self.html.lit("<br><br>");
                self.text.lit("\n\n");
            } else if i > 0 {
                self.html.lit("&nbsp;&nbsp;&middot;&nbsp;&nbsp;");
                self.text.lit("\n");
            }
            self.anchor_open(&target, &link_style);
            self.html.lit(label);
            self.html.lit("</a>");
            self.text_link(&[Segment::Lit(label)], &target);
        }
        self.html.lit("</p>");
        self.block_close();
    }

    fn card(&mut self, map: &Map<String, Value>, path: &str) {
        let image = match map.get("image").filter(|v| !v.is_null()) {
            None => None,
            Some(Value::Object(image)) => {
                let image_path = format!("{path}.image");
                let src = self.link_field(image, "src", &image_path, true, LinkKind::Image);
                let alt = self.field(image, "alt", &image_path, false).unwrap_or_default();
                src.map(|src| (src, alt))
            }
            Some(_) => {
                self.problem(format!("{path}.image"), "must be an object { src, alt }");
                None
            }
        };
        let heading = self.field(map, "heading", path, true);
        let text = self.field(map, "text", path, false);
        let button = match map.get("button").filter(|v| !v.is_null()) {
            None => None,
            Some(Value::Object(button)) => {
                let button_path = format!("{path}.button");
                let label = self.field(button, "label", &button_path, true);
                let url = self.link_field(button, "url", &button_path, true, LinkKind::Link);
                label.zip(url)
            }
            Some(_) => {
                self.problem(format!("{path}.button"), "must be an object { label, url }");
                None
            }
        };
        let Some(heading) = heading else { return };
        self.block_open("left", "8px 0");
        self.html.lit(&format!(
            "<table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\" style=\"border:1px solid {BORDER};border-radius:8px;border-collapse:separate;\">"
        ));
        if let Some((src, alt)) = &image {
            self.html.lit("<tr><td style=\"padding:0;\">");
            let width = self.width.saturating_sub(2);
            self.img(src, alt, None, width, false, "border-radius:8px 8px 0 0;");
            self.html.lit("</td></tr>");
            if !alt.is_empty() {
                self.text.segments(alt, false, &raw);
                self.text.lit("\n");
            }
        }
        self.html.lit(&format!(
            "<tr><td style=\"padding:16px 20px;\"><h3 style=\"margin:0 0 8px 0;font-family:{font};font-size:18px;line-height:1.3;font-weight:700;color:{color};\">",
            font = self.style.font,
            color = self.style.primary
        ));
        self.both(&heading);
        self.html.lit("</h3>");
        if let Some(text) = &text {
            self.html.lit(&format!(
                "<p style=\"margin:0 0 12px 0;font-family:{font};font-size:15px;line-height:1.6;color:{TEXT_COLOR};\">",
                font = self.style.font
            ));
            self.html.segments(text, true, &html_lines);
            self.html.lit("</p>");
            self.text.lit("\n");
            self.text.segments(text, false, &raw);
        }
        if let Some((label, url)) = &button {
            let accent = self.style.accent.clone();
            self.button_html(label, url, &accent);
            self.text.lit("\n");
            self.text_link(label, url);
        }
        self.html.lit("</td></tr></table>");
        self.block_close();
    }

    fn video(&mut self, map: &Map<String, Value>, path: &str) {
        let url = self.link_field(map, "url", path, true, LinkKind::Link);
        let thumbnail = self.link_field(map, "thumbnail", path, true, LinkKind::Image);
        let alt = self.field(map, "alt", path, false).unwrap_or_else(|| vec![Segment::Lit("Play video")]);
        let caption = self.field(map, "caption", path, false);
        let (Some(url), Some(thumbnail)) = (url, thumbnail) else { return };
        self.block_open("center", "8px 0");
        let width = self.width;
        self.img(&thumbnail, &alt, Some(&url), width, true, "");
        if let Some(caption) = &caption {
            self.html.lit(&format!(
                "<p style=\"margin:8px 0 0 0;font-family:{font};font-size:14px;line-height:1.5;text-align:center;\">",
                font = self.style.font
            ));
            self.anchor_open(&url, &format!("color:{};text-decoration:none;font-weight:600;", self.style.accent));
            self.html.lit("&#9654;&nbsp;");
            self.html.segments(caption, true, &html_text);
            self.html.lit("</a></p>");
        }
        let label = caption.unwrap_or(alt);
        self.text_link(&label, &url);
        self.block_close();
    }

    /// A static rendering of the target date (UTC): email clients can't run a live timer.
    fn countdown(&mut self, map: &Map<String, Value>, path: &str) {
        let label = self.field(map, "label", path, false);
        let target = self.string(map, "target", path, true);
        let Some(target) = target else { return };
        let Some(instant) = crate::format::parse_instant(target) else {
            self.problem(format!("{path}.target"), "must be an RFC 3339 instant or a YYYY-MM-DD date");
            return;
        };
        let day = crate::format::date_text(instant.date_naive(), crate::format::DateStyle::Long);
        let when = if target.trim().len() > 10 { format!("{day}, {} UTC", instant.format("%H:%M")) } else { day };
        self.block_open("center", "12px 0");
        if let Some(label) = &label {
            self.html.lit(&format!(
                "<p style=\"margin:0 0 4px 0;font-family:{font};font-size:13px;line-height:1.4;letter-spacing:0.08em;text-transform:uppercase;color:{MUTED};text-align:center;\">",
                font = self.style.font
            ));
            self.html.segments(label, true, &html_text);
            self.html.lit("</p>");
            self.text.segments(label, false, &raw);
            self.text.lit(" ");
        }
        self.html.lit(&format!(
            "<p style=\"margin:0;font-family:{font};font-size:26px;line-height:1.3;font-weight:700;color:{color};text-align:center;\">{when}</p>",
            font = self.style.font,
            color = self.style.primary,
            when = escaped(&when)
        ));
        self.text.lit(&when);
        self.block_close();
    }

    fn html_block(&mut self, map: &Map<String, Value>, path: &str) {
        let Some(source) = self.string(map, "html", path, true) else { return };
        let clean = crate::sanitize::clean(source);
        let field_path = format!("{path}.html");
        let segments = self.template(&clean, &field_path);
        self.block_open("left", "8px 0");
        self.html.lit(&format!("<div style=\"font-family:{};font-size:16px;line-height:1.6;color:{TEXT_COLOR};\">", self.style.font));
        self.html.segments(&segments, false, &raw);
        self.html.lit("</div>");
        let text = crate::sanitize::to_text(&clean);
        let (segments, _) = crate::parse::scan(&text);
        self.text.segments(&segments, false, &raw);
        self.block_close();
    }
}
