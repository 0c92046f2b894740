// The official A2A JS SDK client reaching an `awaken a2a serve` agent by every spelling of its
// URL (run by tests/protocol_a2a/test_js_client.py).
// Usage: node a2a_slashes.mjs AGENT_URL KEY (AGENT_URL without a trailing slash).
// Prints one JSON report on stdout: per spelling, the card's name and the answer's state.
import { randomUUID } from "node:crypto";
import { taskStateToJSON } from "@a2a-js/sdk";
import { keyedFactory } from "./factory.mjs";

const [agentUrl, key] = process.argv.slice(2);
const factory = keyedFactory(key);

async function ask(client) {
  const result = await client.sendMessage({
    message: {
      messageId: randomUUID(),
      role: 1, // ROLE_USER
      parts: [{ content: { $case: "text", value: "hello" } }],
    },
  });
  const task = result.$case === "task" ? result.value : result;
  const text = (task.artifacts ?? []).flatMap((a) => a.parts).map((p) => p.content?.value).join("");
  return { card: client.agentCard?.name ?? null, state: taskStateToJSON(task.status?.state), text };
}

const report = {};
// The base URL with a trailing slash: the card resolves to AGENT_URL/.well-known/agent-card.json.
report.slashBase = await ask(await factory.createFromUrl(`${agentUrl}/`));
// Without it, URL resolution drops the last segment: the card is asked at the /a2a level.
report.bareBase = await ask(await factory.createFromUrl(agentUrl));
// A card whose endpoint URL ends with a slash: every JSON-RPC POST goes to AGENT_URL/.
const card = (await factory.createFromUrl(`${agentUrl}/`)).agentCard;
const slashed = {
  ...card,
  supportedInterfaces: card.supportedInterfaces.map((i) => ({ ...i, url: `${i.url}/` })),
};
report.slashEndpoint = await ask(await factory.createFromAgentCard(slashed));
report.slashEndpoint.url = slashed.supportedInterfaces[0].url;
process.stdout.write(JSON.stringify(report) + "\n");
