// The TypeScript SDK's client (@modelcontextprotocol/client) signing in through mcpkit's
// authorization server with its OAuthClientProvider: dynamic registration, PKCE, then a
// headless user agent follows the authorization redirect (cookies kept, the consent form
// approved) to the redirect URI, as tests/auth's Browser does; then one tool call.
//
//   node ts_sdk_client.mjs MCP_URL TOOL_TEXT      -> prints {"result": ..., "signedIn": true}
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';

const [url, text] = process.argv.slice(2);
const REDIRECT = 'http://127.0.0.1:53682/callback';
const saved = {};
let authorizationUrl;

const provider = {
  get redirectUrl() { return REDIRECT; },
  get clientMetadata() {
    return {
      client_name: 'TypeScript SDK interop',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  },
  clientInformation() { return saved.client; },
  saveClientInformation(client) { saved.client = client; },
  tokens() { return saved.tokens; },
  saveTokens(tokens) { saved.tokens = tokens; },
  redirectToAuthorization(target) { authorizationUrl = target; },
  saveCodeVerifier(verifier) { saved.verifier = verifier; },
  codeVerifier() { return saved.verifier; },
};

const cookies = new Map(); // host -> Map(name -> value)

function keepCookies(target, response) {
  const jar = cookies.get(target.host) ?? new Map();
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const at = pair.indexOf('=');
    jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
  }
  cookies.set(target.host, jar);
}

function cookieHeader(target) {
  const jar = cookies.get(target.host);
  return jar ? [...jar].map(([k, v]) => `${k}=${v}`).join('; ') : '';
}

async function userAgent(start) {
  let target = new URL(start);
  let request = { method: 'GET' };
  for (let hop = 0; hop < 20; hop++) {
    const headers = { ...(request.headers ?? {}), cookie: cookieHeader(target) };
    const response = await fetch(target, { ...request, headers, redirect: 'manual' });
    keepCookies(target, response);
    const location = response.headers.get('location');
    if ([302, 303].includes(response.status) && location) {
      const next = new URL(location, target);
      if (next.href.startsWith(REDIRECT)) return next.searchParams;
      target = next;
      request = { method: 'GET' };
      continue;
    }
    const page = await response.text();
    if (response.status === 200 && page.includes("name='csrf'")) {
      const fields = Object.fromEntries(
        [...page.matchAll(/<input type='hidden' name='([^']+)' value='([^']*)'>/g)].map((m) => [m[1], m[2]]),
      );
      const action = page.match(/<form method='post' action='([^']+)'>/)[1];
      target = new URL(action.replaceAll('&amp;', '&'), target);
      request = {
        method: 'POST',
        body: new URLSearchParams({ ...fields, decision: 'approve' }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      };
      continue;
    }
    throw new Error(`sign-in stopped at ${target}: HTTP ${response.status} ${page.slice(0, 300)}`);
  }
  throw new Error('sign-in redirected too many times');
}

async function connected() {
  const client = new Client({ name: 'ts-sdk-interop', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await client.connect(transport);
    return client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError) || authorizationUrl === undefined) throw error;
    await transport.finishAuth(await userAgent(authorizationUrl));
  }
  const again = new Client({ name: 'ts-sdk-interop', version: '1.0.0' });
  await again.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  return again;
}

const client = await connected();
const result = await client.callTool({ name: 'echo', arguments: { text } });
console.log(JSON.stringify({ result, signedIn: saved.tokens !== undefined }));
await client.close();
