//! Identifiers. Every row id is a UUIDv7, so ids sort by creation time and cursor paging is an
//! index range.

use uuid::Uuid;

/// A new time-ordered id.
pub fn new_id() -> Uuid {
    Uuid::now_v7()
}

/// Parses an id given by a client; `None` when it is not UUID-shaped.
pub fn parse_id(raw: &str) -> Option<Uuid> {
    Uuid::try_parse(raw.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_sort_in_creation_order() {
        let first = new_id();
        let second = new_id();
        assert!(first < second);
    }

    #[test]
    fn a_non_uuid_is_not_an_id() {
        assert!(parse_id("abc").is_none());
        assert!(parse_id("0190f0b4-6c38-7a6e-8f8e-0c3e8a5f2b11").is_some());
    }
}
