//! A template and its versions as the API shows them.

use crate::http::fields::{Choice, Nullable};
use crate::routes::templates::content::{self, VariableView};
use chrono::{DateTime, Utc};
use poem_openapi::Object;
use schema::store::templates::{Content, Template, Version};
use serde_json::Value;

crate::choices! {
    /// `draft` (only a draft so far: not sendable) or `published`.
    TemplateStatus = &["draft", "published"];
    /// A content check's verdict: `pass`, `warn` or `fail`.
    CheckStatus = &["pass", "warn", "fail"];
}

/// A template with its current version's content.
#[derive(Object)]
pub struct TemplateView {
    /// Always `template`.
    pub object: String,
    /// The template's id.
    pub id: String,
    /// The template's name.
    pub name: String,
    /// The template's alias, or `null` when it has none.
    pub alias: Nullable<String>,
    /// `published` once a version has been published, otherwise `draft`.
    pub status: Choice<TemplateStatus>,
    /// The newest version: the open draft, or the published version when there is no draft.
    pub current_version: i32,
    /// The version sends use, or `null` until the first publish.
    pub published_version: Nullable<i32>,
    /// True when the current version is an open (unpublished) draft.
    pub has_unpublished_versions: bool,
    #[oai(flatten)]
    pub content: ContentView,
    /// When the current version was published (`null` while it is a draft).
    pub published_at: Nullable<DateTime<Utc>>,
    /// When the template was created.
    pub created_at: DateTime<Utc>,
    /// When the template was last changed.
    pub updated_at: DateTime<Utc>,
}

/// A version's content.
#[derive(Object)]
pub struct ContentView {
    /// The From (`address` or `Name <address>`, `{{key}}` placeholders kept), or `null` when unset.
    pub from: Nullable<String>,
    /// The subject line (`{{key}}` placeholders kept), or `null` when unset.
    pub subject: Nullable<String>,
    /// The Reply-To addresses, or `null` when unset.
    pub reply_to: Nullable<Vec<String>>,
    /// The HTML (compiled from the document for a visual template), or `null` when there is none.
    pub html: Nullable<String>,
    /// The plain text (compiled from the document for a visual template), or `null` when there is none.
    pub text: Nullable<String>,
    /// The declared variables.
    pub variables: Vec<VariableView>,
    /// The block document of a visual template, `null` for a code template.
    pub document: Nullable<Value>,
    /// Brand fields that differ from the team's brand kit, or `null` when the template follows the team.
    pub brand_overrides: Nullable<Value>,
}

pub fn content_view(content: Content) -> ContentView {
    ContentView {
        variables: content::variable_views(&content.variables),
        from: Nullable(content.from_address),
        subject: Nullable(content.subject),
        reply_to: Nullable(content.reply_to),
        html: Nullable(content.html),
        text: Nullable(content.text),
        document: Nullable(content.document),
        brand_overrides: Nullable(content.brand_overrides),
    }
}

/// A template in a list (without its content).
#[derive(Object)]
pub struct TemplateSummary {
    /// Always `template`.
    pub object: String,
    /// The template's id.
    pub id: String,
    /// The template's name.
    pub name: String,
    /// The template's alias, or `null` when it has none.
    pub alias: Nullable<String>,
    /// `published` once a version has been published, otherwise `draft`.
    pub status: Choice<TemplateStatus>,
    /// The newest version: the open draft, or the published version when there is no draft.
    pub current_version: i32,
    /// The version sends use, or `null` until the first publish.
    pub published_version: Nullable<i32>,
    /// True when the current version is an open (unpublished) draft.
    pub has_unpublished_versions: bool,
    /// When the current version was published, or `null` while it is a draft.
    pub published_at: Nullable<DateTime<Utc>>,
    /// When the template was created.
    pub created_at: DateTime<Utc>,
    /// When the template was last changed.
    pub updated_at: DateTime<Utc>,
}

/// A page of templates.
#[derive(Object)]
pub struct TemplateList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<TemplateSummary>,
}

/// One version of a template.
#[derive(Object)]
pub struct VersionView {
    /// Always `template_version`.
    pub object: String,
    /// The template's id.
    pub template_id: String,
    /// The version's number, from 1.
    pub version: i32,
    /// `published` once this version has been published, otherwise `draft`.
    pub status: Choice<TemplateStatus>,
    #[oai(flatten)]
    pub content: ContentView,
    /// When this version was published (`null` while it is a draft).
    pub published_at: Nullable<DateTime<Utc>>,
    /// When this version was opened.
    pub created_at: DateTime<Utc>,
    /// When this version's content last changed.
    pub updated_at: DateTime<Utc>,
}

/// A version in the list of versions.
#[derive(Object)]
pub struct VersionSummary {
    /// Always `template_version`.
    pub object: String,
    /// The version's number, from 1.
    pub version: i32,
    /// `published` once this version has been published, otherwise `draft`.
    pub status: Choice<TemplateStatus>,
    /// The version's subject, or `null` when it has none.
    pub subject: Nullable<String>,
    /// When this version was published (`null` while it is a draft).
    pub published_at: Nullable<DateTime<Utc>>,
    /// When this version was opened.
    pub created_at: DateTime<Utc>,
    /// When this version's content last changed.
    pub updated_at: DateTime<Utc>,
}

/// Every version of a template, newest first.
#[derive(Object)]
pub struct VersionList {
    /// Always `list`.
    pub object: String,
    /// Whether more versions follow this page.
    pub has_more: bool,
    /// The versions, newest first.
    pub data: Vec<VersionSummary>,
}

pub fn status(template: &Template) -> Choice<TemplateStatus> {
    Choice::new(if template.published_version.is_some() { "published" } else { "draft" })
}

pub fn version_status(version: &Version) -> Choice<TemplateStatus> {
    Choice::new(if version.published_at.is_some() { "published" } else { "draft" })
}

pub fn summary(t: Template) -> TemplateSummary {
    TemplateSummary {
        object: "template".into(),
        id: t.id.to_string(),
        status: status(&t),
        has_unpublished_versions: t.published_at.is_none(),
        name: t.name,
        alias: Nullable(t.alias),
        current_version: t.current_version,
        published_version: Nullable(t.published_version),
        published_at: Nullable(t.published_at),
        created_at: t.created_at,
        updated_at: t.updated_at,
    }
}

pub fn view(t: Template) -> TemplateView {
    TemplateView {
        object: "template".into(),
        id: t.id.to_string(),
        status: status(&t),
        has_unpublished_versions: t.published_at.is_none(),
        name: t.name,
        alias: Nullable(t.alias),
        current_version: t.current_version,
        published_version: Nullable(t.published_version),
        content: content_view(t.content),
        published_at: Nullable(t.published_at),
        created_at: t.created_at,
        updated_at: t.updated_at,
    }
}
