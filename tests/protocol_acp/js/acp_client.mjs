// The official ACP TypeScript SDK client against `awaken acp` (spawned over stdio):
// a prompt with a tool call, an allowed and a rejected permission ask, and a cancel.
// Run by tests/protocol_acp/test_node_client.py; prints one JSON summary line.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [command, ...args] = JSON.parse(process.env.AWAKEN_ACP_COMMAND);
const child = spawn(command, args, {
  cwd: process.env.AWAKEN_ACP_CWD,
  stdio: ["pipe", "pipe", "inherit"],
});
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

let updates = [];
let asks = [];
let answer = "allow_once";
let onUpdate = () => {};

const app = acp
  .client({ name: "awaken-acp-tests" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
    onUpdate(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    asks.push({ toolCallId: params.toolCall.toolCallId, title: params.toolCall.title,
                kinds: params.options.map((o) => o.kind) });
    return { outcome: { outcome: "selected", optionId: answer } };
  });

const text = () =>
  updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
const kinds = () => updates.map((u) => u.sessionUpdate);

const summary = await app.connectWith(stream, async (ctx) => {
  const out = {};
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  out.init = { protocolVersion: init.protocolVersion, name: init.agentInfo?.name,
               loadSession: init.agentCapabilities?.loadSession };
  const { sessionId } = await ctx.request(acp.methods.agent.session.new, {
    cwd: process.env.AWAKEN_ACP_CWD,
    mcpServers: [],
  });
  const prompt = (words) =>
    ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: words }],
    });

  let done = await prompt("what is the weather?");
  const call = updates.find((u) => u.sessionUpdate === "tool_call");
  const result = updates.find((u) => u.sessionUpdate === "tool_call_update");
  out.tool = { stopReason: done.stopReason, text: text(), chunks: kinds().filter((k) => k === "agent_message_chunk").length,
               title: call.title, status: call.status, resultStatus: result.status,
               sameId: call.toolCallId === result.toolCallId,
               output: result.content[0].content.text };

  for (const [name, option] of [["allowed", "allow_once"], ["rejected", "reject_once"]]) {
    updates = [];
    asks = [];
    answer = option;
    const victim = process.env[`AWAKEN_ACP_${name.toUpperCase()}`];
    done = await prompt(`delete ${victim}`);
    const asked = updates.find((u) => u.sessionUpdate === "tool_call");
    out[name] = { stopReason: done.stopReason, fileExists: existsSync(victim), asks: asks.length,
                  askKinds: asks[0].kinds, askMatchesCall: asks[0].toolCallId === asked.toolCallId,
                  statuses: updates.filter((u) => u.sessionUpdate === "tool_call_update").map((u) => u.status),
                  text: text() };
  }

  updates = [];
  onUpdate = (params) => {
    if (params.update.sessionUpdate === "tool_call") {
      ctx.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
    }
  };
  done = await prompt("please wait");
  onUpdate = () => {};
  out.cancel = { stopReason: done.stopReason, last: updates.at(-1).status };
  updates = [];
  done = await prompt("hello again");
  out.after = { stopReason: done.stopReason, text: text() };
  return out;
});

child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
console.log(JSON.stringify(summary));
