"""RUN_END extraction by an extractor agent, run as a child of the finished run."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from awaken_ext_memory import RECORDS_KEY, MemoryPlugin, parse_proposals
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    InferenceRequest,
    InMemoryStore,
    ModelSpec,
    NaturalEnd,
    PhaseContext,
    Scope,
    ScopeBinding,
    ScriptedExecutor,
)

needs_children = pytest.mark.skipif(
    "children" not in {f.name for f in dataclasses.fields(PhaseContext)},
    reason="the runtime cannot start sub-runs from hooks yet (PhaseContext.children)",
)


def test_parse_proposals_is_forgiving() -> None:
    text = 'Sure:\n```json\n[{"text": "Lives in Oslo", "kind": "fact"}, "Has a cat", 3, {}]\n```'
    assert [(p.text, p.kind) for p in parse_proposals(text)] == [
        ("Lives in Oslo", "fact"),
        ("Has a cat", None),
    ]
    assert parse_proposals("nothing new") == []
    assert parse_proposals("[not json") == []


@needs_children
async def test_extractor_agent_runs_as_a_child_and_its_answer_is_remembered(
    tmp_path: Any,
) -> None:
    seen: list[InferenceRequest] = []

    def extractor_answer(request: InferenceRequest) -> str:
        seen.append(request)
        return json.dumps(
            [{"text": "The user moved to Oslo in 2021", "kind": "event", "tags": ["home"]}]
        )

    executor = ScriptedExecutor(["Welcome to Oslo!", extractor_answer])
    store = InMemoryStore()
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider="scripted", model="s"))
        .with_provider("scripted", executor)
        .with_plugin(MemoryPlugin())
        .with_store(store)
        .with_agent_spec(
            AgentConfig(
                id="main",
                model_binding="m",
                plugin_ids=["memory"],
                plugin_config={
                    "memory": {"extractor_agent": "extractor", "cache_dir": str(tmp_path)}
                },
            )
        )
        .with_agent_spec(AgentConfig(id="extractor", model_binding="m"))
        .build()
    )
    state = await runtime.run("main", "I moved to Oslo in 2021.", thread_id="t", profile_id="p")
    assert isinstance(state.end_cause, NaturalEnd)
    (prompt,) = [m.text for m in seen[0].messages if m.role == "user"]
    assert "user: I moved to Oslo in 2021." in prompt
    assert "assistant: Welcome to Oslo!" in prompt
    snapshot = await store.load(ScopeBinding("t", "p", "default"))
    records = snapshot.state[(Scope.PROFILE, RECORDS_KEY)]
    (record,) = records.values()
    assert record["text"] == "The user moved to Oslo in 2021"
    assert record["kind"] == "event" and record["tags"] == ["home"]
    assert record["source"]["via"] == "extractor"
