"""Typed provider errors: what any executor raises when a model call fails.

Every :class:`ProviderError` carries the same fields as the run's
``ProviderFailure``: the error class, the HTTP status (when there was one),
whether a retry can help, the attempts made, the ``Retry-After`` the provider
asked for, the upstream provider and the model. The loop copies them into the
failure, so a caller branches on fields, never on message text.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .._errors import AwakenError

__all__ = [
    "ErrorClass",
    "ProviderAuthError",
    "ProviderBadRequest",
    "ProviderConnectionError",
    "ProviderContentFiltered",
    "ProviderContextLength",
    "ProviderError",
    "ProviderRateLimited",
    "ProviderTimeout",
    "ProviderUnavailable",
    "UnknownModelError",
]

ErrorClass: TypeAlias = Literal[
    "auth",
    "rate_limit",
    "timeout",
    "connection",
    "server",
    "bad_request",
    "context_length",
    "content_filter",
    "unknown_model",
    "unknown",
]
"""What kind of provider failure it was (``unknown``: none of the others)."""


class ProviderError(AwakenError):
    """A model provider call failed.

    ``retryable`` says whether another attempt can help (rate limits, timeouts,
    5xx, dropped connections); ``status`` is the HTTP status when known;
    ``retry_after`` the seconds the provider asked to wait (``Retry-After``);
    ``attempts`` how many requests were made for this call.
    """

    retryable = False
    error_class: ErrorClass = "unknown"

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.status = status
        self.retry_after = retry_after
        self.attempts = 1
        super().__init__(message)


class ProviderAuthError(ProviderError):
    """The provider rejected (or was never given) the credentials: 401/403."""

    error_class: ErrorClass = "auth"


class UnknownModelError(ProviderError):
    """The provider does not know the model, or the executor cannot tell the provider."""

    error_class: ErrorClass = "unknown_model"


class ProviderBadRequest(ProviderError):
    """The provider rejected the request itself (400/422): retrying cannot help."""

    error_class: ErrorClass = "bad_request"


class ProviderContextLength(ProviderBadRequest):
    """The request is longer than the model's context window."""

    error_class: ErrorClass = "context_length"


class ProviderContentFiltered(ProviderError):
    """The provider's content filter withheld the answer (``finish_reason=content_filter``)."""

    error_class: ErrorClass = "content_filter"


class ProviderRateLimited(ProviderError):
    """429: too many requests or tokens; retried with backoff (honouring Retry-After)."""

    retryable = True
    error_class: ErrorClass = "rate_limit"


class ProviderTimeout(ProviderError):
    """No response (or no next chunk) within the model's timeout."""

    retryable = True
    error_class: ErrorClass = "timeout"


class ProviderUnavailable(ProviderError):
    """5xx: the provider is (maybe briefly) unavailable."""

    retryable = True
    error_class: ErrorClass = "server"


class ProviderConnectionError(ProviderUnavailable):
    """The connection failed or dropped before an HTTP answer arrived."""

    error_class: ErrorClass = "connection"
