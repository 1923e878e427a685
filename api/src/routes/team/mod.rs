//! The team's profile: name, sender identity, brand kit and its uploaded images.

pub mod brand_assets;
pub mod brand_kit;
pub mod identities;
pub mod profile;
