//! What every AI assist route shares: the gate (a provider configured, AI assist on for the
//! team, 10 requests a minute, credits left), the credits charged before the call and given
//! back when it yields nothing, the provider's answer checked before the client sees it, and
//! the credits every answer carries.

use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::fields::Nullable;
use crate::state::{AppState, Caller};
use chrono::Utc;
use jobs::ai::{Ai, AiError, Task};
use poem_openapi::Object;
use schema::store::ai::{self, Credits};
use serde_json::Value;
use std::time::Duration;
use uuid::Uuid;

/// A team's AI credits this month.
#[derive(Object, Clone)]
pub struct CreditsView {
    /// The plan's monthly allowance, or `null` for no limit.
    pub limit: Nullable<i32>,
    /// Credits spent this month (UTC), this call's included.
    pub used: i32,
    /// Credits left this month, or `null` for no limit.
    pub remaining: Nullable<i32>,
}

impl From<Credits> for CreditsView {
    fn from(c: Credits) -> Self {
        CreditsView { limit: Nullable(c.limit), used: c.used, remaining: Nullable(c.remaining()) }
    }
}

/// Credits charged for one call: kept once its answer is used, given back otherwise (also
/// when the request is dropped half-way, as when the client goes away).
pub struct Charge {
    pool: sqlx::PgPool,
    team_id: Uuid,
    credits: i32,
    after: Credits,
    settled: bool,
}

impl Charge {
    /// Keeps the credits; answers the team's credits after them.
    pub fn keep(mut self) -> Credits {
        self.settled = true;
        self.after
    }

    /// Gives the credits back.
    pub async fn give_back(mut self) {
        self.settled = true;
        if let Ok(mut conn) = self.pool.acquire().await
            && let Err(error) = ai::refund(&mut conn, self.team_id, self.credits, Utc::now()).await
        {
            tracing::warn!(%error, "AI credits could not be given back");
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if !self.settled {
            let (pool, team_id, credits) = (self.pool.clone(), self.team_id, self.credits);
            tokio::spawn(async move {
                if let Ok(mut conn) = pool.acquire().await {
                    let _ = ai::refund(&mut conn, team_id, credits, Utc::now()).await;
                }
            });
        }
    }
}

/// The configured provider, or `503 service_unavailable`.
pub fn provider(state: &AppState) -> ApiResult<&Ai> {
    state.ai.as_ref().ok_or_else(|| ApiError::new(ErrorKind::ServiceUnavailable, "AI assist is not configured on this Herald (HERALD_AI_BASE_URL is unset)."))
}

/// The provider, for a team with AI assist on: `503` without a provider, `403
/// invalid_permission` with AI assist off for the team.
pub async fn gate(state: &AppState, caller: &Caller) -> ApiResult<Ai> {
    let provider = provider(state)?.clone();
    if ai::enabled(&mut *state.pool.acquire().await?, caller.team_id).await? != Some(true) {
        return Err(ApiError::new(ErrorKind::InvalidPermission, "AI assist is off for the team; a team admin turns it on with `PATCH /team { ai_assist_enabled: true }`."));
    }
    Ok(provider)
}

/// Lets a call through the gate and charges its `credits`: `503` without a provider, `403
/// invalid_permission` with AI assist off for the team, `429 rate_limit_exceeded` past 10
/// requests a minute, `422 validation_error` when the month's credits do not cover it.
pub async fn begin(state: &AppState, caller: &Caller, credits: i32) -> ApiResult<(Ai, Charge)> {
    let provider = gate(state, caller).await?;
    let now = Utc::now();
    let mut conn = state.pool.acquire().await?;
    if let Err(seconds) = ai::take_request(&mut conn, caller.team_id, now).await? {
        return Err(ApiError::new(ErrorKind::RateLimitExceeded, format!("AI assist takes {} requests a minute per team; retry in {seconds} s.", ai::REQUESTS_PER_MINUTE))
            .with_retry_after(seconds));
    }
    match ai::charge(&mut conn, caller.team_id, credits, now).await? {
        Ok(after) => Ok((provider, Charge { pool: state.pool.clone(), team_id: caller.team_id, credits, after, settled: false })),
        Err(now) => Err(ApiError::refused(format!(
            "The team's AI credits for this month are spent: this call costs {credits}, {} of {} are left. They renew on the 1st (UTC).",
            now.remaining().unwrap_or(0),
            now.limit.unwrap_or(0)
        ))
        .with_details(serde_json::json!({ "credits": { "limit": now.limit, "used": now.used, "remaining": now.remaining() } }))),
    }
}

/// `503` for a call that yielded nothing usable; its credits were given back.
fn failed(why: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorKind::ServiceUnavailable, format!("{why}. Nothing was charged; retry in a moment."))
}

/// Asks the provider for `task` and checks its answer with `check` (`Err` names why the
/// answer cannot be used), asking once more when `retries` allows; the credits are kept only
/// for a used answer.
pub async fn ask<T>(provider: &Ai, charge: Charge, task: &Task<'_>, retries: u32, check: impl Fn(Value) -> Result<T, String>) -> ApiResult<(T, Credits, Duration)> {
    let mut last = String::new();
    let mut waited = Duration::ZERO;
    for _ in 0..=retries {
        match provider.complete(task).await {
            Ok(answer) => {
                waited += answer.provider_time;
                match check(answer.value) {
                    Ok(value) => return Ok((value, charge.keep(), waited)),
                    Err(why) => {
                        tracing::info!(task = task.name, why, "an AI answer was rejected");
                        last = format!("the AI provider's answer could not be used ({why})");
                    }
                }
            }
            Err(error @ AiError::Unusable(_)) => last = error.to_string(),
            Err(error @ AiError::Unavailable(_)) => {
                charge.give_back().await;
                return Err(failed(error));
            }
        }
    }
    charge.give_back().await;
    Err(failed(last))
}

/// A text input: at most `max` characters (`400 validation_error` naming `field`).
pub fn at_most(field: &str, value: Option<&str>, max: usize) -> ApiResult<()> {
    match value {
        Some(text) if text.chars().count() > max => Err(ApiError::invalid_field(field, format!("must be at most {max} characters"))),
        _ => Ok(()),
    }
}

/// A required text input: not blank, at most `max` characters.
pub fn required(field: &str, value: &str, max: usize) -> ApiResult<()> {
    if value.trim().is_empty() {
        return Err(ApiError::invalid_field(field, "must not be blank"));
    }
    at_most(field, Some(value), max)
}

/// One line of the model's text: whitespace collapsed, at most `max` characters (cut at a
/// word where it can be); `None` when nothing is left.
pub fn one_line(text: &str, max: usize) -> Option<String> {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let collapsed = collapsed.trim_matches(|c: char| c == '"' || c.is_whitespace()).to_string();
    if collapsed.is_empty() {
        return None;
    }
    if collapsed.chars().count() <= max {
        return Some(collapsed);
    }
    let cut: String = collapsed.chars().take(max).collect();
    Some(cut.rsplit_once(' ').map_or(cut.clone(), |(head, _)| head.to_string()))
}

/// The distinct lines of a JSON array of strings, each made one line of at most `max`.
pub fn distinct_lines(value: &Value, max: usize) -> Vec<String> {
    let mut seen = Vec::<String>::new();
    for item in value.as_array().into_iter().flatten() {
        if let Some(line) = item.as_str().and_then(|s| one_line(s, max))
            && !seen.iter().any(|s| s.eq_ignore_ascii_case(&line))
        {
            seen.push(line);
        }
    }
    seen
}

/// The current version of the team's template `key` (an id or alias) as context for the
/// model: its subject, html and text; `404 not_found` for another team's or a missing one.
pub async fn template_context(state: &AppState, team_id: Uuid, key: Option<&str>) -> ApiResult<Value> {
    let Some(key) = key else { return Ok(Value::Null) };
    let mut conn = state.pool.acquire().await?;
    let template = schema::store::templates::find(&mut conn, team_id, &schema::store::templates::Key::parse(key), false).await?;
    let template = template.ok_or_else(|| ApiError::not_found("template"))?;
    let content = template.content;
    let text = content.text.or_else(|| content.html.as_deref().map(render::html_to_text));
    Ok(serde_json::json!({ "name": template.name, "subject": content.subject, "html": content.html, "text": text }))
}

/// An AI answer with `Server-Timing: provider;dur=<ms>`: how long the provider took, so a
/// client (and the bench) can tell Herald's own time from the provider's.
pub fn timed<T: poem_openapi::types::ToJSON>(body: T, provider_time: Duration) -> poem_openapi::payload::Response<poem_openapi::payload::Json<T>> {
    let ms = provider_time.as_secs_f64() * 1000.0;
    poem_openapi::payload::Response::new(poem_openapi::payload::Json(body)).header("Server-Timing", format!("provider;dur={ms:.3}"))
}
