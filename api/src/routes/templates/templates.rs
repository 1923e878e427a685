//! Templates: versioned content with typed variables, addressed by id or alias. Content is
//! code (`html`, `text`) or a visual block document compiled into both on each save. A new
//! template is a draft; publishing makes it sendable; an update to a published template opens
//! the next draft while sends keep the published version.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::fields::{Bounded, Choice, IdText, Nullable, Required, Search};
use crate::http::paging::{keyed_page_request, page_by_key, page_request, search_text};
use crate::routes::{Deleted, Tag, Updated};
use crate::routes::emails::send_body::Addresses;
use crate::state::{AppState, Caller};
use crate::routes::templates::content::{self, ContentInput, VariableIn};
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Object};
use schema::store::templates::{self, Key, Template};
use serde::Deserialize;
use serde_json::Value;
use crate::routes::templates::views::{TemplateView, content_view, TemplateList, VersionView, VersionSummary, VersionList, version_status, summary, view};
use crate::routes::templates::views::CheckStatus;

pub struct TemplatesApi;

/// Longest template name.
const MAX_NAME: usize = 200;
/// Longest alias.
const MAX_ALIAS: usize = 63;

/// Body of `POST /templates`: exactly one of `html`, `starter` and `document`.
#[derive(Object, Deserialize)]
pub struct CreateTemplate {
    /// Up to 200 characters.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"\S"))]
    pub name: Required<String>,
    /// Lower-case letters, digits, `-` and `_`, starting with a letter or digit, up to 63
    /// characters, never shaped like a UUID; unique among the team's live templates.
    #[oai(validator(max_length = 63, pattern = "^[a-z0-9][a-z0-9_-]*$"))]
    pub alias: Option<String>,
    /// `address` or `Name <address>`; `{{key}}` placeholders allowed.
    pub from: Option<String>,
    /// One line; `{{key}}` placeholders allowed.
    pub subject: Option<String>,
    /// Reply-To addresses.
    pub reply_to: Option<Addresses>,
    /// HTML with `{{key}}` placeholders (a code template).
    pub html: Option<String>,
    /// Plain text with `{{key}}` placeholders.
    pub text: Option<String>,
    /// Up to 200 declared variables; each must be used, and every placeholder declared.
    #[oai(validator(max_items = 200))]
    pub variables: Option<Vec<VariableIn>>,
    /// The slug of a starter from `GET /starters` to copy; the other fields sent win over the
    /// starter's, and the copy keeps no link to the library.
    pub starter: Option<String>,
    /// A visual block document `{ kind: "svc.blocks", version: 1, lang, sections[] }`,
    /// compiled into `html` and `text`.
    pub document: Option<Value>,
    /// Brand fields that differ from the team's brand kit: an omitted field follows the team,
    /// a `null` one uses the plain default.
    pub brand_overrides: Option<Value>,
}

/// Body of `PATCH /templates/{id}`: the fields sent change; content changes edit the open
/// draft, or open the next one when the current version is published.
#[derive(Object, Deserialize)]
pub struct UpdateTemplate {
    /// Up to 200 characters.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"\S"))]
    pub name: Option<String>,
    /// As on create; `null` removes it.
    #[serde(default)]
    #[oai(validator(max_length = 63, pattern = "^[a-z0-9][a-z0-9_-]*$"))]
    pub alias: MaybeUndefined<String>,
    /// As on create; `null` removes it.
    #[serde(default)]
    pub from: MaybeUndefined<String>,
    /// As on create; `null` removes it.
    #[serde(default)]
    pub subject: MaybeUndefined<String>,
    /// As on create; `null` removes it.
    #[serde(default)]
    pub reply_to: MaybeUndefined<Addresses>,
    /// Makes the template a code template (its block document, if any, is dropped).
    pub html: Option<String>,
    /// As on create; `null` removes it. Refused for a visual template: its text is compiled from the document.
    #[serde(default)]
    pub text: MaybeUndefined<String>,
    /// Replaces the declared variables.
    #[oai(validator(max_items = 200))]
    pub variables: Option<Vec<VariableIn>>,
    /// Replaces the block document (the template becomes visual).
    pub document: Option<Value>,
    /// As on create; `null` removes them (the template follows the team's brand kit).
    #[serde(default)]
    pub brand_overrides: MaybeUndefined<Value>,
}

/// `{ id, object: "template" }`.
#[derive(Object)]
pub struct TemplateRef {
    /// The template's id.
    pub id: String,
    /// Always `template`.
    pub object: String,
}

#[derive(ApiResponse)]
pub enum CreateResponse {
    /// Created as draft version 1.
    #[oai(status = 201)]
    Created(Json<TemplateRef>),
}

/// Body of `POST /templates/{id}/checks`.
#[derive(Object, Deserialize, Default)]
pub struct ChecksRequest {
    /// The version to check (default: the current one).
    #[oai(validator(minimum(value = "1")))]
    pub version: Option<i32>,
    /// The preview text to judge (default: the document's preheader block).
    pub preview_text: Option<String>,
}

/// One content check.
#[derive(Object)]
pub struct CheckView {
    /// `variables`, `links`, `link_types`, `subject`, `preview_text`, `alt_text`,
    /// `image_weight`, `text_and_images` or `unsubscribe`.
    pub name: String,
    /// The check's verdict.
    pub status: Choice<CheckStatus>,
    /// What the check found, for a person.
    pub message: String,
}

/// The content checks of one version.
#[derive(Object)]
pub struct ChecksView {
    /// Always `template_checks`.
    pub object: String,
    /// The template's id.
    pub template_id: String,
    /// The version checked.
    pub version: i32,
    /// Every check, in the order `name` lists them.
    pub checks: Vec<CheckView>,
}

#[poem_openapi::OpenApi(tag = "Tag::Templates")]
impl TemplatesApi {
    /// Create a template as draft version 1, from `html`, a `starter` or a block `document`
    /// (exactly one). No `Idempotency-Key` is accepted.
    #[oai(path = "/templates", method = "post", operation_id = "create-template")]
    async fn create(&self, request: &poem::Request, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CreateTemplate>) -> ApiResult<CreateResponse> {
        if request.headers().contains_key("idempotency-key") {
            return Err(ApiError::invalid_field("Idempotency-Key", "is not accepted when creating a template: a retry creates another template"));
        }
        let body = body.0;
        let name = check_name(body.name.0.as_deref().ok_or_else(|| ApiError::missing_field("name"))?)?;
        let alias = body.alias.as_deref().map(check_alias).transpose()?;
        let sources = [body.html.is_some(), body.starter.is_some(), body.document.is_some()];
        match sources.iter().filter(|given| **given).count() {
            0 => return Err(ApiError::missing_field("html").with_error("starter", "send `html` or `starter`")),
            1 => {}
            _ => {
                let path = if body.html.is_some() { "html" } else { "starter" };
                return Err(ApiError::invalid_parameter(path, "send exactly one of `html`, `starter` and `document`"));
            }
        }
        let mut input = ContentInput {
            from: body.from,
            subject: body.subject,
            reply_to: body.reply_to.map(Addresses::into_vec),
            html: body.html,
            text: body.text,
            variables: body.variables,
            document: body.document,
            brand_overrides: body.brand_overrides,
        };
        if let Some(slug) = &body.starter {
            let starter = render::starters::find(slug).ok_or_else(|| {
                ApiError::invalid_field("starter", format!("is not a starter: `GET /starters` lists them (`{slug}` is unknown)"))
            })?;
            content::apply_starter(&mut input, starter);
        }
        let mut tx = state.pool.begin().await?;
        let content = content::compile(&mut tx, &state.config.public_url, caller.team_id, &input).await?;
        let id = templates::insert(&mut tx, caller.team_id, &name, alias.as_deref(), &content).await?.ok_or_else(alias_taken)?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(TemplateRef { id: id.to_string(), object: "template".into() })))
    }

    /// List the team's templates, newest first.
    #[oai(path = "/templates", method = "get", operation_id = "list-templates")]
    async fn list(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return items after (older than) this id.
        after: Query<Option<IdText>>,
        /// Return items before (newer than) this id.
        before: Query<Option<IdText>>,
        /// Matches the name or alias (case-insensitive; `%` and `_` literal).
        search: Query<Option<Search<200>>>,
    ) -> ApiResult<Json<TemplateList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let search = search_text(search.0)?;
        let page = templates::list(&mut *state.pool.acquire().await?, caller.team_id, &page, search.as_deref()).await?;
        Ok(Json(TemplateList { object: "list".into(), has_more: page.has_more, data: page.data.into_iter().map(summary).collect() }))
    }

    /// Retrieve a template by id or alias, with its current version.
    #[oai(path = "/templates/:template_id", method = "get", operation_id = "get-template")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>, template_id: Path<String>) -> ApiResult<Json<TemplateView>> {
        let template = found(templates::find(&mut *state.pool.acquire().await?, caller.team_id, &Key::parse(&template_id.0), false).await?)?;
        Ok(Json(view(template)))
    }

    /// Change a template. `name` and `alias` change in place; content changes edit the open
    /// draft, or open the next version when the current one is published (sends keep it).
    /// With `If-Match` naming the `updated_at` the change was made against, a template changed
    /// since (another tab, another person), or any other instant, is `412
    /// precondition_failed` and nothing changes.
    #[oai(path = "/templates/:template_id", method = "patch", operation_id = "update-template")]
    async fn update(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        template_id: Path<String>,
        /// The template's `updated_at` as last read (quoted or not).
        #[oai(name = "If-Match", validator(pattern = r#"^(W/)?"?[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{1,24}(Z|[+-][0-9]{2}:[0-9]{2})"?$"#))]
        if_match: Header<Option<String>>,
        body: Body<UpdateTemplate>,
    ) -> ApiResult<Json<Updated>> {
        let body = body.0;
        let name = body.name.as_deref().map(check_name).transpose()?;
        let alias = match &body.alias {
            MaybeUndefined::Undefined => None,
            MaybeUndefined::Null => Some(None),
            MaybeUndefined::Value(alias) => Some(Some(check_alias(alias)?)),
        };
        let mut tx = state.pool.begin().await?;
        let template = found(templates::find(&mut tx, caller.team_id, &Key::parse(&template_id.0), true).await?)?;
        if let Some(named) = if_match.0.as_deref().filter(|raw| read_as_of(raw) != Some(template.updated_at)) {
            return Err(ApiError::new(
                ErrorKind::PreconditionFailed,
                format!("The template changed since {}: it was saved at {}. Read it again and redo the change.", named.trim(), template.updated_at.to_rfc3339()),
            ));
        }
        if name.is_some() || alias.is_some() {
            let renamed = match templates::rename(&mut tx, template.id, name.as_deref(), alias.as_ref().map(|a| a.as_deref())).await {
                // Two renames racing for one alias: the index refuses the second.
                Err(error) if error.as_database_error().is_some_and(|e| e.is_unique_violation()) => false,
                other => other?,
            };
            if !renamed {
                return Err(alias_taken());
            }
        }
        let touches_content = body.html.is_some()
            || body.document.is_some()
            || body.variables.is_some()
            || !body.from.is_undefined()
            || !body.subject.is_undefined()
            || !body.reply_to.is_undefined()
            || !body.text.is_undefined()
            || !body.brand_overrides.is_undefined();
        if touches_content {
            let input = content::merged(&template.content, body.into_change());
            let content = content::compile(&mut tx, &state.config.public_url, caller.team_id, &input).await?;
            templates::save_draft(&mut tx, caller.team_id, &template, &content).await?;
        }
        tx.commit().await?;
        Ok(Json(Updated { object: "template".into(), id: template.id.to_string() }))
    }

    /// Delete a template: it answers 404 from then on and its alias is free. Emails already
    /// sent keep naming the version they used.
    #[oai(path = "/templates/:template_id", method = "delete", operation_id = "delete-template")]
    async fn delete(&self, state: Data<&AppState>, caller: Data<&Caller>, template_id: Path<String>) -> ApiResult<Json<Deleted>> {
        let mut conn = state.pool.acquire().await?;
        let template = found(templates::find(&mut conn, caller.team_id, &Key::parse(&template_id.0), false).await?)?;
        if !templates::delete(&mut conn, caller.team_id, template.id).await? {
            return Err(ApiError::not_found("Template"));
        }
        Ok(Json(Deleted { object: "template".into(), id: template.id.to_string(), deleted: true }))
    }

    /// Publish the current version: sends use it from now on. Publishing an already published
    /// version changes nothing.
    #[oai(path = "/templates/:template_id/publish", method = "post", operation_id = "publish-template")]
    async fn publish(&self, state: Data<&AppState>, caller: Data<&Caller>, template_id: Path<String>) -> ApiResult<Json<TemplateRef>> {
        let mut tx = state.pool.begin().await?;
        let template = found(templates::find(&mut tx, caller.team_id, &Key::parse(&template_id.0), true).await?)?;
        templates::publish(&mut tx, &template).await?;
        tx.commit().await?;
        Ok(Json(TemplateRef { id: template.id.to_string(), object: "template".into() }))
    }

    /// Copy a template's current version into a new draft template named "<name> (copy)",
    /// without an alias.
    #[oai(path = "/templates/:template_id/duplicate", method = "post", operation_id = "duplicate-template")]
    async fn duplicate(&self, state: Data<&AppState>, caller: Data<&Caller>, template_id: Path<String>) -> ApiResult<CreateResponse> {
        let mut tx = state.pool.begin().await?;
        let template = found(templates::find(&mut tx, caller.team_id, &Key::parse(&template_id.0), false).await?)?;
        let name: String = format!("{} (copy)", template.name).chars().take(MAX_NAME).collect();
        let id = templates::insert(&mut tx, caller.team_id, &name, None, &template.content).await?.ok_or_else(alias_taken)?;
        tx.commit().await?;
        Ok(CreateResponse::Created(Json(TemplateRef { id: id.to_string(), object: "template".into() })))
    }

    /// Every version of a template, newest first.
    #[oai(path = "/templates/:template_id/versions", method = "get", operation_id = "list-template-versions")]
    async fn versions(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        template_id: Path<String>,
        /// Items per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<i64>>,
        /// Return the items after the one with this version number, in the list's order.
        after: Query<Option<Bounded<1, 2048>>>,
        /// Return the items before the one with this version number, in the list's order.
        before: Query<Option<Bounded<1, 2048>>>,
    ) -> ApiResult<Json<VersionList>> {
        let page = keyed_page_request(limit.0, after.0.map(|k| k.0), before.0.map(|k| k.0))?;
        let mut conn = state.pool.acquire().await?;
        let template = found(templates::find(&mut conn, caller.team_id, &Key::parse(&template_id.0), false).await?)?;
        let versions = page_by_key(templates::versions(&mut conn, template.id).await?, |v| v.version.to_string(), &page)?;
        let has_more = versions.has_more;
        let data = versions
            .data
            .into_iter()
            .map(|v| VersionSummary {
                object: "template_version".into(),
                version: v.version,
                status: version_status(&v),
                subject: Nullable(v.content.subject),
                published_at: Nullable(v.published_at),
                created_at: v.created_at,
                updated_at: v.updated_at,
            })
            .collect();
        Ok(Json(VersionList { object: "list".into(), has_more, data }))
    }

    /// One version of a template with its content.
    #[oai(path = "/templates/:template_id/versions/:version", method = "get", operation_id = "get-template-version")]
    async fn version(&self, state: Data<&AppState>, caller: Data<&Caller>, template_id: Path<String>, version: Path<String>) -> ApiResult<Json<VersionView>> {
        let mut conn = state.pool.acquire().await?;
        let template = found(templates::find(&mut conn, caller.team_id, &Key::parse(&template_id.0), false).await?)?;
        let number = version.0.parse::<i32>().ok().filter(|n| *n >= 1).ok_or_else(|| ApiError::not_found("Template version"))?;
        let v = templates::version(&mut conn, template.id, number).await?.ok_or_else(|| ApiError::not_found("Template version"))?;
        Ok(Json(VersionView {
            object: "template_version".into(),
            template_id: template.id.to_string(),
            version: v.version,
            status: version_status(&v),
            published_at: Nullable(v.published_at),
            created_at: v.created_at,
            updated_at: v.updated_at,
            content: content_view(v.content),
        }))
    }

    /// Run the pre-send content checks over a version (default: the current one): variables,
    /// links, link types, subject, preview text, alt text, image weight, text and images, and
    /// unsubscribe, each `pass`, `warn` or `fail`. Links are read as written, never fetched.
    #[oai(path = "/templates/:template_id/checks", method = "post", operation_id = "check-template")]
    async fn checks(&self, state: Data<&AppState>, caller: Data<&Caller>, template_id: Path<String>, body: Body<Option<ChecksRequest>>) -> ApiResult<Json<ChecksView>> {
        let request = body.0.unwrap_or_default();
        let mut conn = state.pool.acquire().await?;
        let template = found(templates::find(&mut conn, caller.team_id, &Key::parse(&template_id.0), false).await?)?;
        let number = request.version.unwrap_or(template.current_version);
        let v = templates::version(&mut conn, template.id, number).await?.ok_or_else(|| {
            ApiError::invalid_field("version", format!("the template has versions 1 to {}", template.current_version))
        })?;
        let results = content::checks(&mut conn, &state.config.public_url, caller.team_id, &v.content, request.preview_text.as_deref()).await?;
        let checks = results
            .into_iter()
            .map(|check| CheckView { name: check.name.to_string(), status: Choice::new(check.status.as_str()), message: check.message })
            .collect();
        Ok(Json(ChecksView { object: "template_checks".into(), template_id: template.id.to_string(), version: v.version, checks }))
    }
}

impl UpdateTemplate {
    fn into_change(self) -> content::Change {
        content::Change {
            from: self.from,
            subject: self.subject,
            reply_to: self.reply_to.map_value(Addresses::into_vec),
            html: self.html,
            text: self.text,
            variables: self.variables,
            document: self.document,
            brand_overrides: self.brand_overrides,
        }
    }
}

fn found(template: Option<Template>) -> ApiResult<Template> {
    template.ok_or_else(|| ApiError::not_found("Template"))
}

fn check_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::invalid_field("name", "must not be blank"));
    }
    if name.chars().count() > MAX_NAME {
        return Err(ApiError::invalid_field("name", format!("must be at most {MAX_NAME} characters")));
    }
    Ok(name.to_string())
}

/// Document A's alias rule: lower-case letters, digits, `-`, `_`; starts with a letter or
/// digit; up to 63 characters; never a UUID (so an alias can never be read as an id).
fn check_alias(alias: &str) -> ApiResult<String> {
    let valid = alias.len() <= MAX_ALIAS
        && alias.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && alias.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        return Err(ApiError::invalid_field(
            "alias",
            "must be 1 to 63 lower-case letters, digits, `-` or `_`, starting with a letter or digit",
        ));
    }
    if uuid::Uuid::try_parse(alias).is_ok() {
        return Err(ApiError::invalid_field("alias", "must not be shaped like a UUID: it would read as a template id"));
    }
    Ok(alias.to_string())
}

fn alias_taken() -> ApiError {
    ApiError::refused("Another live template of the team has this alias; choose another or delete that template first.")
        .with_error("alias", "is held by another live template")
}

/// The instant an `If-Match` names (`updated_at`, quoted or weak or bare), if it is one.
fn read_as_of(raw: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let bare = raw.trim().trim_start_matches("W/").trim_matches('"');
    chrono::DateTime::parse_from_rfc3339(bare).ok().map(|at| at.to_utc())
}
