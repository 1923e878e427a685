//! The team's brand, and the resolved style a document compiles with.

use serde::{Deserialize, Serialize};

/// A team's brand; `None` in any field means the plain default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Brand {
    /// A logo shown at the top of every block document (unless the document says `"logo": false`).
    pub logo_url: Option<String>,
    /// Headings and the countdown (default `#111827`).
    pub primary_color: Option<String>,
    /// Buttons and links (default `#2563eb`).
    pub accent_color: Option<String>,
    /// `system`, `helvetica`, `arial`, `verdana`, `georgia`, `times` or `courier` (default `system`).
    pub font: Option<String>,
    /// `square`, `rounded` or `pill` (default `rounded`).
    pub button_style: Option<String>,
    /// Shown in `footer` blocks.
    pub company_name: Option<String>,
    /// Shown in `footer` blocks.
    pub address: Option<String>,
    /// Shown in `footer` blocks.
    pub footer_text: Option<String>,
}

/// The default primary colour.
pub const DEFAULT_PRIMARY: &str = "#111827";
/// The default accent colour.
pub const DEFAULT_ACCENT: &str = "#2563eb";
/// The font names a brand may use.
pub const FONTS: [&str; 7] = ["system", "helvetica", "arial", "verdana", "georgia", "times", "courier"];
/// The button styles a brand may use.
pub const BUTTON_STYLES: [&str; 3] = ["square", "rounded", "pill"];

/// Whether `text` is a `#rgb` or `#rrggbb` colour.
pub(crate) fn is_color(text: &str) -> bool {
    text.strip_prefix('#')
        .is_some_and(|hex| matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The CSS font stack of a font name (unknown names get the system stack).
pub(crate) fn font_stack(name: Option<&str>) -> &'static str {
    match name.unwrap_or("system") {
        "helvetica" => "Helvetica,Arial,sans-serif",
        "arial" => "Arial,Helvetica,sans-serif",
        "verdana" => "Verdana,Geneva,sans-serif",
        "georgia" => "Georgia,'Times New Roman',Times,serif",
        "times" => "'Times New Roman',Times,serif",
        "courier" => "'Courier New',Courier,monospace",
        _ => "-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif",
    }
}

impl Brand {
    /// What is wrong with this brand, if anything (paths `brand.<field>`). Compiling never fails
    /// on a brand: a bad value falls back to the default.
    pub fn problems(&self) -> Vec<crate::Problem> {
        let mut problems = Vec::new();
        for (name, value) in [("primary_color", &self.primary_color), ("accent_color", &self.accent_color)] {
            if value.as_deref().is_some_and(|c| !is_color(c)) {
                problems.push(crate::Problem::new(format!("brand.{name}"), "must be a #rgb or #rrggbb colour"));
            }
        }
        if self.font.as_deref().is_some_and(|f| !FONTS.contains(&f)) {
            problems.push(crate::Problem::new("brand.font", format!("must be one of {}", FONTS.join(", "))));
        }
        if self.button_style.as_deref().is_some_and(|b| !BUTTON_STYLES.contains(&b)) {
            problems.push(crate::Problem::new("brand.button_style", "must be square, rounded or pill"));
        }
        if self.logo_url.as_deref().is_some_and(|u| !is_web_url(u)) {
            problems.push(crate::Problem::new("brand.logo_url", "must be an http or https address"));
        }
        problems
    }
}

/// Whether `text` is an absolute http(s) address.
pub(crate) fn is_web_url(text: &str) -> bool {
    let lower = text.trim().to_ascii_lowercase();
    ["https://", "http://"].iter().any(|p| lower.strip_prefix(p).is_some_and(|rest| !rest.is_empty()))
}

/// The brand resolved to values a document compiles with.
pub(crate) struct Style {
    pub(crate) primary: String,
    pub(crate) accent: String,
    pub(crate) font: &'static str,
    pub(crate) radius: &'static str,
    pub(crate) logo: Option<String>,
    pub(crate) company: Option<String>,
    pub(crate) address: Option<String>,
    pub(crate) footer_text: Option<String>,
}

impl Style {
    /// Resolves a brand; bad values fall back to the defaults.
    pub(crate) fn of(brand: &Brand) -> Style {
        let color = |c: &Option<String>, default: &str| c.as_deref().filter(|c| is_color(c)).unwrap_or(default).to_string();
        let text = |t: &Option<String>| t.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string);
        Style {
            primary: color(&brand.primary_color, DEFAULT_PRIMARY),
            accent: color(&brand.accent_color, DEFAULT_ACCENT),
            font: font_stack(brand.font.as_deref()),
            radius: match brand.button_style.as_deref() {
                Some("square") => "0",
                Some("pill") => "9999px",
                _ => "6px",
            },
            logo: brand.logo_url.as_deref().filter(|u| is_web_url(u)).map(str::to_string),
            company: text(&brand.company_name),
            address: text(&brand.address),
            footer_text: text(&brand.footer_text),
        }
    }
}
