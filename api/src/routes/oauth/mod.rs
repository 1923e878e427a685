//! OAuth 2.1 for agents: discovery, dynamic client registration and its management,
//! authorization with PKCE through the consent page, the token and revocation endpoints, and
//! the grants a team has given. What they share (the OAuth error shape, token prefixes and
//! lifetimes, form reading) is in `answers`.

pub mod answers;
pub mod authorize;
pub mod discovery;
pub mod grants;
pub mod registration;
pub mod tokens;
