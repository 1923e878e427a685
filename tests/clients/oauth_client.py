"""An independent OAuth 2.1 client (`authlib`) against Herald's authorization server.

`start BASE REDIRECT SCOPE`: registers a public client (RFC 7591) and makes the authorization
URL with PKCE S256; prints `{ client_id, url, state, verifier }` for a browser to open.
`finish BASE REDIRECT CLIENT_ID VERIFIER STATE CALLBACK_URL`: exchanges the code from the
callback, calls the API with the token, refreshes (rotation), calls again with the new token,
and prints `{ access_token, refresh_token, scope }`.
"""

import json
import sys

import httpx
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client

USER_AGENT = "herald-tests-authlib/1.0"


def start(base, redirect, scope):
    registered = httpx.post(
        f"{base}/oauth/register",
        json={"client_name": "authlib agent", "redirect_uris": [redirect], "scope": scope, "token_endpoint_auth_method": "none"},
        headers={"User-Agent": USER_AGENT},
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    metadata = httpx.get(f"{base}/.well-known/oauth-authorization-server", headers={"User-Agent": USER_AGENT}).json()
    verifier = generate_token(64)
    client = OAuth2Client(client_id=client_id, redirect_uri=redirect, scope=scope, code_challenge_method="S256", token_endpoint_auth_method="none")
    url, state = client.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier)
    print(json.dumps({"client_id": client_id, "url": url, "state": state, "verifier": verifier}))


def finish(base, redirect, client_id, verifier, state, callback):
    metadata = httpx.get(f"{base}/.well-known/oauth-authorization-server", headers={"User-Agent": USER_AGENT}).json()
    client = OAuth2Client(
        client_id=client_id, redirect_uri=redirect, code_challenge_method="S256", token_endpoint_auth_method="none",
        state=state, headers={"User-Agent": USER_AGENT},
    )
    token = client.fetch_token(metadata["token_endpoint"], authorization_response=callback, code_verifier=verifier)
    assert token["access_token"].startswith("rko_") and token["token_type"] == "Bearer", token
    domains = client.get(f"{base}/domains")
    assert domains.status_code == 200, domains.text
    first_refresh = token["refresh_token"]
    refreshed = client.refresh_token(metadata["token_endpoint"], refresh_token=first_refresh)
    assert refreshed["access_token"] != token["access_token"] and refreshed["refresh_token"] != first_refresh, refreshed
    again = client.get(f"{base}/domains")
    assert again.status_code == 200, again.text
    print(json.dumps({"access_token": refreshed["access_token"], "refresh_token": refreshed["refresh_token"], "scope": refreshed["scope"]}))


if __name__ == "__main__":
    {"start": start, "finish": finish}[sys.argv[1]](*sys.argv[2:])
