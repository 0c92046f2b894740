"""Store URLs: ``memory://``, ``file:///dir``, ``sqlite:///path/awaken.db``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .._errors import AwakenError

__all__ = ["STORE_ENV", "default_store_url", "open_store"]

STORE_ENV = "AWAKEN_STORE"
"""Environment variable the CLI reads a store URL from."""


def default_store_url() -> str:
    """``$AWAKEN_STORE``, else SQLite in the user's data directory."""
    url = os.environ.get(STORE_ENV)
    if url:
        return url
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return "sqlite:///" + str(Path(base).absolute() / "awaken" / "awaken.db")


def open_store(url: str) -> Any:
    """Open the store a URL names; raises ``AwakenError`` for an unknown scheme.

    ``sqlite:///rel.db`` is relative, ``sqlite:////abs/awaken.db`` absolute
    (as in SQLAlchemy); ``file:///abs/dir`` is absolute. The query may set
    ``lease_ttl`` (seconds), e.g. ``sqlite:///awaken.db?lease_ttl=10``.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    options = _options(url, parts.query)
    if scheme == "memory":
        from ._memory import InMemoryStore

        return InMemoryStore(**options)
    path = unquote(parts.netloc + parts.path)
    if scheme == "sqlite":
        from ._sqlite import SQLiteStore

        target = path[1:] if path.startswith("/") else path
        if not target:
            raise AwakenError(f"store URL {url!r} has no path; use sqlite:///path/awaken.db")
        return SQLiteStore(target, **options)
    if scheme == "file":
        from ._file import FileStore

        if not path:
            raise AwakenError(f"store URL {url!r} has no directory; use file:///path/to/dir")
        return FileStore(path, **options)
    raise AwakenError(
        f"unknown store URL {url!r}; use memory://, file:///path/to/dir or "
        f"sqlite:///path/awaken.db (set it with --store or {STORE_ENV})"
    )


def _options(url: str, query: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for name, values in parse_qs(query).items():
        if name != "lease_ttl":
            raise AwakenError(f"store URL {url!r}: unknown option {name!r} (known: lease_ttl)")
        try:
            options[name] = float(values[-1])
        except ValueError:
            raise AwakenError(f"store URL {url!r}: lease_ttl must be a number") from None
    return options
