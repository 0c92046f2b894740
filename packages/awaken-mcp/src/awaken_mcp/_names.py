"""Namespaced tool ids: ``<server>__<tool>`` within the providers' function-name rules.

Providers accept ``[A-Za-z0-9_-]{1,64}`` as a function name, so the dot of
``server.tool`` becomes ``__`` and any other character outside that set
becomes ``_``. A name that had to change, or that is longer than 64, gets a
short digest of the original so two MCP names never share an id.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["tool_id"]

_BAD = re.compile(r"[^A-Za-z0-9_-]")
_MAX = 64


def tool_id(server_id: str, tool_name: str) -> str:
    """The awaken tool id of ``tool_name`` on server ``server_id``."""
    clean = _BAD.sub("_", tool_name)
    base = f"{server_id}__{clean}"
    if clean == tool_name and len(base) <= _MAX and tool_name:
        return base
    digest = hashlib.sha256(tool_name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base[: _MAX - 9]}_{digest}"
