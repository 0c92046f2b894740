"""Warming providers up before the server accepts requests.

The first request must not pay for a provider's start-up: litellm's import
takes seconds, so a server whose agents use litellm models imports it before
it binds its port (in a thread, so the event loop is not blocked).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os

from ._agents import AgentCatalog

__all__ = ["warm_up"]

log = logging.getLogger("awaken_server")

_MODULES = {"litellm": "litellm"}
"""Provider id -> the module its executor imports on first use."""


async def warm_up(catalog: AgentCatalog) -> list[str]:
    """Import the heavy provider libraries the catalog's models use; the ids warmed."""
    used = catalog.providers()
    warmed = []
    for provider, module in _MODULES.items():
        if provider not in used:
            continue
        try:
            await asyncio.to_thread(_import, module)
        except ImportError as exc:
            # Not fatal: runs on that provider fail with its typed "not installed" error.
            log.warning("provider %r cannot warm up: %s", provider, exc)
            continue
        warmed.append(provider)
    return warmed


def _import(module: str) -> None:
    # litellm's bundled price table, as every awaken command reads it: no remote fetch
    # (offline, three retries and duplicated warnings at start).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    importlib.import_module(module)
