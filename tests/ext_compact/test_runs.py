"""The plugin in real runs: trigger, cut, incremental summary, reuse, failures, bound."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import pytest

from awaken_ext_compact import (
    BUILTIN_PROMPT,
    DROPPED_KEY,
    REQUEST_WINDOW,
    STATS,
    SUMMARY,
    SUMMARY_KEY,
    CompactPlugin,
    compact_bound,
    core_supports_replacements,
    core_supports_request_window,
)
from awaken_runtime import (
    CONTEXT_MESSAGES,
    Band,
    CapabilityBound,
    Command,
    Contributions,
    HookReaction,
    InferenceRequest,
    InMemoryStore,
    Message,
    PhaseContext,
    PhaseHookPoint,
    RunState,
    Scope,
    ScriptedTurn,
    StateKeyDecl,
    discover,
)

needs_window = pytest.mark.skipif(
    not core_supports_request_window(),
    reason="the core does not honour awaken.request_window yet",
)

QUESTION = "Please look into topic {i}. " + "Here are many details about it. " * 12
ANSWER = "Answer about the topic with plenty of words. " * 10


def full_request(r: Any, request: InferenceRequest) -> list[Message]:
    """The request's messages minus injected context entries."""
    return [m for m in request.messages if "context_key" not in m.metadata]


def context_keys(request: InferenceRequest) -> list[str]:
    return [m.metadata["context_key"] for m in request.messages if "context_key" in m.metadata]


def stats_of(state: RunState) -> dict[str, Any]:
    return dict(state.state.get((Scope.RUN, STATS.key)) or {})


async def run_turns(r: Any, start: int, count: int) -> None:
    for i in range(start, start + count):
        state = await r.run(QUESTION.format(i=i))
        assert state.end_cause is not None and state.end_cause.kind == "natural_end", state


async def test_trigger_by_tokens(rig: Callable[..., Any], ref_count: Callable[..., int]) -> None:
    r = rig([ANSWER])
    usable = 4000 - 500
    for i in range(40):
        await r.run(QUESTION.format(i=i))
        if r.compactor.calls:
            break
    else:
        pytest.fail("never compacted")
    # Every request before the compacting step was under the trigger ...
    before = r.main.requests[:-1]
    assert before and all(ref_count(list(q.messages)) < 0.8 * usable for q in before)
    # ... and the compacting step's uncompacted request reached it.
    messages = await r.messages()
    system = r.main.requests[-1].messages[0]
    assert ref_count([system, *messages[:-1]]) >= 0.8 * usable
    assert r.compactor.calls == 1
    assert stats_of(r.states[-1])["compactions"] == 1


async def test_trigger_by_message_count(rig: Callable[..., Any]) -> None:
    r = rig(["ok"], context_window=None, config={"trigger_messages": 10, "min_gain_tokens": 0})
    for i in range(5):
        await r.run(f"q{i}")
    assert r.compactor.calls == 0  # the 5th request carried 9 messages
    await r.run("q5")  # 11 messages > 10
    assert r.compactor.calls == 1


async def test_min_gain_skips_compaction(rig: Callable[..., Any]) -> None:
    r = rig([ANSWER], config={"min_gain_tokens": 10**6})
    await run_turns(r, 0, 24)
    assert r.compactor.calls == 0
    assert stats_of(r.states[-1])["skipped_min_gain"] >= 1
    assert SUMMARY.key not in {k for _s, k in await r.thread_state()}


@needs_window
async def test_request_is_summary_bridge_and_tail(rig: Callable[..., Any]) -> None:
    r = rig([ANSWER], compactor_turns=["SUMMARY-ONE"])
    for i in range(40):
        await r.run(QUESTION.format(i=i))
        if r.compactor.calls:
            break
    await run_turns(r, 50, 2)
    assert r.compactor.calls == 1
    request = r.main.requests[-1]
    messages = await r.messages()
    summary = (await r.thread_state())[(Scope.THREAD, SUMMARY.key)]
    boundary = next(i for i, m in enumerate(messages) if m.id == summary["covered_through"])
    carried = full_request(r, request)
    assert carried[0].role == "system" and carried[0].text == "You are a helpful test agent."
    # Right after the system prompt: the summary in the session band ...
    assert request.messages[1].metadata == {"context_key": SUMMARY_KEY, "band": "session"}
    assert "SUMMARY-ONE" in request.messages[1].text
    # ... then everything after the boundary (bridge + tail), up to the newest user turn.
    # (the stored thread also holds the answer to this last request)
    assert [m.id for m in carried[1:]] == [m.id for m in messages[boundary + 1 : -1]]
    assert carried[-1].role == "user"


async def test_incremental_compaction_covers_only_the_new_span(rig: Callable[..., Any]) -> None:
    counter = iter(range(1, 100))
    r = rig([ANSWER], compactor_turns=[lambda _req: f"SUMMARY-{next(counter)}"])
    for i in range(60):
        await r.run(QUESTION.format(i=i))
        if r.compactor.calls >= 2:
            break
    assert r.compactor.calls == 2
    first, second = (q.messages[-1].text for q in r.compactor.requests)
    assert "<previous_summary>\n(none)\n</previous_summary>" in first
    assert "<previous_summary>\nSUMMARY-1\n</previous_summary>" in second
    covered_first = {i for i in range(60) if f"topic {i}." in first}
    covered_second = {i for i in range(60) if f"topic {i}." in second}
    assert covered_first and covered_second
    assert not covered_first & covered_second
    assert min(covered_second) == max(covered_first) + 1
    summary = (await r.thread_state())[(Scope.THREAD, SUMMARY.key)]
    assert summary["text"] == "SUMMARY-2" and summary["compactions"] == 2


async def test_summary_is_reused_by_later_runs_and_processes(rig: Callable[..., Any]) -> None:
    store = InMemoryStore()
    r = rig([ANSWER], store=store)
    for i in range(40):
        await r.run(QUESTION.format(i=i))
        if r.compactor.calls:
            break
    calls = r.compactor.calls
    assert calls == 1
    await r.run("short follow-up")
    assert r.compactor.calls == calls
    assert SUMMARY_KEY in context_keys(r.main.requests[-1])
    # A new runtime (fresh plugin, fresh caches) on the same store: no new compactor call.
    other = rig(["fine"], store=store)
    await other.run("and another one")
    assert other.compactor.calls == 0
    request = other.main.requests[-1]
    assert SUMMARY_KEY in context_keys(request)
    assert any("SUMMARY" in m.text for m in request.messages if m.role == "system")


async def test_transcript_is_byte_identical(rig: Callable[..., Any]) -> None:
    r = rig([ANSWER], compactor_turns=["THE-SUMMARY"])
    await run_turns(r, 0, 5)
    before = [m.model_dump_json() for m in await r.messages()]
    for i in range(5, 40):
        await r.run(QUESTION.format(i=i))
        if r.compactor.calls:
            break
    assert r.compactor.calls == 1
    after = [m.model_dump_json() for m in await r.messages()]
    assert after[: len(before)] == before
    assert not any("THE-SUMMARY" in m for m in after)
    assert all(m.role != "system" for m in await r.messages())


async def test_builtin_summarizer_uses_the_agents_model_without_tools(
    rig: Callable[..., Any], lookup_tool: Any
) -> None:
    def answer(request: InferenceRequest) -> str:
        if request.messages[0].text.startswith(BUILTIN_PROMPT[:40]):
            return "BUILTIN-SUMMARY"
        return ANSWER

    r = rig([answer], compactor_agent=None, tools=[lookup_tool], max_output_tokens=None)
    for i in range(40):
        await r.run(QUESTION.format(i=i))
        if SUMMARY.key in {k for _s, k in await r.thread_state()}:
            break
    summary_requests = [
        q for q in r.main.requests if q.messages[0].text.startswith(BUILTIN_PROMPT[:40])
    ]
    assert len(summary_requests) == 1
    assert list(summary_requests[0].tools) == []
    assert summary_requests[0].params.max_output_tokens == 2000
    assert "<previous_summary>" in summary_requests[0].messages[1].text
    assert (await r.thread_state())[(Scope.THREAD, SUMMARY.key)]["text"] == "BUILTIN-SUMMARY"
    assert r.compactor.calls == 0


async def test_builtin_summarizer_asks_no_more_than_the_model_can_write(
    rig: Callable[..., Any],
) -> None:
    def answer(request: InferenceRequest) -> str:
        if request.messages[0].text.startswith(BUILTIN_PROMPT[:40]):
            return "BUILTIN-SUMMARY"
        return ANSWER

    r = rig([answer], compactor_agent=None, max_output_tokens=300)
    for i in range(40):
        await r.run(QUESTION.format(i=i))
        if SUMMARY.key in {k for _s, k in await r.thread_state()}:
            break
    summary_requests = [
        q for q in r.main.requests if q.messages[0].text.startswith(BUILTIN_PROMPT[:40])
    ]
    assert summary_requests, "the run never compacted"
    assert summary_requests[0].params.max_output_tokens == 300  # not summary_max_tokens=2000
    assert "at most 300 tokens" in summary_requests[0].messages[0].text


# -- failures -----------------------------------------------------------------


def _boom(_request: InferenceRequest) -> str:
    raise RuntimeError("compactor exploded")


async def test_compactor_error_keeps_the_run_going(
    rig: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    r = rig([ANSWER], compactor_turns=[_boom])
    with caplog.at_level(logging.WARNING, logger="awaken_ext_compact"):
        for i in range(40):
            state = await r.run(QUESTION.format(i=i))
            assert state.end_cause is not None and state.end_cause.kind == "natural_end"
            if stats_of(state).get("failures"):
                break
    stats = stats_of(r.states[-1])
    assert stats["failures"] == 1 and "compactor" in stats["last_failure"]
    assert "compactor failed" in caplog.text
    assert SUMMARY.key not in {k for _s, k in await r.thread_state()}
    assert SUMMARY_KEY not in context_keys(r.main.requests[-1])


async def test_empty_summary_is_a_failure(rig: Callable[..., Any]) -> None:
    r = rig([ANSWER], compactor_turns=["   "])
    for i in range(40):
        state = await r.run(QUESTION.format(i=i))
        if stats_of(state).get("failures"):
            break
    assert "empty summary" in stats_of(r.states[-1])["last_failure"]


def _looping(request: InferenceRequest) -> Any:
    """Answer, except in a LOOP turn: call lookup until 6 results came back."""
    messages = list(request.messages)
    user = max(i for i, m in enumerate(messages) if m.role == "user")
    results = sum(1 for m in messages[user:] if m.role == "tool")
    if "LOOP" in messages[user].text and results < 6:
        return ScriptedTurn.call("lookup", {"query": f"q{results}"})
    return ANSWER


async def test_failures_per_run_are_bounded(rig: Callable[..., Any], lookup_tool: Any) -> None:
    # A long run of tool steps: the compactor is tried at most max_failures_per_run times.
    r = rig(
        [_looping],
        compactor_turns=[_boom],
        config={"max_failures_per_run": 2, "failure_backoff_seconds": 0},
        tools=[lookup_tool],
    )
    await run_turns(r, 0, 20)
    calls = r.compactor.calls
    state = await r.run("LOOP over lookups")
    assert state.steps == 7
    assert stats_of(state)["failures"] == 2
    assert r.compactor.calls - calls == 2


@needs_window
async def test_failure_over_the_window_drops_the_oldest_prefix(
    rig: Callable[..., Any], ref_count: Callable[..., int]
) -> None:
    r = rig([ANSWER], compactor_turns=[_boom], context_window=2500, max_output_tokens=200)
    for i in range(30):
        state = await r.run(QUESTION.format(i=i))
        assert state.end_cause is not None and state.end_cause.kind == "natural_end"
    stats = stats_of(r.states[-1])
    assert stats["emergency_drops"] >= 1
    request = r.main.requests[-1]
    assert DROPPED_KEY in context_keys(request)
    marker = next(m for m in request.messages if m.metadata.get("context_key") == DROPPED_KEY)
    assert "left out of this request" in marker.text
    for q in r.main.requests:
        assert ref_count(list(q.messages)) <= 2500 - 200
    assert full_request(r, request)[-1].role == "user"


async def test_oversized_tool_results_are_cut_for_the_request(
    rig: Callable[..., Any], lookup_tool: Any
) -> None:
    r = rig(
        [ScriptedTurn.call("lookup", {"query": "x"}), "done"],
        config={"max_tool_result_tokens": 16},
        tools=[lookup_tool],
    )
    state = await r.run("look it up")
    windows = [
        c.action.value  # type: ignore[union-attr]
        for batch in state.log
        for producer, c in batch.entries
        if producer == "compact" and c.key == REQUEST_WINDOW and hasattr(c.action, "value")
    ]
    assert windows, "no request window written"
    (text,) = windows[-1]["replace_content"].values()
    assert re.search(r"\n\[compact: tool result cut to 16 of \d+ tokens\]$", text)
    assert stats_of(state)["truncated_tool_results"] == 1
    tool_msgs = [m for m in r.main.requests[-1].messages if m.role == "tool"]
    if core_supports_replacements():
        assert tool_msgs[0].text == text
    else:  # pending core support: the request still carries the full result
        assert tool_msgs[0].text.startswith("result for x")


# -- the capability bound -----------------------------------------------------


def test_bound_is_exactly_what_the_plugin_uses() -> None:
    bound = CompactPlugin.manifest.bound
    keys = {
        StateKeyDecl(key="compact.summary", scope=Scope.THREAD),
        StateKeyDecl(key="compact.backoff", scope=Scope.THREAD),
        StateKeyDecl(key="compact.counts", scope=Scope.THREAD),
        StateKeyDecl(key="compact.stats", scope=Scope.RUN),
    }
    extra: dict[str, Any] = {"narrows_window": True}
    if not core_supports_request_window():
        keys.add(StateKeyDecl(key=REQUEST_WINDOW, scope=Scope.RUN))
        extra = {}
    expected = CapabilityBound(
        state_keys=frozenset(keys),
        phase_hooks=frozenset({PhaseHookPoint.BEFORE_INFERENCE}),
        context_bands=frozenset({Band.SESSION}),
        **extra,
    )
    assert bound == expected == compact_bound()
    contributions = CompactPlugin().resolve(None)
    assert list(contributions.phase_hooks) == [PhaseHookPoint.BEFORE_INFERENCE]
    assert len(contributions.hooks_at(PhaseHookPoint.BEFORE_INFERENCE)) == 1
    assert not contributions.tools and not contributions.tool_gates
    assert not contributions.run_end_guards and not contributions.dynamic_tools


async def test_every_write_stays_inside_the_bound(rig: Callable[..., Any]) -> None:
    r = rig([ANSWER])
    for i in range(40):
        await r.run(QUESTION.format(i=i))
        if r.compactor.calls:
            break
    bound = CompactPlugin.manifest.bound
    written = {
        (c.scope, c.key)
        for state in r.states
        for batch in state.log
        for producer, c in batch.entries
        if producer == "compact"
    }
    assert (Scope.THREAD, SUMMARY.key) in written and (Scope.RUN, CONTEXT_MESSAGES) in written
    for scope, key in written:
        assert (
            bound.allows_key(scope, key)
            or (scope, key) == (Scope.RUN, CONTEXT_MESSAGES)
            or (scope, key) == (Scope.RUN, REQUEST_WINDOW)
        )


class _Sneaky:
    """The compact plugin with a hook that also writes an undeclared key."""

    def __init__(self) -> None:
        self.inner = CompactPlugin()
        self.manifest = self.inner.manifest

    def resolve(self, config: Any) -> Contributions:
        real = self.inner.resolve(config)
        (hook,) = real.hooks_at(PhaseHookPoint.BEFORE_INFERENCE)

        async def sneaky(ctx: PhaseContext) -> HookReaction:
            reaction = await hook(ctx) or HookReaction()
            extra = Command.set("compact.secret", 1, scope=Scope.THREAD)
            return HookReaction(commands=[*reaction.commands, extra])

        return Contributions(
            state_keys=real.state_keys,
            phase_hooks={PhaseHookPoint.BEFORE_INFERENCE: sneaky},
        )


async def test_undeclared_write_fails_closed(rig: Callable[..., Any]) -> None:
    r = rig([ANSWER], plugin=_Sneaky())
    state = await r.run("hello")
    assert state.end_cause is not None and state.end_cause.kind == "error"
    failure = state.end_cause.failure
    assert failure.kind == "capability_bound" and failure.plugin_id == "compact"
    assert "compact.secret" in failure.message
    keys = {k for _s, k in await r.thread_state()}
    assert "compact.secret" not in keys
    assert r.main.calls == 0  # nothing of that batch committed, no inference happened


def test_plugin_is_discovered_through_its_entry_point() -> None:
    found = discover(refresh=True)
    assert "compact" in found.plugins, found.failures
    assert found.plugins["compact"].distribution == "awaken-ext-compact"
    assert isinstance(found.plugins["compact"].value, CompactPlugin)


_OTHER_PROCESS = """
import asyncio, sys
from awaken_ext_compact import CompactPlugin, SUMMARY_KEY
from awaken_runtime import AgentConfig, AgentRuntimeBuilder, ModelSpec, ScriptedExecutor
from awaken_runtime.stores import open_store

def boom(_request):
    raise RuntimeError("the compactor must not run again")

async def main():
    store = open_store(sys.argv[1])
    main = ScriptedExecutor(["fine"])
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_store(store)
        .with_model(ModelSpec(id="main-model", provider="main", model="gpt-4o",
                              context_window=4000, max_output_tokens=500))
        .with_model(ModelSpec(id="compactor-model", provider="compactor", model="s"))
        .with_provider("main", main)
        .with_provider("compactor", ScriptedExecutor([boom]))
        .with_plugin(CompactPlugin())
        .with_agent_spec(AgentConfig(id="main", model_binding="main-model",
            instructions="You are a helpful test agent.", plugin_ids=["compact"],
            plugin_config={"compact": {"compactor_agent": "summarizer",
                                       "keep_recent_messages": 4, "min_gain_tokens": 50}}))
        .with_agent_spec(AgentConfig(id="summarizer", model_binding="compactor-model"))
        .build()
    )
    state = await runtime.run("main", "one more question", thread_id="thread-1")
    assert state.end_cause.kind == "natural_end", state.end_cause
    keys = [m.metadata.get("context_key") for m in main.requests[0].messages]
    assert SUMMARY_KEY in keys, keys
    text = next(m.text for m in main.requests[0].messages if m.metadata.get("context_key"))
    print(text.splitlines()[-1])
    await store.close()

asyncio.run(main())
"""


async def test_summary_is_reused_by_another_process(rig: Callable[..., Any], tmp_path: Any) -> None:
    import subprocess
    import sys

    from awaken_runtime.stores import open_store

    url = f"sqlite:///{tmp_path / 'awaken.db'}"
    store = open_store(url)
    r = rig([ANSWER], compactor_turns=["CROSS-PROCESS-SUMMARY"], store=store)
    for i in range(40):
        await r.run(QUESTION.format(i=i))
        if r.compactor.calls:
            break
    assert r.compactor.calls == 1
    await store.close()  # type: ignore[attr-defined]
    done = subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "CROSS-PROCESS-SUMMARY"
