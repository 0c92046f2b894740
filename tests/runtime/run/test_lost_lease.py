"""A run that lost its lease stops (issue 16, item 2).

When the thread's lease cannot be renewed (it lapsed and another holder took
it), the run executes no further tool or inference and ends with
``Error(LeaseLostFailure)`` in its ``RunState``: no raw ``VersionConflict``
escapes ``Runtime.run``. It writes nothing more to the thread (issue 51: every
commit is fenced by the lease, so the holder that took the thread carries the run
on): every call that executed after its last checkpoint is in
``unrecorded_call_ids``. The runs here
never yield to the event loop while the lease lapses (a blocking tool, the
scripted model), so only the check at each boundary can notice.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import (
    Error,
    InMemoryStore,
    Message,
    NaturalEnd,
    Phase,
    ScopeBinding,
    ScriptedTurn,
    ToolCall,
    ToolCallContext,
)
from awaken_runtime.stores import SQLiteStore

TTL = 0.3
THREAD = "t-lease"
BINDING = ScopeBinding(THREAD, "default", "default")


def make_store(kind: str, tmp_path: Path) -> Any:
    if kind == "memory":
        return InMemoryStore(lease_ttl=TTL)
    return SQLiteStore(tmp_path / "lease.db", lease_ttl=TTL)


def two_calls() -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[
            ToolCall(id="c1", name="work", arguments={"n": 1}),
            ToolCall(id="c2", name="work", arguments={"n": 2}),
        ]
    )


def work_tool(store: Any, executed: list[int], *, steal_on: int | None, commit: bool) -> Any:
    """Blocks past the lease's ttl without yielding; on call ``steal_on`` another holder
    takes the lapsed lease (and, with ``commit``, writes to the thread)."""

    async def work(n: int, ctx: ToolCallContext) -> str:
        """Do some work."""
        executed.append(n)
        if n == steal_on:
            time.sleep(TTL * 1.5)  # blocks the event loop: no background renewal runs
            await store.acquire_lease(THREAD, "thief", 30.0)
            if commit:
                snap = await store.load(BINDING)
                await store.commit(BINDING, snap.version, [Message.user("thief")], [])
        return f"did {n}"

    return work


async def run_until_stolen(
    make_runtime: Any, store: Any, turns: list[Any], *, commit: bool = False
) -> tuple[Any, Any, list[int]]:
    """Run ``turns`` whose first ``work`` call loses the thread to a thief: (rig, state,
    executed)."""
    executed: list[int] = []
    rig = make_runtime(
        turns, tools=[work_tool(store, executed, steal_on=1, commit=commit)], store=store
    )
    return rig, await rig.run("go", thread_id=THREAD), executed


def assert_lease_lost(state: Any, unrecorded: tuple[str, ...] = ()) -> Any:
    cause = state.end_cause
    assert isinstance(cause, Error) and cause.failure.kind == "lease_lost", cause
    assert cause.failure.thread_id == THREAD
    assert cause.failure.unrecorded_call_ids == unrecorded
    assert state.phase is Phase.ENDED
    return cause


def tool_results(messages: list[Message]) -> dict[str | None, str]:
    return {m.tool_call_id: m.text for m in messages if m.role == "tool"}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_run_whose_lease_was_taken_executes_nothing_more(
    make_runtime: Any, tmp_path: Path, kind: str
) -> None:
    store = make_store(kind, tmp_path)
    before = await store.load(BINDING)
    rig, state, executed = await run_until_stolen(make_runtime, store, [two_calls(), "never"])
    assert executed == [1], "a call ran after the lease was lost"
    assert len(rig.executor.requests) == 1
    cause = assert_lease_lost(state, unrecorded=("c1",))
    assert "taken by another run" in cause.failure.message
    # Nothing of the step or the end reached the thread: the new holder's to finish.
    snap = await store.load(BINDING)
    assert tool_results(snap.messages) == {}
    assert [m.text for m in snap.messages] == ["go"]
    assert snap.version == before.version + 1  # the RunStart checkpoint alone
    assert snap.latest_run is not None and snap.latest_run.phase is Phase.RUNNING


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_lost_lease_is_noticed_before_the_next_inference(
    make_runtime: Any, tmp_path: Path, kind: str
) -> None:
    store = make_store(kind, tmp_path)
    one_call = ScriptedTurn(tool_calls=[ToolCall(id="c1", name="work", arguments={"n": 1})])
    rig, state, executed = await run_until_stolen(make_runtime, store, [one_call, "never"])
    assert executed == [1]
    assert len(rig.executor.requests) == 1, "the model was asked after the lease was lost"
    assert_lease_lost(state, unrecorded=("c1",))
    snap = await store.load(BINDING)
    assert tool_results(snap.messages) == {}  # its step's checkpoint was fenced


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_when_the_new_holder_committed_the_executed_call_is_reported_unrecorded(
    make_runtime: Any, tmp_path: Path, kind: str
) -> None:
    store = make_store(kind, tmp_path)
    _rig, state, executed = await run_until_stolen(
        make_runtime, store, [two_calls(), "never"], commit=True
    )  # no VersionConflict escapes
    assert executed == [1]
    assert_lease_lost(state, unrecorded=("c1",))
    # The store keeps the new holder's write and nothing of the lost run's step.
    snap = await store.load(BINDING)
    assert [m.text for m in snap.messages if m.role == "user"] == ["go", "thief"]
    assert tool_results(snap.messages) == {}


async def test_a_store_without_leases_reports_a_concurrent_writer_as_a_typed_failure(
    make_runtime: Any,
) -> None:
    inner = InMemoryStore()

    class PortOnly:
        async def load(self, binding: ScopeBinding) -> Any:
            return await inner.load(binding)

        async def commit(self, *args: Any, **kwargs: Any) -> int:
            return await inner.commit(*args, **kwargs)

    executed: list[int] = []

    async def work(n: int, ctx: ToolCallContext) -> str:
        """Do some work."""
        executed.append(n)
        snap = await inner.load(BINDING)
        await inner.commit(BINDING, snap.version, [Message.user("other writer")], [])
        return f"did {n}"

    one_call = ScriptedTurn(tool_calls=[ToolCall(id="c1", name="work", arguments={"n": 1})])
    rig = make_runtime([one_call, "never asked"], tools=[work], store=PortOnly())
    state = await rig.run("go", thread_id=THREAD)
    assert executed == [1]
    assert len(rig.executor.requests) == 1
    assert_lease_lost(state, unrecorded=("c1",))


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_lapsed_lease_nobody_took_is_renewed_inline_and_the_run_goes_on(
    make_runtime: Any, tmp_path: Path, kind: str
) -> None:
    store = make_store(kind, tmp_path)
    executed: list[int] = []

    async def work(n: int, ctx: ToolCallContext) -> str:
        """Block past the ttl without yielding; nobody takes the thread."""
        executed.append(n)
        time.sleep(TTL * 1.5)
        return f"did {n}"

    rig = make_runtime([two_calls(), "done"], tools=[work], store=store)
    state = await rig.run("go", thread_id=THREAD)
    assert isinstance(state.end_cause, NaturalEnd), state.end_cause
    assert executed == [1, 2]
    snap = await store.load(BINDING)
    assert tool_results(snap.messages) == {"c1": "did 1", "c2": "did 2"}


class ParkWork:
    """Parks every ``work`` call for permission."""

    def __init__(self) -> None:
        from awaken_runtime import CapabilityBound, PluginManifest

        self.manifest = PluginManifest(id="park", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config: Any) -> Any:
        from awaken_runtime import AwaitReason, Contributions, Suspend

        def gate(ctx: Any, call: ToolCall) -> Any:
            if ctx.decision is None:
                return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
            return None

        return Contributions(tool_gates=[gate])


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_resume_that_loses_its_lease_runs_no_further_decided_call(
    make_runtime: Any, tmp_path: Path, kind: str
) -> None:
    from awaken_runtime import Approve

    store = make_store(kind, tmp_path)
    executed: list[int] = []
    rig = make_runtime(
        [two_calls(), "never asked"],
        tools=[work_tool(store, executed, steal_on=1, commit=False)],
        plugins=[ParkWork()],
        store=store,
    )
    parked = await rig.run("go", thread_id=THREAD)
    assert parked.phase is Phase.WAITING and len(parked.tickets) == 2
    claimed = await store.load(BINDING)
    state = await rig.runtime.resume_many([(t, Approve()) for t in parked.tickets])
    assert executed == [1]
    assert_lease_lost(state, unrecorded=("c1",))
    # The claim committed under the lease; nothing after the lease was taken did.
    snap = await store.load(BINDING)
    assert tool_results(snap.messages) == {}
    assert snap.version == claimed.version + 1
    assert snap.parked is not None and snap.parked.tickets == []
