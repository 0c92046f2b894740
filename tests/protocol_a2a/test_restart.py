"""Tasks are runs in the store: they survive a restart of the server process."""

from __future__ import annotations

from pathlib import Path

from a2a.types import a2a_pb2 as pb
from a2a_rig import (
    CHILD_KEY,
    collect,
    connect,
    final_task,
    start,
    status_text,
    stop,
    streamed_text,
    user_message,
)


async def test_a_waiting_task_survives_a_restart_and_resumes_after_it(tmp_path: Path) -> None:
    keys = f"{CHILD_KEY}:alice"
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    first = start(tmp_path, "agents", "setup_child:setup", keys=keys, store=store)
    try:
        async with connect(first, "child", CHILD_KEY) as client:
            asked = final_task(await collect(client.send_message(user_message("delete it"))))
            cancel_me = final_task(await collect(client.send_message(user_message("delete more"))))
            done = final_task(await collect(client.send_message(user_message("weather please"))))
    finally:
        stop(first)
    assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    second = start(tmp_path, "agents", "setup_child:setup", keys=keys, store=store)
    try:
        async with connect(second, "child", CHILD_KEY) as client:
            stored = await client.get_task(pb.GetTaskRequest(id=asked.id))
            assert stored.status.state == pb.TASK_STATE_INPUT_REQUIRED
            assert "May I run delete_file" in status_text(stored)
            finished = await client.get_task(pb.GetTaskRequest(id=done.id))
            assert finished.status.state == pb.TASK_STATE_COMPLETED
            responses = await collect(client.send_message(user_message("yes", task=asked)))
            assert final_task(responses).status.state == pb.TASK_STATE_COMPLETED
            assert "deleted /tmp/x.txt" in streamed_text(responses)
            # CancelTask of a task no live request holds ends its parked run as well.
            cancelled = await client.cancel_task(pb.CancelTaskRequest(id=cancel_me.id))
            assert cancelled.status.state == pb.TASK_STATE_CANCELED
            again = user_message("weather please")
            again.message.context_id = cancel_me.context_id
            assert final_task(await collect(client.send_message(again))).status.state == (
                pb.TASK_STATE_COMPLETED
            )
    finally:
        stop(second)
