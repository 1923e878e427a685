//! The OpenID Connect relying party behind single sign-on, through the `openidconnect` crate:
//! discovery from the issuer's `/.well-known/openid-configuration` (the document must name the
//! same issuer), the authorization code flow with PKCE (S256), a `state` and a `nonce`, and the
//! code exchange whose ID token is checked for its signature (the provider's published keys),
//! `iss`, `aud`, `nonce` and expiry. Each step discovers afresh, so a provider's rotated keys
//! are used at once; a sign-in costs two discovery reads.

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    TokenResponse,
};
use std::time::Duration;

/// A team's provider as Herald's client at it.
pub struct Provider<'a> {
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub client_secret: &'a str,
    /// Herald's callback (`{HERALD_PUBLIC_URL}/auth/sso/callback`).
    pub redirect_uri: String,
}

/// A started sign-in: where to send the person, and what the callback checks.
pub struct Started {
    pub url: String,
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
}

/// Who the provider says signed in.
#[derive(Debug)]
pub struct Identity {
    /// Bare, lower-case.
    pub email: String,
    /// `false` only when the provider says the address is not verified.
    pub email_verified: bool,
    pub name: Option<String>,
}

/// The HTTP client for providers: no redirects followed (a provider's endpoints are where its
/// document says), ten seconds per call.
fn http() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("could not make an HTTP client: {e}"))
}

/// Reads the issuer's discovery document and keys; the document must name this issuer.
async fn discover(http: &reqwest::Client, issuer: &str) -> Result<CoreProviderMetadata, String> {
    let issuer_url = IssuerUrl::new(issuer.to_string()).map_err(|e| format!("is not a URL: {e}"))?;
    CoreProviderMetadata::discover_async(issuer_url, http).await.map_err(|e| match e {
        openidconnect::DiscoveryError::Validation(why) => format!("answers a discovery document for another issuer: {why}"),
        other => format!("did not answer its discovery document: {}", error_chain(&other)),
    })
}

/// Checks that an issuer answers a discovery document naming itself, with its keys.
pub async fn check_issuer(issuer: &str) -> Result<(), String> {
    discover(&http()?, issuer).await.map(|_| ())
}

/// The authorization request: a fresh `state`, `nonce` and PKCE verifier, scopes `openid
/// email profile`, and the address as `login_hint`.
pub async fn start(provider: &Provider<'_>, email: &str) -> Result<Started, String> {
    let http = http()?;
    let metadata = discover(&http, provider.issuer).await?;
    let redirect = RedirectUrl::new(provider.redirect_uri.clone()).map_err(|e| format!("the callback URL does not parse: {e}"))?;
    let client = CoreClient::from_provider_metadata(metadata, ClientId::new(provider.client_id.into()), Some(ClientSecret::new(provider.client_secret.into())))
        .set_redirect_uri(redirect);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = client
        .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
        .add_scope(Scope::new("email".into()))
        .add_scope(Scope::new("profile".into()))
        .set_pkce_challenge(challenge)
        .add_extra_param("login_hint", email.to_string())
        .url();
    Ok(Started { url: url.to_string(), state: state.secret().clone(), nonce: nonce.secret().clone(), pkce_verifier: verifier.secret().clone() })
}

/// Exchanges the callback's code (with the PKCE verifier) and checks the ID token: signature,
/// `iss`, `aud`, expiry, and the `nonce` the sign-in started with.
pub async fn finish(provider: &Provider<'_>, code: &str, nonce: &str, pkce_verifier: &str) -> Result<Identity, String> {
    let http = http()?;
    let metadata = discover(&http, provider.issuer).await?;
    let redirect = RedirectUrl::new(provider.redirect_uri.clone()).map_err(|e| format!("the callback URL does not parse: {e}"))?;
    let client = CoreClient::from_provider_metadata(metadata, ClientId::new(provider.client_id.into()), Some(ClientSecret::new(provider.client_secret.into())))
        .set_redirect_uri(redirect);
    let tokens = client
        .exchange_code(AuthorizationCode::new(code.to_string()))
        .map_err(|e| format!("the provider has no token endpoint: {e}"))?
        .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_string()))
        .request_async(&http)
        .await
        .map_err(|e| format!("the provider refused the code: {}", error_chain(&e)))?;
    let id_token = tokens.id_token().ok_or("the provider answered no ID token")?;
    let claims = id_token.claims(&client.id_token_verifier(), &Nonce::new(nonce.to_string())).map_err(|e| format!("the ID token is not valid: {e}"))?;
    let email = claims.email().ok_or("the ID token carries no email address (ask for the `email` scope)")?;
    Ok(Identity {
        email: email.as_str().trim().to_lowercase(),
        email_verified: claims.email_verified() != Some(false),
        name: claims.name().and_then(|name| name.get(None)).map(|name| name.as_str().to_string()),
    })
}

/// An error with its causes, one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The key client secrets are sealed with (made by the first process that needs it).
pub async fn sealing_key(conn: &mut sqlx::PgConnection) -> sqlx::Result<String> {
    let fresh = rand::random::<[u8; 32]>();
    Ok(hex::encode(schema::store::keys::get_or_create(conn, "sso", &fresh).await?))
}
