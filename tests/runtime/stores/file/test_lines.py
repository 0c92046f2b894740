"""The file store's framed thread lines: messages cut out by length, never misread.

A reader parses a framed line's head and takes each message's JSON text by
its byte length; whatever the messages hold (the framing's own markers,
non-ASCII text, escapes), the texts are exactly the messages, and a line the
framing does not fit (older lines, hand edits) is parsed whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_runtime import ContentPart, Message, ToolCall
from awaken_runtime.stores import FileStore, StoreCorrupt
from awaken_runtime.stores.file._lines import frame, parse_line
from awaken_store_conformance import binding

B = binding("t1")
HEAD = '{"c":"abc","v":3,"at":1.5,"b":[],"r":null,"p":null}'
MARKERS = ['],"ml":[', ',"m":[', '{"fv":1,', "]}", '"ids":[', "\\", '"', "\n", "é数🙂", "\x00"]


def _decoded(texts: list[bytes]) -> list[Message]:
    return [Message.model_validate_json(t) for t in texts]


@st.composite
def hostile_messages(draw: st.DrawFn) -> list[Message]:
    text = st.lists(st.sampled_from(MARKERS) | st.text(max_size=8), max_size=6).map("".join)
    out: list[Message] = []
    for i in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["user", "call", "parts", "tool"]))
        if kind == "user":
            out.append(Message.user(draw(text)))
        elif kind == "call":
            arguments = {draw(text): [draw(text)], "ml": [1, 2], "m": {"x": draw(text)}}
            call = ToolCall(id=f"c{i}{draw(text)}", name="f", arguments=arguments)
            out.append(Message.assistant(draw(text) or None, [call]))
        elif kind == "parts":
            out.append(Message(role="user", content=[ContentPart(type="text", text=draw(text))]))
        else:
            out.append(Message.tool(f"c{i}", draw(text), name=draw(text) or None))
    return out


@settings(max_examples=200, deadline=None)
@given(messages=hostile_messages())
def test_property_a_framed_line_gives_back_exactly_its_messages(messages: list[Message]) -> None:
    line = frame(HEAD, messages)
    assert b"\n" not in line  # one line, whatever the text held
    parsed = parse_line(line)
    assert _decoded(parsed["mj"]) == messages
    assert parsed["ids"] == [m.id for m in messages]
    assert parsed["calls"] == [c.id for m in messages for c in m.tool_calls or ()]
    assert {k: parsed[k] for k in ("c", "v", "at", "b", "r", "p")} == json.loads(HEAD)
    whole = json.loads(line)  # plain JSON too: a reader that parses it whole gets the same
    assert [Message.model_validate(m) for m in whole["m"]] == messages


def test_an_unframed_line_with_the_markers_inside_is_parsed_whole() -> None:
    call = ToolCall(id="c1", name="f", arguments={"a": [1], "ml": [7]})  # '],"ml":[' inside
    old = {"c": "x", "v": 1, "at": 1.0, "m": [Message.assistant(None, [call]).model_dump()]}
    line = (json.dumps(old, separators=(",", ":"))[:-1] + ',"b":[],"r":null,"p":null}').encode()
    assert b'],"ml":[' in line
    parsed = parse_line(line)
    assert "mj" not in parsed and parsed["m"][0]["tool_calls"][0]["arguments"]["ml"] == [7]


@pytest.mark.parametrize(
    "damage",
    [
        lambda line: line.replace(b'"ml":[', b'"ml":[1'),  # lengths that do not add up
        lambda line: line.replace(b'"ml":[', b'"ml":["x",'),  # lengths that are not numbers
        lambda line: line.replace(b'"ids":[', b'"ids":["extra",'),  # ids and texts disagree
        lambda line: line.replace(b'"calls":[', b'"calls":7,"no":['),  # calls not a list
    ],
)
def test_a_framing_that_does_not_fit_falls_back_to_parsing_the_line(damage: Any) -> None:
    messages = [Message.user("one"), Message.assistant("two")]
    line = damage(frame(HEAD, messages))
    try:
        parsed = parse_line(line)
    except ValueError:
        return  # not JSON either: the store names the line (StoreCorrupt)
    assert "mj" not in parsed
    assert [Message.model_validate(m) for m in parsed["m"]] == messages


async def test_a_damaged_message_in_a_framed_line_fails_where_it_is_read(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    for i in range(3):
        await store.commit(B, i, [Message.user(f"m{i}")], [])
    path = tmp_path / "threads" / "t1.jsonl"
    lines = path.read_bytes().split(b"\n")
    assert lines[1].startswith(b'{"fv":1,')
    lines[1] = lines[1].replace(b'"role":"user"', b'"role":"usxr"')  # same length
    path.write_bytes(b"\n".join(lines))
    snap = await FileStore(tmp_path).load(B)
    assert snap.messages[2].text == "m2"
    with pytest.raises(StoreCorrupt) as info:
        list(snap.messages)
    assert "thread 't1' message row 2" in str(info.value) and str(path) in str(info.value)


async def test_a_file_of_older_lines_and_framed_ones_loads_whole(tmp_path: Path) -> None:
    path = tmp_path / "threads" / "t1.jsonl"
    path.parent.mkdir(parents=True)
    first = [Message.user("from an older version"), Message.assistant("an old answer")]
    old = {
        "c": "c1",
        "v": 1,
        "at": 1.0,
        "m": [m.model_dump(mode="json") for m in first],
        "b": [],
        "r": None,
        "p": None,
    }
    path.write_text(json.dumps(old) + "\n")
    store = FileStore(tmp_path)
    later = [Message.user("new"), Message.assistant("newer")]
    assert await store.commit(B, 1, later, []) == 2
    assert path.read_bytes().split(b"\n")[1].startswith(b'{"fv":1,')
    snap = await FileStore(tmp_path).load(B)
    assert snap.messages.undecoded == 4  # type: ignore[attr-defined]
    assert snap.messages == first + later and snap.version == 2
