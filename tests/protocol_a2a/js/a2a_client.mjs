// The official A2A JS SDK client driving an `awaken a2a serve` agent (run by tests/protocol_a2a).
// Usage: node a2a_client.mjs CARD_URL KEY. Prints one JSON report on stdout.
import { randomUUID } from "node:crypto";
import { TaskState, taskStateToJSON } from "@a2a-js/sdk";
import { keyedFactory } from "./factory.mjs";

const [cardUrl, key] = process.argv.slice(2);
const client = await keyedFactory(key).createFromUrl(cardUrl, "");

function message(text, task) {
  return {
    messageId: randomUUID(),
    role: 1, // ROLE_USER
    parts: [{ content: { $case: "text", value: text } }],
    ...(task ? { taskId: task.id, contextId: task.contextId } : {}),
  };
}

// Stream one message; the report keeps the states seen, the text streamed, the last status.
async function stream(text, task) {
  const seen = { states: [], text: "", chunks: 0, question: "", taskId: task?.id, contextId: task?.contextId };
  for await (const event of client.sendMessageStream({ message: message(text, task) })) {
    const payload = event.payload;
    if (payload?.$case === "task") {
      seen.taskId = payload.value.id;
      seen.contextId = payload.value.contextId;
      seen.states.push(taskStateToJSON(payload.value.status.state));
    } else if (payload?.$case === "statusUpdate") {
      const status = payload.value.status;
      seen.states.push(taskStateToJSON(status.state));
      if (status.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
        seen.question = status.message.parts
          .filter((p) => p.content?.$case === "text")
          .map((p) => p.content.value)
          .join("\n");
      }
    } else if (payload?.$case === "artifactUpdate") {
      for (const part of payload.value.artifact.parts) {
        if (part.content?.$case === "text") {
          seen.text += part.content.value;
          seen.chunks += 1;
        }
      }
    }
  }
  seen.last = seen.states.at(-1);
  return seen;
}

const report = {};
report.card = { name: client.agentCard?.name ?? null };
report.weather = await stream("weather please");
const asked = await stream("delete it");
report.asked = asked;
const task = { id: asked.taskId, contextId: asked.contextId };
report.wrong = await stream("maybe", task);
report.answered = await stream("yes", task);
const fetched = await client.getTask({ id: asked.taskId });
report.fetched = {
  state: taskStateToJSON(fetched.status.state),
  artifact: fetched.artifacts.flatMap((a) => a.parts).map((p) => p.content?.value).join(""),
};
const parked = await stream("delete another");
const cancelled = await client.cancelTask({ id: parked.taskId });
report.cancelled = taskStateToJSON(cancelled.status.state);
process.stdout.write(JSON.stringify(report) + "\n");
