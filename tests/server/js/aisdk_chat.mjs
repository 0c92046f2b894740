// Drives `awaken serve` with the real AI SDK v6 chat client (AbstractChat +
// DefaultChatTransport, no React): streamed text, a tool call, an approval
// round trip (approve and deny). Prints a JSON summary; exits 1 on failure.
import { newChat as chatWith, settle, textOf, toolParts } from "./chat_util.mjs";

const chunks = [];
const fetchSpy = async (input, init) => {
  const res = await fetch(input, init);
  if (!res.ok) return res;
  const [a, b] = res.body.tee();
  (async () => {
    const reader = b.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const line of value.split(/\r?\n/)) if (line.startsWith("data: ")) chunks.push(line.slice(6));
    }
  })();
  return new Response(a, { status: res.status, headers: res.headers });
};

const newChat = (id) => chatWith(id, fetchSpy);

const out = {};
const chat = newChat(`chat-${Date.now()}`);

// 1. streamed text
await chat.sendMessage({ text: "hello there" });
out.text = textOf(chat.lastMessage);
out.textDeltas = chunks.filter((c) => c.includes('"text-delta"')).length;
out.done = chunks.filter((c) => c === "[DONE]").length;

// 2. a tool call
await chat.sendMessage({ text: "what is the weather" });
const weather = toolParts(chat.lastMessage)[0];
out.tool = { name: weather.toolName, state: weather.state, input: weather.input, output: weather.output };
out.toolText = textOf(chat.lastMessage);

// 3. approval: approve
await chat.sendMessage({ text: "please delete the file" });
const asking = toolParts(chat.lastMessage)[0];
out.asked = { state: asking.state, name: asking.toolName, hasApprovalId: Boolean(asking.approval?.id) };
const askedMessageId = chat.lastMessage.id;
await chat.addToolApprovalResponse({ id: asking.approval.id, approved: true });
await settle(chat, () => toolParts(chat.lastMessage)[0]?.state === "output-available");
const approved = toolParts(chat.lastMessage)[0];
out.approved = {
  state: approved.state,
  output: approved.output,
  text: textOf(chat.lastMessage),
  sameMessage: chat.lastMessage.id === askedMessageId,
  messages: chat.messages.length,
};

// 4. approval: deny
await chat.sendMessage({ text: "delete another file" });
const asking2 = toolParts(chat.lastMessage)[0];
await chat.addToolApprovalResponse({ id: asking2.approval.id, approved: false, reason: "not today" });
await settle(chat, () => toolParts(chat.lastMessage)[0]?.state === "output-denied");
out.denied = { state: toolParts(chat.lastMessage)[0].state, text: textOf(chat.lastMessage) };
out.finalStatus = chat.status;

process.stdout.write(JSON.stringify(out) + "\n");
