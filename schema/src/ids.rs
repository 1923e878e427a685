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

/// The smallest id minted at `at` (ids from `at` on sort at or after it).
pub fn first_at(at: chrono::DateTime<chrono::Utc>) -> Uuid {
    bound(at, 0x00)
}

/// The largest id minted at `at` (ids up to `at` sort at or before it).
pub fn last_at(at: chrono::DateTime<chrono::Utc>) -> Uuid {
    bound(at, 0xff)
}

fn bound(at: chrono::DateTime<chrono::Utc>, fill: u8) -> Uuid {
    let millis = at.timestamp_millis().max(0) as u64;
    let mut bytes = [fill; 16];
    bytes[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
    Uuid::from_bytes(bytes)
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

    #[test]
    fn time_bounds_enclose_the_ids_minted_in_that_millisecond() {
        let id = new_id();
        let (seconds, nanos) = id.get_timestamp().expect("v7").to_unix();
        let at = chrono::DateTime::from_timestamp(seconds as i64, nanos).expect("time");
        assert!(first_at(at) <= id && id <= last_at(at));
        assert!(last_at(at - chrono::TimeDelta::milliseconds(1)) < id);
        assert!(first_at(at + chrono::TimeDelta::milliseconds(1)) > id);
    }
}
