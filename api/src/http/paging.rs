//! The paging query shared by every list: `limit` 1–100 (default 20), `after` or `before`.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{IdText, Search};
use chrono::{DateTime, Utc};
use schema::page::{Cursor, PageRequest};

/// Reads `limit`, `after` and `before`; a bad value is `422 invalid_parameter`.
pub fn page_request(limit: Option<i64>, after: Option<IdText>, before: Option<IdText>) -> ApiResult<PageRequest> {
    let limit = limit.unwrap_or(PageRequest::DEFAULT_LIMIT);
    if !(1..=PageRequest::MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid_parameter("limit", "must be an integer between 1 and 100"));
    }
    let cursor_id = |name: &str, raw: IdText| {
        schema::ids::parse_id(&raw).ok_or_else(|| ApiError::invalid_parameter(name, "must be an item id"))
    };
    let cursor = match (after, before) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid_parameter("after", "`after` and `before` cannot be used together"));
        }
        (Some(after), None) => Some(Cursor::After(cursor_id("after", after)?)),
        (None, Some(before)) => Some(Cursor::Before(cursor_id("before", before)?)),
        (None, None) => None,
    };
    Ok(PageRequest { limit, cursor })
}

/// A search text: trimmed, 1 to `MAX` characters; blank is `422 invalid_parameter`. (Control
/// characters were refused at the edge.)
pub fn search_text<const MAX: usize>(raw: Option<Search<MAX>>) -> ApiResult<Option<String>> {
    match raw.map(|search| search.0) {
        None => Ok(None),
        Some(text) if text.trim().is_empty() => Err(ApiError::invalid_parameter("search", "must not be blank")),
        Some(text) if text.trim().chars().count() > MAX => {
            Err(ApiError::invalid_parameter("search", format!("must be at most {MAX} characters")))
        }
        Some(text) => Ok(Some(text.trim().to_string())),
    }
}

/// A `start_date`/`end_date` pair, either side open.
pub type DateRange = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// An ISO 8601 instant with a time and offset.
pub fn instant(name: &str, raw: &str) -> ApiResult<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| ApiError::invalid_parameter(name, "must be an ISO 8601 instant such as 2026-11-21T09:00:00Z"))
}

/// `start_date` and `end_date` (inclusive). With `allow_dates` a bare calendar date means the
/// start of that day (UTC) for `start_date` and its end for `end_date`; otherwise it is refused.
/// An end before the start is `422 invalid_parameter`.
pub fn date_range<S: AsRef<str>>(start: Option<S>, end: Option<S>, allow_dates: bool) -> ApiResult<DateRange> {
    let read = |name: &str, raw: &str, end_of_day: bool| -> ApiResult<DateTime<Utc>> {
        if allow_dates && let Ok(date) = chrono::NaiveDate::parse_from_str(raw.trim(), "%Y-%m-%d") {
            let time = if end_of_day { date.and_hms_nano_opt(23, 59, 59, 999_999_999) } else { date.and_hms_opt(0, 0, 0) };
            return Ok(time.unwrap_or_default().and_utc());
        }
        instant(name, raw)
    };
    let start = start.as_ref().map(|raw| read("start_date", raw.as_ref(), false)).transpose()?;
    let end = end.as_ref().map(|raw| read("end_date", raw.as_ref(), true)).transpose()?;
    if let (Some(start), Some(end)) = (start, end)
        && end < start
    {
        return Err(ApiError::invalid_parameter("end_date", "must not be before `start_date`"));
    }
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_page_is_twenty_items_from_the_newest() {
        assert_eq!(page_request(None, None, None).unwrap(), PageRequest { limit: 20, cursor: None });
    }

    #[test]
    fn a_limit_outside_one_to_a_hundred_is_an_invalid_parameter() {
        for limit in [0, 101, -1] {
            assert_eq!(page_request(Some(limit), None, None).unwrap_err().name, "invalid_parameter");
        }
    }

    #[test]
    fn after_and_before_together_are_refused() {
        let id = schema::ids::new_id().to_string();
        let error = page_request(None, Some(IdText(id.clone())), Some(IdText(id))).unwrap_err();
        assert_eq!((error.status.as_u16(), error.name), (422, "invalid_parameter"));
    }

    #[test]
    fn a_cursor_that_is_not_an_id_is_refused() {
        assert_eq!(page_request(None, Some(IdText("x".into())), None).unwrap_err().name, "invalid_parameter");
    }

    #[test]
    fn blank_search_is_refused() {
        assert_eq!(search_text(Some(Search::<200>("  ".into()))).unwrap_err().name, "invalid_parameter");
        assert_eq!(search_text(Some(Search::<200>(" prod ".into()))).unwrap(), Some("prod".into()));
        assert_eq!(search_text(Some(Search::<3>("four".into()))).unwrap_err().name, "invalid_parameter");
    }
}
