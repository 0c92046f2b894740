"""How the run's parts end a run.

``End`` unwinds a run leg with its end cause (``fail`` for a typed failure);
``interrupted`` turns a task cancellation inside an armed await into a
``Cancelled`` end.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..lifecycle._failures import AbandonedFailure, Cancelled, EndCause, Error, LeaseLostFailure
from ..tools._cancel import CancellationToken

__all__ = ["End", "abandoned", "fail", "interrupted", "lease_lost", "log"]

log = logging.getLogger("awaken_runtime")


class End(Exception):
    """Internal: unwinds the run with an end cause."""

    def __init__(self, cause: EndCause) -> None:
        self.cause = cause


def fail(failure: Any) -> End:
    """An :class:`End` carrying ``Error(failure)``."""
    return End(Error(failure=failure))


def lease_lost(thread_id: str, why: str) -> Error:
    """The end cause of a run that lost its thread (``why``: what the store said)."""
    return Error(failure=LeaseLostFailure(thread_id=thread_id, message=why))


def abandoned(thread_id: str, why: str) -> Error:
    """The end cause of a run whose process died, recorded by the one that took over."""
    return Error(failure=AbandonedFailure(thread_id=thread_id, message=why))


def interrupted(token: CancellationToken) -> BaseException:
    """Turn a CancelledError raised inside an armed await into a Cancelled end."""
    task = asyncio.current_task()
    if token.cancelled and task is not None:
        task.uncancel()
        return End(Cancelled())
    return asyncio.CancelledError()
