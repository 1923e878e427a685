//! The paging query shared by every list: `limit` 1–100 (default 20), `after` or `before`.

use crate::error::{ApiError, ApiResult};
use schema::page::{Cursor, PageRequest};

/// Reads `limit`, `after` and `before`; a bad value is `422 invalid_parameter`.
pub fn page_request(limit: Option<i64>, after: Option<String>, before: Option<String>) -> ApiResult<PageRequest> {
    let limit = limit.unwrap_or(PageRequest::DEFAULT_LIMIT);
    if !(1..=PageRequest::MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid_parameter("limit", "must be an integer between 1 and 100"));
    }
    let cursor_id = |name: &str, raw: String| {
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

/// A search text: trimmed, 1 to `max` characters; blank is `422 invalid_parameter`.
pub fn search_text(raw: Option<String>, max: usize) -> ApiResult<Option<String>> {
    match raw {
        None => Ok(None),
        Some(text) if text.trim().is_empty() => Err(ApiError::invalid_parameter("search", "must not be blank")),
        Some(text) if text.trim().chars().count() > max => {
            Err(ApiError::invalid_parameter("search", format!("must be at most {max} characters")))
        }
        Some(text) => Ok(Some(text.trim().to_string())),
    }
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
        let error = page_request(None, Some(id.clone()), Some(id)).unwrap_err();
        assert_eq!((error.status.as_u16(), error.name), (422, "invalid_parameter"));
    }

    #[test]
    fn a_cursor_that_is_not_an_id_is_refused() {
        assert_eq!(page_request(None, Some("x".into()), None).unwrap_err().name, "invalid_parameter");
    }

    #[test]
    fn blank_search_is_refused() {
        assert_eq!(search_text(Some("  ".into()), 200).unwrap_err().name, "invalid_parameter");
        assert_eq!(search_text(Some(" prod ".into()), 200).unwrap(), Some("prod".into()));
    }
}
