//! Field types that tell the OpenAPI document what the plain Rust type cannot.
//!
//! poem-openapi reads presence from `Option<T>` alone: an `Option<T>` field is documented as
//! optional and not nullable, yet an answer serializes `None` as `null`, and some request fields
//! are required although the handler reads them as `Option<T>` (to report every missing field at
//! once, by name). And handlers check some strings themselves, with their own error names, so
//! the document must state the rule without poem-openapi enforcing it.
//!
//! - [`Nullable<T>`]: a response field that is always present and `null` when there is no
//!   value: required, `type: [T, "null"]` in the document.
//! - [`Required<T>`]: a request field the handler requires (a missing or `null` value is
//!   `422 missing_required_field`, reported with the body's other problems): required and not
//!   nullable in the document, parsed as `Option<T>`.
//! - [`Choice<C>`]: a string the handler accepts only from `C::VALUES`: an `enum` component in
//!   the document, any string when parsed (the handler's own check answers).
//! - [`Bounded<MIN, MAX>`]: a string of `MIN` to `MAX` characters in the document, any string
//!   when parsed (the handler's own check answers); [`Search<MAX>`] the same for `search`.
//! - [`EmailAddress`], [`IdText`], [`Instant`], [`InstantOrDate`]: a `format` in the document,
//!   any string when parsed (the handler's own check answers).

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseError, ParseFromJSON, ParseFromMultipartField, ParseFromParameter, ParseResult, ToJSON, Type};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::borrow::Cow;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

/// A response field that is always present: the value, or `null`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nullable<T>(pub Option<T>);

/// A request field listed as required in the document; absent or `null` reads as `None`, which
/// the handler refuses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Required<T>(pub Option<T>);

macro_rules! option_wrapper {
    ($wrapper:ident, $prefix:literal, $nullable:literal) => {
        impl<T> From<Option<T>> for $wrapper<T> {
            fn from(value: Option<T>) -> Self {
                Self(value)
            }
        }

        impl<T> From<$wrapper<T>> for Option<T> {
            fn from(value: $wrapper<T>) -> Self {
                value.0
            }
        }

        impl<T> Deref for $wrapper<T> {
            type Target = Option<T>;
            fn deref(&self) -> &Option<T> {
                &self.0
            }
        }

        impl<T> DerefMut for $wrapper<T> {
            fn deref_mut(&mut self) -> &mut Option<T> {
                &mut self.0
            }
        }

        impl<T: Type> Type for $wrapper<T> {
            const IS_REQUIRED: bool = true;

            type RawValueType = T::RawValueType;

            type RawElementValueType = T::RawElementValueType;

            fn name() -> Cow<'static, str> {
                format!(concat!($prefix, "_{}"), T::name()).into()
            }

            fn schema_ref() -> MetaSchemaRef {
                let schema = T::schema_ref();
                if $nullable { schema.merge(MetaSchema { nullable: true, ..MetaSchema::ANY }) } else { schema }
            }

            fn register(registry: &mut Registry) {
                T::register(registry);
            }

            fn as_raw_value(&self) -> Option<&Self::RawValueType> {
                self.0.as_ref().and_then(Type::as_raw_value)
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
                match &self.0 {
                    Some(value) => value.raw_element_iter(),
                    None => Box::new(std::iter::empty()),
                }
            }

            fn is_none(&self) -> bool {
                self.0.is_none()
            }
        }

        impl<T: ParseFromJSON> ParseFromJSON for $wrapper<T> {
            fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
                Option::<T>::parse_from_json(value).map(Self).map_err(poem_openapi::types::ParseError::propagate)
            }
        }

        impl<T: ToJSON> ToJSON for $wrapper<T> {
            fn to_json(&self) -> Option<Value> {
                Some(self.0.as_ref().and_then(ToJSON::to_json).unwrap_or(Value::Null))
            }
        }

        impl<T: Serialize> Serialize for $wrapper<T> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(serializer)
            }
        }

        /// Reads like `Option<T>`: serde treats a missing field as `None` without `#[serde(default)]`.
        impl<'de, T: Deserialize<'de>> Deserialize<'de> for $wrapper<T> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                Option::<T>::deserialize(deserializer).map(Self)
            }
        }
    };
}

option_wrapper!(Nullable, "nullable", true);
option_wrapper!(Required, "required", false);

/// A required multipart field the handler checks itself (a missing one reads as `None`).
impl<T: ParseFromMultipartField> ParseFromMultipartField for Required<T> {
    async fn parse_from_multipart(field: Option<poem::web::Field>) -> ParseResult<Self> {
        Option::<T>::parse_from_multipart(field).await.map(Self).map_err(ParseError::propagate)
    }
}

/// A closed list of strings, documented as the `enum` component `NAME`.
pub trait Choices: Send + Sync + 'static {
    /// The component's name.
    const NAME: &'static str;
    /// What the component says.
    const DESCRIPTION: &'static str;
    /// Every accepted value.
    const VALUES: &'static [&'static str];

    /// Whether `value` is one of [`Self::VALUES`].
    fn allows(value: &str) -> bool {
        Self::VALUES.contains(&value)
    }
}

/// Declares unit structs implementing [`Choices`].
#[macro_export]
macro_rules! choices {
    ($($(#[doc = $doc:literal])+ $name:ident = $values:expr;)+) => {
        $(
            $(#[doc = $doc])+
            pub struct $name;

            impl $crate::http::fields::Choices for $name {
                const NAME: &'static str = stringify!($name);
                const DESCRIPTION: &'static str = concat!($($doc),+);
                const VALUES: &'static [&'static str] = $values;
            }
        )+
    };
}

/// A string documented as one of `C::VALUES`; parsing takes any string and the handler checks it.
pub struct Choice<C>(pub String, PhantomData<fn() -> C>);

impl<C> Choice<C> {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into(), PhantomData)
    }

    pub fn into_string(self) -> String {
        self.0
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<C> Clone for Choice<C> {
    fn clone(&self) -> Self {
        Self::new(self.0.clone())
    }
}

impl<C> std::fmt::Debug for Choice<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<C> std::fmt::Display for Choice<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<C> PartialEq for Choice<C> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<C> Deref for Choice<C> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<C> From<String> for Choice<C> {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl<C> From<&str> for Choice<C> {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl<C: Choices> Type for Choice<C> {
    const IS_REQUIRED: bool = true;

    type RawValueType = String;

    type RawElementValueType = String;

    fn name() -> Cow<'static, str> {
        C::NAME.into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Reference(C::NAME.into())
    }

    fn register(registry: &mut Registry) {
        registry.create_schema::<Self, _>(C::NAME.into(), |_| MetaSchema {
            description: Some(C::DESCRIPTION.trim()),
            enum_items: C::VALUES.iter().map(|v| Value::String((*v).into())).collect(),
            ..MetaSchema::new("string")
        });
    }

    fn as_raw_value(&self) -> Option<&String> {
        Some(&self.0)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a String> + 'a> {
        Box::new(std::iter::once(&self.0))
    }
}

/// A string documented as `MIN` to `MAX` characters; parsing takes any string and the handler
/// checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded<const MIN: usize, const MAX: usize>(pub String);

impl<const MIN: usize, const MAX: usize> Deref for Bounded<MIN, MAX> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<const MIN: usize, const MAX: usize> Type for Bounded<MIN, MAX> {
    const IS_REQUIRED: bool = true;

    type RawValueType = String;

    type RawElementValueType = String;

    fn name() -> Cow<'static, str> {
        format!("string({MIN}..={MAX})").into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema { min_length: Some(MIN), max_length: Some(MAX), ..MetaSchema::new("string") }))
    }

    fn as_raw_value(&self) -> Option<&String> {
        Some(&self.0)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a String> + 'a> {
        Box::new(std::iter::once(&self.0))
    }
}

/// What a search may hold: no control character, and one character that is not a space.
pub const SEARCH_PATTERN: &str =
    r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$";

/// A `search` query parameter, documented as 1 to `MAX` characters of [`SEARCH_PATTERN`];
/// parsing takes any string and [`crate::http::paging::search_text`] checks it against the same `MAX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search<const MAX: usize>(pub String);

impl<const MAX: usize> Type for Search<MAX> {
    const IS_REQUIRED: bool = true;

    type RawValueType = String;

    type RawElementValueType = String;

    fn name() -> Cow<'static, str> {
        format!("search(1..={MAX})").into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            min_length: Some(1),
            max_length: Some(MAX),
            pattern: Some(SEARCH_PATTERN.into()),
            ..MetaSchema::new("string")
        }))
    }

    fn as_raw_value(&self) -> Option<&String> {
        Some(&self.0)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a String> + 'a> {
        Box::new(std::iter::once(&self.0))
    }
}

/// The parsing the documented string types share: any string.
macro_rules! any_string {
    ($ty:ty, [$($generics:tt)*], $make:expr) => {
        impl<$($generics)*> ParseFromJSON for $ty {
            fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
                match value {
                    Some(Value::String(text)) => Ok($make(text)),
                    other => Err(ParseError::expected_type(other.unwrap_or_default())),
                }
            }
        }

        impl<$($generics)*> ParseFromParameter for $ty {
            fn parse_from_parameter(value: &str) -> ParseResult<Self> {
                Ok($make(value.to_string()))
            }
        }

        impl<$($generics)*> ToJSON for $ty {
            fn to_json(&self) -> Option<Value> {
                Some(Value::String(self.0.clone()))
            }
        }

        impl<$($generics)*> Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(serializer)
            }
        }

        impl<'de, $($generics)*> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map($make)
            }
        }
    };
}

any_string!(Choice<C>, [C: Choices], Choice::new);

impl<C: Choices> ParseFromMultipartField for Choice<C> {
    async fn parse_from_multipart(field: Option<poem::web::Field>) -> ParseResult<Self> {
        String::parse_from_multipart(field).await.map(Choice::new).map_err(ParseError::propagate)
    }
}
any_string!(Bounded<MIN, MAX>, [const MIN: usize, const MAX: usize], Bounded);
any_string!(Search<MAX>, [const MAX: usize], Search);

/// Declares a string type documented with a `format`; parsing takes any string and the handler
/// checks it.
macro_rules! formatted_string {
    ($(#[doc = $doc:literal])+ $name:ident = $format:literal) => {
        formatted_string! { $(#[doc = $doc])+ $name => concat!("string(", $format, ")"), MetaSchema::new_with_format("string", $format) }
    };
    ($(#[doc = $doc:literal])+ $name:ident => $type_name:expr, $schema:expr) => {
        $(#[doc = $doc])+
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(pub String);

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Type for $name {
            const IS_REQUIRED: bool = true;

            type RawValueType = String;

            type RawElementValueType = String;

            fn name() -> Cow<'static, str> {
                $type_name.into()
            }

            fn schema_ref() -> MetaSchemaRef {
                MetaSchemaRef::Inline(Box::new($schema))
            }

            fn as_raw_value(&self) -> Option<&String> {
                Some(&self.0)
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a String> + 'a> {
                Box::new(std::iter::once(&self.0))
            }
        }

        any_string!($name, [], $name);
    };
}

formatted_string! {
    /// An email address (`format: email`).
    EmailAddress = "email"
}

formatted_string! {
    /// An id (`format: uuid`, hyphenated), such as a paging cursor.
    IdText => "string(uuid)", MetaSchema {
        pattern: Some("^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$".into()),
        ..MetaSchema::new_with_format("string", "uuid")
    }
}

formatted_string! {
    /// An ISO 8601 instant with a time and offset (`format: date-time`).
    Instant = "date-time"
}

formatted_string! {
    /// An ISO 8601 instant (`format: date-time`) or a calendar date (`format: date`).
    InstantOrDate => "string(date-time|date)", MetaSchema {
        any_of: vec![
            MetaSchemaRef::Inline(Box::new(MetaSchema::new_with_format("string", "date-time"))),
            MetaSchemaRef::Inline(Box::new(MetaSchema::new_with_format("string", "date"))),
        ],
        ..MetaSchema::new("string")
    }
}

/// A contact property's value in an answer: a string, a number or a boolean (`oneOf` the three).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Scalar(pub Value);

impl Type for Scalar {
    const IS_REQUIRED: bool = true;

    type RawValueType = Value;

    type RawElementValueType = Value;

    fn name() -> Cow<'static, str> {
        "string|number|boolean".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        let of = |ty| MetaSchemaRef::Inline(Box::new(MetaSchema::new(ty)));
        MetaSchemaRef::Inline(Box::new(MetaSchema { one_of: vec![of("string"), of("number"), of("boolean")], ..MetaSchema::ANY }))
    }

    fn as_raw_value(&self) -> Option<&Value> {
        Some(&self.0)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Value> + 'a> {
        Box::new(std::iter::once(&self.0))
    }
}

impl ParseFromJSON for Scalar {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        match value {
            Some(value @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => Ok(Scalar(value)),
            other => Err(ParseError::expected_type(other.unwrap_or_default())),
        }
    }
}

impl ToJSON for Scalar {
    fn to_json(&self) -> Option<Value> {
        Some(self.0.clone())
    }
}

/// Reads an optional integer that a client may write as a whole float (`2.0`, as JSON allows
/// and some generators send); a fraction is refused.
pub fn whole_number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    use serde::Deserialize;
    match Option::<serde_json::Number>::deserialize(deserializer)? {
        None => Ok(None),
        Some(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(Some(i)),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
            _ => Err(serde::de::Error::custom(format!("expected a whole number, got {n}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poem_openapi::Object;

    #[derive(Object, Deserialize)]
    struct Answer {
        seen_at: Nullable<String>,
        optional: Option<String>,
    }

    #[derive(Object, Deserialize)]
    struct Body {
        name: Required<String>,
    }

    fn schema<T: Type>() -> MetaSchema {
        let mut registry = Registry::new();
        T::register(&mut registry);
        registry.schemas.remove(&*T::name()).unwrap()
    }

    #[test]
    fn a_nullable_field_is_required_nullable_and_serialized_as_null() {
        let meta = schema::<Answer>();
        assert_eq!(meta.required, vec!["seen_at"]);
        let field = meta.properties.iter().find(|(name, _)| *name == "seen_at").unwrap();
        let MetaSchemaRef::Inline(field) = &field.1 else { panic!("inline") };
        assert!(field.nullable);
        let json = Answer { seen_at: None.into(), optional: None }.to_json().unwrap();
        assert_eq!(json, serde_json::json!({ "seen_at": null, "optional": null }));
    }

    crate::choices! {
        /// A test list.
        Colour = &["red", "blue"];
    }

    #[derive(Object, Deserialize)]
    struct Filter {
        colour: Option<Choice<Colour>>,
        key: Bounded<1, 4>,
    }

    #[test]
    fn a_choice_is_an_enum_component_and_a_bounded_string_has_its_lengths_yet_both_parse_any_string() {
        let mut registry = Registry::new();
        Filter::register(&mut registry);
        let colour = &registry.schemas["Colour"];
        assert_eq!(colour.enum_items, vec![serde_json::json!("red"), serde_json::json!("blue")]);
        let filter = &registry.schemas["Filter"];
        let key = filter.properties.iter().find(|(name, _)| *name == "key").unwrap();
        let MetaSchemaRef::Inline(key) = &key.1 else { panic!("inline") };
        assert_eq!((key.min_length, key.max_length), (Some(1), Some(4)));
        let parsed: Filter = serde_json::from_str(r#"{"colour": "green", "key": "too long"}"#).unwrap();
        assert_eq!(parsed.colour.as_deref(), Some("green"));
        assert_eq!(&*parsed.key, "too long");
        assert!(Colour::allows("red") && !Colour::allows("green"));
    }

    #[test]
    fn a_required_field_is_required_and_missing_or_null_reads_as_none() {
        assert_eq!(schema::<Body>().required, vec!["name"]);
        let missing: Body = serde_json::from_str("{}").unwrap();
        assert_eq!(missing.name, Required(None));
        let null: Body = serde_json::from_str(r#"{"name": null}"#).unwrap();
        assert!(null.name.is_none());
        let given: Body = serde_json::from_str(r#"{"name": "a"}"#).unwrap();
        assert_eq!(given.name.as_deref(), Some("a"));
    }
}
