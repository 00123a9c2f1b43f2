// The TypeScript SDK v2 client (@modelcontextprotocol/client) as one caller of a gateway
// whose upstream needs each caller's own account: it calls TOOL with the caller's bearer
// token, in ERA (legacy: 2025-11-25, modern: a pinned 2026-07-28).  When the gateway asks
// it to connect (the -32042 error on 2025-11-25, a URL-mode elicitation/create inside an
// input_required round on 2026-07-28) it prints {"connect": URL, "how": ...} and waits for
// one line on stdin (the user finished the page), then retries (2025-11-25) or accepts
// the elicitation (2026-07-28, the SDK retries the round).  Last line: {"result": ...}.
//
//   node ts_per_user.mjs MCP_URL BEARER ERA TOOL
import { Client, StreamableHTTPClientTransport, UrlElicitationRequiredError } from '@modelcontextprotocol/client';
import readline from 'node:readline';

const [url, bearer, era, tool] = process.argv.slice(2);
const input = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function userVisits(link, how) {
  console.log(JSON.stringify({ connect: link, how }));
  await input.next();
}

const options = { capabilities: { elicitation: { url: {} } } };
if (era === 'modern') options.versionNegotiation = { mode: { pin: '2026-07-28' } };
const client = new Client({ name: 'ts-per-user', version: '1.0.0' }, options);
client.setRequestHandler('elicitation/create', async (request) => {
  if (request.params.mode !== 'url') return { action: 'decline' };
  await userVisits(request.params.url, 'elicitation/create');
  return { action: 'accept' };
});
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
});
await client.connect(transport);

async function call() {
  try {
    return await client.callTool({ name: tool, arguments: {} });
  } catch (error) {
    if (!(error instanceof UrlElicitationRequiredError)) throw error;
    const [first] = error.elicitations;
    await userVisits(first.url, `error ${error.code}`);
    return await client.callTool({ name: tool, arguments: {} });
  }
}

const result = await call();
console.log(JSON.stringify({ result, protocolVersion: transport.protocolVersion ?? null }));
await client.close();
process.exit(0);
