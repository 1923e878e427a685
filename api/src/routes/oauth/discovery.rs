//! Discovery: the authorization server's metadata (RFC 8414) and the protected resource's
//! (RFC 9728).

use crate::http::operations::SCOPES;
use crate::routes::Tag;
use crate::state::AppState;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::Object;
use crate::routes::oauth::answers::base;

pub struct DiscoveryApi;

#[poem_openapi::OpenApi(tag = "Tag::OAuth")]
impl DiscoveryApi {
    /// Authorization-server metadata (RFC 8414): endpoints, PKCE `S256`, public clients, and
    /// every scope.
    #[oai(path = "/.well-known/oauth-authorization-server", method = "get", operation_id = "get-authorization-server-metadata")]
    async fn server_metadata(&self, state: Data<&AppState>) -> Json<ServerMetadata> {
        let base = base(&state);
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Json(ServerMetadata {
            issuer: base.clone(),
            authorization_endpoint: format!("{base}/oauth/authorize"),
            token_endpoint: format!("{base}/oauth/token"),
            registration_endpoint: format!("{base}/oauth/register"),
            revocation_endpoint: format!("{base}/oauth/revoke"),
            response_types_supported: strings(&["code"]),
            grant_types_supported: strings(&["authorization_code", "refresh_token"]),
            code_challenge_methods_supported: strings(&["S256"]),
            token_endpoint_auth_methods_supported: strings(&["none"]),
            revocation_endpoint_auth_methods_supported: strings(&["none"]),
            scopes_supported: strings(SCOPES),
        })
    }

    /// Protected-resource metadata (RFC 9728): this API as the resource its tokens are for.
    #[oai(path = "/.well-known/oauth-protected-resource", method = "get", operation_id = "get-protected-resource-metadata")]
    async fn resource_metadata(&self, state: Data<&AppState>) -> Json<ResourceMetadata> {
        Json(resource_metadata(&state))
    }
}

/// Authorization-server metadata (RFC 8414).
#[derive(Object)]
pub struct ServerMetadata {
    /// The authorization server's identifier: the deployment's public URL.
    pub issuer: String,
    /// Where a person is sent to consent (`/oauth/authorize`).
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are exchanged for tokens (`/oauth/token`).
    pub token_endpoint: String,
    /// Where clients register (`/oauth/register`, RFC 7591).
    pub registration_endpoint: String,
    /// Where tokens are revoked (`/oauth/revoke`, RFC 7009).
    pub revocation_endpoint: String,
    /// Only `code`.
    pub response_types_supported: Vec<String>,
    /// `authorization_code` and `refresh_token`.
    pub grant_types_supported: Vec<String>,
    /// Only `S256` (PKCE).
    pub code_challenge_methods_supported: Vec<String>,
    /// Only `none`: public clients.
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// Only `none`: public clients.
    pub revocation_endpoint_auth_methods_supported: Vec<String>,
    /// Every scope a client may ask for.
    pub scopes_supported: Vec<String>,
}

/// Protected-resource metadata (RFC 9728).
#[derive(Object)]
pub struct ResourceMetadata {
    /// This API's identifier, the `resource` value tokens are for.
    pub resource: String,
    /// The authorization server that issues its tokens: the deployment's public URL.
    pub authorization_servers: Vec<String>,
    /// Every scope a token may carry.
    pub scopes_supported: Vec<String>,
    /// Only `header`: `Authorization: Bearer`.
    pub bearer_methods_supported: Vec<String>,
    /// Always `Herald`.
    pub resource_name: String,
}

/// The protected-resource metadata of this API.
pub fn resource_metadata(state: &AppState) -> ResourceMetadata {
    let base = base(state);
    ResourceMetadata {
        resource: base.clone(),
        authorization_servers: vec![base],
        scopes_supported: SCOPES.iter().map(|s| s.to_string()).collect(),
        bearer_methods_supported: vec!["header".into()],
        resource_name: "Herald".into(),
    }
}
