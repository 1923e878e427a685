//! The `/emails` collection: send one email or a batch (through the accept pipeline), and list
//! the team's sent mail.

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::idempotency::{self, Begin, IdempotencyKey};
use crate::http::fields::Bounded;
use crate::routes::Tag;
use crate::routes::emails::accept::{self};
use crate::routes::emails::send_body::{SendEmail};
use crate::state::{AppState, Caller};
use chrono::Utc;
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Header, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::{ParseFromJSON, ToJSON};
use poem_openapi::{ApiResponse, Object};
use uuid::Uuid;
use crate::http::fields::Choice;
use crate::http::fields::IdText;
use crate::http::fields::InstantOrDate;
use crate::http::fields::Search;
use crate::http::paging::date_range;
use crate::http::paging::page_request;
use crate::http::paging::search_text;
use crate::routes::emails::views::EmailList;
use crate::routes::emails::views::EmailStatus;
use crate::routes::emails::views::{tag_filter, view};
use schema::store::emails;
use crate::http::fields::Choices;

pub struct SendApi;

/// `{ id }`: the email is durably recorded and accepted for sending (not delivered).
#[derive(Object, Clone)]
pub struct Sent {
    /// The email's id.
    pub id: String,
}

/// The answer of a batch: one `{ id }` per sent email, in order.
#[derive(Object)]
pub struct SentBatch {
    /// The accepted emails, in the order they were sent in.
    pub data: Vec<Sent>,
    /// With `x-batch-validation: permissive` only: the emails that were not sent, and why.
    #[oai(skip_serializing_if_is_none)]
    pub errors: Option<Vec<BatchRejection>>,
}

/// An email of a permissive batch that was refused (the others were sent).
#[derive(Object, Clone)]
pub struct BatchRejection {
    /// Its position in the request, from 0.
    pub index: u32,
    /// Why it was refused.
    pub message: String,
}

/// How a batch is validated (`x-batch-validation`).
#[derive(poem_openapi::Enum, Clone, Copy, PartialEq, Eq, Debug)]
#[oai(rename_all = "lowercase")]
pub enum BatchValidation {
    /// One bad email refuses the whole batch.
    Strict,
    /// The valid emails are sent; the answer's `errors` lists the others.
    Permissive,
}

/// The answer of `POST /emails`, which may be a replay of an idempotent request.
#[derive(ApiResponse)]
pub enum SendResponse {
    /// Accepted (or the original answer to this `Idempotency-Key`).
    #[oai(status = 200)]
    Ok(Json<Sent>),
}

/// The answer of `POST /emails/batch`, which may be a replay of an idempotent request.
#[derive(ApiResponse)]
pub enum BatchResponse {
    /// Accepted (or the original answer to this `Idempotency-Key`).
    #[oai(status = 200)]
    Ok(Json<SentBatch>),
}

#[poem_openapi::OpenApi(tag = "Tag::Emails")]
impl SendApi {
    /// Send an email. Answers `{ id }` once the email, its recipients and its delivery job are
    /// committed: accepted for sending, not delivered.
    #[oai(path = "/emails", method = "post", operation_id = "send-email")]
    async fn send(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// 1 to 256 characters; a replay within 24 hours answers the original response.
        #[oai(name = "Idempotency-Key")]
        idempotency_key: Header<Option<Bounded<1, 256>>>,
        body: Body<SendEmail>,
    ) -> ApiResult<SendResponse> {
        let Body(body, raw) = body;
        let now = Utc::now();
        idempotent(&state, &caller, idempotency_key.0.as_deref(), "/emails", &raw, || async {
            Ok(accept::prepare(&state, &caller, vec![body], false, false, now).await?.emails)
        }, |ids| Sent { id: ids[0].to_string() })
        .await
        .map(|sent| SendResponse::Ok(Json(sent)))
    }

    /// Send up to 100 emails in one request, validated all or nothing (errors name the index).
    /// Uses one rate-limit token.
    #[oai(path = "/emails/batch", method = "post", operation_id = "send-batch-emails")]
    async fn batch(
        &self,
        state: Data<&AppState>,
        caller: Data<&Caller>,
        /// 1 to 256 characters; a replay within 24 hours answers the original response.
        #[oai(name = "Idempotency-Key")]
        idempotency_key: Header<Option<Bounded<1, 256>>>,
        /// `strict` (the default): one bad email refuses the whole batch. `permissive`: the
        /// valid emails are sent and `errors` lists the others.
        #[oai(name = "x-batch-validation")]
        validation: Header<Option<BatchValidation>>,
        body: Body<Vec<SendEmail>>,
    ) -> ApiResult<BatchResponse> {
        let Body(items, raw) = body;
        let now = Utc::now();
        if items.is_empty() || items.len() > schema::email::MAX_BATCH {
            return Err(ApiError::invalid_field("body", format!("a batch holds 1 to {} emails", schema::email::MAX_BATCH)));
        }
        let permissive = validation.0 == Some(BatchValidation::Permissive);
        let rejected = std::sync::Mutex::new(Vec::new());
        let reject = |index: usize, message: String| {
            rejected.lock().unwrap_or_else(|e| e.into_inner()).push(BatchRejection { index: index as u32, message });
        };
        idempotent(&state, &caller, idempotency_key.0.as_deref(), "/emails/batch", &raw, || async {
            let prepared = accept::prepare(&state, &caller, items, true, permissive, now).await?;
            for (index, message) in prepared.rejected {
                reject(index, message);
            }
            Ok(prepared.emails)
        }, |ids| SentBatch {
            data: ids.iter().map(|id| Sent { id: id.to_string() }).collect(),
            errors: permissive.then(|| rejected.lock().unwrap_or_else(|e| e.into_inner()).clone()),
        })
        .await
        .map(|sent| BatchResponse::Ok(Json(sent)))
    }

    /// List the team's emails, newest first.
    #[oai(path = "/emails", method = "get", operation_id = "list-emails")]
    #[allow(clippy::too_many_arguments)]
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
        /// Only emails whose latest event is this one.
        status: Query<Option<Choice<EmailStatus>>>,
        /// Only emails sent with this key.
        api_key_id: Query<Option<IdText>>,
        /// ISO 8601 instant or calendar date, inclusive.
        start_date: Query<Option<InstantOrDate>>,
        /// ISO 8601 instant or calendar date, inclusive.
        end_date: Query<Option<InstantOrDate>>,
        /// 1 to 200 characters, case-insensitive, found within the subject, sender and
        /// recipients; a whole address (`ana@example.com`) finds the emails from it or to it.
        search: Query<Option<Search<200>>>,
        /// Comma-separated `name` or `name:value`; every one must match.
        #[oai(validator(pattern = r"^ *([A-Za-z0-9_-]{1,252}(:[A-Za-z0-9_-]{1,256})?)? *(, *([A-Za-z0-9_-]{1,252}(:[A-Za-z0-9_-]{1,256})?)? *)*$"))]
        tags: Query<Option<String>>,
    ) -> ApiResult<Json<EmailList>> {
        let page = page_request(limit.0, after.0, before.0)?;
        let (start, end) = date_range(start_date.0, end_date.0, true)?;
        if let Some(status) = &status.0
            && !EmailStatus::allows(status)
        {
            return Err(ApiError::invalid_parameter("status", format!("must be one of {}", EmailStatus::VALUES.join(", "))));
        }
        let api_key_id = api_key_id
            .0
            .map(|raw| schema::ids::parse_id(&raw).ok_or_else(|| ApiError::invalid_parameter("api_key_id", "must be a key id")))
            .transpose()?;
        let (tag_names, tag_pairs) = tag_filter(tags.0.as_deref())?;
        let filter = emails::ListFilter { status: status.0.map(Choice::into_string), api_key_id, start, end, search: search_text(search.0)?, tag_names, tag_pairs };
        let mut conn = state.pool.acquire().await?;
        let page = emails::list(&mut conn, caller.team_id, &filter, &page).await?;
        let ids: Vec<Uuid> = page.data.iter().map(|e| e.id).collect();
        let recipients = emails::recipients(&mut conn, &ids).await?;
        let data = page.data.into_iter().map(|email| view(email, &recipients, false)).collect();
        Ok(Json(EmailList { object: "list".into(), has_more: page.has_more, data }))
    }
}

/// Runs a send under its idempotency key: a replay answers the stored response; otherwise
/// `prepare` builds the emails (reads only), then one transaction accepts them and stores the
/// answer `answer(ids)`.
async fn idempotent<F, Fut, A>(
    state: &AppState,
    caller: &Caller,
    key: Option<&str>,
    path: &str,
    raw: &[u8],
    prepare: F,
    answer: impl Fn(&[Uuid]) -> A,
) -> ApiResult<A>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ApiResult<Vec<schema::store::emails::NewEmail>>>,
    A: ToJSON + ParseFromJSON,
{
    let key = IdempotencyKey::parse(key)?;
    let print = idempotency::fingerprint("POST", path, raw);
    let claimed = match idempotency::begin(&state.pool, caller.team_id, key.as_ref(), &print).await? {
        Begin::Replay { body, .. } => {
            return A::parse_from_json(Some(body))
                .map_err(|error| ApiError::from(anyhow::anyhow!("stored answer of {path}: {}", error.into_message())));
        }
        Begin::Proceed(claimed) => claimed,
    };
    let result = async {
        let ready = prepare().await?;
        let mut tx = state.pool.begin().await?;
        // A permissive batch may have nothing left to send.
        let ids = if ready.is_empty() { Vec::new() } else { accept::accept(&mut tx, caller.team_id, ready, Utc::now()).await? };
        let body = answer(&ids);
        if let Some(claimed) = &claimed {
            claimed.complete(&mut tx, StatusCode::OK, &body.to_json().unwrap_or_default()).await?;
        }
        tx.commit().await?;
        Ok(body)
    }
    .await;
    match result {
        Ok(body) => Ok(body),
        Err(error) => {
            if let Some(claimed) = claimed {
                claimed.release(&state.pool).await;
            }
            Err(error)
        }
    }
}
