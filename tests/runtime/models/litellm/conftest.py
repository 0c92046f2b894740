"""Fixtures for the provider tests: the local OpenAI server and runtimes around it.

Test modules run under ``--import-mode=importlib``; this directory is put on
``sys.path`` so they can ``import openai_server`` and ``import scenarios``.

* ``server``: the session's :class:`OpenAIServer` (127.0.0.1, ephemeral port),
  reset before each test; queue replies with ``server.add(...)``.
* ``fast_retry``: a :class:`RetryPolicy` with millisecond delays and no jitter.
* ``local_spec(**fields)``: a ``litellm`` :class:`ModelSpec` bound to the server.
* ``build_runtime(executor, tools=(), spec=None, provider="litellm", **agent)``:
  a discovery-free runtime with agent ``"agent"``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from openai_server import OpenAIServer, Reply
from scenarios import PRICING, TOOLS

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    InferenceRequest,
    LiteLLMExecutor,
    Message,
    ModelSpec,
    RetryPolicy,
    Runtime,
)


@pytest.fixture(scope="session")
def _session_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        # Warm litellm up once: its first call spends seconds on lazy imports, which
        # must not land inside a test that measures a short timeout.
        server.add(Reply(text="warm"))
        spec = ModelSpec(
            id="warm", provider="litellm", model="openai/warm", api_base=server.base_url
        )

        async def warm() -> None:
            request = InferenceRequest(model=spec, messages=[Message.user("hi")], tools=[])
            async for _ in LiteLLMExecutor().stream(request):
                pass

        asyncio.run(warm())
        yield server


@pytest.fixture
def server(_session_server: OpenAIServer) -> Iterator[OpenAIServer]:
    _session_server.reset()
    yield _session_server
    _session_server.reset()


@pytest.fixture
def fast_retry() -> RetryPolicy:
    return RetryPolicy(max_retries=3, initial_delay_s=0.001, max_delay_s=0.01, jitter=0.0)


@pytest.fixture
def local_spec(server: OpenAIServer) -> Callable[..., ModelSpec]:
    def make(**fields: Any) -> ModelSpec:
        data: dict[str, Any] = {
            "id": "local",
            "provider": "litellm",
            "model": "openai/local-model",
            "api_base": server.base_url,
            "pricing": PRICING,
            "timeout_s": 5.0,
        }
        data.update(fields)
        return ModelSpec(**data)

    return make


def _build(
    executor: Any,
    spec: ModelSpec,
    *,
    tools: Sequence[str] = (),
    provider: str = "litellm",
    **agent: Any,
) -> Runtime:
    builder = (
        AgentRuntimeBuilder(discover=False)
        .with_model(spec.model_copy(update={"provider": provider}))
        .with_provider(provider, executor)
    )
    for name in tools:
        builder.with_tool(TOOLS[name])
    agent.setdefault("instructions", "You are a test agent.")
    builder.with_agent_spec(
        AgentConfig(id="agent", model_binding=spec.id, tool_ids=list(tools), **agent)
    )
    return builder.build()


@pytest.fixture
def build_runtime(local_spec: Callable[..., ModelSpec]) -> Callable[..., Runtime]:
    def make(executor: Any, *, spec: ModelSpec | None = None, **kw: Any) -> Runtime:
        return _build(executor, spec or local_spec(), **kw)

    return make


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """litellm itself trips pydantic deprecation warnings; keep them out of these tests."""
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm.*"))
