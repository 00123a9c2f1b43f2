// A real OpenID Provider for the tests: node-oidc-provider (certified), configured the way
// corporate providers are: no dynamic registration, one pre-registered confidential client
// (the authorization server under test), PKCE required.  Its interaction (login + consent)
// signs in one fixed user at once, without a page, so that a headless browser can go through.
//
//   node oidc_provider.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI
import http from 'node:http';
import Provider from 'oidc-provider';

const [port, clientId, clientSecret, redirectUri] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const USER = {
  sub: 'alice-0001',
  email: 'alice@example.com',
  email_verified: true,
  name: 'Alice Example',
  groups: ['engineering', 'mcp-users'],
};

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: false },
  },
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  conformIdTokenClaims: false,
  cookies: { keys: ['mcpkit-test-cookie-key'] },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ ...USER, sub: id }) }),
});

const callback = provider.callback();

async function interaction(req, res) {
  const { prompt, params, session } = await provider.interactionDetails(req, res);
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: USER.sub } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  grant.addOIDCScope(params.scope);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

http.createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((err) => {
      console.error(err);
      res.statusCode = 500;
      res.end(String(err));
    });
    return;
  }
  callback(req, res);
}).listen(Number(port), '127.0.0.1', () => console.log(`oidc-provider at ${issuer}`));
