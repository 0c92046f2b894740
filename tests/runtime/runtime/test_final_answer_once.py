"""A kill between a run's final step commit and its end record: the answer is given once
(issue 51, "possibly a final answer given twice").

The final step's answer is checkpointed at its StepEnd; the run's ``ENDED``
record follows at RunEnd. A process killed between the two leaves the answer
committed and the run ``RUNNING``; the worker that continues it
(``continue_run``) used to ask the model again, and the thread held the final
answer twice. The kill here is a ``BaseException`` raised by the store when the
end record arrives (nothing of that commit is written), as deterministic as a
SIGKILL at that line and caught by nothing in the runtime.
"""

from __future__ import annotations

from typing import Any

import pytest

from awaken_runtime import InMemoryStore, Phase, ScopeBinding, ScriptedTurn, ToolCall

THREAD = "t-final"


class Killed(BaseException):
    """The process died here."""


class DiesBeforeTheEndRecord(InMemoryStore):
    """Dies (once) on the commit that would record the run ``ENDED``."""

    armed = True

    async def commit(self, *args: Any, **kwargs: Any) -> int:
        record = kwargs.get("run_record", args[4] if len(args) > 4 else None)
        if self.armed and record is not None and record.phase is Phase.ENDED:
            self.armed = False
            raise Killed
        return await super().commit(*args, **kwargs)


@pytest.mark.parametrize("steps", [1, 2])
async def test_a_run_killed_after_its_answer_was_committed_answers_once(
    make_runtime: Any, steps: int
) -> None:
    store = DiesBeforeTheEndRecord()

    def look(n: int) -> str:
        """Look."""
        return f"looked {n}"

    turns: list[Any] = [
        ScriptedTurn(tool_calls=[ToolCall(id=f"c{k}", name="look", arguments={"n": k})])
        for k in range(1, steps)
    ]
    turns += ["the answer", "a second answer"]
    first = make_runtime(turns, tools=[look], store=store)
    first.runtime.progress_records = True
    with pytest.raises(Killed):
        await first.run("go", thread_id=THREAD, run_id="r1")
    assert len(first.executor.requests) == steps
    binding = ScopeBinding(THREAD, "default", "default")
    stranded = await store.load(binding)
    assert stranded.latest_run is not None and stranded.latest_run.phase is Phase.RUNNING

    second = make_runtime(["a second answer"], tools=[look], store=store)
    events: list[Any] = []
    state = await second.runtime.continue_run(THREAD, on_event=events.append)
    assert state is not None and state.end_cause is not None
    assert state.end_cause.kind == "natural_end", state.end_cause
    assert state.final_text == "the answer"
    assert second.executor.requests == [], "the model was asked again for a given answer"
    snap = await store.load(binding)
    answers = [m.text for m in snap.messages if m.role == "assistant" and m.text]
    assert answers == ["the answer"]
    assert snap.latest_run is not None and snap.latest_run.phase is Phase.ENDED
    assert snap.latest_run.end_cause == state.end_cause
    finish = events[-1]
    assert finish.type == "run_finish" and finish.final_text == "the answer"


async def test_a_run_killed_after_a_steered_answer_takes_its_next_step(
    make_runtime: Any, make_plugin: Any
) -> None:
    """An answer a run-end guard steered on is not final: the continued run asks again."""
    from awaken_runtime import CapabilityBound, Contributions, Steer

    class DiesOnTheSecondAnswer(InMemoryStore):
        armed = True

        async def commit(self, binding: Any, version: int, messages: Any, *a: Any, **k: Any) -> int:
            if self.armed and any(m.role == "assistant" and m.text == "longer" for m in messages):
                self.armed = False
                raise Killed
            return await super().commit(binding, version, messages, *a, **k)

    store = DiesOnTheSecondAnswer()

    def guard(ctx: Any) -> Any:
        answers = [m for m in ctx.messages if m.role == "assistant"]
        return Steer(message="say more") if len(answers) == 1 else None

    plugin = make_plugin(
        "more", CapabilityBound(run_end_guards=True), Contributions(run_end_guards=[guard])
    )
    first = make_runtime(["short", "longer"], plugins=[plugin], store=store)
    first.runtime.progress_records = True
    with pytest.raises(Killed):
        await first.run("go", thread_id=THREAD)
    snap = await store.load(ScopeBinding(THREAD, "default", "default"))
    assert [m.text for m in snap.messages] == ["go", "short", "say more"]

    second = make_runtime(["longer"], plugins=[plugin], store=DiesBeforeTheEndRecord())
    second.runtime.store = store
    state = await second.runtime.continue_run(THREAD)
    assert state is not None and state.end_cause is not None
    assert state.end_cause.kind == "natural_end" and state.final_text == "longer"
    assert len(second.executor.requests) == 1
