"""``AwakenTaskStore``: the SDK's ``TaskStore`` on the runtime's own store.

A task is a run: the task id is the run id and the context id names the
thread (one per caller profile, so two keys never share a thread). The A2A
view of each task (status, history, artifacts) is one SHARED-scope entry of
the awaken store (owner ``a2a-task:<id>``), so it survives a restart of the
server, and is read back together with the run record of the same id: a run
that ended while its task still looked alive (a crash, a cancel through
another front end) is reported as it ended. While a task streams, saves stay
in memory and reach the store when its state changes (not on every chunk).
A save that cancels a waiting task (CancelTask after a restart) ends the
parked run too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import a2a_pb2 as pb

from awaken_runtime import Command, Phase, ResumeRejected, Scope
from awaken_runtime.stores import ProfileStore, RunStore

from ._wire import INTERRUPTED, TERMINAL, status_now, task_from_json, task_to_json, text_part

if TYPE_CHECKING:
    from awaken_runtime import Runtime
    from awaken_runtime.stores import RunRecord

__all__ = ["PROFILE_STATE", "AwakenTaskStore", "profile_of", "thread_for"]

PROFILE_STATE = "awaken.profile"
"""``ServerCallContext.state`` key holding the caller's profile id."""
_KEY = "task"


def profile_of(context: ServerCallContext | None) -> str:
    """The profile the caller's key maps to (``default`` without keys)."""
    if context is None:
        return "default"
    return str(context.state.get(PROFILE_STATE, "default"))


def thread_for(profile: str, context_id: str) -> str:
    """The awaken thread of an A2A context, for one profile."""
    return f"a2a:{profile}:{context_id}"


def _owner(task_id: str) -> str:
    return f"a2a-task:{task_id}"


@dataclass(slots=True)
class _Live:
    task: pb.Task
    profile: str
    persisted: int


def _ended_state(record: RunRecord) -> tuple[int, str]:
    cause = record.end_cause
    kind = cause.kind if cause is not None else "natural_end"
    if kind == "cancelled":
        return pb.TASK_STATE_CANCELED, "the run was cancelled"
    if kind == "error":
        return pb.TASK_STATE_FAILED, cause.failure.message  # type: ignore[union-attr]
    if kind == "max_steps":
        return pb.TASK_STATE_FAILED, "the run reached its step limit"
    return pb.TASK_STATE_COMPLETED, ""


class AwakenTaskStore(TaskStore):
    """A2A tasks kept as runs in the awaken store (see the module docstring)."""

    def __init__(self, runtime: Runtime, agent_id: str) -> None:
        store = runtime.store
        if not isinstance(store, ProfileStore) or not isinstance(store, RunStore):
            raise TypeError(
                f"the A2A server keeps tasks in the runtime's store, but "
                f"{type(store).__name__} lacks the ProfileStore and RunStore ports; use a "
                f"built-in store (open_store('sqlite:///...')) or one that implements them"
            )
        self.runtime = runtime
        self.agent_id = agent_id
        """Tasks of other agents (served at other endpoints) are not found here."""
        self._scopes: ProfileStore = store
        self._runs: RunStore = store
        self._live: dict[str, _Live] = {}

    async def save(self, task: pb.Task, context: ServerCallContext) -> None:
        """Keep ``task``; persist it when its state changed or it stopped (ended or waits)."""
        copy = pb.Task()
        copy.CopyFrom(task)
        live = self._live.get(task.id)
        profile = live.profile if live is not None else profile_of(context)
        state = copy.status.state
        persisted = live.persisted if live is not None else -1
        if state != persisted or state in TERMINAL or state in INTERRUPTED:
            await self._write(copy, profile)
            persisted = state
        if state in TERMINAL or state in INTERRUPTED:
            self._live.pop(task.id, None)  # stored whole; read it back from the store
        else:
            self._live[task.id] = _Live(copy, profile, persisted)
        if state == pb.TASK_STATE_CANCELED:
            await self._end_parked(task.id)

    async def _write(self, task: pb.Task, profile: str) -> None:
        data = {"profile": profile, "agent": self.agent_id, "task": task_to_json(_compact(task))}
        command = Command.set(_KEY, data, scope=Scope.SHARED)
        await self._scopes.write_scope(Scope.SHARED, _owner(task.id), [command])

    async def _end_parked(self, task_id: str) -> None:
        record = await self._runs.get_run(task_id)
        if record is not None and record.phase is Phase.WAITING:
            with contextlib.suppress(ResumeRejected):  # resumed or cancelled meanwhile
                await self.runtime.cancel_waiting(record.thread_id)

    async def get(self, task_id: str, context: ServerCallContext) -> pb.Task | None:
        """The task if the caller's profile owns it, reconciled with its run record."""
        profile = profile_of(context)
        live = self._live.get(task_id)
        if live is not None:
            return _copy(live.task) if live.profile == profile else None
        stored: dict[str, Any] = (await self._scopes.read_scope(Scope.SHARED, _owner(task_id))).get(
            _KEY
        ) or {}
        if stored.get("profile") != profile or stored.get("agent") != self.agent_id:
            return None  # another profile's task looks exactly like a missing one
        task = task_from_json(stored["task"])
        if task.status.state not in TERMINAL:
            record = await self._runs.get_run(task_id)
            if record is not None and record.phase is Phase.ENDED:
                state, why = _ended_state(record)
                task.status.CopyFrom(status_now(state, record.updated_at))
                if why:
                    task.status.message.CopyFrom(
                        pb.Message(
                            message_id=f"{task_id}-end",
                            role=pb.ROLE_AGENT,
                            task_id=task_id,
                            context_id=task.context_id,
                            parts=[text_part(why)],
                        )
                    )
        return task

    async def list(
        self, params: pb.ListTasksRequest, context: ServerCallContext
    ) -> pb.ListTasksResponse:
        """The caller's tasks of one context (``context_id`` is required), oldest first."""
        if not params.context_id:
            return pb.ListTasksResponse()
        thread = thread_for(profile_of(context), params.context_id)
        tasks: list[pb.Task] = []
        for record in await self._runs.list_runs(thread):
            task = await self.get(record.run_id, context)
            if task is not None and (not params.status or task.status.state == params.status):
                tasks.append(task)
        size = params.page_size or 50
        return pb.ListTasksResponse(tasks=tasks[:size], page_size=size, total_size=len(tasks))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget the A2A view of the task (the run and its thread stay)."""
        if await self.get(task_id, context) is None:
            return
        self._live.pop(task_id, None)
        command = Command.remove(_KEY, scope=Scope.SHARED)
        await self._scopes.write_scope(Scope.SHARED, _owner(task_id), [command])


def _copy(task: pb.Task) -> pb.Task:
    out = pb.Task()
    out.CopyFrom(task)
    return out


def _compact(task: pb.Task) -> pb.Task:
    """``task`` with each artifact's streamed text chunks joined into one part."""
    out = _copy(task)
    for artifact in out.artifacts:
        parts = list(artifact.parts)
        if len(parts) > 1 and all(p.HasField("text") for p in parts):
            joined = "".join(p.text for p in parts)
            del artifact.parts[:]
            artifact.parts.append(text_part(joined))
    return out
