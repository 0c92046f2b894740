"""The pure parts of awaken-protocol-acp: run events as session updates, a run's end as a
stop reason, prompt blocks as text, permission answers as decisions."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextResourceContents,
)
from acp_rig import allow, cancelled

from awaken_protocol_acp import OPTIONS, decision_for, stop_reason, updates_for
from awaken_protocol_acp._prompt import prompt_text
from awaken_runtime import (
    Approve,
    Cancelled,
    Deny,
    MaxSteps,
    NaturalEnd,
    Phase,
    RunState,
    Stopped,
    TextDelta,
    ToolCallDone,
    ToolCallReady,
)


def _wire(event: Any) -> list[dict[str, Any]]:
    return [u.model_dump(mode="json", by_alias=True, exclude_none=True) for u in updates_for(event)]


def test_text_and_reasoning_deltas_are_message_and_thought_chunks() -> None:
    text = TextDelta(seq=1, run_id="r", delta="Hi")
    thought = TextDelta(seq=2, run_id="r", delta="hmm", channel="reasoning")
    assert _wire(text) == [
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}}
    ]
    assert _wire(thought)[0]["sessionUpdate"] == "agent_thought_chunk"
    assert _wire(TextDelta(seq=3, run_id="r", delta="")) == []


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        ("success", "completed"),
        ("short_circuit", "completed"),
        ("error", "failed"),
        ("blocked", "failed"),
    ],
)
def test_a_finished_call_is_a_tool_call_update(outcome: Any, status: str) -> None:
    done = ToolCallDone(seq=1, run_id="r", call_id="c1", output="out", outcome=outcome)
    [update] = _wire(done)
    assert update["sessionUpdate"] == "tool_call_update"
    assert update["toolCallId"] == "c1" and update["status"] == status
    assert update["content"][0]["content"]["text"] == "out"


def test_a_call_is_announced_pending_and_a_parked_one_stays_pending() -> None:
    ready = ToolCallReady(seq=1, run_id="r", call_id="c1", name="grep", arguments={"q": "x" * 200})
    [call] = _wire(ready)
    assert call["sessionUpdate"] == "tool_call" and call["status"] == "pending"
    assert call["title"].startswith("grep(q='xxx") and len(call["title"]) < 100
    assert call["rawInput"] == {"q": "x" * 200}
    parked = ToolCallDone(seq=2, run_id="r", call_id="c1", output="", outcome="suspended")
    assert _wire(parked) == []


def _state(cause: Any, finish_reason: str | None = None) -> RunState:
    return RunState(
        run_id="r",
        thread_id="t",
        agent_id="a",
        phase=Phase.ENDED,
        end_cause=cause,
        finish_reason=finish_reason,
    )


def test_stop_reasons() -> None:
    assert stop_reason(_state(NaturalEnd())) == "end_turn"
    assert stop_reason(_state(Cancelled())) == "cancelled"
    assert stop_reason(_state(MaxSteps(max_steps=3))) == "max_turn_requests"
    assert stop_reason(_state(Stopped(reason="truncated"), "length")) == "max_tokens"
    assert stop_reason(_state(Stopped(reason="a plugin stopped it"))) == "end_turn"


def test_prompt_blocks_become_the_models_text() -> None:
    blocks = [
        text_block("Look at"),
        ResourceContentBlock(type="resource_link", name="a.py", uri="file:///w/a.py"),
        EmbeddedResourceContentBlock(
            type="resource", resource=TextResourceContents(uri="file:///w/b.py", text="x = 1")
        ),
        ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
    ]
    assert prompt_text(blocks) == (
        "Look at\n[a.py](file:///w/a.py)\n<resource uri='file:///w/b.py'>\nx = 1\n</resource>\n"
        "(image content not included)"
    )


def test_permission_answers_become_decisions() -> None:
    assert [o.option_id for o in OPTIONS] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert decision_for(allow("allow_once")) == Approve(by="acp")
    assert decision_for(allow("allow_always")) == Approve(remember="thread", by="acp")
    rejected = decision_for(allow("reject_always"))
    assert isinstance(rejected, Deny) and rejected.remember == "thread"
    assert decision_for(cancelled()) is None
    # An option this agent never offered never runs the tool.
    assert isinstance(decision_for(allow("yolo")), Deny)


def test_a_bad_agent_file_exits_2_with_the_reason_on_stderr(tmp_path: Path) -> None:
    from acp_rig import agent_env, awaken

    bad = tmp_path / "bad.toml"
    bad.write_text('[agent]\nid = "x"\nmodel_binding = "nowhere"\n')
    done = subprocess.run(
        [*awaken(), "acp", "--agent", str(bad), "--store", "memory://"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=agent_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"awaken acp:" in done.stderr and b"nowhere" in done.stderr
