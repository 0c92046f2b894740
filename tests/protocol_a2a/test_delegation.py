"""A parent awaken process delegating to a child awaken process over A2A."""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2 as pb
from a2a_rig import (
    CHILD_KEY,
    PARENT_KEY,
    Served,
    as_json,
    collect,
    connect,
    final_task,
    status_text,
    streamed_text,
    user_message,
)
from google.protobuf.json_format import MessageToDict


def awaken_events(responses: list[pb.StreamResponse]) -> list[dict[str, Any]]:
    """The awaken events the stream carried in its status updates' metadata."""
    return [
        MessageToDict(r.status_update.metadata)["awaken.event"]
        for r in responses
        if r.HasField("status_update") and "awaken.event" in r.status_update.metadata
    ]


def child_task_id(task: pb.Task) -> str:
    """The child's task id, from the parent's delegation ticket."""
    (ticket,) = as_json(task)["status"]["message"]["parts"][1]["data"]["awaken.tickets"]
    assert ticket["awaitReason"] == "delegation"
    return str(ticket["payload"]["child_run_id"])


async def test_the_childs_events_stream_into_the_parents_stream(
    parent: Served, child: Served
) -> None:
    async with connect(parent, "parent", PARENT_KEY) as client:
        responses = await collect(client.send_message(user_message("delegate: weather please")))
    task = final_task(responses)
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert streamed_text(responses).startswith(
        'Parent got: {"agent_id":"child","status":"completed"'
    )
    assert "sunny in Paris" in streamed_text(responses)
    events = awaken_events(responses)
    child_start = next(e for e in events if e["type"] == "run_start" and e["agentId"] == "child")
    assert child_start["parentRunId"] == task.id  # linked to the parent's run
    child_run = child_start["runId"]
    text = "".join(
        e["delta"] for e in events if e["type"] == "text_delta" and e["runId"] == child_run
    )
    assert text == "Let me check.Result: sunny in Paris. All done."
    tools = [e["name"] for e in events if e["type"] == "tool_call_ready"]
    assert tools == ["agent_run", "get_weather"]  # the parent's call, then the child's
    # The child's usage rolled up into the parent's.
    async with connect(child, "child", CHILD_KEY) as remote:
        child_task = await remote.get_task(pb.GetTaskRequest(id=child_run))
    child_usage = as_json(child_task)["metadata"]["awaken.usage"]["usage"]
    async with connect(parent, "parent", PARENT_KEY) as client:
        stored = await client.get_task(pb.GetTaskRequest(id=task.id))
    parent_usage = as_json(stored)["metadata"]["awaken.usage"]["usage"]
    assert parent_usage["promptTokens"] > child_usage["promptTokens"] > 0


async def test_an_approval_at_the_child_is_answered_through_the_parent(
    parent: Served, child: Served
) -> None:
    async with connect(parent, "parent", PARENT_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delegate: delete it"))))
        assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert "May I run delete_file" in status_text(asked)  # the child's own question
        remote_id = child_task_id(asked)
        async with connect(child, "child", CHILD_KEY) as remote:
            waiting = await remote.get_task(pb.GetTaskRequest(id=remote_id))
            assert waiting.status.state == pb.TASK_STATE_INPUT_REQUIRED
            responses = await collect(client.send_message(user_message("yes", task=asked)))
            assert final_task(responses).status.state == pb.TASK_STATE_COMPLETED
            assert "deleted /tmp/x.txt" in streamed_text(responses)
            done = await remote.get_task(pb.GetTaskRequest(id=remote_id))
            assert done.status.state == pb.TASK_STATE_COMPLETED


async def test_cancelling_the_parent_cancels_the_childs_task(parent: Served, child: Served) -> None:
    async with connect(parent, "parent", PARENT_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delegate: delete it"))))
        remote_id = child_task_id(asked)
        cancelled = await client.cancel_task(pb.CancelTaskRequest(id=asked.id))
        assert cancelled.status.state == pb.TASK_STATE_CANCELED
    async with connect(child, "child", CHILD_KEY) as remote:
        reached = await remote.get_task(pb.GetTaskRequest(id=remote_id))
    assert reached.status.state == pb.TASK_STATE_CANCELED


async def test_cancelling_a_running_parent_cancels_the_running_child(
    parent: Served, child: Served
) -> None:
    async with connect(parent, "parent", PARENT_KEY) as client:
        stream = client.send_message(user_message("delegate: slow work"))
        remote_id = task_id = ""
        async for item in stream:
            if item.HasField("task"):
                task_id = item.task.id
            events = awaken_events([item])
            if (
                events
                and events[0]["type"] == "tool_call_ready"
                and events[0]["name"] == "wait_a_bit"
            ):
                remote_id = events[0]["runId"]  # the child is inside its long call
                break
        assert remote_id and task_id
        cancelled = await client.cancel_task(pb.CancelTaskRequest(id=task_id))
        assert cancelled.status.state == pb.TASK_STATE_CANCELED
    async with connect(child, "child", CHILD_KEY) as remote:
        reached = await remote.get_task(pb.GetTaskRequest(id=remote_id))
    assert reached.status.state == pb.TASK_STATE_CANCELED


async def test_a_remote_that_is_down_is_an_error_the_model_sees(orphan: Served) -> None:
    async with connect(orphan, "parent", PARENT_KEY) as client:
        responses = await collect(client.send_message(user_message("delegate: weather please")))
    assert final_task(responses).status.state == pb.TASK_STATE_COMPLETED  # the parent carried on
    text = streamed_text(responses)
    assert '"status":"failed"' in text
    assert "is unreachable after 2 attempt(s)" in text
