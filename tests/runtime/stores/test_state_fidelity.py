"""Property test: every backend's persisted state equals ``apply_command`` replay.

Random sequences of DISJOINT / COMMUTATIVE sets and removes (object, scalar
and nested values, unicode keys) are committed one batch per commit to each
backend; the loaded state - thread, profile and shared scope - must equal
the in-memory replay, key order of object values included.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awaken_runtime import Command, MergePolicy, Scope, replay
from awaken_runtime.stores import FileStore, InMemoryStore, SQLiteStore
from awaken_store_conformance import batch, binding

keys = st.sampled_from(["a", "b", "ключ", "🚀"])
fields = st.text(min_size=0, max_size=4)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5))
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(
        fields, st.one_of(scalars, st.dictionaries(fields, scalars, max_size=2)), max_size=4
    ),
)
commands = st.builds(
    lambda key, scope, merge, value, remove: (
        Command.remove(key, scope=scope, merge=merge)
        if remove
        else Command.set(key, value, scope=scope, merge=merge)
    ),
    keys,
    st.sampled_from([Scope.THREAD, Scope.PROFILE, Scope.SHARED]),
    st.sampled_from([MergePolicy.DISJOINT, MergePolicy.COMMUTATIVE]),
    values,
    st.sampled_from([False, False, False, True]),
)


def _canon(state: dict[Any, Any]) -> str:
    return json.dumps(
        sorted(state.items(), key=lambda kv: (kv[0][0], kv[0][1])), ensure_ascii=False
    )


async def _check(store: Any, cmds: list[Command]) -> None:
    b = binding("prop")
    version = 0
    for i, cmd in enumerate(cmds, 1):
        version = await store.commit(b, version, [], [batch(cmd, revision=i)])
    snap = await store.load(b)
    assert _canon(snap.state) == _canon(replay([batch(c) for c in cmds]).to_dict())
    await store.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(commands, min_size=1, max_size=12))
def test_persisted_state_equals_replay(cmds: list[Command]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for store in (InMemoryStore(), SQLiteStore(Path(tmp) / "a.db"), FileStore(Path(tmp) / "f")):
            asyncio.run(_check(store, cmds))
