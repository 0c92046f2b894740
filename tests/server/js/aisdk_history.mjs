// Drives `awaken serve` with the real AI SDK v6 chat client: regenerate (a new
// answer on a new revision, the old one kept), a regenerate on an empty chat,
// a chat seeded with history by its client, and a history that diverges from
// the server's thread. Prints a JSON summary.
import { api, newChat, settle, textOf, url, key } from "./chat_util.mjs";

const stamp = Date.now();
const out = {};
const threadCount = async () => (await api("GET", "/v1/threads")).body.threads.length;
const threadOfRun = async (runId) => (await api("GET", `/v1/runs/${runId}`)).body.thread_id;
const thread = async (id) => (await api("GET", `/v1/threads/${id}`)).body;

// 1. Regenerate.
const rolling = newChat(`regen-${stamp}`);
await rolling.sendMessage({ text: "roll the dice" });
const first = { text: textOf(rolling.lastMessage), runId: rolling.lastMessage.metadata.runId };
await rolling.regenerate();
await settle(rolling);
const second = { text: textOf(rolling.lastMessage), runId: rolling.lastMessage.metadata.runId };
const oldThread = await threadOfRun(first.runId);
const newThread = await threadOfRun(second.runId);
const current = await thread(newThread);
const old = await thread(oldThread);
out.regenerate = {
  status: rolling.status,
  first: first.text,
  second: second.text,
  roles: rolling.messages.map((m) => m.role),
  newThread: newThread !== oldThread,
  chat: { current: current.chat.thread_id === newThread, revisions: current.chat.revisions.includes(oldThread) },
  oldChat: old.chat.thread_id === newThread,
  current: current.messages.map((m) => `${m.role}: ${m.content}`),
  old: old.messages.map((m) => `${m.role}: ${m.content}`),
};

// 2. A regenerate on a chat with nothing to answer again: 409, nothing created.
const before = await threadCount();
const empty = await fetch(`${url}/v1/agents/assistant/chat`, {
  method: "POST",
  headers: { Authorization: `Bearer ${key}`, "content-type": "application/json" },
  body: JSON.stringify({ id: `empty-${stamp}`, trigger: "regenerate-message", messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }] }),
});
out.emptyRegenerate = { status: empty.status, type: empty.headers.get("content-type"), body: await empty.json(), created: (await threadCount()) - before };

// 3. A chat seeded with its client's history reaches the model whole.
const seeded = newChat(`seeded-${stamp}`);
seeded.messages = [
  { id: "s1", role: "user", parts: [{ type: "text", text: "my name is Ada" }] },
  { id: "s2", role: "assistant", parts: [{ type: "text", text: "Nice to meet you, Ada." }] },
];
await seeded.sendMessage({ text: "recall everything" });
out.seeded = { status: seeded.status, text: textOf(seeded.lastMessage), thread: (await thread(await threadOfRun(seeded.lastMessage.metadata.runId))).messages.length };

// 4. A history that differs from the server's thread: 409, the thread unchanged.
const diverging = newChat(`diverge-${stamp}`);
await diverging.sendMessage({ text: "hello one" });
const divergedThread = await threadOfRun(diverging.lastMessage.metadata.runId);
const held = (await thread(divergedThread)).messages.length;
diverging.messages = [
  { ...diverging.messages[0], parts: [{ type: "text", text: "hello edited" }] },
  diverging.messages[1],
];
await diverging.sendMessage({ text: "and then" });
out.diverged = {
  status: diverging.status,
  error: JSON.parse(diverging.error.message),
  unchanged: (await thread(divergedThread)).messages.length === held,
};

process.stdout.write(JSON.stringify(out) + "\n");
