// The official MCP TypeScript SDK client against `awaken mcp serve --http`.
// Env: SERVER_URL, SERVER_KEY. Prints one JSON line with what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.SERVER_URL);
const headers = { Authorization: `Bearer ${process.env.SERVER_KEY}` };

const client = new Client({ name: "awaken-ts-test", version: "0.0.1" });
const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
await client.connect(transport);

const listed = await client.listTools();
const add = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
const shout = await client.callTool({ name: "shout", arguments: { text: "ts" } });
const broke = await client.callTool({ name: "shout", arguments: { text: "boom" } });
const agent = await client.callTool({ name: "calc", arguments: { prompt: "from ts" } });

let refused = null;
try {
  const bad = new Client({ name: "awaken-ts-bad", version: "0.0.1" });
  await bad.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: "Bearer wrong-key-wrong-key-wrong" } },
    }),
  );
  refused = "connected";
} catch (err) {
  refused = String(err && err.message ? err.message : err);
}

const textOf = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
console.log(
  JSON.stringify({
    protocol: transport.protocolVersion ?? null,
    sessionId: transport.sessionId ?? null,
    tools: listed.tools.map((t) => t.name).sort(),
    addSchema: listed.tools.find((t) => t.name === "add").inputSchema,
    add: textOf(add),
    shout: textOf(shout),
    broke: { isError: broke.isError === true, text: textOf(broke) },
    agent: { isError: agent.isError === true, text: textOf(agent) },
    refused,
  }),
);
await client.close();
