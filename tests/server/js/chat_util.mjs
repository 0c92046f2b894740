// What the AI SDK scripts share: a chat built on the real AbstractChat +
// DefaultChatTransport (a small state class, no React).
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";

import { key, sleep, url } from "./rest_util.mjs";

export { answerAfterLastUser, api, endedRun, key, sleep, url } from "./rest_util.mjs";

class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
    this.updates = 0;
  }
  pushMessage(m) { this.messages = this.messages.concat(m); this.updates++; }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; this.updates++; }
  snapshot(thing) { return structuredClone(thing); }
}

class Chat extends AbstractChat {
  constructor(init) {
    const state = new State();
    super({ ...init, state });
    this.store = state;
  }
}

/** A chat on the `assistant` agent; `fetch` lets a script watch or cut the streams. */
export function newChat(id, fetchImpl = fetch, agent = "assistant") {
  return new Chat({
    id,
    transport: new DefaultChatTransport({
      api: `${url}/v1/agents/${agent}/chat`,
      headers: { Authorization: `Bearer ${key}` },
      fetch: fetchImpl,
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
}

/** Wait until the chat is ready and `pred()` holds (throws on `error`). */
export async function settle(chat, pred = () => true) {
  for (let i = 0; i < 300; i++) {
    if (chat.status === "ready" && pred()) return;
    if (chat.status === "error") throw chat.error;
    await sleep(50);
  }
  throw new Error(`timed out; status=${chat.status} last=${JSON.stringify(chat.lastMessage)}`);
}

export const textOf = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
export const toolParts = (m) => m.parts.filter((p) => p.type === "dynamic-tool");

