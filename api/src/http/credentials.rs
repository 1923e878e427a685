//! What a request presents to say who it is: a bearer token (an API key or an OAuth access
//! token) or the dashboard session's cookie. Read here, checked by the gateway.

use poem::Request;
use poem::http::header;

/// The prefix of OAuth access tokens (API keys start `rk_`).
pub const ACCESS_PREFIX: &str = "rko_";

/// The dashboard session's cookie.
pub const COOKIE: &str = "herald_session";

/// Marks a request the dashboard's pages make in-process (a request extension, which nothing
/// from the network can set): a page view makes several such calls, and they do not draw on
/// the team's API rate limit; the same session calling the API from elsewhere does.
#[derive(Clone, Copy, Debug)]
pub struct DashboardCall;

/// A cookie's value from the `Cookie` header.
pub fn cookie(req: &Request, name: &str) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, value)| *key == name && !value.is_empty())
        .map(|(_, value)| value.to_string())
}

/// The token of `Authorization: Bearer <token>`, if the header is usable.
pub fn bearer_token(req: &Request) -> Option<String> {
    let value = req.header(header::AUTHORIZATION)?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_string())
}
