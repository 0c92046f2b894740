"""The typed ``ProviderFailure`` of a model call that raised or was filtered.

A :class:`ProviderError` (any executor's) carries every field the failure
has; another exception from an executor becomes an ``unknown`` failure of
the model's provider.
"""

from __future__ import annotations

from ..lifecycle._failures import ProviderFailure
from ..models._errors import ProviderError
from ..models._model import ModelSpec

__all__ = ["filtered", "provider_failure", "upstream"]


def upstream(model: ModelSpec) -> str:
    """The upstream provider of ``model``: the prefix of ``openai/gpt-4o`` style names."""
    name = model.model
    return name.split("/", 1)[0] if "/" in name else model.provider


def provider_failure(exc: BaseException, model: ModelSpec) -> ProviderFailure:
    """The failure of a model call that raised ``exc``."""
    if isinstance(exc, ProviderError):
        return ProviderFailure(
            provider=exc.provider,
            model=exc.model,
            message=f"{type(exc).__name__}: {exc}",
            error_class=exc.error_class,
            status=exc.status,
            retryable=exc.retryable,
            attempts=exc.attempts,
            retry_after=exc.retry_after,
        )
    return ProviderFailure(
        provider=upstream(model), model=model.model, message=f"{type(exc).__name__}: {exc}"
    )


def filtered(model: ModelSpec) -> ProviderFailure:
    """The failure of an answer the provider's content filter withheld."""
    return ProviderFailure(
        provider=upstream(model),
        model=model.model,
        message=(
            f"model {model.model!r}: the provider's content filter withheld the answer "
            f"(finish_reason=content_filter); rephrase the request or use another model"
        ),
        error_class="content_filter",
    )
