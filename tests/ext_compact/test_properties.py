"""Property test through real runs: random conversations with tool calls.

Every request the model receives keeps each tool call with its results,
carries the newest user message (in place, or pinned as a context entry once
its turn was folded into the summary or dropped), and fits the usable input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awaken_ext_compact import PINNED_KEY
from awaken_runtime import InferenceRequest, Message, ScriptedTurn, ToolCall

MAX_OUT = 200


def no_orphans(messages: list[Message]) -> bool:
    seen: set[str] = set()
    for m in messages:
        seen.update(c.id for c in m.tool_calls or ())
        if m.role == "tool" and m.tool_call_id not in seen:
            return False
    return True


turns_strategy = st.lists(
    st.tuples(
        st.integers(1, 120),  # user words
        st.lists(st.integers(1, 100), max_size=3),  # tool calls: result words (via query)
        st.integers(1, 150),  # answer words
    ),
    min_size=8,
    max_size=16,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    turns=turns_strategy,
    window=st.integers(1500, 4000),
    keep=st.integers(0, 8),
    min_gain=st.integers(0, 300),
    compactor_ok=st.booleans(),
)
async def test_random_conversations_keep_the_invariants(
    rig: Callable[..., Any],
    ref_count: Callable[..., int],
    lookup_tool: Any,
    turns: list[tuple[int, list[int], int]],
    window: int,
    keep: int,
    min_gain: int,
    compactor_ok: bool,
) -> None:
    plan: dict[str, tuple[list[int], int]] = {}

    def model(request: InferenceRequest) -> ScriptedTurn:
        messages = list(request.messages)
        users = [i for i, m in enumerate(messages) if m.role == "user"]  # a pin is one too
        key = messages[users[-1]].text.split(":")[0]
        tail = messages[users[-1] :]
        calls, answer = plan[key]
        done = sum(1 for m in tail if m.role == "tool")
        if done < len(calls):
            n = calls[done]
            call = ToolCall(id=f"{key}-{done}", name="lookup", arguments={"query": "w " * n})
            return ScriptedTurn(tool_calls=[call])
        return ScriptedTurn(text="answer " * answer)

    def compactor(_request: InferenceRequest) -> str:
        if not compactor_ok:
            raise RuntimeError("down")
        return "summary so far"

    r = rig(
        [model],
        compactor_turns=[compactor],
        tools=[lookup_tool],
        context_window=window,
        max_output_tokens=MAX_OUT,
        config={"keep_recent_messages": keep, "min_gain_tokens": min_gain},
    )
    for i, (words, calls, answer) in enumerate(turns):
        key = f"turn {i}"
        plan[key] = (calls, answer)
        first = len(r.main.requests)
        state = await r.run(f"{key}: " + "q " * words)
        assert state.end_cause is not None and state.end_cause.kind == "natural_end"
        for request in r.main.requests[first:]:
            carried = [m for m in request.messages if "context_key" not in m.metadata]
            assert no_orphans(carried)
            pinned = [m for m in request.messages if m.metadata.get("context_key") == PINNED_KEY]
            has_user = any(m.role == "user" and m.text.startswith(f"{key}:") for m in carried)
            assert has_user != bool(pinned)  # exactly one copy of the user's message
            assert has_user or (pinned[0].role == "user" and pinned[0].text.startswith(key))
            assert ref_count(list(request.messages), list(request.tools)) <= window - MAX_OUT
