// The TypeScript SDK's server (1.x, experimental 2025-11-25 tasks) over stdio: one tool
// that requires a task and completes it in the background from the SDK's in-memory task
// store, and one that may run as a task.  Usage: node ts_tasks_server.mjs SDK_ESM_DIR
const [sdk] = process.argv.slice(2);
const { McpServer } = await import(`${sdk}/server/mcp.js`);
const { StdioServerTransport } = await import(`${sdk}/server/stdio.js`);
const { InMemoryTaskStore } = await import(`${sdk}/experimental/tasks/stores/in-memory.js`);

const server = new McpServer(
  { name: "ts-tasks-server", version: "1.0.0" },
  {
    capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    taskStore: new InMemoryTaskStore(),
  },
);

function background(label, execution) {
  return [
    { description: `Finishes as a task (${execution})`, execution: { taskSupport: execution } },
    {
      createTask: async (extra) => {
        const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 100 });
        setTimeout(() => {
          extra.taskStore.storeTaskResult(task.taskId, "completed", {
            content: [{ type: "text", text: `${label} from the TypeScript task` }],
          });
        }, 300);
        return { task };
      },
      getTask: async (extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (extra) => extra.taskStore.getTaskResult(extra.taskId),
    },
  ];
}

server.experimental.tasks.registerToolTask("countdown", ...background("countdown", "required"));
server.experimental.tasks.registerToolTask("maybe", ...background("maybe", "optional"));
await server.connect(new StdioServerTransport());
