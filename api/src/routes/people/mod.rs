//! People: accounts and the dashboard session (sign-up, sign-in, verification, reset, TOTP),
//! the teams a person belongs to, members and invitations. Route files: `auth`, `account`,
//! `teams`, `invitations`. What they share: `session` (the session and its view), `login`
//! (addresses, passwords, throttles, the second factor), `membership` (making and switching
//! teams), `links` (single-use links), `account_mail`, `invite`, `mfa`.

pub mod account;
pub mod account_mail;
pub mod auth;
pub mod invitations;
pub mod invite;
pub mod links;
pub mod login;
pub mod membership;
pub mod mfa;
pub mod session;
pub mod teams;
