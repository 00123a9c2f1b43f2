// The TypeScript SDK v2 client (@modelcontextprotocol/client 2.x) calling an extension's
// custom methods of an MCP server over Streamable HTTP: `client.request` with a result
// schema for `com.example/notes/add` and `.../search`, `setNotificationHandler` with a
// params schema for `com.example/notes/added`.
// Usage: node ts2_custom_client.mjs NODE_MODULES URL MODE (its versionNegotiation mode:
// "legacy", the default, or "auto", which probes for 2026-07-28); prints one JSON report.
const [modules, url, mode] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(
  `${modules}/@modelcontextprotocol/client/dist/index.mjs`
);
const z = await import(`${modules}/zod/index.js`);

const client = new Client(
  { name: "ts2-custom-peer", version: "1.0.0" },
  { versionNegotiation: { mode } },
);
const added = [];
client.setNotificationHandler(
  "com.example/notes/added",
  { params: z.object({ id: z.number() }) },
  (params) => {
    added.push(params.id);
  },
);
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const Note = z.object({ id: z.number(), text: z.string(), tags: z.array(z.string()) });
const note = await client.request(
  { method: "com.example/notes/add", params: { text: "ts2", tags: ["ts2"] } },
  Note,
);
const found = await client.request(
  { method: "com.example/notes/search", params: { tag: "ts2" } },
  z.object({ notes: z.array(Note) }),
);
let unknown = null;
try {
  await client.request({ method: "com.example/notes/nope", params: {} }, z.object({}));
} catch (error) {
  // A JSON-RPC error comes as a ProtocolError (its code); on 2026-07-28 an HTTP status
  // other than 400 comes as an SdkHttpError (its status, the JSON-RPC error in its body).
  const body = typeof error.data?.text === "string" ? JSON.parse(error.data.text) : null;
  unknown = {
    code: typeof error.code === "number" ? error.code : (body?.error?.code ?? String(error)),
    status: error.data?.status ?? null,
  };
}
const report = {
  protocol: client._negotiatedProtocolVersion ?? null,
  extensions: client.getServerCapabilities()?.extensions ?? null,
  note,
  found: found.notes.map((n) => n.text),
  added,
  unknown,
};
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
