"""The transcoders over generated event sequences: the protocols' stream rules always hold.

Each rule is one the real clients enforce (the AI SDK throws on a delta without
its start; AG-UI's verifier wants RUN_STARTED first, one terminal event, text
closed before STEP_FINISHED). Sequences mix text and reasoning, tool calls,
suspended calls, sub-agent events, and runs that end every way.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_runtime import (
    AgentEvent,
    AwaitReason,
    Cancelled,
    MaxSteps,
    NaturalEnd,
    Phase,
    ResumeTicket,
    RunFinish,
    RunStart,
    StepEnd,
    StepStart,
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolCallDone,
    ToolCallReady,
)
from awaken_server import AGUITranscoder, UIMessageStreamTranscoder

ITEM = st.one_of(
    st.tuples(
        st.just("text"), st.sampled_from(["text", "reasoning"]), st.text(min_size=1, max_size=5)
    ),
    st.tuples(
        st.just("tool"), st.sampled_from(["success", "error", "blocked", "suspended"]), st.none()
    ),
    st.tuples(st.just("child"), st.none(), st.none()),
)
STEPS = st.lists(st.tuples(st.lists(ITEM, max_size=6), st.booleans()), max_size=4)
ENDS = st.sampled_from(["natural", "max_steps", "cancelled", "waiting", "crash"])


def _ticket(call_id: str) -> ResumeTicket:
    return ResumeTicket(
        ticket_id=f"tkt_{call_id}",
        run_id="r",
        thread_id="t",
        snapshot_id="s",
        fingerprint="f",
        await_reason=AwaitReason.TOOL_PERMISSION,
        call=ToolCall(id=call_id, name="tool", arguments={}),
    )


def _events(steps: list[tuple[list[Any], bool]], end: str) -> list[AgentEvent]:
    seq = iter(range(1, 10_000))
    out: list[AgentEvent] = [RunStart(seq=next(seq), run_id="r", thread_id="t", agent_id="a")]
    parked: list[str] = []
    n = 0
    for number, (items, closed) in enumerate(steps, 1):
        out.append(StepStart(seq=next(seq), run_id="r", step=number))
        for kind, arg, text in items:
            if kind == "text":
                out.append(TextDelta(seq=next(seq), run_id="r", channel=arg, delta=text))
            elif kind == "child":
                out.append(TextDelta(seq=1, run_id="child", delta="from a sub-agent"))
            else:
                n += 1
                call = f"c{n}"
                out.append(
                    ToolCallReady(
                        seq=next(seq), run_id="r", call_id=call, name="tool", arguments={"n": n}
                    )
                )
                out.append(
                    ToolCallDone(seq=next(seq), run_id="r", call_id=call, output="{}", outcome=arg)
                )
                if arg == "suspended":
                    parked.append(call)
        if closed:
            out.append(
                StepEnd(seq=next(seq), run_id="r", step=number, usage=TokenUsage(), state_delta=[])
            )
    if end == "crash":
        return out  # the run raised: no RunFinish
    if end == "waiting":
        tickets = [_ticket(c) for c in parked] or [_ticket("c0")]
        finish = RunFinish(
            seq=next(seq), run_id="r", phase=Phase.WAITING, tickets=tickets, usage=TokenUsage()
        )
    else:
        cause = {
            "natural": NaturalEnd(),
            "max_steps": MaxSteps(max_steps=4),
            "cancelled": Cancelled(),
        }[end]
        finish = RunFinish(
            seq=next(seq), run_id="r", phase=Phase.ENDED, end_cause=cause, usage=TokenUsage()
        )
    return [*out, finish]


def _check_ui_stream(chunks: list[dict[str, Any]]) -> None:
    assert chunks[0]["type"] == "start"
    assert chunks[-1]["type"] in ("finish", "abort")
    open_parts: dict[str, str] = {}
    tools: dict[str, str] = {}
    in_step = False
    for chunk in chunks[1:-1]:
        kind = chunk["type"]
        channel, _, phase = kind.rpartition("-")
        if channel in ("text", "reasoning"):
            pid = chunk["id"]
            if phase == "start":
                assert pid not in open_parts
                open_parts[pid] = channel
            else:
                assert open_parts.get(pid) == channel, f"{kind} outside its part"
                if phase == "end":
                    del open_parts[pid]
        elif kind == "start-step":
            assert not in_step
            in_step = True
        elif kind == "finish-step":
            assert in_step and not open_parts
            in_step = False
        elif kind == "tool-input-start":
            assert chunk["dynamic"] is True
            tools[chunk["toolCallId"]] = "started"
        elif kind == "tool-input-available":
            assert tools.get(chunk["toolCallId"]) == "started"
            tools[chunk["toolCallId"]] = "input"
        elif kind.startswith("tool-output") or kind == "tool-approval-request":
            assert tools.get(chunk["toolCallId"]) == "input", f"{kind} for an unknown call"
        else:
            assert kind == "error", kind
    assert not open_parts and not in_step


@settings(max_examples=300, deadline=None)
@given(STEPS, ENDS)
def test_ai_sdk_stream_rules(steps: list[tuple[list[Any], bool]], end: str) -> None:
    coder = UIMessageStreamTranscoder("m1")
    chunks = coder.start()
    for event in _events(steps, end):
        chunks += coder.feed(event)
    chunks += coder.close(RuntimeError("boom") if end == "crash" else None)
    _check_ui_stream(chunks)
    kinds = [c["type"] for c in chunks]
    if end == "crash":
        assert kinds[-2:] == ["error", "finish"]
    if end == "waiting":
        assert "tool-approval-request" in kinds


def _check_agui(events: list[Any]) -> None:
    types = [e.type.value for e in events]
    assert types[0] == "RUN_STARTED"
    terminal = [t for t in types if t in ("RUN_FINISHED", "RUN_ERROR")]
    assert len(terminal) == 1 and types[-1] == terminal[0]
    text: str | None = None
    reasoning: str | None = None
    step: str | None = None
    tool: str | None = None
    for event, kind in zip(events, types, strict=True):
        if kind == "TEXT_MESSAGE_START":
            assert text is None
            text = event.message_id
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert text == event.message_id
        elif kind == "TEXT_MESSAGE_END":
            assert text == event.message_id
            text = None
        elif kind == "REASONING_START":
            assert reasoning is None
            reasoning = event.message_id
        elif kind.startswith("REASONING_MESSAGE"):
            assert reasoning == event.message_id
        elif kind == "REASONING_END":
            reasoning = None
        elif kind == "STEP_STARTED":
            assert step is None
            step = event.step_name
        elif kind == "STEP_FINISHED":
            assert step == event.step_name and text is None and reasoning is None
            step = None
        elif kind == "TOOL_CALL_START":
            assert tool is None
            tool = event.tool_call_id
        elif kind == "TOOL_CALL_ARGS":
            assert tool == event.tool_call_id
        elif kind == "TOOL_CALL_END":
            assert tool == event.tool_call_id
            tool = None
    assert text is None and reasoning is None and step is None and tool is None


@settings(max_examples=300, deadline=None)
@given(STEPS, ENDS)
def test_ag_ui_stream_rules(steps: list[tuple[list[Any], bool]], end: str) -> None:
    coder = AGUITranscoder("client-thread", "client-run", {})
    events = coder.start()
    for event in _events(steps, end):
        events += coder.feed(event)
    events += coder.close(RuntimeError("boom") if end == "crash" else None)
    _check_agui(events)
    last = events[-1]
    if end == "crash":
        assert last.type.value == "RUN_ERROR"
    else:
        assert (last.thread_id, last.run_id) == ("client-thread", "client-run")
        expected = {"waiting": "interrupt", "cancelled": "cancelled"}.get(end, "success")
        assert last.outcome.type == expected


def test_ag_ui_state_delta_patches_merged_objects_member_by_member() -> None:
    import jsonpatch  # type: ignore[import-untyped]

    from awaken_runtime import Command, MergePolicy

    coder = AGUITranscoder("t", "r", {"audit": {"a": 1}, "n": 1, "gone": True})
    client_state = {"audit": {"a": 1}, "n": 1, "gone": True}
    step = StepEnd(
        seq=2,
        run_id="r",
        step=1,
        usage=TokenUsage(),
        state_delta=[
            Command.set("audit", {"b/c": 2}, merge=MergePolicy.COMMUTATIVE),
            Command.set("n", 2),
            Command.set("new~key", [1]),
            Command.remove("gone"),
        ],
    )
    coder.feed(RunStart(seq=1, run_id="r", thread_id="t", agent_id="a"))
    (delta,) = coder.feed(step)
    patched = jsonpatch.apply_patch(
        client_state, [op.model_dump(by_alias=True) for op in delta.delta]
    )
    assert patched == {"audit": {"a": 1, "b/c": 2}, "n": 2, "new~key": [1]} == coder.state
