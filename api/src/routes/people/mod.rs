//! People: accounts and the dashboard session (sign-up, sign-in, verification, reset, TOTP),
//! the teams a person belongs to, members and invitations, and single sign-on. Route files:
//! `auth`, `account`, `teams`, `invitations`, `sso`. What they share: `session` (the session
//! and its view), `login` (addresses, passwords, throttles, the second factor, enforced single
//! sign-on), `membership` (making and switching teams), `links` (single-use links),
//! `account_mail`, `invite`, `mfa`, `oidc` (the OpenID Connect relying party).

pub mod account;
pub mod account_mail;
pub mod auth;
pub mod invitations;
pub mod invite;
pub mod links;
pub mod login;
pub mod membership;
pub mod mfa;
pub mod oidc;
pub mod session;
pub mod sso;
pub mod teams;
