"""``LiteLLMExecutor``: any model litellm supports, streamed, with retries and clear errors.

litellm is imported on first use, never at ``import awaken_runtime``, with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` (unless already set) so it reads its
bundled price table instead of fetching one. The import and what litellm's
first call loads lazily take seconds: they run in a worker thread (the first
``stream``, or ``warm_up`` at start), never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from .._errors import ProviderError
from .._model import (
    InferenceRequest,
    InferenceResponse,
    ModelSpec,
    Pricing,
    StreamDelta,
    TokenUsage,
)
from ._convert import ConvertedMessages
from ._embed import embed
from ._errors import LiteLLMNotInstalled, classify
from ._listeners import SuccessLogging, call_kwargs, success_listened
from ._request import completion_kwargs
from ._retry import RetryPolicy
from ._stream import StreamAssembler

__all__ = ["LITELLM_PROVIDER", "LiteLLMExecutor", "litellm_pricing"]

LITELLM_PROVIDER = "litellm"
"""The provider id ``awaken run`` registers :class:`LiteLLMExecutor` under."""

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_DEADLINE_S = 600.0
"""The default of ``LiteLLMExecutor.deadline_s``: retries cannot stretch a call past it."""
log = logging.getLogger("awaken_runtime.litellm")
_BACKSTOP_S = 30.0

_litellm: Any = None
_warmed = False


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


def _warm() -> Any:
    """Import litellm and load what its first completion would load lazily (blocking)."""
    global _warmed
    litellm = import_litellm()
    if not _warmed:
        # litellm imports modules on its first call (the OpenAI client, anyio's backend,
        # the token encoding its cost calculator reads, the stream assembler...): a
        # mocked streamed call (no network) on a private loop loads them here instead.
        with contextlib.suppress(Exception):
            asyncio.run(_mock_stream(litellm))
        for name in _FIRST_CALL_MODULES:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
        _warmed = True
    return litellm


async def _mock_stream(litellm: Any) -> None:
    response = await litellm.acompletion(
        model="openai/warm-up",
        messages=[{"role": "user", "content": "hi"}],
        mock_response="ok",
        stream=True,
        stream_options={"include_usage": True},
    )
    async for _ in response:
        pass


# What litellm (1.110) still imported on the event loop during a first real call.
_FIRST_CALL_MODULES = (
    "anyio._backends._asyncio",
    "litellm._service_logger",
    "litellm.litellm_core_utils.default_encoding",
    "litellm.litellm_core_utils.streaming_chunk_builder_utils",
    "litellm.proxy.spend_tracking.savings",
    "openai",
)


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


class LiteLLMExecutor:
    """An :class:`LlmExecutor` for every model litellm supports.

    ``ModelSpec.model`` is litellm's model name (``openai/gpt-4o-mini``,
    ``anthropic/claude-sonnet-4-5``, ``ollama_chat/llama3.1``, ...);
    ``api_base`` points at another server, ``api_key_env`` names the variable
    holding the key (default: litellm's convention, e.g. ``OPENAI_API_KEY``),
    ``timeout_s`` bounds the wait for the response and for each streamed chunk,
    and ``extra`` is passed to ``litellm.acompletion`` as keyword arguments.

    ``deadline_s`` (default 600 s) is the total time one model of a call may
    take before its first output, over every attempt and every backoff wait:
    each attempt gets at most the time left, and a retry that could not start
    before the deadline is not made (the call fails with ``ProviderTimeout``
    naming the deadline). Output already streaming is bounded per chunk by
    ``timeout_s`` instead. ``embed`` applies it to the whole call. ``None``:
    no total bound (each attempt its ``timeout_s``).

    ``success_logging="auto"`` (the default) lets litellm run its end-of-stream
    success logging only when something receives it: a callback in
    ``litellm.callbacks`` or ``litellm.success_callback``, a per-request
    ``callbacks``/``success_callback`` in ``extra``, or ``litellm.max_budget``.
    Otherwise the stream is closed as soon as its usage has arrived, before
    litellm builds a log record nobody reads (it copies the whole transcript).
    ``"always"`` reads every stream to its end.
    """

    def __init__(
        self,
        *,
        retry: RetryPolicy | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        sync_sleep: Callable[[float], Any] = time.sleep,
        success_logging: SuccessLogging = "auto",
        deadline_s: float | None = DEFAULT_DEADLINE_S,
    ) -> None:
        if success_logging not in ("auto", "always"):
            raise ValueError(
                f"LiteLLMExecutor(success_logging={success_logging!r}): expected 'auto' "
                f"(litellm logs a request when a callback listens) or 'always'"
            )
        self.success_logging: SuccessLogging = success_logging
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        if deadline_s is not None and not deadline_s > 0:
            raise ValueError(
                f"LiteLLMExecutor(deadline_s={deadline_s!r}): give a positive number of "
                f"seconds, or None for no total bound"
            )
        self.deadline_s = deadline_s
        self._sleep = sleep
        self._sync_sleep = sync_sleep
        self._pricing: dict[str, Pricing | None] = {}
        self._key_env: dict[str, str] = {}
        self._native: dict[str, bool] = {}
        # Each run's messages converted once: a step converts only its new ones.
        self._converted = ConvertedMessages()

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

    def _native_output(self, litellm: Any, model: str, spec: ModelSpec) -> bool:
        """Whether ``model`` takes a JSON-schema response format (litellm's table says)."""
        if spec.native_output is not None:
            return spec.native_output
        known = self._native.get(model)
        if known is None:
            try:
                known = bool(litellm.supports_response_schema(model=model))
            except Exception:  # an unmapped model: use the final-result tool
                known = False
            self._native[model] = known
        return known

    def _kwargs(self, request: InferenceRequest, litellm: Any) -> dict[str, Any]:
        spec = request.model
        return completion_kwargs(
            request,
            timeout_s=self.timeout_s,
            native_output=lambda: self._native_output(litellm, spec.model, spec),
            key_env=lambda: self._conventional_key_env(litellm, spec.model),
            messages=self._converted.convert(request.run_id, request.messages),
        )

    def embed(self, model: str, inputs: Sequence[str], **options: Any) -> list[list[float]]:
        """Embedding vectors of ``inputs`` from litellm's ``model`` (blocking: use a thread).

        The executor's retry policy and timeout apply (``timeout`` in ``options``
        overrides it), the SDK's own retries are off, and failures raise the same
        typed :class:`ProviderError` subclasses as inference.
        """
        return embed(
            import_litellm(),
            model,
            inputs,
            retry=self.retry,
            timeout_s=self.timeout_s,
            options=options,
            sleep=self._sync_sleep,
            deadline_s=self.deadline_s,
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

    async def warm_up(self) -> None:
        """Import litellm and run its first-call setup in a worker thread.

        Both take seconds and would otherwise block the event loop during the
        first inference; ``Runtime.warm_up`` calls this at start.
        """
        await asyncio.to_thread(_warm)

    async def stream(
        self, request: InferenceRequest
    ) -> AsyncIterator[StreamDelta | InferenceResponse]:
        """Stream one inference, retrying transient failures that happen before any output.

        After the retries, a failure whose class is in the spec's ``fallback_on``
        moves on to the next of its ``fallbacks``; the response names the model
        that answered.
        """
        litellm = _litellm or await asyncio.to_thread(_warm)
        spec = request.model
        kwargs = self._kwargs(request, litellm)
        names = (spec.model, *spec.fallbacks)
        attempts = 0
        emitted = False
        for n, name in enumerate(names):
            kwargs["model"] = name
            try:
                async for item in self._retrying(litellm, spec, kwargs, attempts):
                    emitted = True
                    if isinstance(item, InferenceResponse):
                        attempts = 0
                        update: dict[str, Any] = {"cost": self.cost(spec, item.usage)}
                        if n:  # a fallback answered: say which, and price it as itself
                            fallback = spec.model_copy(update={"model": name, "pricing": None})
                            update = {"cost": self.cost(fallback, item.usage), "model": name}
                        item = item.model_copy(update=update)
                    yield item
                return
            except ProviderError as error:
                attempts = error.attempts
                last = n + 1 == len(names)
                if last or emitted or error.error_class not in spec.fallback_on:
                    raise  # after streamed output, another model would repeat it
                log.warning("model %s failed (%s); falling back to %s", name, error, names[n + 1])

    async def _retrying(
        self, litellm: Any, spec: ModelSpec, kwargs: dict[str, Any], before: int
    ) -> AsyncGenerator[StreamDelta | InferenceResponse, None]:
        """One model's attempts; ``before`` counts the requests earlier models made."""
        timeout = float(kwargs["timeout"])
        name = kwargs["model"]
        if name != spec.model:
            spec = spec.model_copy(update={"model": name})
        policy = self.retry
        clock = asyncio.get_running_loop().time
        deadline = None if self.deadline_s is None else clock() + self.deadline_s
        attempt = 0
        while True:
            emitted = noted = False
            wait: float | None = None
            call = kwargs
            if deadline is not None and deadline - clock() < timeout:
                call = {**kwargs, "timeout": max(deadline - clock(), 0.001)}
            try:
                attempt_items = self._attempt(litellm, call, timeout, deadline)
                async with contextlib.aclosing(attempt_items) as items:
                    async for item in items:
                        emitted = True
                        yield item
                return
            except Exception as exc:
                error = self._classify(exc, litellm, spec, timeout)
                error.attempts = before + attempt + 1
                after = error.retry_after
                if error.retryable and not emitted:
                    if policy.too_long(after):
                        error.args = (
                            f"{error.args[0]} (the provider asked to retry after {after:g}s, "
                            f"more than RetryPolicy.max_retry_after_s={policy.max_retry_after_s:g}"
                            f"s; raise max_retry_after_s to wait that long)",
                        )
                    else:
                        wait = policy.delay(attempt, after)
                        if deadline is not None and clock() + (wait or 0.0) >= deadline:
                            wait = None
                            error.args = (
                                f"{error.args[0]} (gave up at the call's deadline: "
                                f"LiteLLMExecutor.deadline_s={self.deadline_s:g}s, "
                                f"{attempt + 1} attempts)",
                            )
                            noted = True  # the note above says why: no second one
                if wait is None:
                    if attempt and not noted and not policy.too_long(after):
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
        self, litellm: Any, kwargs: dict[str, Any], timeout: float, deadline: float | None
    ) -> AsyncGenerator[StreamDelta | InferenceResponse, None]:
        # litellm bounds the HTTP request itself; this only backs it up (its first call
        # also spends seconds on lazy imports that must not count against the model).
        # litellm schedules its success logging on the read after the usage chunk; when
        # nothing listens, stop before it (the finally below closes the HTTP stream).
        # Until the first output, the call's deadline (if sooner) bounds every wait.
        stop_at_usage = self.success_logging == "auto" and not success_listened(litellm, kwargs)
        clock = asyncio.get_running_loop().time
        first_by = deadline
        async with asyncio.timeout_at(_sooner(clock() + timeout + _BACKSTOP_S, first_by)):
            response = await litellm.acompletion(**call_kwargs(kwargs))
        stream = StreamAssembler()
        iterator = response.__aiter__()
        try:
            while True:
                async with asyncio.timeout_at(_sooner(clock() + timeout, first_by)):
                    try:
                        chunk = await iterator.__anext__()
                    except StopAsyncIteration:
                        break
                for delta in stream.feed(chunk):
                    first_by = None  # output reached the caller: only timeout_s from here
                    yield delta
                if stop_at_usage and stream.ended:
                    break
        finally:
            close = getattr(response, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):  # a finished or broken stream may raise
                    await close()
        yield stream.response()


def _sooner(at: float, deadline: float | None) -> float:
    return at if deadline is None or at < deadline else deadline
