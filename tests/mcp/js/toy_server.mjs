// A handshake-era MCP server on the official TypeScript SDK, over stdio, for tests/mcp.
// Tools: `hello` (greets), `ask` (elicits), `grow` (adds the tool `later` and sends
// notifications/tools/list_changed), and `later` once grown. Logs go to stderr only.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

let grown = false;
const object = (properties, required = []) => ({ type: "object", properties, required });
const tools = () => [
  { name: "hello", description: "Greet someone.", inputSchema: object({ name: { type: "string" } }, ["name"]) },
  { name: "grow", description: "Add the tool `later`.", inputSchema: object({}) },
  { name: "ask", description: "Ask the user (elicitation/create).", inputSchema: object({}) },
  ...(grown ? [{ name: "later", description: "Exists after grow.", inputSchema: object({}) }] : []),
];

const server = new Server(
  { name: "ts-toy", version: "0.0.1" },
  { capabilities: { tools: { listChanged: true } } },
);
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools() }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args } = request.params;
  if (name === "hello") return { content: [{ type: "text", text: `hello, ${args.name}` }] };
  if (name === "grow") {
    grown = true;
    await server.sendToolListChanged();
    return { content: [{ type: "text", text: "grown" }] };
  }
  if (name === "ask") {
    try {
      const answer = await server.elicitInput({
        message: "Your name?",
        requestedSchema: { type: "object", properties: { name: { type: "string" } } },
      });
      return { content: [{ type: "text", text: `answered ${answer.action}` }] };
    } catch (err) {
      return { content: [{ type: "text", text: `refused: ${err.message}` }], isError: true };
    }
  }
  if (name === "later" && grown) return { content: [{ type: "text", text: "here now" }] };
  return { content: [{ type: "text", text: `no tool ${name}` }], isError: true };
});
await server.connect(new StdioServerTransport());
console.error("ts-toy: serving on stdio");
