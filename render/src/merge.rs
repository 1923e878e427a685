//! Merge tags: `{{{KEY}}}`, `{{{KEY|default}}}`, `{{{event.total|0|currency:USD}}}`.

use crate::format::Format;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where a merge tag's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// `FIRST_NAME`
    FirstName,
    /// `LAST_NAME`
    LastName,
    /// `EMAIL`
    Email,
    /// `UNSUBSCRIBE_URL`
    UnsubscribeUrl,
    /// `PREFERENCES_URL`
    PreferencesUrl,
    /// A contact property, matched ignoring ASCII case.
    Property(String),
    /// `event.<path>`: a property of the flow's trigger event.
    Event(Path),
    /// `item.<path>`: a property of the current repeat-group item.
    Item(Path),
}

/// A dotted path into a JSON object, e.g. `order.total`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub(crate) struct Path(Vec<String>);

impl Path {
    /// Reads `a.b.c`, each step `[A-Za-z0-9_-]+`.
    pub(crate) fn parse(text: &str) -> Option<Path> {
        let steps: Vec<String> = text.split('.').map(str::to_string).collect();
        let good = |s: &String| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        steps.iter().all(good).then_some(Path(steps))
    }

    /// The value at this path in `object`.
    pub(crate) fn lookup<'v>(&self, object: &'v Map<String, Value>) -> Option<&'v Value> {
        let (first, rest) = self.0.split_first()?;
        let mut value = object.get(first)?;
        for step in rest {
            value = value.as_object()?.get(step)?;
        }
        Some(value)
    }
}

impl TryFrom<String> for Path {
    type Error = String;
    fn try_from(text: String) -> Result<Path, String> {
        Path::parse(&text).ok_or_else(|| format!("`{text}` is not a path"))
    }
}

impl From<Path> for String {
    fn from(path: Path) -> String {
        path.0.join(".")
    }
}

impl Source {
    /// Reads a merge-tag key; `None` when it is not one.
    pub(crate) fn parse(key: &str) -> Option<Source> {
        if let Some(path) = key.strip_prefix("event.") {
            return Path::parse(path).map(Source::Event);
        }
        if let Some(path) = key.strip_prefix("item.") {
            return Path::parse(path).map(Source::Item);
        }
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        let reserved = [
            ("FIRST_NAME", Source::FirstName),
            ("LAST_NAME", Source::LastName),
            ("EMAIL", Source::Email),
            ("UNSUBSCRIBE_URL", Source::UnsubscribeUrl),
            // What templates written for Resend carry: the same one-click link.
            ("RESEND_UNSUBSCRIBE_URL", Source::UnsubscribeUrl),
            ("PREFERENCES_URL", Source::PreferencesUrl),
        ];
        Some(
            reserved
                .into_iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(key))
                .map(|(_, source)| source)
                .unwrap_or_else(|| Source::Property(key.to_string())),
        )
    }

    /// The key as it is written in a tag.
    pub(crate) fn key(&self) -> String {
        match self {
            Source::FirstName => "FIRST_NAME".into(),
            Source::LastName => "LAST_NAME".into(),
            Source::Email => "EMAIL".into(),
            Source::UnsubscribeUrl => "UNSUBSCRIBE_URL".into(),
            Source::PreferencesUrl => "PREFERENCES_URL".into(),
            Source::Property(key) => key.clone(),
            Source::Event(path) => format!("event.{}", String::from(path.clone())),
            Source::Item(path) => format!("item.{}", String::from(path.clone())),
        }
    }
}

/// A parsed merge tag. Serialized as `{"k":"event.total","d":"0","f":"currency:USD"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "MergeRepr", into = "MergeRepr")]
pub(crate) struct Merge {
    pub(crate) source: Source,
    pub(crate) fallback: Option<String>,
    pub(crate) format: Option<Format>,
}

#[derive(Serialize, Deserialize)]
struct MergeRepr {
    k: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    d: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    f: Option<String>,
}

impl TryFrom<MergeRepr> for Merge {
    type Error = String;
    fn try_from(repr: MergeRepr) -> Result<Merge, String> {
        Ok(Merge {
            source: Source::parse(&repr.k).ok_or_else(|| format!("`{}` is not a merge-tag key", repr.k))?,
            fallback: repr.d,
            format: repr.f.as_deref().map(Format::parse).transpose()?,
        })
    }
}

impl From<Merge> for MergeRepr {
    fn from(merge: Merge) -> MergeRepr {
        MergeRepr { k: merge.source.key(), d: merge.fallback, f: merge.format.map(|f| f.to_string()) }
    }
}

/// What the inside of `{{{ ... }}}` turned out to be.
pub(crate) enum Parsed {
    /// A merge tag.
    Tag(Merge),
    /// A merge tag whose suffix can't be read: a save-time problem.
    Bad(String),
    /// Not a merge tag at all: the text stays literal.
    NotATag,
}

/// A single suffix is a format when it reads `name:arg` with a letters-only name and an
/// alphanumeric argument (`date:short`, `number:2`, `foo:bar`); anything else is a fallback
/// (`there`, `https://example.com`, `Dear: friend`).
fn looks_like_format(text: &str) -> bool {
    match text.split_once(':') {
        Some((name, arg)) => {
            !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_alphabetic())
                && arg.bytes().all(|b| b.is_ascii_alphanumeric())
        }
        None => false,
    }
}

/// Reads the inside of `{{{ ... }}}`.
pub(crate) fn parse(inner: &str) -> Parsed {
    if inner.contains(['{', '}', '\n', '\r']) {
        return Parsed::NotATag;
    }
    let (key, rest) = match inner.split_once('|') {
        Some((key, rest)) => (key.trim(), Some(rest)),
        None => (inner.trim(), None),
    };
    let Some(source) = Source::parse(key) else {
        return Parsed::NotATag;
    };
    let (fallback, format) = match rest {
        None => (None, None),
        Some(rest) => {
            let pieces: Vec<&str> = rest.split('|').collect();
            match pieces.as_slice() {
                [one] if looks_like_format(one.trim()) => (None, Some(one.trim())),
                [one] => (Some(*one), None),
                [fallback, format] => (Some(*fallback), Some(format.trim())),
                _ => return Parsed::Bad(format!("`{{{{{{{inner}}}}}}}` takes at most a fallback and a format")),
            }
        }
    };
    let format = match format.map(Format::parse).transpose() {
        Ok(format) => format,
        Err(message) => return Parsed::Bad(message),
    };
    let fallback = fallback.filter(|f| !f.is_empty()).map(str::to_string);
    Parsed::Tag(Merge { source, fallback, format })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(inner: &str) -> Merge {
        match parse(inner) {
            Parsed::Tag(merge) => merge,
            _ => panic!("{inner} is not a tag"),
        }
    }

    #[test]
    fn a_tag_reads_its_key_fallback_and_format() {
        let merge = tag("event.total|0|currency:USD");
        assert_eq!(merge.source, Source::Event(Path(vec!["total".into()])));
        assert_eq!(merge.fallback.as_deref(), Some("0"));
        assert_eq!(merge.format, Some(Format::Currency("USD".into())));
        assert_eq!(tag("event.when|date:short").fallback, None);
        assert_eq!(tag("FIRST_NAME|there").fallback.as_deref(), Some("there"));
        assert_eq!(tag("first_name").source, Source::FirstName);
        assert_eq!(tag("LINK|https://example.com").fallback.as_deref(), Some("https://example.com"));
    }

    #[test]
    fn resend_s_unsubscribe_tag_is_herald_s_unsubscribe_link() {
        for written in ["RESEND_UNSUBSCRIBE_URL", "resend_unsubscribe_url", "UNSUBSCRIBE_URL"] {
            assert_eq!(tag(written).source, Source::UnsubscribeUrl, "{written}");
            assert_eq!(tag(written).source.key(), "UNSUBSCRIBE_URL");
        }
    }

    #[test]
    fn a_tag_with_an_unreadable_format_is_bad_and_garbage_is_no_tag() {
        assert!(matches!(parse("event.n|number:7"), Parsed::Bad(_)));
        assert!(matches!(parse("event.n|foo:bar"), Parsed::Bad(_)));
        assert!(matches!(parse("event.n|0|weird"), Parsed::Bad(_)));
        assert!(matches!(parse("not valid!"), Parsed::NotATag));
        assert!(matches!(parse("event."), Parsed::NotATag));
    }

    #[test]
    fn a_tag_survives_a_serde_round_trip() {
        let merge = tag("event.order.total|0|currency:EUR");
        let json = serde_json::to_string(&merge).unwrap();
        assert_eq!(json, r#"{"k":"event.order.total","d":"0","f":"currency:EUR"}"#);
        assert_eq!(serde_json::from_str::<Merge>(&json).unwrap(), merge);
    }
}
