//! Value formats for merge tags: `date:short|medium|long`, `currency:<CODE>`, `number:0`..`number:6`.

use serde_json::Value;
use std::fmt;

/// A readable format suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Format {
    /// A UTC date in US English.
    Date(DateStyle),
    /// An amount in a currency (three upper-case letters).
    Currency(String),
    /// A number with fixed decimals (0 to 6) and thousands separators.
    Number(u8),
}

/// The three date styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DateStyle {
    /// `11/23/2026`
    Short,
    /// `Nov 23, 2026`
    Medium,
    /// `November 23, 2026`
    Long,
}

const MONTHS: [&str; 12] = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
];

impl Format {
    /// Reads a suffix such as `currency:USD`; the error is a message naming what is wrong.
    pub(crate) fn parse(text: &str) -> Result<Format, String> {
        let (name, arg) = text.split_once(':').unwrap_or((text, ""));
        match name {
            "date" => match arg {
                "short" => Ok(Format::Date(DateStyle::Short)),
                "medium" => Ok(Format::Date(DateStyle::Medium)),
                "long" => Ok(Format::Date(DateStyle::Long)),
                _ => Err(format!("`{text}` is not a readable format: use date:short, date:medium or date:long")),
            },
            "currency" if arg.len() == 3 && arg.bytes().all(|b| b.is_ascii_uppercase()) => {
                Ok(Format::Currency(arg.to_string()))
            }
            "currency" => Err(format!(
                "`{text}` is not a readable format: currency takes a three-letter upper-case code, e.g. currency:USD"
            )),
            "number" => match arg.parse::<u8>() {
                Ok(n) if n <= 6 && arg.len() == 1 => Ok(Format::Number(n)),
                _ => Err(format!("`{text}` is not a readable format: use number:0 to number:6")),
            },
            _ => Err(format!("`{name}` is not a known format: use date, currency or number")),
        }
    }

    /// Formats a value, or `None` when it can't be (not a number, not a date).
    pub(crate) fn apply(&self, value: &Value) -> Option<String> {
        match self {
            Format::Date(style) => date(value.as_str()?, *style),
            Format::Currency(code) => currency(number_of(value)?, code),
            Format::Number(decimals) => Some(fixed(number_of(value)?, usize::from(*decimals))),
        }
    }

    /// Formats text (a fallback), or `None` when it can't be.
    pub(crate) fn apply_text(&self, text: &str) -> Option<String> {
        match self {
            Format::Date(style) => date(text, *style),
            Format::Currency(code) => currency(parse_number(text)?, code),
            Format::Number(decimals) => Some(fixed(parse_number(text)?, usize::from(*decimals))),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Format::Date(DateStyle::Short) => f.write_str("date:short"),
            Format::Date(DateStyle::Medium) => f.write_str("date:medium"),
            Format::Date(DateStyle::Long) => f.write_str("date:long"),
            Format::Currency(code) => write!(f, "currency:{code}"),
            Format::Number(n) => write!(f, "number:{n}"),
        }
    }
}

fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|v| v.is_finite()),
        Value::String(s) => parse_number(s),
        _ => None,
    }
}

fn parse_number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// An RFC 3339 instant (converted to UTC) or a `YYYY-MM-DD` date.
pub(crate) fn parse_date(text: &str) -> Option<chrono::NaiveDate> {
    let text = text.trim();
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(time.to_utc().date_naive());
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()
}

/// An RFC 3339 instant in UTC, or a `YYYY-MM-DD` date at midnight UTC.
pub(crate) fn parse_instant(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    crate::condition::instant(text)
}

/// A date in one of the US English styles.
pub(crate) fn date_text(day: chrono::NaiveDate, style: DateStyle) -> String {
    use chrono::Datelike;
    let month = MONTHS[day.month0() as usize];
    match style {
        DateStyle::Short => format!("{}/{}/{}", day.month(), day.day(), day.year()),
        DateStyle::Medium => format!("{} {}, {}", &month[..3], day.day(), day.year()),
        DateStyle::Long => format!("{} {}, {}", month, day.day(), day.year()),
    }
}

fn date(text: &str, style: DateStyle) -> Option<String> {
    Some(date_text(parse_date(text)?, style))
}

/// `v` with `decimals` fixed decimals and comma thousands separators.
pub(crate) fn fixed(v: f64, decimals: usize) -> String {
    // Half away from zero, as Intl.NumberFormat prints (Rust's `{:.N}` rounds half to even).
    let factor = 10f64.powi(i32::try_from(decimals).unwrap_or(6));
    let scaled = (v.abs() * factor).round() / factor;
    let rounded = if scaled.is_finite() { scaled } else { v.abs() };
    let digits = format!("{:.*}", decimals, rounded);
    let (int, frac) = digits.split_once('.').unwrap_or((&digits, ""));
    let negative = v < 0.0 && digits.bytes().any(|b| (b'1'..=b'9').contains(&b));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 2);
    if negative {
        out.push('-');
    }
    let len = int.len();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (len - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

fn currency(v: f64, code: &str) -> Option<String> {
    let decimals = match code {
        "JPY" | "KRW" | "VND" | "CLP" | "ISK" | "UGX" | "PYG" => 0,
        "BHD" | "KWD" | "OMR" | "JOD" | "TND" => 3,
        _ => 2,
    };
    let symbol = match code {
        "USD" => "$",
        "EUR" => "€",
        "GBP" => "£",
        "JPY" => "¥",
        "INR" => "₹",
        "KRW" => "₩",
        "CAD" => "CA$",
        "AUD" => "A$",
        "NZD" => "NZ$",
        "HKD" => "HK$",
        "MXN" => "MX$",
        "BRL" => "R$",
        "CNY" => "CN¥",
        "ILS" => "₪",
        "PHP" => "₱",
        "VND" => "₫",
        _ => "",
    };
    let amount = fixed(v, decimals);
    Some(match (symbol, amount.strip_prefix('-')) {
        ("", _) => format!("{code} {amount}"),
        (symbol, Some(positive)) => format!("-{symbol}{positive}"),
        (symbol, None) => format!("{symbol}{amount}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn show(format: &str, value: Value) -> Option<String> {
        Format::parse(format).ok()?.apply(&value)
    }

    #[test]
    fn dates_print_in_three_us_english_styles() {
        assert_eq!(show("date:short", json!("2026-11-23")).as_deref(), Some("11/23/2026"));
        assert_eq!(show("date:medium", json!("2026-11-23T10:00:00Z")).as_deref(), Some("Nov 23, 2026"));
        assert_eq!(show("date:long", json!("2026-11-23T23:30:00-05:00")).as_deref(), Some("November 24, 2026"));
        assert_eq!(show("date:long", json!("yesterday")), None);
    }

    #[test]
    fn currencies_print_with_their_symbol_or_code() {
        assert_eq!(show("currency:USD", json!(1234.5)).as_deref(), Some("$1,234.50"));
        assert_eq!(show("currency:EUR", json!("99")).as_deref(), Some("€99.00"));
        assert_eq!(show("currency:GBP", json!(-5)).as_deref(), Some("-£5.00"));
        assert_eq!(show("currency:JPY", json!(1234.5)).as_deref(), Some("¥1,235"));
        assert_eq!(show("currency:CHF", json!(1234.5)).as_deref(), Some("CHF 1,234.50"));
        assert_eq!(show("currency:USD", json!("a lot")), None);
    }

    #[test]
    fn numbers_print_with_fixed_decimals_and_separators() {
        assert_eq!(show("number:0", json!(1234567)).as_deref(), Some("1,234,567"));
        assert_eq!(show("number:2", json!(-1234.567)).as_deref(), Some("-1,234.57"));
        assert_eq!(show("number:6", json!(0.5)).as_deref(), Some("0.500000"));
        assert_eq!(show("number:1", json!(-0.01)).as_deref(), Some("0.0"));
    }

    #[test]
    fn unreadable_formats_are_refused() {
        for bad in ["number:7", "number:", "currency:usd", "currency:US", "date:weird", "money:USD", "date"] {
            assert!(Format::parse(bad).is_err(), "{bad}");
        }
    }
}
