"""A leg's ``RunState`` and run record: the validated models of the run's values, unaliased.

Whatever builds them (validation copies lists), neither may share a list the
run goes on changing, and both equal validating the same field values.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from awaken_runtime import (
    AwaitReason,
    Command,
    Message,
    NaturalEnd,
    Phase,
    RunRecord,
    RunState,
    ScheduledAction,
    Scope,
    TokenUsage,
    ToolCall,
)
from awaken_runtime.run._calls_outcome import Parked
from awaken_runtime.run._ending import leg_result, run_record
from awaken_runtime.run._parking import ticket_parked_calls
from awaken_runtime.state._engine import StagedCommand


def _fields(model: BaseModel) -> dict[str, Any]:
    return {name: getattr(model, name) for name in type(model).model_fields}


def _busy(run: Any) -> Any:
    run.leg.step = 2
    run.leg.usage = TokenUsage(prompt_tokens=5, completion_tokens=3)
    run.leg.cost = 0.25
    run.leg.final_text = "done"
    run.leg.finish_reason = "stop"
    run.leg.persisted.extend([Message.user("hi"), Message.assistant("done")])
    run.leg.engine.commit(
        "t",
        [
            StagedCommand("p", Command.set("r", 1, scope=Scope.RUN)),
            StagedCommand("p", Command.set("th", [1, 2], scope=Scope.THREAD)),
        ],
    )
    return run


def test_leg_result_equals_the_validated_state_and_copies_the_runs_lists(make_parts):
    run = _busy(make_parts())
    parked = [Parked(ToolCall(id="c1", name="x"), AwaitReason.USER_INPUT, {"q": 1})]
    tickets = ticket_parked_calls(run.deps, run.leg, parked, "snap_1")
    pending = [ScheduledAction(name="later", payload={"n": 1})]
    state = leg_result(run.deps, run.leg, Phase.WAITING, None, tickets, pending)
    validated = RunState(**_fields(state))
    assert state == validated
    assert state.model_dump() == validated.model_dump()
    assert repr(state) == repr(validated)
    assert state.model_fields_set == validated.model_fields_set
    # what the run keeps changing afterwards is not the state's
    run.leg.persisted.append(Message.user("later"))
    tickets.clear()
    pending.clear()
    assert [m.text for m in state.new_messages] == ["hi", "done"]
    assert len(state.tickets) == 1 and len(state.pending_actions) == 1
    assert state.value("th") == [1, 2] and state.value("r", Scope.RUN) == 1


def test_an_ended_leg_reports_its_cause_like_the_validated_state(make_parts):
    run = _busy(make_parts())
    state = leg_result(run.deps, run.leg, Phase.ENDED, NaturalEnd(), [], [])
    assert state == RunState(**_fields(state))
    assert state.final_text == "done" and state.ticket is None


def test_run_record_equals_the_validated_record_and_copies_pending(make_parts):
    run = _busy(make_parts())
    pending = [ScheduledAction(name="later")]
    record = run_record(run.deps, run.leg, Phase.ENDED, NaturalEnd(), pending)
    validated = RunRecord(**_fields(record))
    assert record == validated
    assert record.model_dump(mode="json") == validated.model_dump(mode="json")
    assert record.model_fields_set == validated.model_fields_set
    pending.clear()
    assert [a.name for a in record.pending_actions] == ["later"]
    assert record.started_at == run.leg.started_at
