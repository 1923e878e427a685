//! Every SQL statement Herald runs, one module per resource. Functions take a connection so the
//! caller decides the transaction.

pub mod ai;
pub mod api_keys;
pub mod auth;
pub mod automation_counts;
pub mod automations;
pub mod billing;
pub mod billing_changes;
pub mod brand_assets;
pub mod broadcasts;
pub mod claims;
pub mod contacts;
pub mod conversations;
pub mod custom_events;
pub mod domains;
pub mod email_metrics;
pub mod emails;
pub mod exports;
pub mod engagements;
pub mod events;
pub mod idempotency;
pub mod identities;
pub mod imports;
pub mod migrations;
pub mod inbox;
pub mod inbox_filing;
pub mod inbox_messages;
pub mod inbox_people;
pub mod inbox_search;
pub mod jobs;
pub mod keys;
pub mod outbox;
pub mod oauth;
pub mod people;
pub mod received;
pub mod saved_blocks;
pub mod metrics;
pub mod request_logs;
pub mod segment_entries;
pub mod segments;
pub mod schedule;
pub mod sending;
pub mod shares;
pub mod sso;
pub mod stripe;
pub mod suppressions;
pub mod switches;
pub mod teams;
pub mod templates;
pub mod topics;
pub mod usage;
pub mod usage_reports;
pub mod webhooks;

/// Escapes `%`, `_` and `\` so a client's search text matches literally inside `ILIKE '%…%'`.
pub fn like_pattern(search: &str) -> String {
    let mut escaped = String::with_capacity(search.len() + 2);
    escaped.push('%');
    for c in search.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped.push('%');
    escaped
}

/// The name of the constraint a database error violated, if any.
pub fn violated_constraint(error: &sqlx::Error) -> Option<&str> {
    error.as_database_error().and_then(|e| e.constraint())
}

#[cfg(test)]
mod tests {
    #[test]
    fn search_wildcards_are_taken_literally() {
        assert_eq!(super::like_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
    }
}
