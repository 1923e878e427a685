//! Billing: the team's plan, subscription and usage this period.

pub mod overview;
