"""The first inference never imports litellm on the event loop; ``Runtime.warm_up``.

How long the loop stalls is measured by benchmarks/first_inference_heartbeat.py
(a heartbeat task); these tests check the mechanism without timing: which
thread imports litellm, and that after ``warm_up`` a first run against the
local server imports nothing more on the loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from openai_server import Reply

import awaken_runtime.models.litellm._executor as litellm_mod
from awaken_runtime import InferenceRequest, LiteLLMExecutor, Message, Runtime

HERE = Path(__file__).resolve().parent

_CHILD = """
import asyncio, json, sys
sys.path.insert(0, {here!r})
from awaken_runtime import AgentConfig, AgentRuntimeBuilder, LiteLLMExecutor, ModelSpec

spec = ModelSpec(id="m", provider="litellm", model="openai/local-model", api_base={url!r})
runtime = (
    AgentRuntimeBuilder(discover=False)
    .with_model(spec)
    .with_provider("litellm", LiteLLMExecutor())
    .with_agent_spec(AgentConfig(id="agent", model_binding="m"))
    .build()
)

async def main():
    await runtime.warm_up()
    before = set(sys.modules)
    state = await runtime.run("agent", "hi")
    print(json.dumps({{"text": state.final_text, "new": sorted(set(sys.modules) - before)}}))

asyncio.run(main())
"""


async def test_the_first_stream_imports_litellm_in_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch, server: Any, local_spec: Any
) -> None:
    real = litellm_mod.import_litellm
    threads: list[int] = []

    def recording() -> Any:
        threads.append(threading.get_ident())
        return real()

    monkeypatch.setattr(litellm_mod, "_litellm", None)
    monkeypatch.setattr(litellm_mod, "import_litellm", recording)
    server.add(Reply(text="ok"))
    request = InferenceRequest(model=local_spec(), messages=[Message.user("hi")], tools=[])
    items = [item async for item in LiteLLMExecutor().stream(request)]
    assert items[-1].text == "ok"
    assert threads and threading.get_ident() not in threads


async def test_runtime_warm_up_awaits_every_executor_that_has_one() -> None:
    from awaken_runtime import AgentRuntimeBuilder, ScriptedExecutor

    seen: list[str] = []

    class Warmable(ScriptedExecutor):
        async def warm_up(self) -> None:
            await asyncio.sleep(0)
            seen.append("warmed")

    runtime: Runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_provider("a", Warmable(["x"]))
        .with_provider("b", ScriptedExecutor(["y"]))  # no warm_up: skipped
        .build()
    )
    await runtime.warm_up()
    assert seen == ["warmed"]


async def test_warm_up_of_an_agent_touches_only_its_provider() -> None:
    """``awaken run`` warms the agent's provider only: a registered litellm provider
    whose package is not installed must not fail an agent on another provider."""
    from awaken_runtime import AgentConfig, AgentRuntimeBuilder, ModelSpec, ScriptedExecutor

    class Broken(ScriptedExecutor):
        async def warm_up(self) -> None:
            raise ImportError("litellm is not installed")

    seen: list[str] = []

    class Warmable(ScriptedExecutor):
        async def warm_up(self) -> None:
            seen.append("mine")

    runtime: Runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_provider("mine", Warmable(["x"]))
        .with_provider("litellm", Broken(["y"]))
        .with_model(ModelSpec(id="m", provider="mine", model="s"))
        .with_agent_spec(AgentConfig(id="helper", model_binding="m"))
        .build()
    )
    await runtime.warm_up("helper")
    assert seen == ["mine"]
    with pytest.raises(ImportError):
        await runtime.warm_up()


def test_after_warm_up_the_first_run_imports_nothing_on_the_loop(server: Any) -> None:
    server.add(Reply(text="hello"))
    code = _CHILD.format(here=str(HERE), url=server.base_url)
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=True,
    )
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["text"] == "hello"
    assert out["new"] == []  # litellm, openai, anyio, tiktoken: all loaded by warm_up
