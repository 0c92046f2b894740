"""A message loaded from any store equals the message committed, whatever its shape.

Text, multi-part content (extra payload fields kept), tool calls whose
arguments hold every JSON type, tool results, names and metadata; loaded by
a new store object on the same files (a new process) and by the committing
store after each commit (its incremental path), which must agree; with the
snapshot's tool-call ids those of the loaded messages.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awaken_runtime import ContentPart, Message, ToolCall
from awaken_runtime.stores import FileStore, InMemoryStore, SQLiteStore
from awaken_store_conformance import binding

B = binding("t1")

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
objects = st.dictionaries(st.text(max_size=6), values, max_size=4)
texts = st.text(max_size=40)
parts = st.lists(
    st.builds(lambda t: ContentPart(type="text", text=t), texts)
    | st.builds(
        lambda url, detail: ContentPart(type="image_url", image_url={"url": url, "detail": detail}),
        st.text(min_size=1, max_size=20),
        st.sampled_from(["auto", "low", "high"]),
    ),
    min_size=1,
    max_size=3,
)
contents = texts | parts
names = st.none() | st.text(min_size=1, max_size=8)


@st.composite
def turns(draw: Any, index: int) -> list[Message]:
    """One turn: a plain message, or an assistant's calls followed by their results."""
    kind = draw(st.sampled_from(["user", "system", "assistant", "calls"]))
    meta = draw(objects)
    if kind == "calls":
        calls = [
            ToolCall(
                id=f"call-{index}-{i}",
                name=draw(st.text(min_size=1, max_size=8)),
                arguments=draw(objects),
                parse_error=draw(st.none() | texts),
                raw_arguments=draw(st.none() | texts),
            )
            for i in range(draw(st.integers(1, 3)))
        ]
        out = [Message.assistant(draw(st.none() | texts), calls, metadata=meta)]
        for call in calls:
            out.append(Message.tool(call.id, draw(texts), name=draw(names)))
        return out
    if kind == "assistant":
        return [Message.assistant(draw(st.none() | contents), metadata=meta, name=draw(names))]
    return [Message(role=kind, content=draw(contents), metadata=meta, name=draw(names))]


@st.composite
def threads(draw: Any) -> list[list[Message]]:
    """Commits of a thread (each a list of turns' messages)."""
    commits = []
    index = 0
    for _ in range(draw(st.integers(1, 4))):
        commit: list[Message] = []
        for _ in range(draw(st.integers(1, 3))):
            commit += draw(turns(index))
            index += 1
        commits.append(commit)
    return commits


def _call_ids(messages: list[Message]) -> frozenset[str]:
    return frozenset(c.id for m in messages for c in m.tool_calls or ())


async def _check(commits: list[list[Message]], root: Path) -> None:
    expected: list[Message] = []
    opened = {
        "sqlite": lambda: SQLiteStore(root / "a.db"),
        "file": lambda: FileStore(root / "files"),
    }
    stores = {kind: make() for kind, make in opened.items()}
    stores["memory"] = InMemoryStore()
    for version, commit in enumerate(commits):
        expected += commit
        for kind, store in stores.items():
            await store.commit(B, version, commit, [])
            snap = await store.load(B)
            loaded = snap.messages
            assert loaded == expected, kind
            assert [m.model_dump() for m in loaded] == [m.model_dump() for m in expected]
            assert snap.call_ids == _call_ids(expected), kind
    for kind, make in opened.items():
        fresh = make()
        snap = await fresh.load(B)
        loaded = snap.messages
        assert loaded == expected, kind
        assert snap.call_ids == _call_ids(expected), kind
        assert [m.model_dump_json() for m in loaded] == [m.model_dump_json() for m in expected]
        page = await fresh.read_messages("t1", 0, 1000)
        assert page.items == expected, kind
        await fresh.close()
    for store in stores.values():
        await store.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=threads())
def test_every_message_shape_loads_as_committed(commits: list[list[Message]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_check(commits, Path(tmp)))
