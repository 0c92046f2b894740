"""Thread load at 10,000 messages: CPU microseconds per message, SQLite and file stores.

A thread of 10,000 messages (user questions, assistant tool calls, tool
results and answers, as a run leaves them) is committed 100 messages at a
time, then loaded three ways, interleaved across the two stores:

* ``first load``: a new store object on the existing files (what a new
  process pays on its first run on the thread);
* ``next run``: the same store object after one more commit of two messages
  (a run starting on a thread this process has served before);
* ``again``: the same store object, nothing new;
* ``first load + read all``: a new store object, then every message read
  (``list(snapshot.messages)``): messages are decoded when first read, so this
  is what a run that sends the whole thread pays at its first request. No
  target: shown so the decoding a first load leaves out is not hidden.

CPU time is ``time.process_time`` (every thread of the process, so a store
that loads on its own thread is counted whole), the median of the rounds.
Target: at most 1.5 us per message.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _section import emit, parse

from awaken_runtime import Message, ToolCall
from awaken_runtime.stores import FileStore, ScopeBinding, SQLiteStore

SIZE = 10_000
TARGET_US = 1.5
BINDING = ScopeBinding("t", "default", "default")


def _history(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n // 4):
        call = ToolCall(id=f"call-{i}", name="lookup", arguments={"q": f"order {i}", "page": 1})
        out += [
            Message.user(f"Where is my order {i}? It was due on Tuesday and has not arrived."),
            Message.assistant(None, [call]),
            Message.tool(call.id, f'{{"order": {i}, "status": "shipped", "eta": "Friday"}}'),
            Message.assistant(f"Order {i} has shipped and should arrive on Friday."),
        ]
    return out


def _open(kind: str, root: Path) -> Any:
    return SQLiteStore(root / "a.db") if kind == "sqlite" else FileStore(root / "files")


async def _cpu(load: Any, read_all: bool = False) -> tuple[float, int]:
    start = time.process_time()
    snap = await load(BINDING)
    if read_all:
        list(snap.messages)
    return time.process_time() - start, len(snap.messages)


async def _measure(rounds: int) -> dict[tuple[str, str], list[float]]:
    samples: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        roots = {kind: Path(tmp, kind) for kind in ("sqlite", "file")}
        history = _history(SIZE)
        versions: dict[str, int] = {}
        for kind, root in roots.items():
            store = _open(kind, root)
            version = 0
            for i in range(0, SIZE, 100):
                version = await store.commit(BINDING, version, history[i : i + 100], [])
            versions[kind] = version
            await store.close()
        for r in range(rounds + 1):  # round 0 warms up and is not recorded
            for kind, root in roots.items():
                store = _open(kind, root)
                first, n = await _cpu(store.load)
                v = versions[kind]
                new = [Message.user(f"next question {r}"), Message.assistant(f"answer {r}")]
                versions[kind] = await store.commit(BINDING, v, new, [])
                nxt, _ = await _cpu(store.load)
                again, _ = await _cpu(store.load)
                await store.close()
                store = _open(kind, root)
                whole, _ = await _cpu(store.load, read_all=True)
                await store.close()
                if r == 0:
                    continue
                for case, cpu in (
                    ("first load", first),
                    ("next run", nxt),
                    ("again", again),
                    ("first load + read all", whole),
                ):
                    samples.setdefault((kind, case), []).append(cpu / n * 1e6)
    return samples


def main() -> None:
    args = parse(__doc__)
    samples = asyncio.run(_measure(3 if args.quick else 7))
    rows, checks = [], []
    for (kind, case), us in samples.items():
        med = statistics.median(us)
        rows.append([kind, case, SIZE, med * SIZE / 1e3, med])
        if case != "first load + read all":
            checks.append((f"{kind} {case}: {med:.2f} us/message <= {TARGET_US}", med <= TARGET_US))
    emit(
        args,
        title=f"thread load at {SIZE:,} messages (CPU, median of rounds)",
        columns=["store", "load", "messages", "ms", "us/message"],
        rows=rows,
        checks=checks,
        notes=[
            "first load: a new store object (a new process); next run: after one more "
            "commit, same object; again: nothing new",
            "first load + read all: every message decoded too (what a run sending the whole "
            "thread pays at its first request; a windowed or compacted run decodes its window)",
        ],
    )


if __name__ == "__main__":
    main()
