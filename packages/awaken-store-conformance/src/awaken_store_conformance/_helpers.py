"""Builders the suite uses: bindings, messages, batches, run records, parked runs."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from awaken_runtime import (
    AwaitReason,
    Command,
    CommittedBatch,
    Message,
    NaturalEnd,
    ParkedRun,
    Phase,
    ResumeTicket,
    RunRecord,
    ScopeBinding,
    ThreadStore,
    ToolCall,
    VersionConflict,
)

__all__ = [
    "batch",
    "binding",
    "canonical",
    "commit_retry",
    "commit_worker",
    "parked_run",
    "run_record",
    "tool_history",
]


def binding(
    thread_id: str | None = None, profile: str = "prof", namespace: str = "ns"
) -> ScopeBinding:
    """A binding to a fresh (or the given) thread."""
    return ScopeBinding(thread_id or "t-" + os.urandom(6).hex(), profile, namespace)


def tool_history(n: int) -> list[Message]:
    """About ``n`` messages (a multiple of 3): a question, a call (ids ``call-0``,
    ``call-1``...) and its result, again and again."""
    out: list[Message] = []
    for i in range(n // 3):
        call = ToolCall(id=f"call-{i}", name="lookup", arguments={"q": i})
        out += [
            Message.user(f"question {i}"),
            Message.assistant(None, [call]),
            Message.tool(call.id, f"result {i}"),
        ]
    return out


def batch(*commands: Command, revision: int = 1, phase: str = "step_end") -> CommittedBatch:
    """A committed batch of ``commands`` produced by ``test``."""
    return CommittedBatch(revision=revision, phase=phase, entries=[("test", c) for c in commands])


def run_record(
    run_id: str, thread_id: str, phase: Phase = Phase.ENDED, *, updated_at: datetime | None = None
) -> RunRecord:
    """A run record; ended runs end naturally."""
    now = updated_at or datetime.now(UTC)
    return RunRecord(
        run_id=run_id,
        thread_id=thread_id,
        agent_id="agent",
        phase=phase,
        end_cause=NaturalEnd() if phase is Phase.ENDED else None,
        steps=2,
        cost=0.25,
        started_at=now,
        updated_at=now,
    )


def parked_run(b: ScopeBinding, run_id: str, calls: Sequence[ToolCall]) -> ParkedRun:
    """A parked run with one ticket per call."""
    tickets = [
        ResumeTicket(
            ticket_id=f"tkt-{c.id}",
            run_id=run_id,
            thread_id=b.thread_id,
            snapshot_id="snap-1",
            fingerprint="fp",
            await_reason=AwaitReason.TOOL_PERMISSION,
            call=c,
            payload={"question": "ok? ✓"},
        )
        for c in calls
    ]
    return ParkedRun(
        run_id=run_id,
        agent_id="agent",
        fingerprint="fp",
        snapshot_id="snap-1",
        thread_id=b.thread_id,
        profile_id=b.profile_id,
        namespace=b.namespace,
        step=1,
        seq=5,
        run_state=[("k", {"x": 1})],
        tickets=tickets,
    )


def canonical(value: Any) -> str:
    """Order-sensitive JSON text: equal strings mean a byte-for-byte round trip."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def commit_retry(
    store: ThreadStore,
    b: ScopeBinding,
    messages: Sequence[Message],
    batches: Sequence[CommittedBatch] = (),
) -> int:
    """Commit, reloading and retrying on ``VersionConflict`` (what a second writer does)."""
    while True:
        snapshot = await store.load(b)
        try:
            version: int = await store.commit(b, snapshot.version, messages, batches)
            return version
        except VersionConflict:
            await asyncio.sleep(0)


def commit_worker(opener: Callable[[], ThreadStore], thread_id: str, tag: str, count: int) -> None:
    """Process entry point: commit ``count`` messages to ``thread_id`` with retries."""

    async def main() -> None:
        store = opener()
        b = binding(thread_id)
        for i in range(count):
            await commit_retry(store, b, [Message.user(f"{tag}-{i}", id=f"{tag}-{i}")])
        close = getattr(store, "close", None)
        if close is not None:
            await close()

    asyncio.run(main())
