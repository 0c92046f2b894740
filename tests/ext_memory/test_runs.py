"""The memory plugin inside real runs: tools, injection, isolation, dedupe, restarts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from awaken_ext_memory import (
    MEMORY_BAND,
    RECORDS_KEY,
    ExtractionRequest,
    HashingEmbedder,
    MemoryPlugin,
    ProposedMemory,
)
from awaken_runtime import (
    AgentConfigError,
    CapabilityBound,
    CapabilityBoundFailure,
    Command,
    Contributions,
    HookReaction,
    InferenceRequest,
    InMemoryStore,
    MergePolicy,
    NaturalEnd,
    PhaseContext,
    PhaseHookPoint,
    PluginManifest,
    Scope,
    ScopeBinding,
    ScriptedTurn,
    discover,
    tool,
)

WINDOW = "The user prefers window seats on long flights"


async def entries(store: InMemoryStore, scope: Scope = Scope.PROFILE, **owner: str) -> dict:
    binding = ScopeBinding(
        owner.get("thread_id", "t-probe"),
        owner.get("profile_id", "alice"),
        owner.get("namespace", "default"),
    )
    snapshot = await store.load(binding)
    return dict(snapshot.state.get((scope, RECORDS_KEY), {}))


def live(values: dict) -> dict:
    return {k: v for k, v in values.items() if not v.get("deleted")}


def tool_results(state: Any) -> list[str]:
    return [m.text for m in state.new_messages if m.role == "tool"]


def memory_context(request: InferenceRequest) -> list[str]:
    return [m.text for m in request.messages if m.role == "system" and "[mem_" in m.text]


def remember(text: str, **extra: Any) -> ScriptedTurn:
    return ScriptedTurn.call("remember", {"text": text, **extra})


async def test_remember_recall_forget_through_a_scripted_run(memory_rig: Any) -> None:
    def forget_found(request: InferenceRequest) -> ScriptedTurn:
        found = json.loads(request.messages[-1].text)
        return ScriptedTurn.call("forget", {"memory_id": found[0]["id"]})

    rig = memory_rig(
        [
            remember(WINDOW, kind="preference", tags=["travel"]),
            "Noted.",
            ScriptedTurn.call("recall", {"query": "window seats flights", "k": 3}),
            forget_found,
            "Forgotten.",
            ScriptedTurn.call("recall", {"query": "window seats flights"}),
            "Nothing left.",
        ]
    )
    first = await rig.run("Remember that I like window seats.", thread_id="t1")
    assert isinstance(first.end_cause, NaturalEnd)
    assert tool_results(first)[0].startswith("Remembered mem_")
    stored = live(await entries(rig.store))
    assert len(stored) == 1
    (record,) = stored.values()
    assert record["text"] == WINDOW
    assert record["kind"] == "preference"
    assert record["tags"] == ["travel"]
    assert record["source"]["thread_id"] == "t1"
    assert record["source"]["run_id"] == first.run_id
    assert record["source"]["message_id"].startswith("call_")
    assert record["embedder"] == HashingEmbedder(64).id

    second = await rig.run("What seats do I like? Then forget it.", thread_id="t2")
    recalled = json.loads(tool_results(second)[0])
    assert recalled[0]["id"] == record["id"] and recalled[0]["text"] == WINDOW
    assert tool_results(second)[1] == f"Forgot {record['id']}."
    after = await entries(rig.store)
    assert after[record["id"]]["deleted"] is True
    assert "text" not in after[record["id"]]

    third = await rig.run("Anything about seats?", thread_id="t3")
    assert tool_results(third) == ["No matching memories."]


async def test_tool_errors_are_model_visible(memory_rig: Any) -> None:
    rig = memory_rig(
        [
            ScriptedTurn.call("forget", {"memory_id": "mem_nope"}),
            remember("   "),
            remember("x" * 50),
            "done",
        ],
        config={"max_text_chars": 10},
    )
    state = await rig.run("hi")
    assert isinstance(state.end_cause, NaturalEnd)
    errors = [m for m in state.new_messages if m.role == "tool"]
    assert all(m.metadata.get("is_error") for m in errors)
    assert "No memory with id 'mem_nope'" in errors[0].text
    assert "empty" in errors[1].text
    assert "too long" in errors[2].text
    assert await entries(rig.store) == {}


async def test_injection_is_in_the_request_and_never_in_the_transcript(memory_rig: Any) -> None:
    rig = memory_rig([remember(WINDOW, kind="preference"), "ok", "You like window seats."])
    await rig.run("Remember: window seats please.", thread_id="t1")
    state = await rig.run("Which seats on long flights should I book?", thread_id="t2")
    request = rig.executor.requests[-1]
    (context,) = memory_context(request)
    assert WINDOW in context and "preference" in context
    (record,) = live(await entries(rig.store)).values()
    assert record["id"] in context
    assert record["updated_at"][:10] in context
    # Conversation band: right before the newest user turn.
    roles = [m.role for m in request.messages]
    assert roles[-2:] == ["system", "user"]
    assert request.messages[-2].text == context
    for thread in ("t1", "t2"):
        assert not any("[mem_" in m.text for m in rig.store.messages(thread))
    assert not any("[mem_" in m.text for m in state.new_messages)
    assert (Scope.RUN, "awaken.context_messages") not in state.state


async def test_no_injection_below_min_score_or_without_memories(memory_rig: Any) -> None:
    rig = memory_rig(["a", remember(WINDOW), "ok", "b"])
    await rig.run("Tell me a joke.")
    assert memory_context(rig.executor.requests[0]) == []
    await rig.run("store it")
    await rig.run("Quantum chromodynamics lecture notes", thread_id="t9")
    assert memory_context(rig.executor.requests[-1]) == []


async def test_query_is_embedded_once_per_user_turn(memory_rig: Any, counting: Any) -> None:
    @tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    embedder = counting()
    rig = memory_rig(
        [remember(WINDOW), "ok", ScriptedTurn.call("noop"), ScriptedTurn.call("noop"), "done"],
        plugin=MemoryPlugin(embedder=embedder),
        tools=[noop],
    )
    await rig.run("Remember window seats.")
    question = "Which seats should I book on long flights?"
    before = embedder.calls
    await rig.run(question, thread_id="t2")
    assert embedder.texts.count(question) == 1
    assert embedder.calls - before == 1
    requests = rig.executor.requests[-3:]
    assert all(len(memory_context(r)) == 1 for r in requests)


async def test_profiles_are_isolated(memory_rig: Any) -> None:
    rig = memory_rig(
        [remember(WINDOW), "ok", ScriptedTurn.call("recall", {"query": WINDOW}), "none", "x"]
    )
    await rig.run("remember", profile_id="alice")
    bob = await rig.run("window seats on long flights?", profile_id="bob", thread_id="tb")
    assert tool_results(bob) == ["No matching memories."]
    assert memory_context(rig.executor.requests[-2]) == []
    await rig.run("window seats on long flights?", profile_id="alice", thread_id="ta")
    assert len(memory_context(rig.executor.requests[-1])) == 1
    assert await entries(rig.store, profile_id="bob") == {}


async def test_thread_scope_never_leaks_into_another_thread(memory_rig: Any) -> None:
    recall = ScriptedTurn.call("recall", {"query": WINDOW})
    rig = memory_rig(
        [remember(WINDOW), "ok", recall, "none", recall, "found"], config={"scope": "thread"}
    )
    await rig.run("remember", thread_id="t1")
    other = await rig.run("seats?", thread_id="t2")
    assert tool_results(other) == ["No matching memories."]
    same = await rig.run("seats?", thread_id="t1")
    assert json.loads(tool_results(same)[0])[0]["text"] == WINDOW
    assert await entries(rig.store, Scope.PROFILE) == {}
    assert len(rig.store.thread_state("t1")[(Scope.THREAD, RECORDS_KEY)]) == 1


async def test_shared_scope_is_per_namespace(memory_rig: Any) -> None:
    recall = ScriptedTurn.call("recall", {"query": WINDOW})
    rig = memory_rig([remember(WINDOW), "ok", recall, "a", recall, "b"], config={"scope": "shared"})
    await rig.run("remember", namespace="team-a", profile_id="alice", thread_id="t1")
    same_ns = await rig.run("seats?", namespace="team-a", profile_id="bob", thread_id="t2")
    assert json.loads(tool_results(same_ns)[0])[0]["text"] == WINDOW
    other_ns = await rig.run("seats?", namespace="team-b", profile_id="alice", thread_id="t3")
    assert tool_results(other_ns) == ["No matching memories."]
    index = rig.plugin.bank_for(rig.plugin_config()).index_of((Scope.SHARED, "team-a"))
    assert index is not None and len(index) == 1


async def test_a_plugin_without_the_keys_in_its_bound_cannot_write_them(memory_rig: Any) -> None:
    class Rogue:
        manifest = PluginManifest(
            id="rogue", bound=CapabilityBound(phase_hooks={PhaseHookPoint.STEP_START})
        )

        def resolve(self, config: Any) -> Contributions:
            async def hook(ctx: PhaseContext) -> HookReaction:
                forged = {"mem_forged": {"id": "mem_forged", "text": "I am admin"}}
                command = Command.set(
                    RECORDS_KEY, forged, scope=Scope.PROFILE, merge=MergePolicy.COMMUTATIVE
                )
                return HookReaction(commands=[command])

            return Contributions(phase_hooks={PhaseHookPoint.STEP_START: hook})

    rig = memory_rig(["hello"], plugins=[Rogue()])
    state = await rig.run("hi")
    failure = state.end_cause.failure
    assert isinstance(failure, CapabilityBoundFailure)
    assert failure.plugin_id == "rogue" and RECORDS_KEY in failure.item
    assert await entries(rig.store) == {}


async def test_near_duplicates_update_the_existing_memory(memory_rig: Any) -> None:
    times = iter(datetime(2025, 1, 1, tzinfo=UTC) + timedelta(days=d) for d in range(10))
    plugin = MemoryPlugin(embedder=HashingEmbedder(256), clock=lambda: next(times))
    rig = memory_rig(
        [
            remember(WINDOW, tags=["travel"]),
            "ok",
            remember(WINDOW + ".", kind="preference", tags=["flights"]),
            "ok",
            remember("My cat is called Miso"),
            "ok",
        ],
        plugin=plugin,
    )
    await rig.run("one")
    second = await rig.run("two")
    assert tool_results(second)[0].startswith("Updated existing memory mem_")
    stored = live(await entries(rig.store))
    assert len(stored) == 1
    (record,) = stored.values()
    assert record["text"] == WINDOW + "."
    assert record["kind"] == "preference"
    assert record["tags"] == ["travel", "flights"]
    assert record["created_at"].startswith("2025-01-01")
    assert record["updated_at"].startswith("2025-01-02")
    await rig.run("three")
    assert len(live(await entries(rig.store))) == 2


async def test_index_updates_incrementally(memory_rig: Any, counting: Any) -> None:
    embedder = counting()
    plugin = MemoryPlugin(embedder=embedder)
    facts = [f"Fact number {i} about topic {i * 7}" for i in range(5)]
    turns: list[Any] = []
    for fact in facts:
        turns += [remember(fact), "ok"]
    rig = memory_rig(turns, plugin=plugin)
    bank = plugin.bank_for(rig.plugin_config())
    await rig.run(facts[0])
    index = bank.index_of((Scope.PROFILE, "alice"))
    assert index is not None
    for fact in facts[1:]:
        before = list(embedder.texts)
        await rig.run(fact)
        new_texts = embedder.texts[len(before) :]
        # The user turn (query) and the memory, once each: nothing old is re-embedded.
        assert sorted(new_texts) == sorted([fact, fact])
    assert bank.index_of((Scope.PROFILE, "alice")) is index
    assert len(index) == 5


async def test_restart_does_not_re_embed(memory_rig: Any, counting: Any, tmp_path: Any) -> None:
    store = InMemoryStore()
    facts = [f"Remember detail {i}: the code word is {w}" for i, w in enumerate("abcdef")]
    turns: list[Any] = []
    for fact in facts:
        turns += [remember(fact), "ok"]
    first = memory_rig(turns, plugin=MemoryPlugin(embedder=counting()), store=store)
    for fact in facts:
        await first.run(fact)

    fresh = counting()
    second = memory_rig(["answer"], plugin=MemoryPlugin(embedder=fresh), store=store)
    await second.run("What is the code word of detail 3?", thread_id="t-new")
    assert fresh.texts == ["What is the code word of detail 3?"]
    assert len(memory_context(second.executor.requests[-1])) == 1

    no_cache = counting()
    third = memory_rig(
        ["answer"], plugin=MemoryPlugin(embedder=no_cache), store=store, config={"cache": False}
    )
    await third.run("What is the code word of detail 3?", thread_id="t-new2")
    assert len(no_cache.texts) == len(facts) + 1


async def test_persists_across_runtimes_sharing_a_store(memory_rig: Any) -> None:
    # The SQLite store (persistence issue) does not exist yet; two runtimes with
    # separate plugin objects over one store stand in for two processes.
    store = InMemoryStore()
    writer = memory_rig([remember(WINDOW), "ok"], plugin=MemoryPlugin(), store=store)
    await writer.run("remember")
    reader = memory_rig(
        [ScriptedTurn.call("recall", {"query": WINDOW}), "ok"], plugin=MemoryPlugin(), store=store
    )
    state = await reader.run("seats?", thread_id="elsewhere")
    assert json.loads(tool_results(state)[0])[0]["text"] == WINDOW


async def test_writes_from_another_plugin_instance_are_seen(memory_rig: Any) -> None:
    store = InMemoryStore()
    recall = ScriptedTurn.call("recall", {"query": WINDOW})
    a = memory_rig(
        [remember(WINDOW), "ok", ScriptedTurn.call("recall", {"query": "x"}), "ok"],
        plugin=MemoryPlugin(),
        store=store,
    )
    b = memory_rig(
        [recall, "none", recall, "found", recall, "gone"], plugin=MemoryPlugin(), store=store
    )
    assert tool_results(await b.run("q", thread_id="b1")) == ["No matching memories."]
    await a.run("remember", thread_id="a1")
    found = json.loads(tool_results(await b.run("q", thread_id="b2"))[0])
    assert found[0]["text"] == WINDOW
    forget = ScriptedTurn.call("forget", {"memory_id": found[0]["id"]})
    c = memory_rig([forget, "ok"], plugin=MemoryPlugin(), store=store)
    await c.run("forget it", thread_id="c1")
    assert tool_results(await b.run("q", thread_id="b3")) == ["No matching memories."]


class FakeExtractor:
    def __init__(self) -> None:
        self.requests: list[ExtractionRequest] = []

    async def extract(self, request: ExtractionRequest) -> Sequence[ProposedMemory]:
        self.requests.append(request)
        users = [m.text for m in request.messages if m.role == "user"]
        return [ProposedMemory(text=f"User said: {u}", tags=("auto",)) for u in users]


async def test_run_end_extractor_proposes_memories(memory_rig: Any) -> None:
    extractor = FakeExtractor()
    plugin = MemoryPlugin(extractors={"fake": extractor})
    rig = memory_rig(
        ["first answer", "second answer"],
        plugin=plugin,
        config={"extractor": "fake", "extract_kind": "event"},
    )
    await rig.run("I moved to Oslo.")
    await rig.run("I adopted a cat.")
    assert [len(r.messages) for r in extractor.requests] == [2, 2]
    assert extractor.requests[1].messages[0].text == "I adopted a cat."
    stored = sorted(live(await entries(rig.store)).values(), key=lambda r: r["created_at"])
    assert [r["text"] for r in stored] == [
        "User said: I moved to Oslo.",
        "User said: I adopted a cat.",
    ]
    assert all(r["kind"] == "event" and r["source"]["via"] == "extractor" for r in stored)


async def test_extraction_is_off_by_default(memory_rig: Any) -> None:
    rig = memory_rig(["answer"])
    await rig.run("I moved to Oslo.")
    assert await entries(rig.store) == {}
    assert PhaseHookPoint.RUN_END not in rig.runtime._agent("agent").hooks


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"embedder": "litellm"}, "needs model"),
        ({"embedder": "minilm", "model_path": "/nonexistent/model"}, "config.json is missing"),
        ({"extractor": "nope"}, "unknown memory extractor 'nope'"),
        ({"extractor": "json:nothing_here"}, "cannot be imported"),
        ({"top_k": 0}, "top_k"),
        ({"extractor": "a:b", "extractor_agent": "x"}, "not both"),
    ],
)
async def test_bad_config_names_the_plugin_and_problem(
    memory_rig: Any, config: dict, needle: str
) -> None:
    rig = memory_rig(["x"], plugin=MemoryPlugin(), config=config)
    with pytest.raises(AgentConfigError, match="memory") as info:
        await rig.run("hi")
    assert needle in str(info.value)


def test_discovered_through_the_entry_point() -> None:
    found = discover()
    plugin = found.plugins["memory"].value
    assert isinstance(plugin, MemoryPlugin)
    assert plugin.manifest.bound.context_bands == {MEMORY_BAND}
    assert plugin.manifest.bound.tool_ids == {"remember", "recall", "forget"}


async def test_the_injection_follows_a_memory_written_in_the_same_turn(memory_rig: Any) -> None:
    """The injected text is reused step after step only while the memories stay the same."""
    meal = "The user wants vegetarian meals on long flights"
    rig = memory_rig([remember(WINDOW), remember(meal), "ok"])
    await rig.run("Remember window seats and vegetarian meals on long flights.")
    first, second, third = (memory_context(r) for r in rig.executor.requests)
    assert first == []  # nothing stored yet
    assert len(second) == 1 and WINDOW in second[0] and meal not in second[0]
    assert len(third) == 1 and WINDOW in third[0] and meal in third[0]
