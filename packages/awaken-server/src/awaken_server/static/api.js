// The neutral REST API of `awaken serve`, as the chat page uses it: threads, runs
// streamed as Server-Sent Events of AgentEvents, resume (answers to tickets), cancel.

/** A failed request: the server's problem+json detail and fix, as one sentence. */
export class ApiError extends Error {
  constructor(status, problem) {
    const detail = problem?.detail || `HTTP ${status}`;
    super(problem?.fix ? `${detail} (${problem.fix})` : detail);
    this.status = status;
  }
}

/** The client for one bearer key ("" when the server runs with --no-auth). */
export class Api {
  constructor(key) {
    this.key = key;
  }

  headers(json) {
    const out = json ? { "Content-Type": "application/json" } : {};
    if (this.key) out.Authorization = `Bearer ${this.key}`;
    return out;
  }

  async request(method, path, body, signal) {
    const res = await fetch(path, {
      method,
      headers: this.headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
    return res;
  }

  async json(method, path, body) {
    return (await this.request(method, path, body)).json();
  }

  agents() { return this.json("GET", "/v1/agents"); }
  threads() { return this.json("GET", "/v1/threads"); }
  thread(id) { return this.json("GET", `/v1/threads/${encodeURIComponent(id)}`); }
  run(id) { return this.json("GET", `/v1/runs/${encodeURIComponent(id)}`); }
  createThread(agentId) { return this.json("POST", "/v1/threads", { agent_id: agentId }); }
  cancel(runId) { return this.json("POST", `/v1/runs/${encodeURIComponent(runId)}/cancel`, {}); }

  /** Start a run on a thread; `onEvent` gets each AgentEvent as it streams. */
  startRun(threadId, agentId, text, onEvent) {
    const path = `/v1/threads/${encodeURIComponent(threadId)}/runs`;
    return this.stream(path, { agent_id: agentId, input: text, stream: true }, onEvent);
  }

  /** Answer one ticket of a waiting run and stream what the run does next. */
  resume(runId, ticketId, decision, onEvent) {
    const path = `/v1/runs/${encodeURIComponent(runId)}/resume`;
    const body = { decisions: [{ ticket_id: ticketId, decision }], stream: true };
    return this.stream(path, body, onEvent);
  }

  async stream(path, body, onEvent) {
    const res = await this.request("POST", path, body);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = blocks.pop();
      for (const block of blocks) {
        // One SSE event: its data lines joined (the server sends one per event).
        const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (data) onEvent(JSON.parse(data));
      }
    }
  }
}
