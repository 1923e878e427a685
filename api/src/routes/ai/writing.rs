//! AI assist for words: subject lines for a message, subject variants to test, a draft of a
//! message, and alt text for an image. Nothing is saved or sent; each costs one credit.

use super::assist::{self, CreditsView, at_most, distinct_lines, one_line, required};
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{Choice, Choices, Nullable};
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use jobs::ai::{Task, object_schema};
use poem::web::Data;
use poem_openapi::Object;
type Answer<T> = poem_openapi::payload::Response<poem_openapi::payload::Json<T>>;
use serde::Deserialize;
use serde_json::json;

pub struct WritingApi;

crate::choices! {
    /// The voice of a draft: `neutral` (default), `friendly` or `formal`.
    Tone = &["neutral", "friendly", "formal"];
}

/// The longest text input (a subject, html or text).
const MAX_TEXT: usize = 100_000;
/// The longest brief, audience or context.
const MAX_BRIEF: usize = 2_000;
/// The longest subject line Herald suggests.
const MAX_SUBJECT: usize = 150;

/// What to suggest subject lines for: any of the message's parts, or a template.
#[derive(Object, Deserialize)]
pub struct SubjectLinesBody {
    /// The current subject, if any (up to 100,000 characters).
    #[oai(validator(max_length = 100000))]
    pub subject: Option<String>,
    /// The message's HTML (up to 100,000 characters).
    #[oai(validator(max_length = 100000))]
    pub html: Option<String>,
    /// The message's text (up to 100,000 characters).
    #[oai(validator(max_length = 100000))]
    pub text: Option<String>,
    /// Who receives it (up to 2,000 characters).
    #[oai(validator(max_length = 2000))]
    pub audience: Option<String>,
    /// A template of the team (id or alias) whose current version is the message.
    pub template_id: Option<String>,
}

/// Subject lines to choose from.
#[derive(Object)]
pub struct AiSubjectSuggestions {
    /// Always `ai_subject_suggestions`.
    pub object: String,
    /// Up to five subject lines, each one line.
    pub suggestions: Vec<String>,
    /// Credits left this month, or `null` for no limit.
    pub credits_remaining: Nullable<i32>,
    /// The team's credits this month.
    pub credits: CreditsView,
}

/// A subject to write variants of.
#[derive(Object, Deserialize)]
pub struct SubjectVariantsBody {
    /// The subject (1 to 998 characters).
    #[oai(validator(min_length = 1, max_length = 998, pattern = r"\S"))]
    pub subject: String,
    /// How many variants, 2 to 5 (default 3).
    #[oai(validator(minimum(value = "2"), maximum(value = "5")))]
    #[serde(default, deserialize_with = "crate::http::fields::whole_number")]
    pub count: Option<i64>,
}

/// Variants of a subject, for a test.
#[derive(Object)]
pub struct AiSubjectVariants {
    /// Always `ai_subject_variants`.
    pub object: String,
    /// Exactly `count` variants, none the subject itself.
    pub variants: Vec<String>,
    /// Credits left this month, or `null` for no limit.
    pub credits_remaining: Nullable<i32>,
    /// The team's credits this month.
    pub credits: CreditsView,
}

/// What to draft.
#[derive(Object, Deserialize)]
pub struct DraftBody {
    /// What the message should say (1 to 2,000 characters).
    #[oai(validator(min_length = 1, max_length = 2000, pattern = r"\S"))]
    pub brief: String,
    /// The voice (default `neutral`).
    pub tone: Option<Choice<Tone>>,
    /// HTML to start from (up to 100,000 characters).
    #[oai(validator(max_length = 100000))]
    pub existing_html: Option<String>,
    /// A template of the team (id or alias) whose current version is context.
    pub template_id: Option<String>,
}

/// A drafted message (no subject).
#[derive(Object)]
pub struct AiDraft {
    /// Always `ai_draft`.
    pub object: String,
    /// The message's HTML, sanitised as an `html` block is.
    pub html: String,
    /// The message's plain text.
    pub text: String,
    /// Credits left this month, or `null` for no limit.
    pub credits_remaining: Nullable<i32>,
    /// The team's credits this month.
    pub credits: CreditsView,
}

/// An image to describe.
#[derive(Object, Deserialize)]
pub struct AltTextBody {
    /// The image's absolute https URL (it is not fetched; the model reads the URL and context).
    #[oai(validator(max_length = 2048, pattern = r"^https://[A-Za-z][A-Za-z0-9-]*(\.[A-Za-z][A-Za-z0-9-]*)*(:[0-9]{1,4})?([/?#]\S*)?$"))]
    pub image_url: String,
    /// What the image is for (up to 2,000 characters).
    #[oai(validator(max_length = 2000))]
    pub context: Option<String>,
}

/// Alt text for an image.
#[derive(Object)]
pub struct AiAltText {
    /// Always `ai_alt_text`.
    pub object: String,
    /// One line of at most 250 characters.
    pub alt: String,
    /// Credits left this month, or `null` for no limit.
    pub credits_remaining: Nullable<i32>,
    /// The team's credits this month.
    pub credits: CreditsView,
}

/// The longest alt text.
const MAX_ALT: usize = 250;

#[poem_openapi::OpenApi(tag = "Tag::Ai")]
impl WritingApi {
    /// Suggest subject lines for a message (`full_access` or `ai:use`; one credit).
    #[oai(path = "/ai/subject-lines", method = "post", operation_id = "suggest-subject-lines")]
    async fn subject_lines(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<SubjectLinesBody>) -> ApiResult<Answer<AiSubjectSuggestions>> {
        let body = body.0;
        for (field, value) in [("subject", &body.subject), ("html", &body.html), ("text", &body.text)] {
            at_most(field, value.as_deref(), MAX_TEXT)?;
        }
        at_most("audience", body.audience.as_deref(), MAX_BRIEF)?;
        let template = assist::template_context(&state, caller.team_id, body.template_id.as_deref()).await?;
        let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
        if blank(&body.subject) && blank(&body.html) && blank(&body.text) && template.is_null() {
            return Err(ApiError::refused("Give the message to suggest subject lines for: `subject`, `html`, `text` or `template_id`."));
        }
        let (provider, charge) = assist::begin(&state, &caller, 1).await?;
        let input = json!({ "subject": body.subject, "html": body.html, "text": body.text, "audience": body.audience, "template": template });
        let task = Task {
            name: "subject_lines",
            instructions: "Suggest five distinct subject lines for the email in `input`, each one line under 80 characters, \
                           true to its content, without spammy capitals or exclamation marks.",
            input: &input,
            schema: object_schema(json!({ "suggestions": { "type": "array", "items": { "type": "string" } } })),
        };
        let (suggestions, credits, waited) = assist::ask(&provider, charge, &task, 0, |answer| {
            let lines: Vec<String> = distinct_lines(&answer["suggestions"], MAX_SUBJECT).into_iter().take(5).collect();
            if lines.is_empty() { Err("no suggestion".to_string()) } else { Ok(lines) }
        })
        .await?;
        Ok(assist::timed(AiSubjectSuggestions { object: "ai_subject_suggestions".into(), suggestions, credits_remaining: Nullable(credits.remaining()), credits: credits.into() }, waited))
    }

    /// Write variants of a subject to test against it (`full_access` or `ai:use`; one credit).
    #[oai(path = "/ai/subject-variants", method = "post", operation_id = "suggest-subject-variants")]
    async fn subject_variants(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<SubjectVariantsBody>) -> ApiResult<Answer<AiSubjectVariants>> {
        let body = body.0;
        required("subject", &body.subject, 998)?;
        let count = match body.count {
            None => 3,
            Some(n) if (2..=5).contains(&n) => n as usize,
            Some(_) => return Err(ApiError::invalid_field("count", "must be 2 to 5")),
        };
        let (provider, charge) = assist::begin(&state, &caller, 1).await?;
        let input = json!({ "subject": body.subject, "count": count });
        let task = Task {
            name: "subject_variants",
            instructions: "Write `count` distinct variants of the subject in `input` for an A/B test: the same promise, \
                           different wording, each one line under 80 characters, none the subject itself.",
            input: &input,
            schema: object_schema(json!({ "variants": { "type": "array", "items": { "type": "string" } } })),
        };
        let original = body.subject.trim().to_string();
        let (variants, credits, waited) = assist::ask(&provider, charge, &task, 0, |answer| {
            let lines: Vec<String> = distinct_lines(&answer["variants"], MAX_SUBJECT).into_iter().filter(|v| !v.eq_ignore_ascii_case(&original)).take(count).collect();
            if lines.len() < count { Err(format!("{} of {count} variants", lines.len())) } else { Ok(lines) }
        })
        .await?;
        Ok(assist::timed(AiSubjectVariants { object: "ai_subject_variants".into(), variants, credits_remaining: Nullable(credits.remaining()), credits: credits.into() }, waited))
    }

    /// Draft a message from a brief (`full_access` or `ai:use`; one credit): HTML, sanitised as
    /// an `html` block is, and its text; no subject.
    #[oai(path = "/ai/draft", method = "post", operation_id = "draft-email")]
    async fn draft(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<DraftBody>) -> ApiResult<Answer<AiDraft>> {
        let body = body.0;
        required("brief", &body.brief, MAX_BRIEF)?;
        at_most("existing_html", body.existing_html.as_deref(), MAX_TEXT)?;
        let tone = match &body.tone {
            None => "neutral",
            Some(tone) if Tone::allows(tone.as_str()) => tone.as_str(),
            Some(_) => return Err(ApiError::refused_field("tone", format!("must be one of {}", Tone::VALUES.join(", ")))),
        };
        let template = assist::template_context(&state, caller.team_id, body.template_id.as_deref()).await?;
        let (provider, charge) = assist::begin(&state, &caller, 1).await?;
        let input = json!({ "brief": body.brief, "tone": tone, "existing_html": body.existing_html, "template": template });
        let task = Task {
            name: "draft",
            instructions: "Draft the body of an email from the brief in `input`, in its tone: `html` (simple inline-styled \
                           HTML: paragraphs, headings, lists, links, no scripts or styles sheets) and the same message as \
                           plain `text`. No subject line. Keep any `{{variables}}` the material uses.",
            input: &input,
            schema: object_schema(json!({ "html": { "type": "string" }, "text": { "type": "string" } })),
        };
        let ((html, text), credits, waited) = assist::ask(&provider, charge, &task, 0, |answer| {
            let html = render::sanitize_html(answer["html"].as_str().unwrap_or_default());
            if html.trim().is_empty() {
                return Err("no html".to_string());
            }
            if html.chars().count() > MAX_TEXT {
                return Err("html past 100,000 characters".to_string());
            }
            let text = match answer["text"].as_str().map(str::trim) {
                Some(text) if !text.is_empty() => text.to_string(),
                _ => render::html_to_text(&html),
            };
            Ok((html, text))
        })
        .await?;
        Ok(assist::timed(AiDraft { object: "ai_draft".into(), html, text, credits_remaining: Nullable(credits.remaining()), credits: credits.into() }, waited))
    }

    /// Write alt text for an image (`full_access` or `ai:use`; one credit).
    #[oai(path = "/ai/alt-text", method = "post", operation_id = "write-alt-text")]
    async fn alt_text(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<AltTextBody>) -> ApiResult<Answer<AiAltText>> {
        let body = body.0;
        crate::http::input::https_url("image_url", &body.image_url)?;
        at_most("context", body.context.as_deref(), MAX_BRIEF)?;
        let (provider, charge) = assist::begin(&state, &caller, 1).await?;
        let input = json!({ "image_url": body.image_url, "context": body.context });
        let task = Task {
            name: "alt_text",
            instructions: "Write the alt text of the image in `input` for an email: what it shows and why it is there, \
                           one plain sentence under 125 characters, without \"image of\".",
            input: &input,
            schema: object_schema(json!({ "alt": { "type": "string" } })),
        };
        let (alt, credits, waited) =
            assist::ask(&provider, charge, &task, 0, |answer| answer["alt"].as_str().and_then(|alt| one_line(alt, MAX_ALT)).ok_or_else(|| "no alt text".to_string())).await?;
        Ok(assist::timed(AiAltText { object: "ai_alt_text".into(), alt, credits_remaining: Nullable(credits.remaining()), credits: credits.into() }, waited))
    }
}
