// The official MCP TypeScript SDK client against `awaken mcp serve`, for the gate tests
// (tests/mcp/test_gates_ts.py). Env:
//   SERVER_URL + SERVER_KEY   streamable HTTP with a bearer key, or
//   SERVER_COMMAND (JSON argv) + SERVER_ENV (JSON)   stdio (the client starts the server);
//   ANSWERS (JSON list of elicitation results)   declare `elicitation` and answer from it;
//                                                without it the client cannot be asked;
//   CALLS (JSON list of {name, arguments})       the tool calls to make, in order.
// Prints one JSON line: each call's result (or error) and every elicitation it was asked.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const answers = process.env.ANSWERS ? JSON.parse(process.env.ANSWERS) : null;
const calls = JSON.parse(process.env.CALLS);
const asked = [];

const client = new Client(
  { name: "awaken-gates-test", version: "0.0.1" },
  { capabilities: answers ? { elicitation: { form: {} } } : {} },
);
if (answers) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    const next = answers.shift();
    if (!next) throw new Error("asked more often than the test expected");
    return next;
  });
}

let transport;
if (process.env.SERVER_URL) {
  transport = new StreamableHTTPClientTransport(new URL(process.env.SERVER_URL), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.SERVER_KEY}` } },
  });
} else {
  const [command, ...args] = JSON.parse(process.env.SERVER_COMMAND);
  transport = new StdioClientTransport({
    command,
    args,
    env: JSON.parse(process.env.SERVER_ENV),
    stderr: "inherit",
  });
}
await client.connect(transport);

const results = [];
for (const call of calls) {
  try {
    const result = await client.callTool(call, undefined, { timeout: 60000 });
    results.push({ isError: result.isError === true, content: result.content });
  } catch (err) {
    results.push({ error: { code: err.code ?? null, message: String(err.message ?? err) } });
  }
}
console.log(JSON.stringify({ results, asked }));
await client.close();
