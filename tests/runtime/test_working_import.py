"""The working import (builder, tool, model spec, one scripted run) pays only for what it runs.

``benchmarks/real_path`` times this script against ``import asyncio, pluggy;
from pydantic import BaseModel, TypeAdapter``. Each check pins a cost once paid
on that path, so re-adding it fails here rather than only in the benchmark.
"""

from __future__ import annotations

import json
import subprocess
import sys

WORKING = '''
import asyncio, json, sys
from awaken_runtime import (
    AgentConfig, AgentRuntimeBuilder, ModelSpec, ScriptedExecutor, ScriptedTurn, tool,
)

@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text

async def main():
    executor = ScriptedExecutor([ScriptedTurn.call("echo", {"text": "x"}), "done"])
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_tool(echo)
        .with_model(ModelSpec(id="m", provider="scripted", model="scripted"))
        .with_provider("scripted", executor)
        .with_agent_spec(AgentConfig(id="a", model_binding="m", tool_ids=["echo"]))
        .build()
    )
    state = await runtime.run("a", "hello", thread_id="t")
    assert state.final_text == "done", state.end_cause
    return state

state = asyncio.run(main())
from pydantic import BaseModel

def models(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from models(sub)

built = {
    f"{m.__module__}.{m.__qualname__}": {
        name: getattr(f.default_factory, "__qualname__", repr(f.default_factory))
        for name, f in m.__pydantic_fields__.items() if f.default_factory is not None
    }
    for m in models(BaseModel) if m.__module__.startswith("awaken_runtime")
    and m.__dict__.get("__pydantic_complete__")
}
print(json.dumps({"modules": sorted(sys.modules), "built": built}))
'''

_run: dict[str, object] = {}


def _working() -> dict[str, object]:
    if not _run:
        out = subprocess.run(
            [sys.executable, "-c", WORKING], capture_output=True, text=True, check=True, timeout=120
        ).stdout
        _run.update(json.loads(out))
    return _run


def test_the_working_path_loads_no_optional_part() -> None:
    loaded = set(_working()["modules"])  # type: ignore[arg-type]
    unneeded = {
        "awaken_runtime.plugins._discovery",  # discover=False: no entry-point scan
        "awaken_runtime.plugins._declarative",
        "awaken_runtime.agents._file",
        "awaken_runtime.agents._imports",
        "awaken_runtime.cli",
        "awaken_runtime.models.litellm",
        "awaken_runtime.stores.sqlite",
        "awaken_runtime.stores.file",
        "awaken_runtime.testing",
        # Subsystems a run loads once it uses them: events for a listener, gate and
        # guard decisions for gates, decisions and the resume machinery for a resume,
        # delegation for a delegating agent.
        "awaken_runtime.lifecycle._events",
        "awaken_runtime.plugins._gates",
        "awaken_runtime.suspension._decisions",
        "awaken_runtime.delegation._delegation",
        "awaken_runtime.delegation._routed",
        "awaken_runtime.delegation._tool",
        "awaken_runtime.run._resume",
        "awaken_runtime.runtime._tickets",
        "awaken_runtime.runtime._streaming",
        "awaken_runtime.runtime._event_log",
        "awaken_runtime.runtime._completion",
        "awaken_runtime.runtime._warm",
        "litellm",
        "docstring_parser",  # a one-line docstring needs no parser
        "sqlite3",
        "tomllib",
        "yaml",
        "http.client",
    }
    assert loaded & unneeded == set()


def test_resolution_builds_no_validator_for_the_snapshot() -> None:
    """The snapshot holds parts validated already; resolving once per agent need not
    build its validator (of every nested model, plugins included)."""
    built = _working()["built"]
    assert "awaken_runtime.agents._resolve.ExecutableAgentSnapshot" not in built
    assert "awaken_runtime.agents._config.AgentConfig" in built  # the check sees builds


def test_a_run_builds_no_validator_for_its_own_result() -> None:
    """The run record and ``RunState`` are made of values the run typed already; building
    their validators (the end-cause union with every failure) cost more than the run."""
    built = _working()["built"]
    assert "awaken_runtime.lifecycle._run_state.RunState" not in built
    assert "awaken_runtime.stores._thread_store.RunRecord" not in built


def test_no_validator_built_on_the_path_inspects_a_builtin_factory() -> None:
    """pydantic reads each default factory's signature when it builds a validator; for
    ``list`` (or ``set``, ``tuple``) that parses a text signature with ``tokenize``,
    whose first use compiles its regular expressions (~20 ms in a new process)."""
    built = _working()["built"]
    slow = {"list", "set", "tuple", "frozenset", "bytearray"}
    found = {
        (model, field)
        for model, factories in built.items()  # type: ignore[attr-defined]
        for field, factory in factories.items()
        if factory in slow
    }
    assert found == set()
