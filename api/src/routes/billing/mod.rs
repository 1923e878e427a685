//! Billing: the team's plan, subscription and usage this period, Stripe's hosted checkout and
//! portal, invoices, and Stripe's webhook.

pub mod addons;
pub mod checkout;
pub mod invoices;
pub mod limits;
pub mod overview;
pub mod plan;
mod provider;
pub mod stripe_events;
