"""Structured output with the scripted model: text and tool paths, retries, streaming, resume."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from awaken_runtime import (
    AgentConfig,
    AwaitReason,
    Error,
    NaturalEnd,
    OutputFailure,
    OutputSpec,
    Phase,
    Respond,
    RunFinish,
    ScriptedTurn,
    StepEnd,
    SuspendCall,
    TextDelta,
    ToolCall,
    ToolCallContext,
    tool,
)
from awaken_runtime.testing import scripted_runtime


class City(BaseModel):
    name: str
    population: int


@dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    left: str
    right: str


def _rig(turns: list[Any], spec: OutputSpec | None = None, **kw: Any) -> Any:
    return scripted_runtime(turns, output=spec or OutputSpec.of(City), **kw)


async def test_a_json_text_answer_becomes_the_typed_output() -> None:
    rig = _rig(['{"name": "Oslo", "population": 700000}'])
    state = await rig.run("biggest city?")
    assert state.end_cause == NaturalEnd()
    assert state.output == {"name": "Oslo", "population": 700000}
    assert state.output_as(City) == City(name="Oslo", population=700000)
    assert json.loads(state.final_text) == state.output
    # The executor was told what to ask for.
    assert rig.executor.requests[0].output == OutputSpec.of(City)


async def test_a_fenced_json_answer_is_accepted() -> None:
    rig = _rig(['```json\n{"name": "Rome", "population": 2800000}\n```'])
    state = await rig.run()
    assert state.output_as(City).name == "Rome"


async def test_the_final_result_tool_path_answers_every_call() -> None:
    turn = ScriptedTurn(
        tool_calls=[
            ToolCall(id="c1", name="lookup", arguments={}),
            ToolCall(id="c2", name="final_result", arguments={"name": "Lima", "population": 9}),
        ]
    )
    ran: list[str] = []

    @tool
    def lookup() -> str:
        """Look something up."""
        ran.append("lookup")
        return "x"

    rig = _rig([turn], tools=[lookup])
    state = await rig.run()
    assert state.output == {"name": "Lima", "population": 9}
    assert ran == []  # the final result ends the run: the other call is answered, not run
    results = {m.tool_call_id: m.text for m in state.new_messages if m.role == "tool"}
    assert results["c2"] == "Final result accepted."
    assert results["c1"].startswith("Not run")


async def test_an_invalid_result_goes_back_and_the_model_fixes_it() -> None:
    bad = ScriptedTurn.call("final_result", {"name": "Oslo", "population": "many"})
    rig = _rig([bad, '{"name": "Oslo", "population": 700000}'])
    state = await rig.run()
    assert state.end_cause == NaturalEnd()
    assert state.output_as(City).population == 700000
    second = rig.executor.requests[1].messages
    feedback = [m for m in second if m.role == "tool"][-1]
    assert "Invalid final result" in feedback.text
    assert "population: 'many' is not of type 'integer'" in feedback.text


async def test_text_that_is_not_json_is_sent_back_as_a_user_message() -> None:
    rig = _rig(["It is Oslo.", '{"name": "Oslo", "population": 1}'])
    state = await rig.run()
    assert state.output_as(City).name == "Oslo"
    last = rig.executor.requests[1].messages[-1]
    assert last.role == "user" and "not valid JSON" in last.text


async def test_exhausted_retries_are_a_typed_failure() -> None:
    spec = OutputSpec.of(City, retries=1)
    rig = _rig(['{"name": 3}', '{"name": "x"}', "never asked"], spec)
    state = await rig.run()
    assert isinstance(state.end_cause, Error)
    failure = state.end_cause.failure
    assert isinstance(failure, OutputFailure)
    assert failure.attempts == 2
    assert any("population" in e for e in failure.errors)
    assert "raise OutputSpec.retries" in failure.message
    assert state.output is None and state.final_text == ""
    assert rig.executor.calls == 2


async def test_final_text_still_streams_and_events_carry_the_output() -> None:
    rig = _rig(['{"name": "Oslo", "population": 5}'], chunk_size=4)
    events = await rig.events()
    deltas = [e.delta for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 3 and "".join(deltas) == '{"name": "Oslo", "population": 5}'
    finish = events[-1]
    assert isinstance(finish, RunFinish)
    assert finish.output == {"name": "Oslo", "population": 5}
    assert finish.finish_reason == "stop"


@pytest.mark.parametrize(
    ("output_type", "value", "typed"),
    [
        (Point, {"x": 1, "y": 2}, Point(1, 2)),
        (Pair, {"left": "a", "right": "b"}, {"left": "a", "right": "b"}),
        (list[int], {"result": [1, 2]}, [1, 2]),
    ],
)
async def test_dataclasses_typed_dicts_and_wrapped_types(
    output_type: Any, value: Any, typed: Any
) -> None:
    rig = _rig([json.dumps(value)], OutputSpec.of(output_type))
    state = await rig.run()
    assert state.output == value
    assert state.output_as(output_type) == typed


async def test_a_json_schema_in_the_config_file_round_trips_and_is_fingerprinted() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    config = AgentConfig.from_dict(
        {"id": "a", "model_binding": "m", "output": {"json_schema": schema, "mode": "tool"}}
    )
    assert config.output is not None and config.output.mode == "tool"
    assert AgentConfig.model_validate_json(config.model_dump_json()) == config
    with_output = scripted_runtime(["x"], output=config.output).runtime.resolve("agent")
    without = scripted_runtime(["x"]).runtime.resolve("agent")
    assert with_output.fingerprint != without.fingerprint


async def test_output_as_without_output_names_the_end() -> None:
    state = await scripted_runtime(["plain"]).run()
    with pytest.raises(ValueError, match="no structured output"):
        state.output_as(City)


async def test_a_result_after_a_suspended_tool_call_resumes_to_the_output() -> None:
    async def ask(question: str, ctx: ToolCallContext) -> str:
        """Ask the user."""
        raise SuspendCall(AwaitReason.USER_INPUT, {"question": question})

    rig = _rig(
        [ScriptedTurn.call("ask", {"question": "which?"}), '{"name": "Oslo", "population": 1}'],
        tools=[ask],
    )
    waiting = await rig.run(thread_id="t")
    assert waiting.phase is Phase.WAITING and waiting.output is None
    done = await rig.runtime.resume(waiting.ticket, Respond(value="Oslo"))
    assert done.output_as(City).name == "Oslo"


async def test_step_end_and_messages_record_the_finish_reason() -> None:
    rig = scripted_runtime([ScriptedTurn.call("nothing"), "done"], max_steps=3)
    events = await rig.events(thread_id="t")
    assert [e.finish_reason for e in events if isinstance(e, StepEnd)] == ["tool_calls", "stop"]
    reasons = [m.metadata.get("finish_reason") for m in rig.messages("t") if m.role == "assistant"]
    assert reasons == ["tool_calls", "stop"]


def test_the_offline_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import runpy
    from pathlib import Path

    example = Path(__file__).resolve().parents[3] / "examples" / "structured_output.py"
    runpy.run_path(str(example), run_name="__main__")
    out = capsys.readouterr().out
    assert "'activity' is a required property" in out
    assert "day 2: Belém" in out and "end: natural_end" in out


async def test_a_childs_typed_output_is_what_agent_run_returns() -> None:
    from awaken_runtime import AgentRuntimeBuilder, ModelSpec, ScriptedExecutor

    parent_turns = [
        ScriptedTurn(
            tool_calls=[
                ToolCall(id="d0", name="agent_run", arguments={"agent_id": "geo", "prompt": "?"})
            ]
        ),
        "done",
    ]
    child = ScriptedExecutor(['{"name": "Oslo", "population": 3}'])
    parent = ScriptedExecutor(parent_turns)
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="mp", provider="pp", model="s"))
        .with_model(ModelSpec(id="mc", provider="pc", model="s"))
        .with_provider("pp", parent)
        .with_provider("pc", child)
        .with_agent_spec(AgentConfig(id="parent", model_binding="mp", delegates=["geo"]))
        .with_agent_spec(AgentConfig(id="geo", model_binding="mc", output=OutputSpec.of(City)))
        .build()
    )
    state = await runtime.run("parent", "q")
    result = json.loads(next(m.text for m in state.new_messages if m.role == "tool"))
    assert result == {
        "agent_id": "geo",
        "status": "completed",
        "result": {"name": "Oslo", "population": 3},
    }
