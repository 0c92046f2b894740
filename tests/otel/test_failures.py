"""Failing and cancelled runs: provider errors through litellm and a local server, cancels."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from awaken_otel import names as n
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    CancellationToken,
    InferenceRequest,
    InferenceResponse,
    ModelSpec,
    ScriptedTurn,
    StreamDelta,
    ToolCallContext,
    tool,
)

_PROVIDERS = Path(__file__).resolve().parents[1] / "runtime" / "models" / "litellm"


@pytest.fixture(scope="module")
def _server() -> Iterator[Any]:
    pytest.importorskip("litellm")
    if str(_PROVIDERS) not in sys.path:
        sys.path.insert(0, str(_PROVIDERS))
    import openai_server

    with openai_server.OpenAIServer() as srv:
        srv.module = openai_server
        yield srv


@pytest.fixture
def server(_server: Any) -> Any:
    """The provider tests' local OpenAI-compatible server (127.0.0.1, ephemeral port)."""
    _server.reset()
    return _server


def litellm_runtime(server: Any, observer: Any, **agent: Any) -> Any:
    from awaken_runtime import LiteLLMExecutor, RetryPolicy

    spec = ModelSpec(
        id="local", provider="litellm", model="openai/local-model", api_base=server.base_url
    )
    retry = RetryPolicy(max_retries=1, initial_delay_s=0.001, max_delay_s=0.01, jitter=0.0)
    return (
        AgentRuntimeBuilder(discover=False)
        .with_model(spec)
        .with_provider("litellm", LiteLLMExecutor(retry=retry))
        .with_agent_spec(AgentConfig(id="agent", model_binding="local", **agent))
        .with_observer(observer)
        .build()
    )


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning:pydantic.*")
async def test_a_provider_failure_marks_the_call_and_the_run(
    otel: Any, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    Reply = server.module.Reply
    server.add(Reply.error(500, "the model is on fire"))
    server.add(Reply.error(500, "still on fire"))
    rt = litellm_runtime(server, otel.telemetry())
    state = await rt.run("agent", "hello", thread_id="t-fail")
    assert state.end_cause.kind == "error" and state.end_cause.failure.kind == "provider"
    assert len(server.requests) == 2  # the retry policy's two attempts, in one model call

    chat = otel.one("chat local-model")
    assert chat.attributes[n.PROVIDER_NAME] == "openai"
    assert chat.attributes[n.AWAKEN_PROVIDER_ID] == "litellm"
    assert chat.attributes[n.SERVER_ADDRESS] == "127.0.0.1"
    assert chat.attributes[n.SERVER_PORT] == server.port
    assert chat.status.status_code is StatusCode.ERROR
    # The public name of the provider's typed error, not its private module path.
    error = chat.attributes[n.ERROR_TYPE]
    assert error == "awaken_runtime.ProviderUnavailable"
    assert "on fire" in chat.status.description
    assert [e.name for e in chat.events] == ["exception"]
    assert n.USAGE_INPUT_TOKENS not in chat.attributes

    run = otel.one("invoke_agent agent")
    assert chat.parent.span_id == run.context.span_id
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes[n.ERROR_TYPE] == "provider"
    assert run.attributes[n.AWAKEN_END_CAUSE] == "error"
    assert "on fire" in run.status.description

    (duration,) = otel.points(n.CLIENT_OPERATION_DURATION)
    assert duration.count == 1 and duration.attributes[n.ERROR_TYPE] == error
    assert otel.points(n.CLIENT_TOKEN_USAGE) == []
    (runs,) = otel.points(n.AWAKEN_RUNS)
    assert dict(runs.attributes) == {
        n.AGENT_NAME: "agent",
        n.AWAKEN_END_CAUSE: "error",
        n.ERROR_TYPE: "provider",
    }


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning:pydantic.*")
async def test_a_litellm_answer_reports_the_response_id_and_model(
    otel: Any, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    Reply, UsageSpec = server.module.Reply, server.module.UsageSpec
    server.add(Reply(text="hi there", usage=UsageSpec(prompt_tokens=9, completion_tokens=2)))
    rt = litellm_runtime(server, otel.telemetry(), params={"temperature": 0.2, "top_p": 0.9})
    state = await rt.run("agent", "hello")
    assert state.final_text == "hi there"
    chat = otel.one("chat local-model")
    a = chat.attributes
    assert a[n.RESPONSE_ID] == "chatcmpl-local"
    assert a[n.RESPONSE_MODEL] == server.requests[0].body["model"]
    assert a[n.RESPONSE_FINISH_REASONS] == ("stop",)
    assert (a[n.USAGE_INPUT_TOKENS], a[n.USAGE_OUTPUT_TOKENS]) == (9, 2)
    assert (a[n.REQUEST_TEMPERATURE], a[n.REQUEST_TOP_P]) == (0.2, 0.9)
    assert chat.status.status_code is StatusCode.UNSET
    tokens = {p.attributes[n.TOKEN_TYPE]: p.sum for p in otel.points(n.CLIENT_TOKEN_USAGE)}
    assert tokens == {"input": 9, "output": 2}


# -- cancelled runs -------------------------------------------------------------------


class _Hanging:
    """A model that streams one delta, then waits until it is cancelled."""

    def __init__(self, started: asyncio.Event) -> None:
        self.started = started

    async def stream(
        self, request: InferenceRequest
    ) -> AsyncIterator[StreamDelta | InferenceResponse]:
        yield StreamDelta(text="thinking")
        self.started.set()
        await asyncio.sleep(30)
        yield InferenceResponse(text="never")


async def test_a_run_cancelled_mid_inference(otel: Any, runtime_for: Any) -> None:
    started = asyncio.Event()
    rt = runtime_for({"agent": []}, otel.telemetry(), executors={"agent": _Hanging(started)})
    token = CancellationToken()
    task = asyncio.create_task(rt.run("agent", "go", cancel=token))
    await started.wait()
    token.cancel("user pressed stop")
    state = await task
    assert state.end_cause.kind == "cancelled"

    chat = otel.one("chat s-agent")
    assert chat.attributes[n.ERROR_TYPE] == "cancelled"
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.events == ()  # a cancel is not an exception worth a stack trace
    run = otel.one("invoke_agent agent")
    assert run.attributes[n.AWAKEN_END_CAUSE] == "cancelled"
    assert run.status.status_code is StatusCode.UNSET and n.ERROR_TYPE not in run.attributes
    (duration,) = otel.points(n.CLIENT_OPERATION_DURATION)
    assert duration.attributes[n.ERROR_TYPE] == "cancelled"
    (runs,) = otel.points(n.AWAKEN_RUNS)
    assert runs.attributes[n.AWAKEN_END_CAUSE] == "cancelled"


async def test_a_run_cancelled_mid_tool(otel: Any, runtime_for: Any) -> None:
    started = asyncio.Event()

    @tool
    async def slow(ctx: ToolCallContext) -> str:
        """Take a long time."""
        started.set()
        await asyncio.sleep(30)
        return "late"

    rt = runtime_for(
        {"agent": [ScriptedTurn.call("slow"), "never"]}, otel.telemetry(), tools={"agent": [slow]}
    )
    token = CancellationToken()
    task = asyncio.create_task(rt.run("agent", "go", cancel=token))
    await started.wait()
    token.cancel()
    state = await task
    assert state.end_cause.kind == "cancelled"
    call = otel.one("execute_tool slow")
    assert call.attributes[n.AWAKEN_TOOL_OUTCOME] == "cancelled"
    assert call.attributes[n.ERROR_TYPE] == "cancelled"
    run = otel.one("invoke_agent agent")
    assert call.parent.span_id == run.context.span_id
    assert run.attributes[n.AWAKEN_END_CAUSE] == "cancelled"
    assert [s.name for s in otel.spans()] == ["chat s-agent", "execute_tool slow", run.name]
