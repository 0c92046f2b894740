// Drives `awaken serve` with the real AG-UI client (@ag-ui/client HttpAgent):
// streamed text, a tool call, an interrupt answered through `resume`, and
// reasoning. Prints a JSON summary; exits 1 on failure.
import { HttpAgent } from "@ag-ui/client";

const url = process.env.SERVER_URL;
const key = process.env.SERVER_KEY;
if (!url || !key) throw new Error("set SERVER_URL and SERVER_KEY");

const agent = new HttpAgent({
  url: `${url}/v1/agents/assistant/ag-ui`,
  headers: { Authorization: `Bearer ${key}` },
  threadId: `agui-${Date.now()}`,
});

let counter = 0;
async function run(text, params = {}) {
  const seen = { types: [], deltas: 0, finished: null, errors: [] };
  if (text !== null) agent.addMessage({ id: `u${++counter}`, role: "user", content: text });
  const runId = `run-${++counter}`;
  const result = await agent.runAgent(
    { runId, ...params },
    {
      onEvent: ({ event }) => { seen.types.push(event.type); },
      onTextMessageContentEvent: () => { seen.deltas++; },
      onRunFinishedEvent: (p) => {
        seen.finished = { outcome: p.outcome, interrupts: p.interrupts ?? [], runId: p.event.runId, threadId: p.event.threadId };
      },
      onRunErrorEvent: ({ event }) => { seen.errors.push(event.message); },
    },
  );
  seen.runId = runId;
  seen.newMessages = result.newMessages.map((m) => ({ role: m.role, content: m.content ?? null, toolCalls: (m.toolCalls ?? []).map((c) => c.function.name) }));
  return seen;
}

const out = {};
const r1 = await run("hello agui");
out.text = { deltas: r1.deltas, first: r1.types[0], last: r1.types.at(-1), outcome: r1.finished.outcome, echoesRunId: r1.finished.runId === r1.runId, echoesThreadId: r1.finished.threadId === agent.threadId, messages: r1.newMessages };
const r2 = await run("weather please");
out.tool = { types: [...new Set(r2.types)], messages: r2.newMessages };
const r3 = await run("delete the file");
out.interrupt = { outcome: r3.finished.outcome, interrupts: r3.finished.interrupts.map((i) => ({ reason: i.reason, hasToolCallId: Boolean(i.toolCallId), hasId: Boolean(i.id) })) };
const r4 = await run(null, { resume: r3.finished.interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } })) });
out.resumed = { outcome: r4.finished.outcome, types: [...new Set(r4.types)], messages: r4.newMessages };
const r5 = await run("think about it");
out.reasoning = { types: [...new Set(r5.types)] };
out.state = { keys: Object.keys(agent.state), audit: Object.values(agent.state["permissions.audit"] ?? {}).map((e) => `${e.tool}:${e.decision}`) };
out.stateEvents = [...new Set([r1, r2, r3, r4, r5].flatMap((r) => r.types.filter((t) => t.startsWith("STATE_"))))];
process.stdout.write(JSON.stringify(out) + "\n");
