//! Moving a team's audience in and out: exports of contacts and suppressions as CSV (the
//! migrations from other platforms land here next).

pub mod exports;
