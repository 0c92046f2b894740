"""Random ids in the runtime's format (``prefix`` + 24 hex digits)."""

from __future__ import annotations

import secrets

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """A random id such as ``msg_9f3c...``."""
    return f"{prefix}{secrets.token_hex(12)}"
