"""``LiteLLMExecutor``: any model litellm supports, streamed, with retries and clear errors.

litellm is imported on first use, never at ``import awaken_runtime``, with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` (unless already set) so it reads its
bundled price table instead of fetching one.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ...messages._message import to_openai
from .._model import (
    InferenceRequest,
    InferenceResponse,
    ModelSpec,
    Pricing,
    StreamDelta,
    TokenUsage,
)
from ._errors import LiteLLMNotInstalled, ProviderAuthError, ProviderError, classify
from ._stream import StreamAssembler

__all__ = ["LITELLM_PROVIDER", "LiteLLMExecutor", "RetryPolicy", "litellm_pricing"]

LITELLM_PROVIDER = "litellm"
"""The provider id ``awaken run`` registers :class:`LiteLLMExecutor` under."""

DEFAULT_TIMEOUT_S = 600.0
_NO_KEY = "sk-no-key-required"
_BACKSTOP_S = 30.0

_litellm: Any = None


def import_litellm() -> Any:
    """Import litellm once (quietly, with the local price table) or explain how to install it."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            module: Any = importlib.import_module("litellm")
        except ImportError as exc:
            raise LiteLLMNotInstalled() from exc
        module.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stdout
        _litellm = module
    return _litellm


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries for rate limits, timeouts, 5xx and dropped connections.

    Attempt ``n`` (from 0) waits ``min(max_delay_s, initial_delay_s * multiplier**n)``
    scaled down by up to ``jitter`` (0.5: a random 50-100% of it). A ``Retry-After``
    from the provider is honoured as given, unless it exceeds ``max_retry_after_s``:
    then the run fails instead of waiting that long. Auth errors, bad requests and
    unknown models are never retried, nor is a failure after output was streamed.
    """

    max_retries: int = 3
    initial_delay_s: float = 0.5
    multiplier: float = 2.0
    max_delay_s: float = 20.0
    jitter: float = 0.5
    max_retry_after_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.initial_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("RetryPolicy: max_retries and delays must not be negative")
        if self.multiplier < 1:
            raise ValueError("RetryPolicy: multiplier must be at least 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("RetryPolicy: jitter must be between 0 and 1")
        if self.max_retry_after_s < 0:
            raise ValueError("RetryPolicy: max_retry_after_s must not be negative")

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry ``attempt`` (0-based), or ``None`` to give up."""
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after_s else None
        base = min(self.max_delay_s, self.initial_delay_s * self.multiplier**attempt)
        return base * (1 - self.jitter * random.random())


def litellm_pricing(model: str) -> Pricing | None:
    """The price of ``model`` (litellm's name) from litellm's local table, if it knows it."""
    litellm = import_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises several types for unmapped models
        return None
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if inp is None and out is None:
        return None
    cached = info.get("cache_read_input_token_cost")
    return Pricing(
        input_per_mtok=(inp or 0.0) * 1e6,
        output_per_mtok=(out or 0.0) * 1e6,
        cached_input_per_mtok=cached * 1e6 if cached is not None else None,
    )


def _needs_placeholder(key_env: str | None) -> bool:
    return key_env is not None and not os.environ.get(key_env)


class LiteLLMExecutor:
    """An :class:`LlmExecutor` for every model litellm supports.

    ``ModelSpec.model`` is litellm's model name (``openai/gpt-4o-mini``,
    ``anthropic/claude-sonnet-4-5``, ``ollama_chat/llama3.1``, ...);
    ``api_base`` points at another server, ``api_key_env`` names the variable
    holding the key (default: litellm's convention, e.g. ``OPENAI_API_KEY``),
    ``timeout_s`` bounds the wait for the response and for each streamed chunk,
    and ``extra`` is passed to ``litellm.acompletion`` as keyword arguments.
    """

    def __init__(
        self,
        *,
        retry: RetryPolicy | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        self._sleep = sleep
        self._pricing: dict[str, Pricing | None] = {}
        self._key_env: dict[str, str] = {}

    # -- request -----------------------------------------------------------------

    def _conventional_key_env(self, litellm: Any, model: str) -> str | None:
        """The variable litellm reads the key of ``model`` from (``OPENAI_API_KEY``, ...)."""
        name = self._key_env.get(model)
        if name is None:
            try:
                missing = litellm.validate_environment(model).get("missing_keys") or []
                name = next((k for k in missing if k.endswith("API_KEY")), None)
                if name is None:  # the key is set: litellm does not say which one it read
                    provider = litellm.get_llm_provider(model)[1]
                    guess = f"{str(provider).upper()}_API_KEY"
                    name = guess if guess in os.environ else None
            except Exception:  # unknown provider: the request itself will say so
                name = None
            if name is not None:
                self._key_env[model] = name
        return name

    def _kwargs(self, request: InferenceRequest, litellm: Any) -> dict[str, Any]:
        spec = request.model
        kwargs: dict[str, Any] = {
            "model": spec.model,
            "messages": to_openai(request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": spec.timeout_s or self.timeout_s,
            "max_retries": 0,  # retries are ours: the SDK's would hide Retry-After
        }
        if request.tools:
            kwargs["tools"] = [tool.to_openai() for tool in request.tools]
        params = request.params
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
        if spec.api_base:
            kwargs["api_base"] = spec.api_base
        if spec.api_key_env:
            key = os.environ.get(spec.api_key_env)
            if not key:
                raise self._error(
                    spec,
                    f"the environment variable {spec.api_key_env} (api_key_env of model spec "
                    f"{spec.id!r}) is not set; export it with the provider's API key",
                )
            kwargs["api_key"] = key
        elif spec.api_base and _needs_placeholder(self._conventional_key_env(litellm, spec.model)):
            # A local OpenAI-compatible server (Ollama, vLLM, llama.cpp) usually wants no
            # key, but the OpenAI client refuses to run without one.
            kwargs["api_key"] = _NO_KEY
        kwargs.update(spec.extra)
        return kwargs

    @staticmethod
    def _error(spec: ModelSpec, text: str) -> ProviderError:
        return ProviderAuthError(
            f"model {spec.model!r}: {text}", provider=spec.provider, model=spec.model
        )

    # -- cost ----------------------------------------------------------------------

    def cost(self, spec: ModelSpec, usage: TokenUsage) -> float | None:
        """USD cost of ``usage``: the spec's pricing, else litellm's local price table."""
        if spec.pricing is not None:
            return spec.cost(usage)
        if spec.model not in self._pricing:
            self._pricing[spec.model] = litellm_pricing(spec.model)
        pricing = self._pricing[spec.model]
        if pricing is None:
            return None
        return spec.model_copy(update={"pricing": pricing}).cost(usage)

    # -- streaming -----------------------------------------------------------------

    async def stream(
        self, request: InferenceRequest
    ) -> AsyncIterator[StreamDelta | InferenceResponse]:
        """Stream one inference, retrying transient failures that happen before any output."""
        litellm = import_litellm()
        spec = request.model
        kwargs = self._kwargs(request, litellm)
        timeout = float(kwargs["timeout"])
        attempt = 0
        while True:
            emitted = False
            wait: float | None = None
            try:
                async with contextlib.aclosing(self._attempt(litellm, kwargs, timeout)) as items:
                    async for item in items:
                        if isinstance(item, InferenceResponse):
                            item = item.model_copy(update={"cost": self.cost(spec, item.usage)})
                        emitted = True
                        yield item
                return
            except Exception as exc:
                error = self._classify(exc, litellm, spec, timeout)
                error.attempts = attempt + 1
                if error.retryable and not emitted:
                    wait = self.retry.delay(attempt, error.retry_after)
                if wait is None:
                    if attempt:
                        error.args = (f"{error.args[0]} (gave up after {attempt + 1} attempts)",)
                    if error is exc:
                        raise
                    raise error from exc
            attempt += 1
            await self._sleep(wait)

    def _classify(
        self, exc: Exception, litellm: Any, spec: ModelSpec, timeout: float
    ) -> ProviderError:
        provider = getattr(exc, "llm_provider", None) or spec.provider
        if provider == LITELLM_PROVIDER or not isinstance(provider, str):
            provider = spec.model.split("/", 1)[0] if "/" in spec.model else spec.provider
        key_env = spec.api_key_env or self._conventional_key_env(litellm, spec.model)
        error = classify(
            exc,
            litellm,
            provider=str(provider),
            model=spec.model,
            key_env=key_env,
            api_base=spec.api_base,
            timeout_s=timeout,
        )
        return error

    async def _attempt(
        self, litellm: Any, kwargs: dict[str, Any], timeout: float
    ) -> AsyncGenerator[StreamDelta | InferenceResponse, None]:
        # litellm bounds the HTTP request itself; this only backs it up (its first call
        # also spends seconds on lazy imports that must not count against the model).
        async with asyncio.timeout(timeout + _BACKSTOP_S):
            response = await litellm.acompletion(**kwargs)
        stream = StreamAssembler()
        iterator = response.__aiter__()
        try:
            while True:
                async with asyncio.timeout(timeout):
                    try:
                        chunk = await iterator.__anext__()
                    except StopAsyncIteration:
                        break
                for delta in stream.feed(chunk):
                    yield delta
        finally:
            close = getattr(response, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):  # a finished or broken stream may raise
                    await close()
        yield stream.response()
