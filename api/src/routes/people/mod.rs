//! People: accounts and the dashboard session (sign-up, sign-in, verification, reset, TOTP),
//! the teams a person belongs to, members and invitations; the account mail they send.

pub mod account;
pub mod account_mail;
pub mod auth;
pub mod invitations;
pub mod invite;
pub mod mfa;
pub mod teams;
