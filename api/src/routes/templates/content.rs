//! A template's versioned content, checked and compiled: declared variables against the
//! placeholders used, the brand overrides, and the code or block document compiled by the
//! renderer (`render`). Used by the template routes and by template sends.

use crate::http::error::{ApiError, ApiResult, ErrorKind, FieldError};
use crate::http::fields::{Choice, Choices, Nullable, Required};
use crate::routes::team::brand_kit::{BRAND_KIT_FIELDS, checked_brand_field};
use poem_openapi::Object;
use poem_openapi::types::MaybeUndefined;
use render::{Brand, Catalog, Compiled, Problem};
use schema::email::{self as rules, Mailbox};
use schema::store::templates::{Content, Sendable};
use schema::store::{brand_assets, saved_blocks, teams};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sqlx::PgConnection;
use std::collections::{BTreeSet, HashMap};
use uuid::Uuid;

crate::choices! {
    /// A variable's type: `string`, `number`, `boolean`, `object` or `list`.
    VariableType = &["string", "number", "boolean", "object", "list"];
}

/// Most variables a template declares.
pub const MAX_VARIABLES: usize = 200;
/// Longest value a send gives a variable.
pub const MAX_VALUE_CHARS: usize = 2000;

/// A declared variable.
#[derive(Object, Deserialize, Clone, Debug)]
pub struct VariableIn {
    /// Letters, digits and `_`; used as `{{key}}`.
    #[oai(validator(max_length = 100, pattern = "^[A-Za-z0-9_]+$"))]
    pub key: Required<String>,
    /// `string` (default), `number`, `boolean`, `object` or `list`.
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub kind: Option<Choice<VariableType>>,
    /// What a send that leaves the variable out gets; of the variable's type, or `null`.
    pub fallback_value: Option<Value>,
}

/// A declared variable as stored.
#[derive(Object, Clone, Debug)]
pub struct VariableView {
    /// Letters, digits and `_`; used as `{{key}}`.
    pub key: String,
    /// The variable's type.
    #[oai(rename = "type")]
    pub kind: Choice<VariableType>,
    /// What a send that leaves the variable out gets, or `null` when there is none.
    pub fallback_value: Nullable<Value>,
}

/// Content to check and compile (after a starter or the stored version filled the gaps).
#[derive(Default, Debug)]
pub struct ContentInput {
    pub from: Option<String>,
    pub subject: Option<String>,
    pub reply_to: Option<Vec<String>>,
    pub html: Option<String>,
    pub text: Option<String>,
    pub variables: Option<Vec<VariableIn>>,
    pub document: Option<Value>,
    pub brand_overrides: Option<Value>,
}

/// The content fields of an update.
pub struct Change {
    pub from: MaybeUndefined<String>,
    pub subject: MaybeUndefined<String>,
    pub reply_to: MaybeUndefined<Vec<String>>,
    pub html: Option<String>,
    pub text: MaybeUndefined<String>,
    pub variables: Option<Vec<VariableIn>>,
    pub document: Option<Value>,
    pub brand_overrides: MaybeUndefined<Value>,
}

fn keep<T: Clone>(change: MaybeUndefined<T>, current: &Option<T>) -> Option<T> {
    match change {
        MaybeUndefined::Undefined => current.clone(),
        MaybeUndefined::Null => None,
        MaybeUndefined::Value(value) => Some(value),
    }
}

/// The stored content with an update's fields laid over it. `html` makes the template a code
/// template; `document` (sent or kept) makes it visual, its `html` and `text` compiled.
pub fn merged(current: &Content, change: Change) -> ContentInput {
    let visual = change.html.is_none() && (change.document.is_some() || current.document.is_some());
    let (html, document, text) = if visual {
        let text = match change.text {
            MaybeUndefined::Value(text) => Some(text),
            _ => None,
        };
        (change.html, change.document.or_else(|| current.document.clone()), text)
    } else {
        (change.html.or_else(|| current.html.clone()), change.document, keep(change.text, &current.text))
    };
    ContentInput {
        from: keep(change.from, &current.from_address),
        subject: keep(change.subject, &current.subject),
        reply_to: keep(change.reply_to, &current.reply_to),
        html,
        text,
        variables: Some(change.variables.unwrap_or_else(|| stored_variables(&current.variables))),
        document,
        brand_overrides: keep(change.brand_overrides, &current.brand_overrides),
    }
}

fn stored_variables(variables: &Value) -> Vec<VariableIn> {
    serde_json::from_value(variables.clone()).unwrap_or_default()
}

/// The declared variables as the API shows them.
pub fn variable_views(variables: &Value) -> Vec<VariableView> {
    stored_variables(variables)
        .into_iter()
        .map(|v| VariableView {
            key: v.key.0.unwrap_or_default(),
            kind: v.kind.unwrap_or_else(|| Choice::new("string")),
            fallback_value: Nullable(v.fallback_value.filter(|f| !f.is_null())),
        })
        .collect()
}

/// Copies a starter into the fields the request left out.
pub fn apply_starter(input: &mut ContentInput, starter: &render::starters::Starter) {
    input.document = Some(starter.document.clone());
    if input.subject.is_none() {
        input.subject = Some(starter.subject.to_string());
    }
    if input.variables.is_none() {
        input.variables = Some(
            starter
                .variables
                .iter()
                .map(|v| VariableIn { key: Required(Some(v.key.to_string())), kind: Some(Choice::new(v.kind)), fallback_value: v.fallback.clone() })
                .collect(),
        );
    }
}

/// Checks and compiles content: the fields' own rules, the variables, the brand overrides,
/// the code or document, and that every placeholder is declared and every variable used.
/// Problems with the content are `422 validation_error` with one `errors[]` entry each.
pub async fn compile(conn: &mut PgConnection, public_url: &str, team_id: Uuid, input: &ContentInput) -> ApiResult<Content> {
    if input.document.is_some() && input.text.is_some() {
        return Err(ApiError::invalid_parameter("text", "a visual template's text is compiled from its document"));
    }
    for (path, header) in input.from.iter().map(|f| ("from".to_string(), f)).chain(input.reply_to.iter().flatten().enumerate().map(|(i, r)| (format!("reply_to[{i}]"), r))) {
        check_header_length(&path, header)?;
    }
    if let Some(document) = &input.document
        && document.to_string().len() > rules::MAX_BODY_BYTES
    {
        return Err(ApiError::invalid_field("document", "must be at most 2 MB"));
    }
    if let Some(from) = &input.from
        && !has_placeholder(from)
    {
        Mailbox::parse(from).map_err(|message| ApiError::invalid_field("from", message))?;
    }
    if let Some(subject) = &input.subject {
        rules::check_subject(subject).map_err(|message| ApiError::invalid_field("subject", message))?;
    }
    let reply_to = input.reply_to.clone().unwrap_or_default();
    for (i, address) in reply_to.iter().enumerate() {
        if !has_placeholder(address) {
            Mailbox::parse(address).map_err(|message| ApiError::invalid_field(&format!("reply_to[{i}]"), message))?;
        }
    }
    rules::check_body_size(input.html.as_deref(), input.text.as_deref()).map_err(|message| ApiError::invalid_field("html", message))?;
    let variables = checked_variables(input.variables.as_deref().unwrap_or_default())?;
    let overrides = input.brand_overrides.as_ref().map(|o| checked_overrides(o, public_url)).transpose()?;

    let (compiled, html, text, document, saved_block_ids) = match &input.document {
        Some(document) => {
            let brand = brand(conn, team_id, overrides.as_ref()).await?;
            let catalog = catalog(conn, team_id, document).await?;
            let visual = Compiled::from_document(input.subject.as_deref(), document, &brand, &catalog).map_err(problems)?;
            (visual.compiled, Some(visual.html), Some(visual.text), Some(visual.document), visual.saved_blocks)
        }
        None => {
            let compiled = Compiled::from_parts(input.subject.as_deref(), input.html.as_deref(), input.text.as_deref()).map_err(problems)?;
            (compiled, input.html.clone(), input.text.clone(), None, Vec::new())
        }
    };
    let mut used: BTreeSet<String> = compiled.placeholders();
    for header in input.from.iter().chain(reply_to.iter()) {
        used.extend(header_program(header).placeholders());
    }
    let declared: BTreeSet<String> = variables.iter().map(|(key, _, _)| key.clone()).collect();
    let mut errors: Vec<FieldError> = Vec::new();
    for key in used.difference(&declared) {
        errors.push(FieldError { path: format!("variables.{key}"), message: format!("`{{{{{key}}}}}` is used but not declared in `variables`") });
    }
    for key in declared.difference(&used) {
        errors.push(FieldError { path: format!("variables.{key}"), message: format!("`{key}` is declared but no placeholder uses it") });
    }
    if !errors.is_empty() {
        let mut error = ApiError::refused(format!(
            "Every placeholder must be declared in `variables` and every declared variable used; {} key{} disagree.",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        ));
        error.errors = errors;
        return Err(error);
    }
    Ok(Content {
        from_address: input.from.clone(),
        subject: input.subject.clone(),
        reply_to: input.reply_to.clone(),
        html,
        text,
        variables: Value::Array(
            variables.into_iter().map(|(key, kind, fallback)| json!({ "key": key, "type": kind, "fallback_value": fallback })).collect(),
        ),
        document,
        brand_overrides: overrides,
        compiled: serde_json::to_value(&compiled).map_err(anyhow::Error::from)?,
        saved_block_ids,
    })
}

/// A header field (`from`, a `reply_to` address) fits one 998-byte header line.
pub fn check_header_length(path: &str, value: &str) -> ApiResult<()> {
    if value.len() > 998 {
        return Err(ApiError::invalid_field(path, "must be at most 998 bytes"));
    }
    Ok(())
}

fn has_placeholder(text: &str) -> bool {
    text.contains("{{")
}

/// A header field (`from`, a `reply_to` address) read as a one-part template.
fn header_program(text: &str) -> Compiled {
    Compiled::from_parts(Some(text), None, None).unwrap_or_else(|_| Compiled::from_parts(None, None, None).expect("an empty template compiles"))
}

/// The renderer's problems as one `422 validation_error`.
pub fn problems(list: Vec<Problem>) -> ApiError {
    let first = list.first().map(|p| format!("Invalid `{}`: {}", p.path, p.message)).unwrap_or_default();
    let mut error = ApiError::refused(if list.len() == 1 { first } else { format!("{first} (and {} more problems)", list.len() - 1) });
    error.errors = list.into_iter().map(|p| FieldError { path: p.path, message: p.message }).collect();
    error
}

/// Checks the declared variables: keys, uniqueness, types, fallbacks of the declared type.
fn checked_variables(list: &[VariableIn]) -> ApiResult<Vec<(String, String, Value)>> {
    if list.len() > MAX_VARIABLES {
        return Err(ApiError::invalid_field("variables", format!("at most {MAX_VARIABLES} variables")));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(list.len());
    for (i, variable) in list.iter().enumerate() {
        let path = format!("variables[{i}]");
        let key = variable.key.0.as_deref().ok_or_else(|| ApiError::missing_field(&format!("{path}.key")))?;
        if key.is_empty() || key.len() > 100 || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ApiError::invalid_field(&format!("{path}.key"), "must be 1 to 100 letters, digits or `_`"));
        }
        if !seen.insert(key.to_string()) {
            return Err(ApiError::invalid_field(&format!("{path}.key"), format!("`{key}` is declared twice")));
        }
        let kind = variable.kind.as_ref().map_or("string", |k| k.as_str());
        if !VariableType::allows(kind) {
            return Err(ApiError::invalid_field(&format!("{path}.type"), format!("must be one of {}", VariableType::VALUES.join(", "))));
        }
        let fallback = variable.fallback_value.clone().unwrap_or(Value::Null);
        let fits = match (kind, &fallback) {
            (_, Value::Null) => true,
            ("string", Value::String(text)) => text.chars().count() <= MAX_VALUE_CHARS,
            ("object", Value::Object(_)) | ("list", Value::Array(_)) => fallback.to_string().chars().count() <= MAX_VALUE_CHARS,
            ("number", Value::Number(_)) | ("boolean", Value::Bool(_)) => true,
            _ => false,
        };
        if !fits {
            return Err(ApiError::invalid_field(
                &format!("{path}.fallback_value"),
                format!("must be a {kind} (or null) of at most {MAX_VALUE_CHARS} characters"),
            ));
        }
        out.push((key.to_string(), kind.to_string(), fallback));
    }
    Ok(out)
}

/// Checks `brand_overrides`: an object of brand fields, each a checked value or `null`.
fn checked_overrides(overrides: &Value, public_url: &str) -> ApiResult<Value> {
    let Some(map) = overrides.as_object() else {
        return Err(ApiError::invalid_field("brand_overrides", "must be an object of brand fields (or null)"));
    };
    let mut out = Map::new();
    for (name, value) in map {
        let path = format!("brand_overrides.{name}");
        if !BRAND_KIT_FIELDS.contains(&name.as_str()) {
            return Err(ApiError::invalid_field(&path, format!("is not a brand field; the fields are {}", BRAND_KIT_FIELDS.join(", "))));
        }
        let checked = match value {
            Value::Null => Value::Null,
            Value::String(text) => checked_brand_field(name, text, &path, public_url)?.map_or(Value::Null, Value::String),
            _ => return Err(ApiError::invalid_field(&path, "must be a string or null")),
        };
        out.insert(name.clone(), checked);
    }
    Ok(Value::Object(out))
}

/// The team's brand kit with a template's overrides laid over it, field by field.
pub async fn brand(conn: &mut PgConnection, team_id: Uuid, overrides: Option<&Value>) -> ApiResult<Brand> {
    let team = teams::get(conn, team_id).await?.ok_or_else(|| ApiError::not_found("Team"))?;
    let mut kit = team.brand_kit.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(overrides)) = overrides {
        kit.extend(overrides.clone());
    }
    Ok(serde_json::from_value(Value::Object(kit)).unwrap_or_default())
}

/// What a document's references are checked against: the team's properties, live topics and
/// segments, and the saved blocks it names.
pub async fn catalog(conn: &mut PgConnection, team_id: Uuid, document: &Value) -> ApiResult<Catalog> {
    let facts = schema::store::templates::catalog_facts(conn, team_id).await?;
    let mut saved = Vec::new();
    collect_saved_ids(document, &mut saved);
    let blocks = if saved.is_empty() { Vec::new() } else { saved_blocks::many(conn, team_id, &saved).await? };
    Ok(Catalog {
        properties: facts.properties.into_iter().collect(),
        topics: facts.topics.into_iter().collect(),
        segments: facts.segments.into_iter().collect(),
        saved_blocks: blocks.into_iter().map(|b| (b.id, b.content)).collect(),
    })
}

fn collect_saved_ids(value: &Value, out: &mut Vec<Uuid>) {
    match value {
        Value::Object(map) => {
            if let Some(id) = map.get("saved_block_id").and_then(Value::as_str).and_then(schema::ids::parse_id) {
                out.push(id);
            }
            map.values().for_each(|v| collect_saved_ids(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_saved_ids(v, out)),
        _ => {}
    }
}

/// Compiles a saved block's content on its own (inside a one-section document) to check it.
pub async fn check_saved_block(conn: &mut PgConnection, team_id: Uuid, kind: &str, content: &Value) -> ApiResult<()> {
    if content.to_string().len() > rules::MAX_BODY_BYTES {
        return Err(ApiError::invalid_field("content", "must be at most 2 MB"));
    }
    let section = if kind == "section" { content.clone() } else { json!({ "columns": [{ "blocks": [content] }] }) };
    let document = json!({ "kind": "svc.blocks", "version": 1, "lang": "en", "sections": [section] });
    let catalog = catalog(conn, team_id, &document).await?;
    Compiled::from_document(None, &document, &Brand::default(), &catalog).map_err(|list| {
        problems(
            list.into_iter()
                .map(|p| Problem::new(p.path.replacen("document.sections[0].columns[0].blocks[0]", "content", 1).replacen("document.sections[0]", "content", 1), p.message))
                .collect(),
        )
    })?;
    Ok(())
}

/// Recompiles every live template version that uses a saved block (after it changed).
pub async fn recompile_users(conn: &mut PgConnection, team_id: Uuid, block_id: Uuid) -> ApiResult<usize> {
    let users = schema::store::templates::using_saved_block(conn, team_id, block_id).await?;
    let count = users.len();
    for (template_id, version, subject, document, overrides) in users {
        let brand = brand(conn, team_id, overrides.as_ref()).await?;
        let catalog = catalog(conn, team_id, &document).await?;
        // Refresh the embedded copy from the saved block: drop it so the catalog's content wins.
        let document = without_copy_of(&document, block_id);
        let visual = Compiled::from_document(subject.as_deref(), &document, &brand, &catalog).map_err(problems)?;
        let compiled = serde_json::to_value(&visual.compiled).map_err(anyhow::Error::from)?;
        let recompiled = schema::store::templates::Recompiled {
            html: &visual.html,
            text: &visual.text,
            document: &visual.document,
            compiled: &compiled,
            saved_block_ids: &visual.saved_blocks,
        };
        schema::store::templates::recompiled(conn, template_id, version, &recompiled).await?;
    }
    Ok(count)
}

/// The document with the embedded copy of one saved block removed from its references.
fn without_copy_of(value: &Value, block_id: Uuid) -> Value {
    match value {
        Value::Object(map) => {
            let names_it = map.get("saved_block_id").and_then(Value::as_str).and_then(schema::ids::parse_id) == Some(block_id);
            Value::Object(
                map.iter()
                    .filter(|(key, _)| !(names_it && key.as_str() == "content"))
                    .map(|(key, v)| (key.clone(), without_copy_of(v, block_id)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| without_copy_of(v, block_id)).collect()),
        other => other.clone(),
    }
}

/// Runs the content checks over a version's content.
pub async fn checks(conn: &mut PgConnection, public_url: &str, team_id: Uuid, content: &Content, preview_text: Option<&str>) -> ApiResult<Vec<render::checks::Check>> {
    let facts = schema::store::templates::catalog_facts(conn, team_id).await?;
    let properties: HashMap<String, String> = facts.properties.into_iter().collect();
    let html = content.html.as_deref().unwrap_or_default();
    let prefix = format!("{public_url}{}", crate::routes::team::brand_kit::ASSET_PATH);
    let ids: Vec<Uuid> = html.match_indices(&prefix).filter_map(|(at, _)| html.get(at + prefix.len()..at + prefix.len() + 36)).filter_map(schema::ids::parse_id).collect();
    let sizes: HashMap<String, u64> = if ids.is_empty() {
        HashMap::new()
    } else {
        brand_assets::sizes(conn, team_id, &ids).await?.into_iter().map(|(id, size)| (format!("{prefix}{id}"), size.max(0) as u64)).collect()
    };
    let image_bytes = |src: &str| sizes.get(src).copied();
    let preheader = preview_text.map(str::to_string).or_else(|| content.document.as_ref().and_then(preheader_text));
    let input = render::checks::Input {
        subject: content.subject.as_deref(),
        html: content.html.as_deref(),
        text: content.text.as_deref(),
        preview_text: preheader.as_deref(),
        properties: &properties,
        uploaded_image_bytes: &image_bytes,
    };
    Ok(render::checks::run(&input))
}

/// The text of a document's preheader block (first block of the first section).
fn preheader_text(document: &Value) -> Option<String> {
    let block = document.pointer("/sections/0/columns/0/blocks/0")?;
    (block.get("type")?.as_str()? == "preheader").then(|| block.get("text")?.as_str().map(str::to_string))?
}

/// A template send's content, rendered with the send's variables.
pub struct RenderedSend {
    pub template_id: Uuid,
    pub version: i32,
    pub from: Option<String>,
    pub subject: Option<String>,
    pub reply_to: Option<Vec<String>>,
    pub html: Option<String>,
    pub text: Option<String>,
}

/// A refusal of a template send's `variables`, at `path`.
pub struct VariableProblem {
    pub kind: ErrorKind,
    pub path: String,
    pub message: String,
}

/// Renders a published template for one send: each declared variable takes the send's value
/// (a string or number of at most 2,000 characters), else its fallback. A key the template
/// does not declare is refused.
pub fn render_send(template: &Sendable, given: &Map<String, Value>, prefix: &str) -> Result<RenderedSend, VariableProblem> {
    let invalid = |path: String, message: String| VariableProblem { kind: ErrorKind::Invalid, path, message };
    let declared = stored_variables(template.variables.as_ref().unwrap_or(&Value::Null));
    let mut values = Map::new();
    for (key, value) in given {
        let path = format!("{prefix}template.variables.{key}");
        if !declared.iter().any(|v| v.key.0.as_deref() == Some(key)) {
            return Err(invalid(path, format!("`{key}` is not a variable of the template")));
        }
        match value {
            Value::String(text) if text.chars().count() > MAX_VALUE_CHARS => {
                return Err(invalid(path, format!("must be at most {MAX_VALUE_CHARS} characters")));
            }
            Value::Number(number) if number.to_string().len() > MAX_VALUE_CHARS => {
                return Err(invalid(path, format!("must be at most {MAX_VALUE_CHARS} characters")));
            }
            Value::String(_) | Value::Number(_) => {}
            _ => return Err(invalid(path, "must be a string or a number".into())),
        }
        values.insert(key.clone(), value.clone());
    }
    for variable in &declared {
        let (Some(key), Some(fallback)) = (variable.key.0.as_ref(), variable.fallback_value.as_ref()) else { continue };
        if !values.contains_key(key) && !fallback.is_null() {
            values.insert(key.clone(), fallback.clone());
        }
    }
    let (Some(version), Some(compiled)) = (template.version, template.compiled.as_ref()) else {
        return Err(VariableProblem {
            kind: ErrorKind::InvalidParameter,
            path: format!("{prefix}template.id"),
            message: "the template has no published version yet: publish it with `POST /templates/{id}/publish`".into(),
        });
    };
    let compiled: Compiled = serde_json::from_value(compiled.clone()).map_err(|_| invalid(format!("{prefix}template.id"), "could not be read".into()))?;
    let context = render::Context { variables: &values, contact: None, event: None };
    let rendered = compiled.render(&context, render::Mode::Transactional);
    let header = |text: &String| header_program(text).render(&context, render::Mode::Transactional).subject;
    Ok(RenderedSend {
        template_id: template.id,
        version,
        from: template.from_address.as_ref().map(header),
        subject: compiled.has_subject().then_some(rendered.subject),
        reply_to: template.reply_to.as_ref().map(|list| list.iter().map(header).collect()),
        html: template.has_html.then_some(rendered.html),
        text: template.has_text.then_some(rendered.text),
    })
}
