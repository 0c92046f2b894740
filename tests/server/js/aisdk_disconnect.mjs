// Drives `awaken serve --on-disconnect $ON_DISCONNECT` with the real AI SDK v6
// chat client: stop (chat.stop(), and under `continue` the REST cancel through
// the run id the stream's message metadata carries), then a connection dropped
// mid-answer followed by chat.resumeStream(). Prints a JSON summary.
import { api, answerAfterLastUser, endedRun, key, newChat, settle, sleep, textOf, url } from "./chat_util.mjs";

const mode = process.env.ON_DISCONNECT;
const otherKey = process.env.OTHER_KEY;
if (!mode || !otherKey) throw new Error("set ON_DISCONNECT and OTHER_KEY");

const gets = [];
/** Records the status of every GET (the transport's reconnect requests). */
const watching = (inner) => async (input, init) => {
  const res = await inner(input, init);
  if ((init?.method ?? "GET") === "GET") gets.push(res.status);
  return res;
};

/** Lets a POST's stream through until `after` text deltas arrived, then drops the
 * connection and fails the stream the way a network error does. */
const cutting = (after) => async (input, init) => {
  const res = await fetch(input, init);
  if (!res.ok || init?.method !== "POST") return res;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let deltas = 0;
  const body = new ReadableStream({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) return controller.close();
      deltas += (decoder.decode(value, { stream: true }).match(/"text-delta"/g) ?? []).length;
      controller.enqueue(value);
      if (deltas >= after) {
        await reader.cancel();
        controller.error(new TypeError("network error: the connection dropped"));
      }
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
};

async function untilText(chat) {
  for (let i = 0; i < 400; i++) {
    const last = chat.lastMessage;
    if (last?.role === "assistant" && textOf(last).length > 0 && last.metadata?.runId) return;
    await sleep(25);
  }
  throw new Error("no text arrived");
}

const out = { mode };

// 1. Stop while the model is still answering ("hold" stalls mid-answer for 30 s).
const stopping = newChat(`stop-${Date.now()}`);
const sent = stopping.sendMessage({ text: "please hold" });
await untilText(stopping);
const runId = stopping.lastMessage.metadata.runId;
let cancelStatus = null;
if (mode === "continue") {
  // The stream ending is no cancel under `continue`: cancel through the run id.
  cancelStatus = (await api("POST", `/v1/runs/${runId}/cancel`)).status;
}
stopping.stop();
await sent;
const seen = textOf(stopping.lastMessage);
const stopped = await endedRun(runId);
out.stop = {
  status: stopping.status,
  seen,
  cancelStatus,
  endCause: stopped.record.end_cause.kind,
  thread: await answerAfterLastUser(stopped.thread_id),
};

// 2. Under `continue` a plain stop leaves the run to finish in the background.
if (mode === "continue") {
  const leaving = newChat(`leave-${Date.now()}`);
  const going = leaving.sendMessage({ text: "crawl along" });
  await untilText(leaving);
  const leftRun = leaving.lastMessage.metadata.runId;
  leaving.stop();
  await going;
  const left = await endedRun(leftRun);
  out.leave = { seen: textOf(leaving.lastMessage), endCause: left.record.end_cause.kind, thread: await answerAfterLastUser(left.thread_id) };
}

// 3. The connection drops mid-answer; the client resumes the stream.
const chatId = `resume-${Date.now()}`;
const resuming = newChat(chatId, watching(cutting(3)));
await resuming.sendMessage({ text: "crawl please" });
const cutRun = resuming.lastMessage.metadata.runId;
out.cut = { status: resuming.status, partial: textOf(resuming.lastMessage), messages: resuming.messages.length };
// Another key asking for this chat's stream learns nothing: 404, and this chat's
// stream stays resumable.
const foreign = await fetch(`${url}/v1/agents/assistant/chat/${chatId}/stream`, { headers: { Authorization: `Bearer ${otherKey}` } });
out.foreign = { status: foreign.status, type: foreign.headers.get("content-type"), body: await foreign.json() };
await resuming.resumeStream();
await settle(resuming);
out.resumed = {
  status: resuming.status,
  text: textOf(resuming.lastMessage),
  roles: resuming.messages.map((m) => m.role),
  runId: resuming.lastMessage.metadata?.runId === cutRun,
};
await resuming.resumeStream(); // nothing left to resume
out.gets = [...gets];
const cutEnded = await endedRun(cutRun);
out.cutRun = { endCause: cutEnded.record.end_cause.kind, thread: await answerAfterLastUser(cutEnded.thread_id) };
// An unknown chat of this key is a 404 too, never a stream.
out.unknown = (await fetch(`${url}/v1/agents/assistant/chat/never-${Date.now()}/stream`, { headers: { Authorization: `Bearer ${key}` } })).status;

process.stdout.write(JSON.stringify(out) + "\n");
