//! Moving a team's audience in and out: migrations from Resend, Mailchimp and listmonk (their
//! APIs or export files), and exports of contacts and suppressions as CSV.

pub mod exports;
pub mod platforms;
