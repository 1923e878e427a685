// A certified OpenID provider (panva's oidc-provider) for Herald's single sign-on tests.
// Listens on 127.0.0.1 (an ephemeral port), with one confidential client from the environment
// (OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI), PKCE required, and its development
// login form: any login (an email address) and any password sign in as that address, with
// email_verified true. Consent is granted at once for the first-party client. Prints
// `{"issuer": "..."}` on one line when it is ready.
import http from 'node:http';
import Provider from 'oidc-provider';

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: process.env.OIDC_CLIENT_ID,
    client_secret: process.env.OIDC_CLIENT_SECRET,
    redirect_uris: [process.env.OIDC_REDIRECT_URI],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: id, email_verified: true, name: 'Sam Example' };
      },
    };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // End-user claims in the ID token of the code flow, as most providers answer.
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
});
server.on('request', provider.callback());
console.log(JSON.stringify({ issuer }));
