// The TypeScript SDK's client (1.x, experimental 2025-11-25 tasks) calling an MCP server
// over Streamable HTTP: lists the tools, runs task-augmented calls with callToolStream
// (input inside a task answered by an elicitation handler), lists and cancels tasks, and
// records the notifications/tasks/status it receives (on its GET stream).
// Usage: node ts_tasks_client.mjs SDK_ESM_DIR URL; prints one JSON report on stdout.
const [sdk, url] = process.argv.slice(2);
const { Client } = await import(`${sdk}/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/client/streamableHttp.js`);
const { ElicitRequestSchema, CallToolResultSchema, TaskStatusNotificationSchema } = await import(
  `${sdk}/types.js`
);

const client = new Client(
  { name: "ts-tasks-peer", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params);
  return { action: "accept", content: { confirm: true, name: "Ts" } };
});
const statuses = [];
let statusArrived = () => {};
client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => {
  statuses.push(notification.params);
  statusArrived();
});
// Resolves once a status notification with `status` for `taskId` came (or after 10 s).
async function statusOf(taskId, status) {
  const deadline = Date.now() + 10000;
  while (!statuses.some((s) => s.taskId === taskId && s.status === status) && Date.now() < deadline) {
    await new Promise((resolve) => {
      statusArrived = resolve;
      setTimeout(resolve, 200);
    });
  }
}
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

async function stream(name, args) {
  const kinds = [];
  let outcome = null;
  for await (const message of client.experimental.tasks.callToolStream(
    { name, arguments: args }, CallToolResultSchema, { task: { ttl: 60000 } },
  )) {
    kinds.push(message.type);
    if (message.type === "result") outcome = { result: message.result };
    if (message.type === "error") outcome = { error: { code: message.error.code, message: message.error.message } };
  }
  return { kinds, ...outcome };
}

const report = { version: client.getServerVersion(), capabilities: client.getServerCapabilities() };
const tools = await client.listTools();
report.execution = Object.fromEntries(tools.tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));
report.slow = await stream("slow_compute", { seconds: 0.2, label: "ts" });
report.confirm = await stream("confirm_delete", { filename: "b.txt" });
report.broken = await stream("protocol_error_job", {});
report.elicited = elicited;
const listed = await client.experimental.tasks.listTasks();
report.listed = listed.tasks.map((t) => t.status);
const created = await client.request(
  { method: "tools/call", params: { name: "slow_compute", arguments: { seconds: 60 }, task: { ttl: 60000 } } },
  (await import(`${sdk}/types.js`)).CreateTaskResultSchema,
);
report.cancelled = (await client.experimental.tasks.cancelTask(created.task.taskId)).status;
report.got = (await client.experimental.tasks.getTask(created.task.taskId)).status;
await statusOf(created.task.taskId, "cancelled");
report.statuses = statuses.map((s) => ({ mine: s.taskId === created.task.taskId, status: s.status }));
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
