//! The team's profile: name, sender identity, brand kit and its uploaded images; verified
//! identities; single sign-on.

pub mod brand_assets;
pub mod brand_kit;
pub mod identities;
pub mod profile;
pub mod sso;
