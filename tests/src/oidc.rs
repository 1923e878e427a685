//! Identity providers for the single sign-on tests. [`CertifiedProvider`] runs panva's
//! `oidc-provider` (a certified OpenID provider, `tests/clients/oidc_provider.mjs`).
//! [`FlawedProvider`] follows the OpenID Connect Core and Discovery specifications (discovery
//! document, JWKS, authorization and token endpoints with PKCE S256) but can sign an ID token
//! that is wrong in one chosen way, which a certified provider never does.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Form, Query};
use poem::{EndpointExt, IntoResponse, Request, Response, Route, get, http::StatusCode, post};
use rsa::pkcs1v15::SigningKey;
use rsa::signature::{SignatureEncoding, Signer};
use rsa::traits::PublicKeyParts;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// `oidc-provider` running as a child process (killed on drop).
pub struct CertifiedProvider {
    pub issuer: String,
    child: Child,
}

impl CertifiedProvider {
    /// Starts it with one confidential client.
    pub fn start(client_id: &str, client_secret: &str, redirect_uri: &str) -> CertifiedProvider {
        let mut child = Command::new("node")
            .arg(crate::clients::script("oidc_provider.mjs"))
            .current_dir(crate::clients::script(""))
            .env("OIDC_CLIENT_ID", client_id)
            .env("OIDC_CLIENT_SECRET", client_secret)
            .env("OIDC_REDIRECT_URI", redirect_uri)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs tests/clients/oidc_provider.mjs (scripts/test installs its packages)");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let issuer = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|line| serde_json::from_str::<Value>(&line).ok()?["issuer"].as_str().map(str::to_string))
            .expect("oidc-provider prints its issuer");
        // Whatever it prints later is read and dropped: a closed pipe would stop it.
        std::thread::spawn(move || lines.for_each(drop));
        CertifiedProvider { issuer, child }
    }
}

impl Drop for CertifiedProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How the next ID token is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flaw {
    None,
    /// Signed, then one byte of the signature changed.
    BadSignature,
    /// `aud` names another client.
    WrongAudience,
    /// `exp` an hour ago.
    Expired,
    /// The `nonce` of the sign-in before this one.
    ReplayedNonce,
    /// `iss` names another issuer.
    OtherIssuer,
}

struct State {
    issuer: String,
    client_id: String,
    client_secret: String,
    key: rsa::RsaPrivateKey,
    flaw: Flaw,
    email: String,
    /// Code to (nonce, PKCE challenge).
    codes: HashMap<String, (String, String)>,
    last_nonce: Option<String>,
}

/// The running provider.
pub struct FlawedProvider {
    pub issuer: String,
    state: Arc<Mutex<State>>,
}

impl FlawedProvider {
    /// Starts it with one confidential client, signing in `email`.
    pub async fn start(client_id: &str, client_secret: &str, email: &str) -> FlawedProvider {
        let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await.unwrap();
        let port = acceptor.local_addr()[0].as_socket_addr().unwrap().port();
        let issuer = format!("http://127.0.0.1:{port}");
        let key = tokio::task::spawn_blocking(|| rsa::RsaPrivateKey::new(&mut rand::thread_rng(), 2048).unwrap()).await.unwrap();
        let state = Arc::new(Mutex::new(State {
            issuer: issuer.clone(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            key,
            flaw: Flaw::None,
            email: email.into(),
            codes: HashMap::new(),
            last_nonce: None,
        }));
        let app = Route::new()
            .at("/.well-known/openid-configuration", get(discovery))
            .at("/jwks", get(jwks))
            .at("/authorize", get(authorize))
            .at("/token", post(token))
            .data(state.clone());
        tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(app));
        FlawedProvider { issuer, state }
    }

    /// Makes the next ID tokens wrong in this way.
    pub fn set_flaw(&self, flaw: Flaw) {
        self.state.lock().unwrap().flaw = flaw;
    }

    /// Signs in this address from now on.
    pub fn set_email(&self, email: &str) {
        self.state.lock().unwrap().email = email.into();
    }
}

fn json_response(value: Value) -> Response {
    Response::builder().content_type("application/json").body(value.to_string())
}

#[poem::handler]
async fn discovery(state: Data<&Arc<Mutex<State>>>) -> Response {
    let issuer = state.lock().unwrap().issuer.clone();
    json_response(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    }))
}

#[poem::handler]
async fn jwks(state: Data<&Arc<Mutex<State>>>) -> Response {
    let public = state.lock().unwrap().key.to_public_key();
    json_response(json!({ "keys": [{
        "kty": "RSA", "use": "sig", "alg": "RS256", "kid": "k1",
        "n": URL_SAFE_NO_PAD.encode(public.n().to_bytes_be()),
        "e": URL_SAFE_NO_PAD.encode(public.e().to_bytes_be()),
    }] }))
}

#[derive(Deserialize)]
struct AuthorizeQuery {
    client_id: String,
    redirect_uri: String,
    state: String,
    nonce: String,
    code_challenge: String,
    code_challenge_method: String,
    response_type: String,
}

/// Signs the person in at once and sends them back with a code.
#[poem::handler]
async fn authorize(state: Data<&Arc<Mutex<State>>>, query: Query<AuthorizeQuery>) -> Response {
    let mut state = state.lock().unwrap();
    if query.client_id != state.client_id || query.response_type != "code" || query.code_challenge_method != "S256" {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let code = uuid::Uuid::now_v7().simple().to_string();
    state.codes.insert(code.clone(), (query.nonce.clone(), query.code_challenge.clone()));
    let location = format!("{}?code={code}&state={}", query.redirect_uri, query.state);
    Response::builder().status(StatusCode::FOUND).header("location", location).finish()
}

#[derive(Deserialize)]
struct TokenForm {
    grant_type: String,
    code: String,
    code_verifier: String,
}

/// The token endpoint: client authentication, the code once, PKCE, then the ID token.
#[poem::handler]
async fn token(state: Data<&Arc<Mutex<State>>>, request: &Request, form: Form<TokenForm>) -> Response {
    let mut state = state.lock().unwrap();
    let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", state.client_id, state.client_secret)));
    if request.header("authorization") != Some(basic.as_str()) {
        return Response::builder().status(StatusCode::UNAUTHORIZED).content_type("application/json").body(json!({ "error": "invalid_client" }).to_string());
    }
    let Some((nonce, challenge)) = state.codes.remove(&form.code).filter(|_| form.grant_type == "authorization_code") else {
        return Response::builder().status(StatusCode::BAD_REQUEST).content_type("application/json").body(json!({ "error": "invalid_grant" }).to_string());
    };
    if URL_SAFE_NO_PAD.encode(Sha256::digest(form.code_verifier.as_bytes())) != challenge {
        return Response::builder().status(StatusCode::BAD_REQUEST).content_type("application/json").body(json!({ "error": "invalid_grant", "error_description": "PKCE" }).to_string());
    }
    let now = chrono::Utc::now().timestamp();
    let flaw = state.flaw;
    let claims = json!({
        "iss": if flaw == Flaw::OtherIssuer { "https://other.example".to_string() } else { state.issuer.clone() },
        "sub": state.email,
        "aud": if flaw == Flaw::WrongAudience { "another-client".to_string() } else { state.client_id.clone() },
        "iat": now - if flaw == Flaw::Expired { 7200 } else { 0 },
        "exp": now + if flaw == Flaw::Expired { -3600 } else { 300 },
        "nonce": if flaw == Flaw::ReplayedNonce { state.last_nonce.clone().unwrap_or_default() } else { nonce.clone() },
        "email": state.email,
        "email_verified": true,
    });
    state.last_nonce = Some(nonce);
    let header = URL_SAFE_NO_PAD.encode(json!({ "alg": "RS256", "typ": "JWT", "kid": "k1" }).to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let mut signature = SigningKey::<Sha256>::new(state.key.clone()).sign(signing_input.as_bytes()).to_vec();
    if flaw == Flaw::BadSignature {
        signature[10] ^= 0x01;
    }
    let id_token = format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature));
    json_response(json!({ "access_token": "at-1", "token_type": "Bearer", "expires_in": 300, "id_token": id_token }))
}
