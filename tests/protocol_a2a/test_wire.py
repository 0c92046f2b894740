"""Awaken's own metadata on the A2A wire: camelCase keys, whole numbers, JSON only.

The raw JSON-RPC responses of the real child server are read as JSON (what a
client without awaken's reader sees); the key mapping itself is checked as a
property over generated events and tickets whose free data (tool arguments,
payloads) has hostile keys of either case.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import httpx
from a2a_rig import CHILD_KEY, Served
from google.protobuf.json_format import MessageToDict
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_protocol_a2a._camel import from_wire, to_wire
from awaken_protocol_a2a._wire import struct
from awaken_runtime import (
    AgentEvent,
    AwaitReason,
    Phase,
    ResumeTicket,
    RunFinish,
    TokenUsage,
    ToolCall,
    ToolCallReady,
    event_adapter,
)

HEADERS = {"Authorization": f"Bearer {CHILD_KEY}", "A2A-Version": "1.0"}
SNAKE = re.compile(r"^[a-z]+(_[a-z]+)+$")


def _send(method: str, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": method,
        "params": {
            "message": {
                "role": "ROLE_USER",
                "messageId": uuid.uuid4().hex,
                "parts": [{"text": text}],
            }
        },
    }


def _keys(value: Any, out: set[str]) -> set[str]:
    if isinstance(value, dict):
        out.update(value)
        for item in value.values():
            _keys(item, out)
    elif isinstance(value, list):
        for item in value:
            _keys(item, out)
    return out


def test_a_task_carries_camel_case_metadata_with_integers(child: Served) -> None:
    response = httpx.post(
        f"{child.url}/a2a/child", json=_send("SendMessage", "weather please"), headers=HEADERS
    )
    task = response.json()["result"]["task"]
    assert not {k for k in _keys(task, set()) if SNAKE.match(k)}, task
    usage = task["metadata"]["awaken.usage"]["usage"]
    assert isinstance(usage["promptTokens"], int) and usage["promptTokens"] > 0
    event = task["metadata"]["awaken.event"]
    assert event["type"] == "run_finish" and isinstance(event["seq"], int)
    assert event["runId"] == task["id"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", task["status"]["timestamp"])


def test_every_streamed_event_writes_whole_numbers_as_integers(child: Served) -> None:
    seqs: list[Any] = []
    with httpx.stream(
        "POST",
        f"{child.url}/a2a/child/",
        json=_send("SendStreamingMessage", "weather please"),
        headers=HEADERS,
        timeout=30,
    ) as response:
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            result = json.loads(line.removeprefix("data:"))["result"]
            assert not {k for k in _keys(result, set()) if SNAKE.match(k)}, result
            update = result.get("statusUpdate") or {}
            if "awaken.event" in update.get("metadata", {}):
                seqs.append(update["metadata"]["awaken.event"]["seq"])
            artifact = result.get("artifactUpdate", {}).get("artifact", {})
            if "awaken.seq" in artifact.get("metadata", {}):
                seqs.append(artifact["metadata"]["awaken.seq"])
    assert len(seqs) > 5
    assert all(type(seq) is int for seq in seqs), seqs  # not a bool, not a float


def test_a_body_that_is_not_json_is_refused_naming_its_type(child: Served) -> None:
    body = str(_send("SendMessage", "hello")).encode()  # a Python repr, as the TCK sends
    response = httpx.post(
        f"{child.url}/a2a/child",
        content=body,
        headers={**HEADERS, "Content-Type": "text/plain"},
    )
    error = response.json()["error"]
    assert error["code"] == -32005  # ContentTypeNotSupportedError
    assert "Content-Type 'text/plain' is not supported" in error["message"]
    assert "application/json" in error["message"]
    # The JSON types are accepted, with parameters.
    ok = httpx.post(
        f"{child.url}/a2a/child",
        json=_send("SendMessage", "hello"),
        headers={**HEADERS, "Content-Type": "application/json; charset=utf-8"},
    )
    assert ok.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- the key mapping, as a property -------------------------------------------------------------

_key = st.one_of(
    st.from_regex(r"[a-z]{1,6}(_[a-z]{1,6}){0,2}", fullmatch=True),  # snake_case
    st.from_regex(r"[a-z]{1,6}([A-Z][a-z]{1,5}){0,2}", fullmatch=True),  # camelCase
    st.text(max_size=8),
)
_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**50), 2**50), st.text(max_size=10))
_free = st.recursive(
    _leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_key, inner, max_size=3)),
    max_leaves=12,
)
_objects = st.dictionaries(_key, _free, max_size=4)


@st.composite
def _models(draw: st.DrawFn) -> Any:
    arguments = draw(_objects)
    ticket = ResumeTicket(
        ticket_id=draw(st.text(min_size=1, max_size=8)),
        run_id="r",
        thread_id="t",
        snapshot_id="s",
        fingerprint="f",
        await_reason=draw(st.sampled_from(list(AwaitReason))),
        call=ToolCall(id="c", name="tool_name", arguments=arguments),
        payload=draw(_objects),
    )
    usage = TokenUsage(
        prompt_tokens=draw(st.integers(0, 2**40)), completion_tokens=draw(st.integers(0, 9))
    )
    return draw(
        st.sampled_from(
            [
                ticket,
                ToolCallReady(seq=3, run_id="r", call_id="c", name="n", arguments=arguments),
                RunFinish(
                    seq=9,
                    run_id="r",
                    phase=Phase.WAITING,
                    ticket=ticket,
                    tickets=[ticket],
                    usage=usage,
                    output=draw(_free),
                ),
            ]
        )
    )


@settings(max_examples=150, deadline=None)
@given(_models())
def test_awaken_models_cross_the_wire_and_come_back_equal(model: Any) -> None:
    wire = to_wire(model)
    # Through a protobuf Struct (every number a double) and JSON, as a peer receives it.
    received = json.loads(json.dumps(MessageToDict(struct({"m": wire}))))["m"]
    if isinstance(model, ResumeTicket):
        back: Any = ResumeTicket.model_validate(from_wire(ResumeTicket, received))
        assert back.call.arguments == model.call.arguments  # the caller's keys, unchanged
    else:
        back = event_adapter.validate_python(from_wire(AgentEvent, received))
    assert back == model
    own = {to for to in _keys(wire, set()) if SNAKE.match(to)}
    free = _keys(model.model_dump(mode="json").get("arguments", {}), set())
    free |= _keys(getattr(model, "payload", {}), set()) | _keys(getattr(model, "output", {}), set())
    if isinstance(model, RunFinish) and model.ticket is not None:
        free |= _keys(model.ticket.call.arguments, set()) | _keys(model.ticket.payload, set())
    if isinstance(model, ResumeTicket):
        free |= _keys(model.call.arguments, set())
    assert own <= free  # every snake_case key on the wire is the caller's own data
