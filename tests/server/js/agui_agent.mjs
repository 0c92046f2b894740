// Drives `awaken serve` with the real AG-UI client (@ag-ui/client HttpAgent):
// streamed text, a tool call, an interrupt answered through `resume`, and
// reasoning. Prints a JSON summary; exits 1 on failure.
import { HttpAgent } from "@ag-ui/client";
import { answerAfterLastUser, api, endedRun, key, url } from "./rest_util.mjs";

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
      onRunStartedEvent: ({ event }) => { seen.serverRunId = event.metadata?.awakenRunId ?? null; },
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
const record = await api("GET", `/v1/runs/${r1.serverRunId}`);
out.serverRunId = { differs: r1.serverRunId !== r1.runId, found: record.status, threadMatches: Boolean(record.body?.thread_id) };
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
// 6. abortRun() while the model stalls mid-answer: under the default --on-disconnect
// the run is cancelled, and RUN_STARTED's metadata named it.
let heldRun = null;
agent.addMessage({ id: `u${++counter}`, role: "user", content: "please hold" });
await agent.runAgent(
  { runId: `run-${++counter}` },
  {
    onRunStartedEvent: ({ event }) => { heldRun = event.metadata?.awakenRunId ?? null; },
    onTextMessageContentEvent: () => { agent.abortRun(); },
  },
).catch((e) => e);
const held = await endedRun(heldRun);
out.abort = { endCause: held.record.end_cause.kind, thread: await answerAfterLastUser(held.thread_id) };
// 7. A thread seeded with its client's history reaches the model whole; a history
// that differs from the thread is refused (409) and changes nothing.
const seeded = new HttpAgent({
  url: `${url}/v1/agents/assistant/ag-ui`,
  headers: { Authorization: `Bearer ${key}` },
  threadId: `agui-seeded-${Date.now()}`,
  initialMessages: [
    { id: "s1", role: "user", content: "my name is Ada" },
    { id: "s2", role: "assistant", content: "Nice to meet you, Ada." },
    { id: "s3", role: "user", content: "recall everything" },
  ],
});
const seededRun = await seeded.runAgent({ runId: "seeded-1" });
out.seeded = seededRun.newMessages.map((m) => m.content);
seeded.messages[0] = { ...seeded.messages[0], content: "my name is Bob" };
seeded.addMessage({ id: "s4", role: "user", content: "recall again" });
out.diverged = await seeded.runAgent({ runId: "seeded-2" }).then(() => "accepted", (e) => String(e.message ?? e));
process.stdout.write(JSON.stringify(out) + "\n");
