"""Warming a runtime up: what ``Runtime.warm_up`` runs at start.

Two first-use costs would otherwise land on the event loop during the first
run: each executor's own (``LiteLLMExecutor`` imports litellm and loads what
its first call would, in a worker thread) and the runtime's (its pydantic
models are built on first use, ``defer_build``). Both are paid here.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterable

from pydantic import BaseModel

from .._exports import LAZY

__all__ = ["warm_up"]


def _build_models() -> None:
    """Build the schemas of every public pydantic model not built yet."""
    for name, module in LAZY.items():
        value = getattr(importlib.import_module(f"awaken_runtime.{module}"), name)
        built = not isinstance(value, type) or not issubclass(value, BaseModel)
        if not built and not value.__pydantic_complete__:
            value.model_rebuild()
    from ..lifecycle._events import event_adapter

    event_adapter.rebuild()


async def warm_up(executors: Iterable[object]) -> None:
    """Build the runtime's models and await ``warm_up()`` of every executor that has one."""
    pending = [asyncio.to_thread(_build_models)]
    for executor in executors:
        method = getattr(executor, "warm_up", None)
        if callable(method):
            pending.append(method())
    await asyncio.gather(*pending)
