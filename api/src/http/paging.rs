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

/// Where a page of a list keyed by something other than an id (a version number, a slug, a
/// URL) starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyCursor {
    After(String),
    Before(String),
}

/// `limit` and a keyed `after` or `before`, checked as [`page_request`] checks them.
pub fn keyed_page_request(limit: Option<i64>, after: Option<String>, before: Option<String>) -> ApiResult<(i64, Option<KeyCursor>)> {
    let ids = |key: &Option<String>| key.as_ref().map(|_| IdText(schema::ids::new_id().to_string()));
    let checked = page_request(limit, ids(&after), ids(&before))?;
    Ok((checked.limit, after.map(KeyCursor::After).or(before.map(KeyCursor::Before))))
}

/// As [`page_of`], for a list whose items are named by `key` (the cursor is a key).
pub fn page_by_key<T>(items: Vec<T>, key: impl Fn(&T) -> String, page: &(i64, Option<KeyCursor>)) -> ApiResult<schema::page::Page<T>> {
    let cursor = page.1.as_ref().map(|c| match c {
        KeyCursor::After(k) => (true, k.clone()),
        KeyCursor::Before(k) => (false, k.clone()),
    });
    page_in_order(items, key, page.0, cursor)
}

/// Pages a short list held whole (one bounded by a plan or by what it belongs to: a team's
/// properties, a template's versions, an event's attempts), in its own order: `after` starts
/// past that item, `before` ends short of it. A cursor that is not an item of this list is
/// `422 invalid_parameter`.
pub fn page_of<T>(items: Vec<T>, id: impl Fn(&T) -> uuid::Uuid, page: &PageRequest) -> ApiResult<schema::page::Page<T>> {
    let cursor = page.cursor.map(|c| match c {
        Cursor::After(id) => (true, id),
        Cursor::Before(id) => (false, id),
    });
    page_in_order(items, id, page.limit, cursor)
}

/// The page of `items` that starts past (`true`) or ends short of (`false`) the cursor's item.
fn page_in_order<T, K: PartialEq>(items: Vec<T>, key: impl Fn(&T) -> K, limit: i64, cursor: Option<(bool, K)>) -> ApiResult<schema::page::Page<T>> {
    let limit = limit as usize;
    let position = |name: &str, cursor: &K| {
        items.iter().position(|item| key(item) == *cursor).ok_or_else(|| ApiError::invalid_parameter(name, "is not an item of this list"))
    };
    let (start, end) = match &cursor {
        None => (0, items.len().min(limit)),
        Some((true, k)) => {
            let start = position("after", k)? + 1;
            (start, items.len().min(start + limit))
        }
        Some((false, k)) => {
            let end = position("before", k)?;
            (end.saturating_sub(limit), end)
        }
    };
    let has_more = if matches!(cursor, Some((false, _))) { start > 0 } else { end < items.len() };
    Ok(schema::page::Page { has_more, data: items.into_iter().skip(start).take(end - start).collect() })
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
    fn a_list_held_whole_pages_in_its_own_order_and_refuses_a_cursor_from_another_list() {
        let ids: Vec<uuid::Uuid> = (0..5).map(|_| schema::ids::new_id()).collect();
        let page = |cursor| PageRequest { limit: 2, cursor };
        let first = page_of(ids.clone(), |i| *i, &page(None)).unwrap();
        assert_eq!((first.data.as_slice(), first.has_more), (&ids[0..2], true));
        let next = page_of(ids.clone(), |i| *i, &page(Some(Cursor::After(ids[1])))).unwrap();
        assert_eq!((next.data.as_slice(), next.has_more), (&ids[2..4], true));
        let last = page_of(ids.clone(), |i| *i, &page(Some(Cursor::After(ids[3])))).unwrap();
        assert_eq!((last.data.as_slice(), last.has_more), (&ids[4..5], false));
        let back = page_of(ids.clone(), |i| *i, &page(Some(Cursor::Before(ids[4])))).unwrap();
        assert_eq!((back.data.as_slice(), back.has_more), (&ids[2..4], true));
        let front = page_of(ids.clone(), |i| *i, &page(Some(Cursor::Before(ids[1])))).unwrap();
        assert_eq!((front.data.as_slice(), front.has_more), (&ids[0..1], false));
        let foreign = page_of(ids, |i| *i, &page(Some(Cursor::After(schema::ids::new_id())))).unwrap_err();
        assert_eq!((foreign.status.as_u16(), foreign.name), (422, "invalid_parameter"));
    }

    #[test]
    fn a_keyed_list_pages_by_its_keys_and_checks_limit_and_cursors_as_every_list_does() {
        let keys: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let page = keyed_page_request(Some(1), Some("a".into()), None).unwrap();
        let next = page_by_key(keys.clone(), |k| k.clone(), &page).unwrap();
        assert_eq!((next.data, next.has_more), (vec!["b".to_string()], true));
        assert_eq!(keyed_page_request(Some(0), None, None).unwrap_err().name, "invalid_parameter");
        assert_eq!(keyed_page_request(None, Some("a".into()), Some("b".into())).unwrap_err().name, "invalid_parameter");
        let unknown = keyed_page_request(None, None, Some("z".into())).unwrap();
        assert_eq!(page_by_key(keys, |k| k.clone(), &unknown).unwrap_err().name, "invalid_parameter");
    }

    #[test]
    fn blank_search_is_refused() {
        assert_eq!(search_text(Some(Search::<200>("  ".into()))).unwrap_err().name, "invalid_parameter");
        assert_eq!(search_text(Some(Search::<200>(" prod ".into()))).unwrap(), Some("prod".into()));
        assert_eq!(search_text(Some(Search::<3>("four".into()))).unwrap_err().name, "invalid_parameter");
    }
}
