"""The ``a2a-sdk`` Python client driving an awaken agent served by ``awaken a2a serve``."""

from __future__ import annotations

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import A2AError, TaskNotFoundError
from a2a_rig import (
    CHILD_KEY,
    OTHER_KEY,
    Served,
    as_json,
    collect,
    connect,
    final_task,
    status_text,
    streamed_text,
    user_message,
)


async def test_the_card_is_public_and_declares_jsonrpc_1_0_streaming_and_bearer(
    child: Served,
) -> None:
    card = httpx.get(child.card_url("child")).json()
    assert card["name"] == "child"
    assert card["capabilities"]["streaming"] is True
    (interface,) = card["supportedInterfaces"]
    assert interface["protocolBinding"] == "JSONRPC" and interface["protocolVersion"] == "1.0"
    assert interface["url"] == f"{child.url}/a2a/child"
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"


async def test_a_call_without_a_key_is_refused(child: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    response = httpx.post(f"{child.url}/a2a/child", json=body, headers={"A2A-Version": "1.0"})
    assert response.status_code == 401
    assert "Bearer" in response.headers["www-authenticate"]


async def test_text_streams_as_artifact_chunks_and_the_task_completes(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        responses = await collect(client.send_message(user_message("weather please")))
        chunks = [r for r in responses if r.HasField("artifact_update")]
        assert len(chunks) > 2  # streamed, not one final blob
        assert streamed_text(responses) == "Let me check.Result: sunny in Paris. All done."
        task = final_task(responses)
        assert task.status.state == pb.TASK_STATE_COMPLETED
        stored = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert stored.status.state == pb.TASK_STATE_COMPLETED
        (artifact,) = stored.artifacts
        assert [p.text for p in artifact.parts] == [streamed_text(responses)]  # one part, stored
        usage = as_json(stored)["metadata"]["awaken.usage"]["usage"]
        assert usage["promptTokens"] > 0


async def test_a_permission_ask_is_input_required_and_yes_resumes_it(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delete it"))))
        assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert "delete_file" in status_text(asked) and "yes or no" in status_text(asked)
        responses = await collect(client.send_message(user_message("yes", task=asked)))
        assert final_task(responses).status.state == pb.TASK_STATE_COMPLETED
        assert "deleted /tmp/x.txt" in streamed_text(responses)


async def test_no_denies_the_call_and_the_model_sees_the_denial(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delete it"))))
        responses = await collect(client.send_message(user_message("no", task=asked)))
        assert final_task(responses).status.state == pb.TASK_STATE_COMPLETED
        text = streamed_text(responses)
        assert "denied" in text and "deleted /tmp" not in text


async def test_a_question_is_answered_with_text(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("ask me"))))
        assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert status_text(asked) == "Which colour?"
        responses = await collect(client.send_message(user_message("blue", task=asked)))
        assert final_task(responses).status.state == pb.TASK_STATE_COMPLETED
        assert "blue" in streamed_text(responses)


async def test_a_follow_up_to_an_unknown_task_is_task_not_found(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        ghost = pb.Task(id="no-such-task", context_id="no-such-context")
        with pytest.raises(TaskNotFoundError):
            await collect(client.send_message(user_message("yes", task=ghost)))


async def test_a_follow_up_to_a_finished_task_is_refused(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delete it"))))
        await collect(client.send_message(user_message("yes", task=asked)))
        with pytest.raises(A2AError, match="terminal state"):
            await collect(client.send_message(user_message("yes", task=asked)))
        stored = await client.get_task(pb.GetTaskRequest(id=asked.id))
        assert stored.status.state == pb.TASK_STATE_COMPLETED  # the refusal changed nothing


async def test_an_answer_of_the_wrong_kind_leaves_the_task_waiting(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delete it"))))
        vague = final_task(await collect(client.send_message(user_message("maybe", task=asked))))
        assert vague.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert "answer yes or no (got 'maybe')" in status_text(vague)
        respond = {"decision": {"kind": "respond", "value": "fake result"}}
        wrong = final_task(
            await collect(client.send_message(user_message(task=asked, data=respond)))
        )
        assert wrong.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert "a 'respond' decision does not fit it" in status_text(wrong)
        stale = {"ticket_id": "tkt_nope", "approved": True}
        missing = final_task(
            await collect(client.send_message(user_message(task=asked, data=stale)))
        )
        assert "ticket 'tkt_nope' is not waiting on this task" in status_text(missing)
        # The task still takes a fitting answer afterwards.
        done = await collect(client.send_message(user_message(task=asked, data={"approved": True})))
        assert final_task(done).status.state == pb.TASK_STATE_COMPLETED
        assert "deleted /tmp/x.txt" in streamed_text(done)


async def test_a_duplicate_follow_up_does_not_resume_twice(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delete twice"))))
        answer = user_message("yes", task=asked)
        vague = user_message("maybe", task=asked)  # first a wrong one, so the task still waits
        await collect(client.send_message(vague))
        again = final_task(await collect(client.send_message(vague)))
        assert again.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert "was already received" in status_text(again)
        assert final_task(await collect(client.send_message(answer))).status.state == (
            pb.TASK_STATE_COMPLETED
        )
        with pytest.raises(A2AError, match="terminal state"):
            await collect(client.send_message(answer))


async def test_another_key_does_not_see_the_task(child: Served) -> None:
    async with (
        connect(child, "child", CHILD_KEY) as client,
        connect(child, "child", OTHER_KEY) as other,
    ):
        asked = final_task(await collect(client.send_message(user_message("delete it"))))
        with pytest.raises(TaskNotFoundError):
            await other.get_task(pb.GetTaskRequest(id=asked.id))
        with pytest.raises(TaskNotFoundError):
            await collect(other.send_message(user_message("yes", task=asked)))
        with pytest.raises(TaskNotFoundError):
            await other.cancel_task(pb.CancelTaskRequest(id=asked.id))
        stored = await client.get_task(pb.GetTaskRequest(id=asked.id))
        assert stored.status.state == pb.TASK_STATE_INPUT_REQUIRED


async def test_cancel_ends_a_waiting_task_and_frees_its_context(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delete it"))))
        cancelled = await client.cancel_task(pb.CancelTaskRequest(id=asked.id))
        assert cancelled.status.state == pb.TASK_STATE_CANCELED
        stored = await client.get_task(pb.GetTaskRequest(id=asked.id))
        assert stored.status.state == pb.TASK_STATE_CANCELED
        # The run ended too: its thread takes a new task in the same context.
        follow = user_message("weather please")
        follow.message.context_id = asked.context_id
        nxt = final_task(await collect(client.send_message(follow)))
        assert nxt.status.state == pb.TASK_STATE_COMPLETED and nxt.context_id == asked.context_id


async def test_a_new_task_in_a_context_whose_run_waits_is_rejected(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delete it"))))
        again = user_message("weather please")
        again.message.context_id = asked.context_id
        rejected = final_task(await collect(client.send_message(again)))
        assert rejected.status.state == pb.TASK_STATE_REJECTED
        assert "waiting for 1 decision" in status_text(rejected)


async def test_subscribe_and_list_tasks_of_a_context(child: Served) -> None:
    async with connect(child, "child", CHILD_KEY) as client:
        asked = final_task(await collect(client.send_message(user_message("delete it"))))
        # A waiting task's subscription stays open for what comes next: read its snapshot.
        stream = client.subscribe(pb.SubscribeToTaskRequest(id=asked.id))
        first = await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
        assert first.task.id == asked.id
        assert first.task.status.state == pb.TASK_STATE_INPUT_REQUIRED
        listed = await client.list_tasks(pb.ListTasksRequest(context_id=asked.context_id))
        assert [t.id for t in listed.tasks] == [asked.id]
