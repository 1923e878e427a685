//! Starter templates: well-made block documents to begin from.

/// A starter template.
pub struct Starter {
    /// URL-safe identifier, e.g. `password-reset`.
    pub slug: &'static str,
    /// Display name.
    pub name: &'static str,
    /// What it is for.
    pub description: &'static str,
    /// The subject line (may use the variables).
    pub subject: &'static str,
    /// The `{{key}}` variables the subject and document use, exactly.
    pub variables: Vec<Variable>,
    /// The block document.
    pub document: serde_json::Value,
}

/// A declared template variable.
pub struct Variable {
    /// The placeholder key.
    pub key: &'static str,
    /// `string`, `number`, `boolean`, `object` or `list`.
    pub kind: &'static str,
    /// The value used when a send does not give one.
    pub fallback: Option<serde_json::Value>,
}

const SOURCES: [&str; 8] = [
    include_str!("starters/welcome.json"),
    include_str!("starters/receipt.json"),
    include_str!("starters/password-reset.json"),
    include_str!("starters/magic-link.json"),
    include_str!("starters/invitation.json"),
    include_str!("starters/newsletter.json"),
    include_str!("starters/announcement.json"),
    include_str!("starters/event.json"),
];

/// Reads one starter file; the strings live for the program's life (loaded once).
fn load(source: &'static str) -> Option<Starter> {
    use serde_json::Value;
    let mut value: Value = serde_json::from_str(source).ok()?;
    let text = |value: &Value, key: &str| -> Option<&'static str> { Some(value.get(key)?.as_str()?.to_string().leak()) };
    let variables = value
        .get("variables")?
        .as_array()?
        .iter()
        .map(|v| {
            Some(Variable {
                key: text(v, "key")?,
                kind: text(v, "kind")?,
                fallback: v.get("fallback").filter(|f| !f.is_null()).cloned(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Starter {
        slug: text(&value, "slug")?,
        name: text(&value, "name")?,
        description: text(&value, "description")?,
        subject: text(&value, "subject")?,
        variables,
        document: value.get_mut("document")?.take(),
    })
}

/// Every starter.
pub fn all() -> &'static [Starter] {
    static STARTERS: std::sync::OnceLock<Vec<Starter>> = std::sync::OnceLock::new();
    STARTERS.get_or_init(|| SOURCES.iter().filter_map(|s| load(s)).collect())
}

/// The starter with this slug.
pub fn find(slug: &str) -> Option<&'static Starter> {
    all().iter().find(|s| s.slug == slug)
}
