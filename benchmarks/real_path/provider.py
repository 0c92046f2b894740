"""Provider path: the LiteLLM executor against the local test server, on the SQLite store.

One run of S steps (S = 10 and 100) on a thread that already holds H = 0,
1,000 or 10,000 messages. The model is the project's local OpenAI-compatible
test server (``tests/runtime/models/litellm/openai_server.py``), started in
another process, which answers every request with one tool call (a fresh
call id each time), so each step streams a call, runs the tool and commits
the step to SQLite; the run ends at ``max_steps``.

What is measured, in this process only (the server's CPU is not):

* ``awaken us/step``: awaken's own CPU between the first and the last
  inference of the run divided by S - 1 (run start and thread load are
  reported apart, in ``run start ms``): the main thread's CPU outside the
  provider client's windows, the CPU of awaken's own threads (the SQLite
  store's I/O thread) and of awaken's work in the loop's default executor
  (the sync tool's ``asyncio.to_thread``);
* ``client us/step``: the CPU spent inside the provider client on those
  steps: ``litellm.acompletion`` (litellm's request handling, the OpenAI
  client, the JSON body, the HTTP request) and each streamed chunk's
  ``__anext__``, and the CPU of litellm's own threads (its logging pool),
  of its background tasks on the event loop and of what it runs in the
  loop's default executor (work still running at a sample counted so far);
  freeing what litellm keeps of a request (its stream, its logging record
  with its copies of the messages) is the client's too: the meter holds
  them until the next request starts, so the free falls in the client's
  window, not in awaken's; with it ``body KB`` (the request's messages as
  JSON) and ``body json us``
  (``json.dumps`` of them, timed apart: the floor of the body's serialization);
* ``other us/step``: the rest of the process's CPU, neither's by these
  windows: the default executor's threads around litellm's jobs (queueing,
  waking the loop, freeing what a job leaves) and the threads' GIL hand-offs.
  Before, awaken's figure was the process's CPU minus the client's and held
  this too; at 10,000 messages it is most of what grew (litellm's executor
  jobs walk the 10,000 messages several times per request).

``gc us/step`` is the cyclic collector's share of awaken's figure, ``store us/step``
the share of awaken's threads (the SQLite store's I/O thread, which runs each
commit's transaction).
``settled us/step`` runs the same cell with the client's background work
awaited at the stream's end, inside the client's window. Read to its end, a
litellm stream finishes with success handlers on a task of their own, which
copy the request's messages (10,000 of them) and so run beside awaken's
next window; the executor's default (``success_logging="auto"``) closes a
stream no litellm callback listens to before they are scheduled, as here, so
what settling still waits for is litellm's smaller end-of-stream task (its
response cache step).
``quiet us/step`` settles too, then sleeps 30 ms inside the client's window,
so the server process (freeing its parsed 2 MB body once it has answered)
and the client's threads have time to finish what the request left them
before awaken's window opens: the real client's full request, with nothing
meant to run beside awaken.
``replayed us/step`` runs the same cell with ``litellm.acompletion``
replaced by a replay of one recorded stream: awaken's step with no client
work at all; ``swept us/step`` replays too, but each replayed call first
copies a buffer several times the last-level cache, so awaken's next window
starts as cold as after a real request. Side by side they split what grows
with history in awaken's figure: the client's work beside it (real minus
settled; settled minus quiet is what the other process and threads still
do beside it), what the client's passage leaves behind (settled minus replayed:
awaken's windows take no more page faults or context switches at 10,000
messages than at 0, but a large request evicts their working set, which a
small one leaves partly cached) and awaken's own, warm (replayed) and cold
(swept).

Each cell starts with the cyclic collector run and SQLite's write-ahead log
checkpointed (the seeded history's pages are copied back before the run, not by
its commits). Cells run interleaved (each real cell followed by its settled and quiet runs
and its two replays), 7 rounds of S=10 and 3 of S=100; the median round is reported. At
S=10 one of the nine measured intervals holds the run's first step (what a
run does once, on its first step, is spread over fewer steps). Checks: at
10,000 messages awaken's CPU per step is within 1.5x of 0 messages, with
the real client (the issue's figure), settled, quiet, replayed and swept
(the controls: diagnostics of where growth comes from).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from _client_meter import REAL, ClientMeter, Mode, install_task_meter, record
from _section import cpu_seconds, emit, parse

ROOT = Path(__file__).resolve().parents[2]
SERVER_DIR = ROOT / "tests" / "runtime" / "models" / "litellm"
HISTORY = (0, 1_000, 10_000)
STEPS = (10, 100)


class Control(NamedTuple):
    """A cell run again right after each real one, with the client treated otherwise."""

    column: str
    """The short name its two columns (``us/step``, ``vs 0``) and its note start with."""
    check: str
    """What its check calls it."""
    mode: Mode
    note: str


CONTROLS = (
    Control(
        "settled",
        "with the client's logging settled",
        Mode(settle=True),
        "awaken's CPU per step in the same cell with the client's background tasks awaited "
        "inside the client's window at the stream's end, so they do not run beside awaken's "
        "next window (with no litellm callback configured the executor closes the stream "
        "before litellm schedules its success handlers: what is left is its cache task)",
    ),
    Control(
        "quiet",
        "settled, then quiet",
        Mode(settle=True, quiet=0.03),
        "settled, then 30 ms asleep inside the client's window before awaken's next one, so "
        "the server process and the client's threads have time to finish too: nothing meant "
        "to run beside awaken's window (its absolute figure is higher at every history: "
        "after the pause awaken's window starts cold)",
    ),
    Control(
        "replayed",
        "with the client replayed",
        Mode(replay=True),
        "awaken's CPU per step in the same cell with litellm.acompletion replaced by a replay "
        "of one recorded stream of the server (no client work, no server; the replayed call "
        "id repeats, so the runtime renames it every step)",
    ),
    Control(
        "swept",
        "with the client replayed, caches swept",
        Mode(replay=True, evict=True),
        "replayed, with the caches swept (a 48 MB buffer copied into another) inside each "
        "replayed call: awaken's next window starts cold, as after a real request",
    ),
)

# The test server, answering every request with a tool call under a fresh id and
# keeping no record of the requests (10,000-message bodies would pile up).
SERVER = """
import itertools, sys, threading
sys.path.insert(0, sys.argv[1])
from openai_server import OpenAIServer, Reply, ToolCallSpec, UsageSpec

class Server(OpenAIServer):
    counter = itertools.count(1)

    def _record(self, recorded):
        pass

    def _next_reply(self):
        n = next(self.counter)
        call = ToolCallSpec(id=f"call_{n}", name="echo", arguments='{"text": "step %d"}' % n)
        return Reply(tool_calls=[call], usage=UsageSpec(20, 8), chunk_size=64)

server = Server().start()
print(f"serving {server.base_url}", flush=True)
threading.Event().wait()
"""


def _start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(SERVER_DIR)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    base = proc.stdout.readline().rsplit(" ", 1)[-1].strip()
    if not base.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"test server did not start: {base!r}")
    return proc, base


def _history(n: int) -> list[Any]:
    """``n`` messages: user turns, tool exchanges and answers of realistic length."""
    from awaken_runtime import Message, ToolCall

    text = "the model reads the thread and answers the user about the plan " * 3
    out: list[Any] = []
    i = 0
    while len(out) < n:
        kind = i % 4
        if kind == 0:
            out.append(Message.user(f"question {i}: {text}"))
        elif kind == 1:
            call = ToolCall(id=f"hist_{i}", name="echo", arguments={"text": f"look up {i}"})
            out.append(Message.assistant(None, [call]))
            out.append(Message.tool(call.id, f"result {i}: {text}", name="echo"))
        else:
            out.append(Message.assistant(f"answer {i}: {text}"))
        i += 1
    while n and out[n - 1].tool_calls:  # never end on a call without its result
        n += 1
    return out[:n]


async def _seed(store: Any, thread_id: str, n: int) -> None:
    from awaken_runtime.stores import ScopeBinding

    binding = ScopeBinding(thread_id, "default", "default")
    messages = _history(n) if n else []
    version = 0
    for lo in range(0, len(messages), 1000):
        version = await store.commit(binding, version, messages[lo : lo + 1000], [])


def _runtime(store: Any, base: str, steps: int) -> Any:
    from awaken_runtime import AgentConfig, AgentRuntimeBuilder, LiteLLMExecutor, ModelSpec, tool

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    executor = LiteLLMExecutor()
    spec = ModelSpec(id="m", provider="litellm", model="openai/local-model", api_base=base)
    config = AgentConfig(id="a", model_binding="m", tool_ids=["echo"], max_steps=steps)
    return (
        AgentRuntimeBuilder(discover=False)
        .with_tool(echo)
        .with_model(spec)
        .with_provider("litellm", executor)
        .with_agent_spec(config)
        .with_store(store)
        .build()
    )


async def _cell(store: Any, base: str, meter: ClientMeter, h: int, s: int, n: int) -> list[float]:
    """One run of ``s`` steps on a fresh thread of ``h`` messages."""
    thread_id = f"t{h}-{s}-{n}"
    await _seed(store, thread_id, h)
    runtime = _runtime(store, base, s)
    meter.starts.clear()
    meter.client_at_start.clear()
    meter.gc_at_start.clear()
    meter.awaken_at_start.clear()
    meter.store_at_start.clear()
    gc.collect()  # each cell starts from the same collector state
    # ... and with an empty write-ahead log: seeding 10,000 messages leaves about 960 of
    # SQLite's 1,000-page auto-checkpoint, so the run's third commit or so would copy the
    # seeding's pages into the database inside the measured window (about 6 ms of the
    # store thread, a step's share of it 700 us at S=10): the cost of writing the history,
    # which a thread that grew over earlier runs paid then. The run's own pages still
    # count, at every history alike.
    with contextlib.closing(sqlite3.connect(store.path, timeout=30.0)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    start = cpu_seconds()
    state = await runtime.run("a", "go", thread_id=thread_id)
    assert len(meter.starts) == s, (state.end_cause, len(meter.starts))
    steps = s - 1
    total = meter.starts[-1] - meter.starts[0]
    client = meter.client_at_start[-1] - meter.client_at_start[0]
    collector = meter.gc_at_start[-1] - meter.gc_at_start[0]
    own = meter.awaken_at_start[-1] - meter.awaken_at_start[0]
    store = meter.store_at_start[-1] - meter.store_at_start[0]
    body = json.dumps(meter.body)
    t0 = time.perf_counter()
    json.dumps(meter.body)
    dumps = time.perf_counter() - t0
    return [
        own / steps * 1e6,
        collector / steps * 1e6,
        store / steps * 1e6,
        client / steps * 1e6,
        (total - client - own) / steps * 1e6,
        len(body) / 1024,
        dumps * 1e6,
        (meter.starts[0] - start) * 1e3,
    ]


async def _main(quick: bool) -> tuple[list[list[Any]], list[tuple[str, bool]]]:
    from awaken_runtime import LiteLLMExecutor
    from awaken_runtime.models.litellm._executor import import_litellm
    from awaken_runtime.stores import SQLiteStore

    await LiteLLMExecutor().warm_up()
    litellm = import_litellm()
    short = 1 if quick else 3
    rounds = 1 if quick else 7
    steps = (10,) if quick else STEPS
    proc, base = _start_server()
    meter = ClientMeter()
    meter.chunks = await record(litellm, base)
    meter.install(litellm)
    install_task_meter(meter)
    samples: dict[tuple[int, int], list[list[float]]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = SQLiteStore(Path(tmp) / "awaken.db")
            await _cell(store, base, meter, 0, 10, -1)  # warm: first connections, imports
            for r in range(rounds):
                for s in steps:
                    if s > 10 and r >= short:  # the long runs are steadier: fewer rounds
                        continue
                    for h in HISTORY:
                        cell = await _cell(store, base, meter, h, s, r)
                        for k, control in enumerate(CONTROLS, 1):
                            meter.mode = control.mode
                            again = await _cell(store, base, meter, h, s, r + k * rounds)
                            cell.append(again[0])
                        meter.mode = REAL
                        samples.setdefault((h, s), []).append(cell)
            await store.close()
    finally:
        proc.kill()
        proc.wait()
    rows = []
    # awaken's CPU per step (real client), then each control's: (history, S) -> µs
    labels = ["at 10,000 messages", *(f"{c.check} at 10,000" for c in CONTROLS)]
    figures: list[dict[tuple[int, int], float]] = [{} for _ in labels]
    for (h, s), cells in sorted(samples.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        median = [statistics.median(col) for col in zip(*cells, strict=True)]
        for figure, value in zip(figures, (median[0], *median[-len(CONTROLS) :]), strict=True):
            figure[h, s] = value
        rows.append([h, s, *median])
    checks = []
    for s in steps:
        for label, figure in zip(labels, figures, strict=True):
            ratio = figure[10_000, s] / figure[0, s]
            checks.append(
                (f"S={s}: awaken CPU/step {label} <= 1.5x at 0 ({ratio:.2f}x)", ratio <= 1.5)
            )
    for row in rows:
        row += [figure[row[0], row[1]] / figure[0, row[1]] for figure in figures]
    return rows, checks


def main() -> None:
    args = parse(__doc__)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    rows, checks = asyncio.run(_main(args.quick))
    emit(
        args,
        title="LiteLLM executor + local OpenAI-compatible server (other process) + SQLite",
        columns=[
            "history",
            "S",
            "awaken us/step",
            "gc us/step",
            "store us/step",
            "client us/step",
            "other us/step",
            "body KB",
            "body json us",
            "run start ms",
            *(f"{c.column} us/step" for c in CONTROLS),
            "awaken vs 0",
            *(f"{c.column} vs 0" for c in CONTROLS),
        ],
        rows=rows,
        checks=checks,
        notes=[
            "awaken = awaken's own CPU per step: the main thread outside the provider client's "
            "windows (litellm + openai + httpx, incl. the body's JSON), awaken's threads and its "
            "work in the default executor; median of the rounds",
            "other = the process's CPU that is neither's (the default executor around litellm's "
            "jobs, thread hand-offs)",
            "gc = the cyclic collector's CPU outside the client's windows (part of awaken)",
            "store = the CPU of awaken's threads (the SQLite store's I/O thread; part of awaken)",
            *(f"{c.column} = {c.note}" for c in CONTROLS),
        ],
    )


if __name__ == "__main__":
    main()
