"""``RetryPolicy``: how often and how long a provider call is retried.

The semantics follow the OpenAI SDK's: a ``Retry-After`` (seconds or an HTTP
date) or ``retry-after-ms`` on any retryable answer is honoured; ``0`` means
"no advice" and falls back to exponential backoff; a wait above
``max_retry_after_s`` is not waited out but fails the call at once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries for rate limits, timeouts, 5xx and dropped connections.

    Attempt ``n`` (from 0) waits ``min(max_delay_s, initial_delay_s * multiplier**n)``
    scaled down by up to ``jitter`` (0.5: a random 50-100% of it). A positive
    ``Retry-After`` from the provider is honoured as given, unless it exceeds
    ``max_retry_after_s``: then the call fails instead of waiting that long.
    Auth errors, bad requests and unknown models are never retried, nor is a
    failure after output was streamed.
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

    def too_long(self, retry_after: float | None) -> bool:
        """Whether the provider asked for a wait above ``max_retry_after_s``."""
        return retry_after is not None and retry_after > self.max_retry_after_s

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry ``attempt`` (0-based), or ``None`` to give up."""
        if attempt >= self.max_retries or self.too_long(retry_after):
            return None
        if retry_after:  # 0 (or None) is no advice: back off as usual
            return retry_after
        base = min(self.max_delay_s, self.initial_delay_s * self.multiplier**attempt)
        return base * (1 - self.jitter * random.random())
