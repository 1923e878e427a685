//! `POST /ai/diagnosis`: why an email did what it did, read from its events, its recipients'
//! SMTP replies, their suppressions and its domain's DNS state (one credit). Asked again while
//! the email has no newer event, the kept diagnosis is read back at no cost.

use super::assist::{self, CreditsView, distinct_lines, one_line};
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Nullable;
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::Utc;
use jobs::ai::{Task, object_schema};
use poem::web::Data;
use poem_openapi::Object;
type Answer<T> = poem_openapi::payload::Response<poem_openapi::payload::Json<T>>;
use schema::store::ai::{self, Diagnosis};
use serde::Deserialize;
use serde_json::{Value, json};

pub struct DiagnosisApi;

/// The email to diagnose.
#[derive(Object, Deserialize)]
pub struct DiagnosisBody {
    /// The email's id.
    pub email_id: String,
}

/// Why an email did what it did, and what to do.
#[derive(Object)]
pub struct AiDiagnosis {
    /// Always `ai_diagnosis`.
    pub object: String,
    /// The email diagnosed.
    pub email_id: String,
    /// What happened, in a sentence or two.
    pub summary: String,
    /// The likely causes, most likely first (up to five).
    pub causes: Vec<String>,
    /// What to do next (up to five).
    pub next_steps: Vec<String>,
    /// Whether this is the diagnosis kept from an earlier call (the email has no newer event),
    /// read back at no cost.
    pub cached: bool,
    /// Credits left this month, or `null` for no limit.
    pub credits_remaining: Nullable<i32>,
    /// The team's credits this month.
    pub credits: CreditsView,
}

fn lines(value: &Value) -> Vec<String> {
    value.as_array().map(|_| distinct_lines(value, 300).into_iter().take(5).collect()).unwrap_or_default()
}

#[poem_openapi::OpenApi(tag = "Tag::Ai")]
impl DiagnosisApi {
    /// Diagnose an email's delivery (`full_access` or `ai:use`; one credit, none when the kept
    /// diagnosis still holds).
    #[oai(path = "/ai/diagnosis", method = "post", operation_id = "diagnose-email")]
    async fn diagnose(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<DiagnosisBody>) -> ApiResult<Answer<AiDiagnosis>> {
        let email_id = crate::routes::path_id(&body.0.email_id, "email")?;
        let mut conn = state.pool.acquire().await?;
        let (material, last_event_id) = ai::diagnosis_material(&mut conn, caller.team_id, email_id).await?.ok_or_else(|| ApiError::not_found("email"))?;
        drop(conn);
        assist::gate(&state, &caller).await?;
        let answer = |d: Diagnosis, cached: bool, credits: ai::Credits| AiDiagnosis {
            object: "ai_diagnosis".into(),
            email_id: email_id.to_string(),
            summary: d.summary,
            causes: lines(&d.causes),
            next_steps: lines(&d.next_steps),
            cached,
            credits_remaining: Nullable(credits.remaining()),
            credits: credits.into(),
        };
        let mut conn = state.pool.acquire().await?;
        if let Some(kept) = ai::diagnosis(&mut conn, caller.team_id, email_id).await?.filter(|d| d.last_event_id == last_event_id) {
            let credits = ai::current(&mut conn, caller.team_id, Utc::now()).await?;
            return Ok(assist::timed(answer(kept, true, credits), std::time::Duration::ZERO));
        }
        drop(conn);
        let (provider, charge) = assist::begin(&state, &caller, 1).await?;
        let task = Task {
            name: "diagnosis",
            instructions: "Diagnose the delivery of the email in `input` from its events, its recipients' last SMTP replies, \
                           their suppressions and its domain's DNS records: a `summary` of what happened in one or two \
                           sentences, the likely `causes` (most likely first, at most five) and concrete `next_steps` \
                           (at most five). Say so plainly when nothing went wrong.",
            input: &material,
            schema: object_schema(json!({
                "summary": { "type": "string" },
                "causes": { "type": "array", "items": { "type": "string" } },
                "next_steps": { "type": "array", "items": { "type": "string" } },
            })),
        };
        let (diagnosis, credits, waited) = assist::ask(&provider, charge, &task, 0, |answer| {
            let summary = answer["summary"].as_str().and_then(|s| one_line(s, 1000)).ok_or("no summary")?;
            let (causes, next_steps) = (lines(&answer["causes"]), lines(&answer["next_steps"]));
            if next_steps.is_empty() {
                return Err("no next step".to_string());
            }
            Ok(Diagnosis { last_event_id, summary, causes: json!(causes), next_steps: json!(next_steps) })
        })
        .await?;
        ai::keep_diagnosis(&mut *state.pool.acquire().await?, caller.team_id, email_id, &diagnosis).await?;
        Ok(assist::timed(answer(diagnosis, false, credits), waited))
    }
}
