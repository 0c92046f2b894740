"""The keyword arguments of one ``litellm.acompletion`` call.

Messages in OpenAI's shape, tools, sampling parameters, the request
controls (``tool_choice``, ``parallel_tool_calls``, ``response_format``) and
the agent's structured output: a JSON-schema response format where the model
takes one, else a final-result tool the model is made to call.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...messages._message import to_openai
from .._errors import ProviderAuthError
from .._model import InferenceParams, InferenceRequest, ModelSpec

__all__ = ["NO_KEY", "completion_kwargs", "needs_placeholder"]

NO_KEY = "sk-no-key-required"
_CHOICES = frozenset({"auto", "none", "required"})


def needs_placeholder(key_env: str | None) -> bool:
    """Whether the conventional key variable ``key_env`` is unset (a keyless local server)."""
    return key_env is not None and not os.environ.get(key_env)


def tool_choice(choice: str) -> Any:
    """OpenAI's ``tool_choice``: a keyword, or the object naming one function."""
    if choice in _CHOICES:
        return choice
    return {"type": "function", "function": {"name": choice}}


def completion_kwargs(
    request: InferenceRequest,
    *,
    timeout_s: float,
    native_output: Callable[[], bool],
    key_env: Callable[[], str | None],
    messages: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The arguments for ``request`` (``native_output``/``key_env`` are asked lazily).

    ``messages`` is the request's messages already converted (the executor's
    cache); by default they are converted here.
    """
    spec = request.model
    kwargs: dict[str, Any] = {
        "model": spec.model,
        "messages": to_openai(request.messages) if messages is None else messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "timeout": spec.timeout_s or timeout_s,
        "max_retries": 0,  # retries are ours: the SDK's would hide Retry-After
    }
    tools = [tool.to_openai() for tool in request.tools]
    params = request.params
    _add_sampling(kwargs, params)
    output = request.output
    if output is not None:
        mode = output.mode
        if mode == "native" or (mode == "auto" and native_output()):
            kwargs["response_format"] = output.response_format()
        else:
            tools.append(output.tool_descriptor().to_openai())
            # The result is a tool call: the model must call some tool every step.
            kwargs["tool_choice"] = "required"
    if params.tool_choice is not None:
        kwargs["tool_choice"] = tool_choice(params.tool_choice)
    if tools:
        kwargs["tools"] = tools
        if params.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = params.parallel_tool_calls
    _add_credentials(kwargs, spec, key_env)
    kwargs.update(spec.extra)
    return kwargs


def _add_sampling(kwargs: dict[str, Any], params: InferenceParams) -> None:
    """The sampling parameters the request sets (the provider's defaults for the rest)."""
    if params.temperature is not None:
        kwargs["temperature"] = params.temperature
    if params.top_p is not None:
        kwargs["top_p"] = params.top_p
    if params.max_output_tokens is not None:
        kwargs["max_tokens"] = params.max_output_tokens
    if params.reasoning_effort is not None:
        kwargs["reasoning_effort"] = params.reasoning_effort
    if params.stop:
        kwargs["stop"] = list(params.stop)
    if params.response_format is not None:
        kwargs["response_format"] = params.response_format


def _add_credentials(
    kwargs: dict[str, Any], spec: ModelSpec, key_env: Callable[[], str | None]
) -> None:
    """``api_base`` and ``api_key``: the spec's key variable, or a keyless server's placeholder."""
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
    if spec.api_key_env:
        key = os.environ.get(spec.api_key_env)
        if not key:
            raise ProviderAuthError(
                f"model {spec.model!r}: the environment variable {spec.api_key_env} "
                f"(api_key_env of model spec {spec.id!r}) is not set; export it with the "
                f"provider's API key",
                provider=spec.provider,
                model=spec.model,
            )
        kwargs["api_key"] = key
    elif spec.api_base and needs_placeholder(key_env()):
        # A local OpenAI-compatible server (Ollama, vLLM, llama.cpp) usually wants no
        # key, but the OpenAI client refuses to run without one.
        kwargs["api_key"] = NO_KEY
