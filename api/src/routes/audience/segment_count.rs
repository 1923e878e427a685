//! `POST /segments/count`: how many contacts a filter matches now, before it is saved as a
//! segment (the dashboard's condition builder shows it live). The filter is checked as
//! `POST /segments` checks it, with the same errors.

use crate::http::body::Body;
use crate::http::error::ApiResult;
use crate::routes::Tag;
use crate::routes::audience::segments::filter_refused;
use crate::state::{AppState, Caller};
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::payload::Json;
use schema::store::segments;
use serde::Deserialize;
use serde_json::Value;

pub struct SegmentCountApi;

/// Body of `POST /segments/count`.
#[derive(Object, Deserialize)]
pub struct CountSegment {
    /// A filter as `POST /segments` takes it: a group `{ all | any | not: [...] }` over
    /// conditions `{ field, op, value }` and `{ topic, subscription }`.
    pub filter: Value,
}

/// How many contacts a filter matches now.
#[derive(Object)]
pub struct SegmentCount {
    /// Always `segment_count`.
    pub object: String,
    /// The team's contacts the filter matches now.
    pub contacts: i64,
}

#[poem_openapi::OpenApi(tag = "Tag::Contacts")]
impl SegmentCountApi {
    /// Count the contacts a filter matches now, without saving it. A filter `POST /segments`
    /// would refuse is refused the same way (`422 validation_error`, one `errors[]` entry per
    /// bad condition).
    #[oai(path = "/segments/count", method = "post", operation_id = "count-segment")]
    async fn count(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<CountSegment>) -> ApiResult<Json<SegmentCount>> {
        let mut conn = state.pool.acquire().await?;
        let filter = segments::check_filter(&mut conn, caller.team_id, &body.0.filter).await?.map_err(filter_refused)?;
        let contacts = segments::count_matching(&mut conn, caller.team_id, &filter).await?;
        Ok(Json(SegmentCount { object: "segment_count".into(), contacts }))
    }
}
