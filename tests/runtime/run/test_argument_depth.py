"""Poison arguments never brick a thread (issue 16, item 6, first bullet).

Tool arguments whose objects/arrays nest deeper than the documented limit (64)
are a model-visible argument error: the tool does not run and the stored call
carries no arguments, so the thread stays loadable by every JSON reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import (
    Phase,
    ScopeBinding,
    ScriptedTurn,
    ToolCall,
    ToolCallContext,
    ToolCallDone,
    from_openai,
)
from awaken_runtime.stores import SQLiteStore


def nested(depth: int, kind: str = "dict") -> dict[str, Any]:
    """An arguments object ``depth`` levels deep (itself level 1), innermost holds 1."""
    value: Any = 1
    for level in range(depth - 1):
        as_dict = kind == "dict" or (kind == "mixed" and level % 2 == 1)
        value = {"k": value} if as_dict else [value]
    return {"data": value}


def nested_json(depth: int) -> str:
    return '{"data": ' + '{"k": ' * (depth - 1) + "1" + "}" * (depth - 1) + "}"


def echo_tool(executed: list[Any]) -> Any:
    async def echo(data: Any, ctx: ToolCallContext) -> str:
        """Echo the data."""
        executed.append(ctx.call_id)
        return "ok"

    return echo


def call_turn(arguments: dict[str, Any]) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCall(id="deep", name="echo", arguments=arguments)])


@pytest.mark.parametrize("kind", ["dict", "list", "mixed"])
async def test_arguments_at_the_limit_run(make_runtime: Any, kind: str) -> None:
    executed: list[Any] = []
    rig = make_runtime([call_turn(nested(64, kind)), "done"], tools=[echo_tool(executed)])
    state = await rig.run("go", thread_id="t")
    assert state.phase is Phase.ENDED
    assert executed == ["deep"]


@pytest.mark.parametrize("depth", [65, 1000, 200_000])
@pytest.mark.parametrize("kind", ["dict", "list", "mixed"])
async def test_deeper_arguments_are_a_model_visible_error_and_never_stored(
    make_runtime: Any, tmp_path: Path, depth: int, kind: str
) -> None:
    executed: list[Any] = []
    store = SQLiteStore(tmp_path / "t.db")
    rig = make_runtime(
        [call_turn(nested(depth, kind)), "done"], tools=[echo_tool(executed)], store=store
    )
    events = await rig.events("go", thread_id="t")
    assert executed == []
    (done,) = [e for e in events if isinstance(e, ToolCallDone)]
    assert done.outcome == "error"
    assert "nest deeper than 64 levels" in done.output
    # The model saw the error in its next request, and the run went on to its end.
    seen = [m.text for m in rig.executor.requests[1].messages if m.role == "tool"]
    assert any("nest deeper than 64" in t for t in seen)
    assert events[-1].final_text == "done"
    # A fresh store over the same file loads the thread; the call carries no arguments.
    snap = await SQLiteStore(tmp_path / "t.db").load(ScopeBinding("t", "default", "default"))
    (call,) = [c for m in snap.messages if m.tool_calls for c in m.tool_calls]
    assert call.arguments == {} and "deeper than 64" in (call.parse_error or "")


def test_deep_json_text_from_a_provider_is_an_argument_error_not_a_recursion_error() -> None:
    for depth in (65, 100_000):
        (message,) = from_openai(
            [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "function": {"name": "echo", "arguments": nested_json(depth)}}
                    ],
                }
            ]
        )
        (call,) = message.tool_calls or []
        assert call.arguments == {} and "deeper than 64" in (call.parse_error or "")
    (ok,) = from_openai(
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c", "function": {"name": "e", "arguments": nested_json(64)}}
                ],
            }
        ]
    )
    assert ok.tool_calls and ok.tool_calls[0].parse_error is None
