"""Long agentic runs: compaction inside one tool-using turn, the default tool-result
cap, and a dead compactor backing off across runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from awaken_ext_compact import (
    BACKOFF,
    PINNED_KEY,
    STATS,
    CompactPlugin,
    core_supports_request_window,
)
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    InferenceRequest,
    InMemoryStore,
    Message,
    ModelSpec,
    RunState,
    Runtime,
    Scope,
    ScriptedExecutor,
    ScriptedTurn,
    tool,
)

pytestmark = pytest.mark.skipif(
    not core_supports_request_window(),
    reason="the core does not honour awaken.request_window yet",
)

REQUEST = "Audit every file in the repository and report the total of all counters."


@tool
def read_chunk(n: int) -> str:
    """Read chunk ``n`` of the repository.

    Args:
        n: Chunk number.
    """
    return f"chunk {n}: counter={n % 7}; " + "lorem ipsum dolor sit amet " * 12


LOG = "\n".join(f"line {i}: event happened with id {i * 7919} and detail" for i in range(1900))


@tool
def dump_log() -> str:
    """Return the whole log."""
    return LOG


class Clock:
    """A settable wall clock for the back-off."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def runtime(
    main: ScriptedExecutor,
    compactor: ScriptedExecutor,
    *,
    window: int,
    max_out: int,
    tools: Sequence[Any],
    config: dict[str, Any] | None = None,
    max_steps: int = 32,
    plugin: CompactPlugin | None = None,
    store: InMemoryStore | None = None,
) -> Runtime:
    """Agent ``main`` (compact on, summarizing through agent ``summarizer``)."""
    builder = (
        AgentRuntimeBuilder(discover=False)
        .with_store(store or InMemoryStore())
        .with_model(
            ModelSpec(
                id="m",
                provider="main",
                model="gpt-4o",
                context_window=window,
                max_output_tokens=max_out,
            )
        )
        .with_model(ModelSpec(id="c", provider="comp", model="summarizer"))
        .with_provider("main", main)
        .with_provider("comp", compactor)
        .with_plugin(plugin or CompactPlugin())
    )
    for t in tools:
        builder.with_tool(t)
    compact = {"compactor_agent": "summarizer", "keep_recent_messages": 6}
    compact.update(config or {})
    builder.with_agent_spec(
        AgentConfig(
            id="main",
            model_binding="m",
            instructions="You are an auditing agent. Use the tools.",
            tool_ids=[t.descriptor.id for t in tools],
            plugin_ids=["compact"],
            plugin_config={"compact": compact},
            max_steps=max_steps,
        )
    )
    builder.with_agent_spec(AgentConfig(id="summarizer", model_binding="c"))
    return builder.build()


def user_copies(request: InferenceRequest, text: str) -> list[Message]:
    """The messages of ``request`` carrying the user's message (in place or pinned)."""
    return [m for m in request.messages if m.role == "user" and m.text.startswith(text)]


def stats_of(state: RunState) -> dict[str, Any]:
    return dict(state.state.get((Scope.RUN, STATS.key)) or {})


# -- one long single-turn run -------------------------------------------------------

STEPS = 2000
WINDOW = 6000
MAX_OUT = 500


async def test_2000_step_single_turn_run_compacts_and_keeps_the_request(
    ref_count: Callable[..., int],
) -> None:
    def agent(request: InferenceRequest) -> ScriptedTurn:
        done = sum(1 for m in request.messages if m.role == "tool")
        last = request.messages[-1]
        if last.role == "tool" and last.text.startswith(f"chunk {STEPS - 1}:"):
            return ScriptedTurn(text="All counters add up.")
        n = int(last.text.split(":")[0].split()[1]) + 1 if last.role == "tool" else done
        return ScriptedTurn.call("read_chunk", {"n": n})

    def summary(request: InferenceRequest) -> str:
        chunks = request.messages[-1].text.count("chunk ")
        return f"Read {chunks} more chunks; the user wants the total of all counters."

    main = ScriptedExecutor([agent], repeat=True)
    compactor = ScriptedExecutor([summary], repeat=True)
    rt = runtime(
        main,
        compactor,
        window=WINDOW,
        max_out=MAX_OUT,
        tools=[read_chunk],
        max_steps=STEPS + 5,
    )
    state = await rt.run("main", REQUEST, thread_id="audit")
    assert state.end_cause is not None and state.end_cause.kind == "natural_end", state.end_cause
    assert len(main.requests) == STEPS + 1
    stats = stats_of(state)
    assert compactor.calls >= 20 and stats["compactions"] >= 20
    assert stats.get("failures", 0) == 0
    peak = 0
    for step, request in enumerate(main.requests):
        copies = user_copies(request, REQUEST)
        assert len(copies) == 1, f"step {step}: {len(copies)} copies of the user's message"
        tokens = ref_count(list(request.messages), list(request.tools))
        peak = max(peak, tokens)
        assert tokens <= WINDOW - MAX_OUT, f"step {step}: {tokens} tokens"
    assert peak > 0.5 * (WINDOW - MAX_OUT)  # the window was really used
    pinned = [
        r
        for r in main.requests
        if any(m.metadata.get("context_key") == PINNED_KEY for m in r.messages)
    ]
    assert len(pinned) > STEPS // 2  # most requests carried the pin, not the original


async def test_a_turn_that_fits_stays_raw(ref_count: Callable[..., int]) -> None:
    # Short turns: the cut stays at the user boundary, so nothing is pinned.
    main = ScriptedExecutor(["Counted. " + "detail " * 150], repeat=True)
    compactor = ScriptedExecutor(["SUMMARY"], repeat=True)
    rt = runtime(main, compactor, window=WINDOW, max_out=MAX_OUT, tools=[])
    for i in range(40):
        await rt.run("main", f"question {i}: " + "words " * 100, thread_id="t")
    assert compactor.calls >= 1
    for request in main.requests:
        assert not any(m.metadata.get("context_key") == PINNED_KEY for m in request.messages)


# -- the default tool-result cap ----------------------------------------------------


async def test_20000_token_tool_result_never_exceeds_the_window(
    ref_count: Callable[..., int], reference_encoding: Callable[[str], Any]
) -> None:
    enc = reference_encoding("o200k_base")
    main = ScriptedExecutor(
        [ScriptedTurn.call("dump_log", {}), ScriptedTurn.call("dump_log", {}), "Done."]
    )
    compactor = ScriptedExecutor(["SUMMARY"], repeat=True)
    store = InMemoryStore()
    rt = runtime(main, compactor, window=8000, max_out=1000, tools=[dump_log], store=store)
    state = await rt.run("main", "Read the log twice and tell me what happened.", thread_id="t")
    assert state.end_cause is not None and state.end_cause.kind == "natural_end"
    results = [m for m in store.messages("t") if m.role == "tool"]
    assert len(results) == 2
    assert results[0].text == results[1].text == LOG  # the transcript keeps it whole
    assert len(enc.encode_ordinary(LOG)) >= 20_000
    for request in main.requests:
        assert ref_count(list(request.messages), list(request.tools)) <= 7000
    cut = [m for m in main.requests[-1].messages if m.role == "tool"]
    assert cut and all("[compact: tool result cut to 1750 of " in m.text for m in cut)
    assert stats_of(state)["truncated_tool_results"] == 2


async def test_the_default_cap_can_be_turned_off() -> None:
    main = ScriptedExecutor([ScriptedTurn.call("dump_log", {}), "Done."])
    compactor = ScriptedExecutor(["SUMMARY"], repeat=True)
    rt = runtime(
        main,
        compactor,
        window=200_000,
        max_out=1000,
        tools=[dump_log],
        config={"max_tool_result_ratio": None},
    )
    await rt.run("main", "Read the log.", thread_id="t")
    (result,) = [m for m in main.requests[-1].messages if m.role == "tool"]
    assert "[compact:" not in result.text


# -- a dead compactor ---------------------------------------------------------------


def _dead(_request: InferenceRequest) -> str:
    raise RuntimeError("compactor is down")


QUESTION = "Tell me about topic {i}. " + "Background detail for the question. " * 25
ANSWER = "A long answer with many words about the topic. " * 20


def chat_runtime(
    compactor: ScriptedExecutor,
    *,
    store: InMemoryStore | None = None,
    plugin: CompactPlugin | None = None,
) -> Runtime:
    """A chat agent (no tools) on a 4,000-token window summarizing through ``compactor``."""
    return runtime(
        ScriptedExecutor([ANSWER], repeat=True),
        compactor,
        window=4000,
        max_out=500,
        tools=[],
        store=store,
        plugin=plugin,
        config={"min_gain_tokens": 50, "keep_recent_messages": 4},
    )


async def test_dead_compactor_is_called_a_bounded_number_of_times_across_60_runs() -> None:
    clock = Clock()
    store = InMemoryStore()
    compactor = ScriptedExecutor([_dead], repeat=True)
    rt = chat_runtime(compactor, store=store, plugin=CompactPlugin(clock=clock))
    for i in range(60):
        state = await rt.run("main", QUESTION.format(i=i), thread_id="t")
        assert state.end_cause is not None and state.end_cause.kind == "natural_end"
        clock.now += 30  # a run every 30 seconds: 30 minutes in all
    # Waits of 60, 120, 240, 480, 960 s after each failure: at most 6 attempts in 30 minutes.
    assert 1 <= compactor.calls <= 6
    backoff = state.state[(Scope.THREAD, BACKOFF.key)]
    assert backoff["failures"] == compactor.calls
    assert "compactor is down" in backoff["last_failure"]
    assert backoff["next_attempt_at"] > clock.now

    # Another process (a new plugin object, the same store) honours the persisted back-off.
    calls = compactor.calls
    rt2 = chat_runtime(compactor, store=store, plugin=CompactPlugin(clock=clock))
    for i in range(10):
        await rt2.run("main", QUESTION.format(i=i), thread_id="t")
    assert compactor.calls == calls

    # Once the wait is over and the compactor works again, the back-off is cleared.
    clock.now = backoff["next_attempt_at"] + 1
    good = ScriptedExecutor(["SUMMARY"], repeat=True)
    rt3 = chat_runtime(good, store=store, plugin=CompactPlugin(clock=clock))
    state = await rt3.run("main", QUESTION.format(i=99), thread_id="t")
    assert good.calls >= 1
    assert state.state.get((Scope.THREAD, BACKOFF.key)) is None


async def test_dead_compactor_backs_off_across_threads_in_one_process() -> None:
    compactor = ScriptedExecutor([_dead], repeat=True)
    rt = chat_runtime(compactor)
    for t in range(6):
        for i in range(10):
            await rt.run("main", QUESTION.format(i=i), thread_id=f"thread-{t}")
    assert compactor.calls == 1  # the real clock: the first wait (60 s) never ends here
