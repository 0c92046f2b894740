// What every client script shares: the server under test and its REST API.
export const url = process.env.SERVER_URL;
export const key = process.env.SERVER_KEY;
if (!url || !key) throw new Error("set SERVER_URL and SERVER_KEY");

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** GET/POST the server's REST API as this key; `{status, body}`. */
export async function api(method, path, body, token = key) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** The run's stored record once it has ended (polls; the run ends at its next boundary). */
export async function endedRun(runId) {
  for (let i = 0; i < 400; i++) {
    const { body } = await api("GET", `/v1/runs/${runId}`);
    if (body.record && body.record.phase === "ended" && !body.live) return body;
    await sleep(50);
  }
  throw new Error(`run ${runId} did not end`);
}

/** The text of a thread's assistant messages after its last user message. */
export async function answerAfterLastUser(threadId) {
  const { body } = await api("GET", `/v1/threads/${threadId}`);
  const messages = body.messages;
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  return {
    messages: messages.length,
    answer: messages.slice(lastUser + 1).filter((m) => m.role === "assistant").map((m) => m.content ?? "").join(""),
  };
}
