"""Embeddings through litellm with the executor's retry policy, timeout and typed errors.

A call has a total deadline (``deadline_s``) over every attempt and backoff
wait: each attempt runs in a daemon thread and is waited for at most the time
left (litellm's own timeout is set to it too, so an abandoned attempt ends on
its own soon after), and a retry that could not start before the deadline is
not made. The call then fails with ``ProviderTimeout`` naming the deadline.

``litellm.embedding`` treats ``max_retries=0`` as "the default", so the
OpenAI SDK under it would retry twice on its own (hidden from the policy,
and ignoring it); :data:`NO_RETRIES` is a zero it keeps. Blocking: call it
from a worker thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from .._errors import ProviderError
from ._errors import classify
from ._retry import RetryPolicy

__all__ = ["NO_RETRIES", "embed"]


class _NoRetries(int):
    """Zero retries that litellm's ``max_retries or DEFAULT_MAX_RETRIES`` keeps as zero.

    ``litellm.embedding`` replaces a falsy ``max_retries`` (0) with its default (2),
    and sets that on the OpenAI client it uses; a zero that is truthy survives
    both and the OpenAI SDK then makes exactly one request per call.
    """

    def __bool__(self) -> bool:
        return True


NO_RETRIES = _NoRetries(0)


def embed(
    litellm: Any,
    model: str,
    inputs: Sequence[str],
    *,
    retry: RetryPolicy,
    timeout_s: float,
    options: dict[str, Any],
    sleep: Callable[[float], Any] = time.sleep,
    deadline_s: float | None = None,
) -> list[list[float]]:
    """The embedding vectors of ``inputs`` (in order), retried under ``retry`` within
    ``deadline_s`` seconds in all (``None``: each attempt bounded by its timeout only)."""
    kwargs: dict[str, Any] = {"timeout": timeout_s, "max_retries": NO_RETRIES, **options}
    provider = model.split("/", 1)[0] if "/" in model else "litellm"
    deadline = None if deadline_s is None else time.monotonic() + deadline_s
    attempt = 0
    while True:
        call = kwargs
        left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
        if left is not None and left < float(kwargs["timeout"]):
            call = {**kwargs, "timeout": left}
        try:
            response = _within(
                left, partial(litellm.embedding, model=model, input=list(inputs), **call)
            )
            break
        except Exception as exc:
            error = classify(
                exc,
                litellm,
                provider=provider,
                model=model,
                key_env=None,
                api_base=kwargs.get("api_base"),
                timeout_s=float(call["timeout"]),
            )
            error.attempts = attempt + 1
            wait = retry.delay(attempt, error.retry_after) if error.retryable else None
            late = deadline is not None and time.monotonic() + (wait or 0.0) >= deadline
            if error.retryable and late:
                error.args = (
                    f"{error.args[0]} (gave up at the call's deadline of {deadline_s:g}s, "
                    f"{attempt + 1} attempts; raise deadline_s to wait longer)",
                )
                raise error from exc
            if wait is None:
                raise _final(error, attempt, retry) from exc
        attempt += 1
        sleep(wait)
    data = response["data"] if isinstance(response, dict) else response.data
    rows = sorted((_item(item) for item in data), key=lambda pair: pair[0])
    return [vector for _index, vector in rows]


def _within(seconds: float | None, call: Callable[[], Any]) -> Any:
    """``call()``, or ``TimeoutError`` once ``seconds`` pass (the call is abandoned)."""
    if seconds is None:
        return call()
    done = threading.Event()
    box: list[Any] = []

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # handed to the caller below
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="awaken-embed-attempt", daemon=True).start()
    if not done.wait(seconds):
        raise TimeoutError(f"no answer within {seconds:g}s")
    ok, value = box[0]
    if not ok:
        raise value
    return value


def _final(error: ProviderError, attempt: int, retry: RetryPolicy) -> ProviderError:
    if retry.too_long(error.retry_after):
        error.args = (
            f"{error.args[0]} (the provider asked to retry after {error.retry_after:g}s, more "
            f"than RetryPolicy.max_retry_after_s={retry.max_retry_after_s:g}s)",
        )
    elif attempt:
        error.args = (f"{error.args[0]} (gave up after {attempt + 1} attempts)",)
    return error


def _item(item: Any) -> tuple[int, list[float]]:
    if isinstance(item, dict):
        return int(item.get("index", 0)), list(item["embedding"])
    return int(getattr(item, "index", 0)), list(item.embedding)
