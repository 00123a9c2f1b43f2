// The TypeScript SDK v2 server (@modelcontextprotocol/server 2.x) with an extension's custom
// method over stdio: `com.example/ts2/echo` registered with `setRequestHandler(method,
// {params, result}, handler)`; it sends `com.example/ts2/echoed` on the request's stream.
// Usage: node ts2_custom_server.mjs NODE_MODULES
const [modules] = process.argv.slice(2);
const { McpServer } = await import(`${modules}/@modelcontextprotocol/server/dist/index.mjs`);
const { StdioServerTransport } = await import(
  `${modules}/@modelcontextprotocol/server/dist/stdio.mjs`
);
const z = await import(`${modules}/zod/index.js`);

const mcp = new McpServer(
  { name: "ts2-custom-server", version: "1.0.0" },
  { capabilities: { tools: {}, extensions: { "com.example/ts2": { flavour: "ts2" } } } },
);
mcp.registerTool("ping", { description: "A plain tool" }, async () => ({
  content: [{ type: "text", text: "pong" }],
}));
mcp.server.setRequestHandler(
  "com.example/ts2/echo",
  { params: z.object({ text: z.string() }), result: z.object({ echo: z.string(), length: z.number() }) },
  async (params, ctx) => {
    await ctx.mcpReq.notify({ method: "com.example/ts2/echoed", params: { text: params.text } });
    return { echo: params.text, length: params.text.length };
  },
);
await mcp.connect(new StdioServerTransport());
