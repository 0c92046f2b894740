"""Lazy import, install hint, request parameters, cost and ``awaken run --model``."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from openai_server import Reply, ToolCallSpec, UsageSpec
from scenarios import PLAIN

import awaken_runtime.models.litellm._executor as litellm_mod
from awaken_runtime import (
    InferenceParams,
    InferenceRequest,
    InferenceResponse,
    LiteLLMExecutor,
    LiteLLMNotInstalled,
    Message,
    TokenUsage,
    ToolDescriptor,
    litellm_pricing,
)
from awaken_runtime.cli._main import main


def _python(code: str, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        check=True,
    )
    return result.stdout.strip()


def test_import_awaken_runtime_does_not_import_litellm() -> None:
    out = _python(
        "import sys, awaken_runtime, awaken_runtime.cli._main\n"
        "awaken_runtime.LiteLLMExecutor()\n"  # constructing it imports nothing either
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'openai')))"
    )
    assert out == "[]"


def test_litellm_is_imported_with_the_local_price_table(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []

    def fake_import(name: str) -> Any:
        seen.append(os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"))
        return types.SimpleNamespace(__name__=name)

    monkeypatch.setattr(litellm_mod, "_litellm", None)
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    monkeypatch.setattr(litellm_mod.importlib, "import_module", fake_import)
    module = litellm_mod.import_litellm()
    assert seen == ["True"]  # set before litellm's import, so it never fetches the map
    assert module.suppress_debug_info is True
    assert litellm_mod.import_litellm() is module  # imported once


def test_a_users_cost_map_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(litellm_mod, "_litellm", None)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")
    assert litellm_mod.import_litellm() is sys.modules["litellm"]
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "False"


async def test_missing_litellm_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, local_spec: Any
) -> None:
    monkeypatch.setattr(litellm_mod, "_litellm", None)
    monkeypatch.setitem(sys.modules, "litellm", None)  # makes `import litellm` fail
    request = InferenceRequest(model=local_spec(), messages=[Message.user("hi")], tools=[])
    with pytest.raises(LiteLLMNotInstalled) as info:
        async for _ in LiteLLMExecutor().stream(request):
            pass
    assert 'pip install "awaken-runtime[litellm]"' in str(info.value)
    assert isinstance(info.value, ImportError)


async def test_missing_litellm_in_a_run_is_a_provider_failure(
    monkeypatch: pytest.MonkeyPatch, build_runtime: Any
) -> None:
    monkeypatch.setattr(litellm_mod, "_litellm", None)
    monkeypatch.setitem(sys.modules, "litellm", None)
    state = await build_runtime(LiteLLMExecutor()).run("agent", "hi")
    assert state.end_cause is not None and state.end_cause.kind == "error"
    assert "awaken-runtime[litellm]" in state.end_cause.failure.message  # type: ignore[union-attr]


async def test_inference_params_tools_and_extra_reach_the_server(
    server: Any, local_spec: Any
) -> None:
    server.add(Reply(text="ok"))
    spec = local_spec(extra={"seed": 7, "extra_headers": {"X-Trace": "t-42"}})
    request = InferenceRequest(
        model=spec,
        messages=[Message.system("be brief"), Message.user("hi")],
        tools=[ToolDescriptor(id="lookup", description="Look up.")],
        params=InferenceParams(temperature=0.2, max_output_tokens=64, top_p=0.9, stop=("END",)),
    )
    items = [item async for item in LiteLLMExecutor().stream(request)]
    assert isinstance(items[-1], InferenceResponse)
    body = server.requests[0].body
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 64
    assert body["top_p"] == 0.9
    assert body["stop"] == ["END"]
    assert body["seed"] == 7
    assert server.requests[0].headers["x-trace"] == "t-42"
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look up.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    # No key env var and a custom base: the local server gets a placeholder key.
    assert server.requests[0].headers["authorization"].startswith("Bearer ")


async def test_unset_params_are_not_sent(server: Any, local_spec: Any) -> None:
    server.add(Reply(text="ok"))
    request = InferenceRequest(model=local_spec(), messages=[Message.user("hi")], tools=[])
    _ = [item async for item in LiteLLMExecutor().stream(request)]
    body = server.requests[0].body
    for name in ("temperature", "max_tokens", "top_p", "stop", "reasoning_effort", "tools"):
        assert name not in body


async def test_exactly_one_response_last_and_usage_details(server: Any, local_spec: Any) -> None:
    server.add(
        Reply(
            text="abc",
            tool_calls=[ToolCallSpec("c1", "f", '{"x": 1}')],
            usage=UsageSpec(100, 40, cached_tokens=60, reasoning_tokens=12),
        )
    )
    request = InferenceRequest(model=local_spec(), messages=[Message.user("hi")], tools=[])
    items = [item async for item in LiteLLMExecutor().stream(request)]
    responses = [i for i in items if isinstance(i, InferenceResponse)]
    assert len(responses) == 1 and items[-1] is responses[0]
    response = responses[0]
    assert response.usage == TokenUsage(
        prompt_tokens=100, completion_tokens=40, cached_tokens=60, reasoning_tokens=12
    )
    assert response.finish_reason == "tool_calls"
    # Spec pricing: (40 uncached * 2 + 60 cached * 0.5 + 40 out * 8) / 1e6
    assert response.cost == pytest.approx((40 * 2 + 60 * 0.5 + 40 * 8) / 1e6)


async def test_cost_falls_back_to_litellms_price_table(server: Any, local_spec: Any) -> None:
    pricing = litellm_pricing("openai/gpt-4o-mini")
    assert pricing is not None and pricing.input_per_mtok > 0
    assert litellm_pricing("openai/no-such-model-xyz") is None
    server.add(Reply(text="hi", usage=UsageSpec(1000, 100, cached_tokens=200)))
    spec = local_spec(model="openai/gpt-4o-mini", pricing=None)
    request = InferenceRequest(model=spec, messages=[Message.user("hi")], tools=[])
    items = [item async for item in LiteLLMExecutor().stream(request)]
    response = items[-1]
    assert isinstance(response, InferenceResponse)
    expected = spec.model_copy(update={"pricing": pricing}).cost(response.usage)
    assert response.cost == pytest.approx(expected)
    # Cross-check against litellm's own calculator.
    ll = litellm_mod.import_litellm()
    prompt_cost, completion_cost = ll.cost_per_token(
        model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=100, cache_read_input_tokens=200
    )
    assert response.cost == pytest.approx(prompt_cost + completion_cost, rel=1e-6)

    server.add(Reply(text="hi", usage=UsageSpec(10, 10)))
    unknown = local_spec(model="openai/unpriced-local-model", pricing=None)
    request = InferenceRequest(model=unknown, messages=[Message.user("hi")], tools=[])
    items = [item async for item in LiteLLMExecutor().stream(request)]
    assert isinstance(items[-1], InferenceResponse) and items[-1].cost is None


async def test_run_cost_falls_back_to_litellms_price_table(
    server: Any, build_runtime: Any, local_spec: Any
) -> None:
    server.add(*PLAIN.replies())
    spec = local_spec(model="openai/gpt-4o-mini", pricing=None)
    state = await build_runtime(LiteLLMExecutor(), spec=spec).run("agent", PLAIN.prompt)
    pricing = litellm_pricing("openai/gpt-4o-mini")
    expected = spec.model_copy(update={"pricing": pricing}).cost(PLAIN.usage)
    assert state.cost == pytest.approx(expected)


# -- awaken run --------------------------------------------------------------------------


def test_awaken_run_with_model_and_api_base(
    server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    server.add(*PLAIN.replies())
    code = main(
        [
            "run",
            "--model",
            "openai/gpt-4o-mini",
            "--api-base",
            server.base_url,
            "--store",
            "memory://",
            PLAIN.prompt,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert PLAIN.final_text in out
    assert "natural_end" in out
    assert "$" in out  # priced from litellm's table
    body = server.requests[0].body
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"][-1] == {"role": "user", "content": PLAIN.prompt}


def test_awaken_run_agent_file_binding_a_litellm_model(
    server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = tmp_path / "agent.toml"
    agent.write_text(
        "[agent]\n"
        'id = "helper"\n'
        'instructions = "Answer briefly."\n'
        'model_binding = "local"\n'
        "[agent.params]\n"
        "temperature = 0.1\n"
        "[[models]]\n"
        'id = "local"\n'
        'provider = "litellm"\n'
        'model = "openai/local-model"\n'
        f'api_base = "{server.base_url}"\n'
        "timeout_s = 5\n",
        encoding="utf-8",
    )
    server.add(*PLAIN.replies())
    code = main(["run", "--agent", str(agent), "--store", "memory://", PLAIN.prompt])
    out = capsys.readouterr().out
    assert code == 0, out
    assert PLAIN.final_text in out
    body = server.requests[0].body
    assert body["temperature"] == 0.1
    assert body["messages"][0] == {"role": "system", "content": "Answer briefly."}


def test_awaken_run_error_exit_code_and_message(
    server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    server.add(Reply.error(401, "Incorrect API key provided"))
    code = main(
        [
            "run",
            "--model",
            "openai/gpt-4o-mini",
            "--api-base",
            server.base_url,
            "--store",
            "memory://",
            "hi",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "error: ProviderAuthError" in out
    assert "OPENAI_API_KEY" in out


def test_awaken_run_needs_agent_or_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--store", "memory://", "hi"]) == 2
    assert "--model PROVIDER/MODEL" in capsys.readouterr().err
    assert main(["run", "--api-base", "http://x", "--store", "memory://", "hi"]) == 2


def test_awaken_run_help_lists_model_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "--model PROVIDER/MODEL" in out and "--api-base URL" in out
