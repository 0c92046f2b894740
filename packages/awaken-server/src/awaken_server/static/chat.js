// The chat page of `awaken serve`: threads in the URL (?thread=ID), a thread list, runs
// streamed from the neutral REST API, Stop (POST /v1/runs/{id}/cancel), approvals and
// questions answered through POST /v1/runs/{id}/resume.
import { Api } from "./api.js";
import { LiveRun, fromThread, render, textOf } from "./view.js";

const $ = (id) => document.getElementById(id);
const OPEN = document.body.dataset.auth === "none"; // --no-auth: no key to ask for
const LIST_LIMIT = 50; // threads summarised in the list (each costs two requests)
const state = { api: new Api(""), threadId: null, items: [], busy: false, runId: null, threads: [] };

const setStatus = (text) => { $("status").textContent = text; };
const agentId = () => $("agent").value;

const handlers = {
  busy: () => state.busy,
  approve: (card, approved) => answer(card, approved
    ? { kind: "approve" } : { kind: "deny", reason: "denied in the chat page" }),
  respond: (card, value) => answer(card, { kind: "respond", value }),
};

function draw() {
  // Follow the conversation while the reader is at its end (not when they scrolled up).
  const main = $("main");
  const atEnd = main.scrollHeight - main.scrollTop - main.clientHeight < 80;
  render($("log"), state.items, handlers);
  if (atEnd) main.scrollTop = main.scrollHeight;
  $("submit").disabled = state.busy;
  $("stop").hidden = !(state.busy && state.runId);
  $("empty").hidden = state.items.length > 0;
}

function setBusy(busy) {
  state.busy = busy;
  // Approval buttons and question forms show only while no run streams.
  for (const item of state.items) if (item.ticket) item.dirty = true;
  draw();
}

/** Runs `task` and reports its failure in the status line instead of the console. */
const guarded = (task) => (...args) => task(...args).catch((err) => setStatus(err.message));

function urlThread() {
  return new URL(window.location.href).searchParams.get("thread");
}

function setUrl(threadId, push) {
  const url = new URL(window.location.href);
  if (threadId) url.searchParams.set("thread", threadId);
  else url.searchParams.delete("thread");
  window.history[push ? "pushState" : "replaceState"](null, "", url);
}

async function connect() {
  state.api = new Api(OPEN ? "" : $("key").value.trim());
  if (!OPEN && !state.api.key) {
    setStatus("Enter your key to start.");
    $("key").focus();
    return;
  }
  const { agents } = await state.api.agents();
  const select = $("agent");
  const current = select.value;
  select.replaceChildren(...agents.map((a) => new Option(a.id, a.id)));
  if (agents.some((a) => a.id === current)) select.value = current;
  setStatus(`${agents.length} agent(s)`);
  await openThread(urlThread(), false);
  await loadThreads();
}

async function summary(thread) {
  const full = await state.api.thread(thread.thread_id);
  const first = full.messages.find((m) => m.role === "user");
  const text = first ? textOf(first).trim().replace(/\s+/g, " ") : "";
  let activity = thread.created_at;
  const last = full.runs[full.runs.length - 1];
  if (last) activity = (await state.api.run(last)).record?.updated_at || activity;
  return {
    id: thread.thread_id,
    title: text ? (text.length > 60 ? `${text.slice(0, 59)}…` : text) : "(no messages yet)",
    activity,
  };
}

/** `fn` over `items`, at most `width` at a time (the list must not flood the server). */
async function pooled(items, width, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}

async function loadThreads() {
  const { threads } = await state.api.threads();
  threads.sort((a, b) => b.created_at.localeCompare(a.created_at));
  const summaries = await pooled(threads.slice(0, LIST_LIMIT), 4, summary);
  state.threads = summaries.sort((a, b) => new Date(b.activity) - new Date(a.activity));
  drawThreads();
}

async function refreshSummary(threadId) {
  const fresh = await summary({ thread_id: threadId, created_at: new Date().toISOString() });
  state.threads = [fresh, ...state.threads.filter((t) => t.id !== threadId)];
  drawThreads();
}

function drawThreads() {
  const list = $("thread-list");
  list.replaceChildren(...state.threads.map((t) => {
    const when = new Date(t.activity);
    const link = document.createElement("a");
    link.href = `?thread=${encodeURIComponent(t.id)}`;
    link.dataset.thread = t.id;
    if (t.id === state.threadId) link.setAttribute("aria-current", "page");
    const title = document.createElement("span");
    title.className = "title";
    title.textContent = t.title;
    const time = document.createElement("time");
    time.dateTime = when.toISOString();
    time.textContent = when.toLocaleString([], { dateStyle: "short", timeStyle: "short" });
    link.append(title, time);
    link.addEventListener("click", (ev) => {
      ev.preventDefault();
      guarded(openThread)(t.id, true);
    });
    const li = document.createElement("li");
    li.append(link);
    return li;
  }));
}

async function openThread(threadId, push) {
  if (state.busy) return;
  state.threadId = threadId;
  setUrl(threadId, push);
  state.items = [];
  toggleList(false);
  if (threadId) {
    try {
      const thread = await state.api.thread(threadId);
      if ([...$("agent").options].some((o) => o.value === thread.agent_id)) $("agent").value = thread.agent_id;
      state.items = fromThread(thread);
    } catch (err) {
      state.items = [{ kind: "note", tone: "error", text: `This chat cannot be opened: ${err.message}` }];
    }
  }
  draw();
  drawThreads();
}

async function reloadThread() {
  state.items = fromThread(await state.api.thread(state.threadId));
}

/** Streams one run (a start or a resume) into the chat, then shows the stored thread. */
async function stream(begin) {
  setBusy(true);
  const live = new LiveRun(state.items);
  setStatus("Answering…");
  try {
    await begin((event) => {
      live.apply(event);
      if (live.root && !state.runId) state.runId = live.root;
      draw();
    });
  } catch (err) {
    state.items.push({ kind: "note", tone: "error", text: err.message });
  } finally {
    state.runId = null;
    $("stop").disabled = false;
    // The stored thread is the truth: after a stop it holds what was committed, no more.
    await reloadThread().catch((err) => setStatus(err.message));
    const cause = live.finish?.end_cause?.kind;
    if (cause === "cancelled") state.items.push({ kind: "note", text: "Stopped. The chat keeps what was saved before the stop." });
    if (cause === "error") state.items.push({ kind: "note", tone: "error", text: "The run failed (see the server's log)." });
    setBusy(false);
    setStatus(cause === "cancelled" ? "Stopped" : "Ready");
    focusNext();
  }
  await refreshSummary(state.threadId);
}

/** After a run: the first control of a pending ticket, else the message box. */
function focusNext() {
  const control = $("log").querySelector(".tool .buttons button, .tool form input");
  (control || $("input")).focus();
}

async function send(text) {
  if (!state.threadId) {
    const created = await state.api.createThread(agentId());
    state.threadId = created.thread_id;
    setUrl(state.threadId, true);
  }
  state.items.push({ kind: "user", text });
  draw();
  const threadId = state.threadId;
  await stream((onEvent) => state.api.startRun(threadId, agentId(), text, onEvent));
}

async function answer(card, decision) {
  const { ticket } = card;
  Object.assign(card, { ticket: null, status: "sent", dirty: true });
  await stream((onEvent) => state.api.resume(ticket.run_id, ticket.ticket_id, decision, onEvent));
}

async function stop() {
  if (!state.runId) return;
  $("stop").disabled = true;
  setStatus("Stopping…");
  await state.api.cancel(state.runId);
}

function toggleList(open) {
  $("threads").classList.toggle("open", open);
  $("chats-toggle").setAttribute("aria-expanded", String(open));
}

$("composer").addEventListener("submit", guarded(async (ev) => {
  ev.preventDefault();
  const text = $("input").value.trim();
  if (!text || state.busy) return;
  $("input").value = "";
  await send(text);
}));
$("input").addEventListener("keydown", (ev) => {
  // Enter sends; Shift+Enter (and Enter while an input method composes) is a newline.
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    $("composer").requestSubmit();
  }
});
$("stop").addEventListener("click", guarded(stop));
$("new").addEventListener("click", guarded(async () => {
  await openThread(null, true);
  $("input").focus();
}));
$("chats-toggle").addEventListener("click", () => toggleList(!$("threads").classList.contains("open")));
window.addEventListener("popstate", guarded(() => openThread(urlThread(), false)));

if (OPEN) {
  $("keybox").hidden = true;
} else {
  $("key").value = localStorage.getItem("awaken.key") || "";
  $("key").addEventListener("change", guarded(async () => {
    localStorage.setItem("awaken.key", $("key").value.trim());
    await connect();
  }));
}
guarded(connect)();
