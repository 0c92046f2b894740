"""Typed provider errors of :class:`LiteLLMExecutor` and the mapping from litellm's.

litellm raises its own exception classes (``litellm.RateLimitError``,
``litellm.AuthenticationError``, ...; OpenAI SDK subclasses). :func:`classify`
turns one into a :class:`ProviderError` subclass that says whether a retry can
help and whose message names the provider, the model and the fix. The loop
reports it as ``Error(ProviderFailure)``.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from typing import Any

from ..._errors import AwakenError
from .._errors import (
    ProviderAuthError,
    ProviderBadRequest,
    ProviderConnectionError,
    ProviderContextLength,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    UnknownModelError,
)

__all__ = ["LiteLLMNotInstalled"]

INSTALL_HINT = 'pip install "awaken-runtime[litellm]"'


class LiteLLMNotInstalled(AwakenError, ImportError):
    """litellm is not installed but a model bound to the litellm provider ran."""

    def __init__(self) -> None:
        super().__init__(
            f"the litellm provider needs the litellm package, which is not installed; "
            f"install it with: {INSTALL_HINT}"
        )


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds a ``Retry-After`` / ``retry-after-ms`` header asks to wait, if any."""
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _retry_after(exc: BaseException) -> float | None:
    """The wait an error response asked for, from its headers (any status)."""
    response = getattr(exc, "response", None)
    after = retry_after_seconds(getattr(response, "headers", None))
    if after is None:
        after = retry_after_seconds(getattr(exc, "headers", None))
    return after


# What the OpenAI SDK (and httpx under it) raise when no HTTP answer arrived.
_CONNECTION_NAMES = frozenset(
    {"APIConnectionError", "ConnectError", "RemoteProtocolError", "ReadError", "WriteError"}
)


def _dropped(exc: BaseException, litellm: Any) -> bool:
    """Whether ``exc`` (or what caused it) is a failed or dropped connection, not a 5xx.

    litellm wraps a dropped connection in ``InternalServerError``/``APIConnectionError``
    with status 500 although no HTTP answer arrived; the cause chain tells the truth.
    """
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            return False
        if type(seen).__name__ in _CONNECTION_NAMES or isinstance(seen, ConnectionError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _detail(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc).strip()
    # litellm prefixes "litellm.XError: XError: OpenAIException - "; keep the provider's words.
    for marker in ("Exception - ", "Error: "):
        if marker in text:
            text = text.rsplit(marker, 1)[-1]
    return text[:500] or type(exc).__name__


# A generic ``litellm.APIError`` still carries the HTTP status: map by it when the type
# says nothing more specific (litellm raises APIError for e.g. a plain 403).
_BY_STATUS = {
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    400: "BadRequestError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
    408: "Timeout",
}


def _is(exc: BaseException, litellm: Any, *names: str) -> bool:
    status = getattr(exc, "status_code", None)
    if type(exc).__name__ == "APIError" and isinstance(status, int):
        by_status = _BY_STATUS.get(status)
        if by_status is not None and by_status in names:
            return True
    for name in names:
        cls = getattr(litellm, name, None) or getattr(litellm.exceptions, name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return True
    return False


def classify(
    exc: BaseException,
    litellm: Any,
    *,
    provider: str,
    model: str,
    key_env: str | None,
    api_base: str | None,
    timeout_s: float,
) -> ProviderError:
    """Map an exception raised by litellm (or by the stream) to a :class:`ProviderError`."""
    if isinstance(exc, ProviderError):
        return exc
    who = f"{provider} model {model!r}"
    where = f" at {api_base}" if api_base else ""
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    detail = _detail(exc)
    kw: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "status": status,
        "retry_after": _retry_after(exc),
    }
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or _is(exc, litellm, "Timeout"):
        return ProviderTimeout(
            f"{who}{where} did not respond within {timeout_s:g}s; raise the model's "
            f"timeout_s if it is just slow",
            **{**kw, "status": None},  # no HTTP answer came (litellm says 408 regardless)
        )
    if _is(exc, litellm, "RateLimitError"):
        return ProviderRateLimited(
            f"{who}{where} is rate limited (HTTP 429): {detail}; slow down, raise the "
            f"account's limits, or allow more retries (RetryPolicy.max_retries)",
            **kw,
        )
    if _is(exc, litellm, "AuthenticationError", "PermissionDeniedError"):
        if key_env:
            fix = f"set the environment variable {key_env} to a valid API key"
        else:
            fix = "pass a valid API key (set api_key_env on the model spec)"
        if api_base:
            fix += f" for the server at {api_base}"
        return ProviderAuthError(
            f"{who} rejected the credentials (HTTP {status or 401}): {detail}; {fix}", **kw
        )
    form = (
        "write it as PROVIDER/MODEL in litellm's form, e.g. openai/gpt-4o-mini, "
        "anthropic/claude-sonnet-4-5, ollama_chat/llama3.1"
    )
    if _is(exc, litellm, "LiteLLMUnknownProvider") or (
        _is(exc, litellm, "BadRequestError") and "LLM Provider NOT provided" in str(exc)
    ):
        return UnknownModelError(
            f"litellm cannot tell the provider of model {model!r}; {form} "
            f"(providers: https://docs.litellm.ai/docs/providers)",
            **{**kw, "status": None},
        )
    if _is(exc, litellm, "NotFoundError"):
        return UnknownModelError(
            f"{who}{where} is unknown (HTTP {status or 404}): {detail}; check the model "
            f"name and {form}",
            **kw,
        )
    if _is(exc, litellm, "ContextWindowExceededError"):
        return ProviderContextLength(
            f"{who}: the request exceeds the context window: {detail}; use a context "
            f"policy such as KeepLast, or a model with a larger window",
            **kw,
        )
    if _is(exc, litellm, "UnsupportedParamsError"):
        return ProviderBadRequest(
            f"{who}: {detail}; remove the parameter from the agent's params, or set "
            f"extra = {{drop_params = true}} on the model spec to drop it silently",
            **kw,
        )
    if _is(exc, litellm, "BadRequestError", "UnprocessableEntityError"):
        return ProviderBadRequest(
            f"{who}{where} rejected the request (HTTP {status or 400}): {detail}; this is not "
            f"retried: fix the request (messages, tools or parameters)",
            **kw,
        )
    if _dropped(exc, litellm):
        return ProviderConnectionError(
            f"{who}{where}: the connection failed or dropped before an answer: {detail}; "
            f"check that the server is up and reachable",
            **{**kw, "status": None},
        )
    if _is(
        exc,
        litellm,
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
    ) or (status is not None and status >= 500):
        return ProviderUnavailable(
            f"{who}{where} is unavailable"
            + (f" (HTTP {status})" if status else "")
            + f": {detail}; retry later or check the provider's status",
            **kw,
        )
    return ProviderError(f"{who}{where} failed: {type(exc).__name__}: {detail}", **kw)
