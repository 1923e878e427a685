//! The brand kit: its fields and their checks (shared by the team profile and templates'
//! `brand_overrides`), and the addresses of images uploaded for it.

use crate::http::error::{ApiError, ApiResult, ErrorKind};
use poem_openapi::Object;
use crate::http::fields::{Choice, Choices, Nullable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

crate::choices! {
    /// The brand font: `system`, `helvetica`, `arial`, `verdana`, `georgia`, `times` or `courier`.
    Font = &["system", "helvetica", "arial", "verdana", "georgia", "times", "courier"];
    /// The button shape: `square`, `rounded` or `pill`.
    ButtonStyle = &["square", "rounded", "pill"];
}

/// Where uploaded images are served, under `HERALD_PUBLIC_URL`.
pub const ASSET_PATH: &str = "/brand-assets/";

/// The public address of an uploaded image.
pub fn asset_url(public_url: &str, id: uuid::Uuid) -> String {
    format!("{public_url}{ASSET_PATH}{id}")
}

/// Whether `url` is an image uploaded to this Herald (so it need not be https).
pub fn is_asset_url(public_url: &str, url: &str) -> bool {
    url.strip_prefix(public_url)
        .and_then(|rest| rest.strip_prefix(ASSET_PATH))
        .is_some_and(|id| schema::ids::parse_id(id).is_some())
}

/// Longest postal address line, company name or brand address.
pub const MAX_LINE: usize = 200;
/// Longest footer text.
pub const MAX_FOOTER: usize = 500;
/// Longest logo URL.
pub const MAX_URL: usize = 2048;

/// The brand templates draw with; `null` fields use Herald's plain default.
#[derive(Object, Deserialize, Serialize, Clone)]
pub struct BrandKit {
    /// An `https` URL, or the `logo_url` of an image uploaded with
    /// `POST /team/brand-kit/uploads` (at `HERALD_PUBLIC_URL`, which may be http).
    #[oai(validator(max_length = 2048, pattern = r"^https?://[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:[0-9]{1,5})?(/\S*)?$"))]
    pub logo_url: Nullable<String>,
    /// Six-digit hex colour with `#` (`#1A73E8`).
    #[oai(validator(pattern = "^#[0-9A-Fa-f]{6}$"))]
    pub primary_color: Nullable<String>,
    /// Six-digit hex colour with `#`.
    #[oai(validator(pattern = "^#[0-9A-Fa-f]{6}$"))]
    pub accent_color: Nullable<String>,
    /// The brand font.
    pub font: Nullable<Choice<Font>>,
    /// The button shape.
    pub button_style: Nullable<Choice<ButtonStyle>>,
    /// Up to 200 characters, one line.
    #[oai(validator(max_length = 200))]
    pub company_name: Nullable<String>,
    /// Up to 200 characters, one line.
    #[oai(validator(max_length = 200))]
    pub address: Nullable<String>,
    /// Up to 500 characters, one line.
    #[oai(validator(max_length = 500))]
    pub footer_text: Nullable<String>,
}

impl Default for BrandKit {
    fn default() -> Self {
        Self {
            logo_url: Nullable(None),
            primary_color: Nullable(None),
            accent_color: Nullable(None),
            font: Nullable(None),
            button_style: Nullable(None),
            company_name: Nullable(None),
            address: Nullable(None),
            footer_text: Nullable(None),
        }
    }
}

/// Trimmed text of 1 to `max` characters (0 allowed when `empty_ok`). Line breaks never get
/// this far: the edge refuses them in every one-line field (`input.rs`).
pub fn one_line(path: &str, text: &str, max: usize, empty_ok: bool) -> ApiResult<String> {
    let text = text.trim();
    if text.is_empty() && !empty_ok {
        return Err(ApiError::invalid_field(path, "must not be blank"));
    }
    if text.chars().count() > max {
        return Err(ApiError::invalid_field(path, format!("must be at most {max} characters")));
    }
    Ok(text.to_string())
}

pub fn optional_line(path: &str, text: Nullable<String>, max: usize) -> ApiResult<Nullable<String>> {
    let line = text.0.map(|text| one_line(path, &text, max, true)).transpose()?;
    Ok(Nullable(line.filter(|text| !text.is_empty())))
}

/// The brand kit's fields, each of which must be sent (a `null` one means the default).
pub const BRAND_KIT_FIELDS: [&str; 8] =
    ["logo_url", "primary_color", "accent_color", "font", "button_style", "company_name", "address", "footer_text"];

pub fn checked_brand_kit(kit: BrandKit, raw: &Value, public_url: &str) -> ApiResult<BrandKit> {
    let missing: Vec<&str> = BRAND_KIT_FIELDS.iter().copied().filter(|field| raw.get(field).is_none()).collect();
    if !missing.is_empty() {
        let named = missing.iter().map(|field| format!("`{field}`")).collect::<Vec<_>>().join(", ");
        let error = ApiError::new(ErrorKind::MissingRequiredField, format!("`brand_kit` is sent whole: every field is required (`null` means the default). Missing: {named}."),
        );
        return Err(missing
            .iter()
            .fold(error, |error, field| error.with_error(format!("brand_kit.{field}"), "is required (null means the default)")));
    }
    let field = |name: &str, value: Nullable<String>| -> ApiResult<Nullable<String>> {
        let checked = value.0.map(|value| checked_brand_field(name, &value, &format!("brand_kit.{name}"), public_url)).transpose()?;
        Ok(Nullable(checked.flatten()))
    };
    Ok(BrandKit {
        logo_url: field("logo_url", kit.logo_url)?,
        primary_color: field("primary_color", kit.primary_color)?,
        accent_color: field("accent_color", kit.accent_color)?,
        font: Nullable(field("font", Nullable(kit.font.0.map(Choice::into_string)))?.0.map(Choice::new)),
        button_style: Nullable(field("button_style", Nullable(kit.button_style.0.map(Choice::into_string)))?.0.map(Choice::new)),
        company_name: field("company_name", kit.company_name)?,
        address: field("address", kit.address)?,
        footer_text: field("footer_text", kit.footer_text)?,
    })
}

/// One brand field's value (of the brand kit or a template's `brand_overrides`), checked and
/// normalised: `None` when a text field is blank (the default applies).
pub fn checked_brand_field(name: &str, value: &str, path: &str, public_url: &str) -> ApiResult<Option<String>> {
    match name {
        "logo_url" => {
            if value.len() > MAX_URL {
                return Err(ApiError::invalid_field(path, format!("must be at most {MAX_URL} characters")));
            }
            let https = value.starts_with("https://")
                && !value.contains(char::is_whitespace)
                && reqwest::Url::parse(value).is_ok_and(|url| url.scheme() == "https" && url.host_str().is_some());
            if !https && !crate::routes::team::brand_kit::is_asset_url(public_url, value) {
                return Err(ApiError::invalid_field(path, "must be an https URL or an image uploaded with `POST /team/brand-kit/uploads`"));
            }
            Ok(Some(value.to_string()))
        }
        "primary_color" | "accent_color" => {
            let hex = value.strip_prefix('#').is_some_and(|digits| digits.len() == 6 && digits.chars().all(|c| c.is_ascii_hexdigit()));
            if !hex {
                return Err(ApiError::invalid_field(path, "must be a six-digit hex colour with `#` (`#1A73E8`)"));
            }
            Ok(Some(value.to_ascii_uppercase()))
        }
        "font" if !Font::allows(value) => Err(ApiError::invalid_field(path, format!("must be one of {}, not {value:?}", Font::VALUES.join(", ")))),
        "button_style" if !ButtonStyle::allows(value) => {
            Err(ApiError::invalid_field(path, format!("must be one of {}, not {value:?}", ButtonStyle::VALUES.join(", "))))
        }
        "font" | "button_style" => Ok(Some(value.to_string())),
        "company_name" | "address" => Ok(optional_line(path, Nullable(Some(value.to_string())), MAX_LINE)?.0),
        "footer_text" => Ok(optional_line(path, Nullable(Some(value.to_string())), MAX_FOOTER)?.0),
        _ => Err(ApiError::invalid_field(path, format!("is not a brand field; the fields are {}", BRAND_KIT_FIELDS.join(", ")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_uploaded_image_address_counts_as_herald_s() {
        let id = schema::ids::new_id();
        assert!(is_asset_url("http://127.0.0.1:8080", &asset_url("http://127.0.0.1:8080", id)));
        assert!(!is_asset_url("http://127.0.0.1:8080", "http://127.0.0.1:8080/brand-assets/x"));
        assert!(!is_asset_url("http://127.0.0.1:8080", &format!("http://evil.example{ASSET_PATH}{id}")));
    }
}
