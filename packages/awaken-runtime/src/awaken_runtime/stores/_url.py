"""Store URLs: ``memory://``, ``file:///dir``, ``sqlite:///path/awaken.db``, and any
scheme an installed distribution registers in the ``awaken.stores`` entry-point group
(``postgresql://`` from awaken-store-postgres)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .._errors import AwakenError

__all__ = ["STORE_ENV", "STORE_GROUP", "default_store_url", "open_store"]

STORE_GROUP = "awaken.stores"
"""Entry-point group of store factories: name = URL scheme, value = ``factory(url) -> store``
(the factory does no I/O; the store connects on first use)."""

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
    ``lease_ttl`` (seconds), e.g. ``sqlite:///awaken.db?lease_ttl=10``. Other
    schemes are looked up in the :data:`STORE_GROUP` entry points.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _BUILT_IN:
        return _plugin_store(url, scheme)
    options = _options(url, parts.query)
    if scheme == "memory":
        from .memory import InMemoryStore

        return InMemoryStore(**options)
    path = unquote(parts.netloc + parts.path)
    if scheme == "sqlite":
        from .sqlite import SQLiteStore

        target = path[1:] if path.startswith("/") else path
        if not target:
            raise AwakenError(f"store URL {url!r} has no path; use sqlite:///path/awaken.db")
        return SQLiteStore(target, **options)
    if scheme == "file":
        from .file import FileStore

        if not path:
            raise AwakenError(f"store URL {url!r} has no directory; use file:///path/to/dir")
        return FileStore(path, **options)
    raise AssertionError(scheme)  # pragma: no cover - _BUILT_IN lists the three above


_BUILT_IN = frozenset({"memory", "sqlite", "file"})


def _plugin_store(url: str, scheme: str) -> Any:
    from importlib.metadata import entry_points

    found = {ep.name.lower(): ep for ep in entry_points(group=STORE_GROUP)}
    entry = found.get(scheme)
    if entry is None:
        extra = "".join(f", {name}://" for name in sorted(found))
        hint = (
            "" if "postgresql" in found else "; pip install awaken-store-postgres for postgresql://"
        )
        raise AwakenError(
            f"unknown store URL {url!r}; use memory://, file:///path/to/dir, "
            f"sqlite:///path/awaken.db{extra} (set it with --store or {STORE_ENV}){hint}"
        )
    try:
        factory = entry.load()
    except Exception as exc:
        raise AwakenError(
            f"store scheme {scheme!r} is registered by {entry.value!r}, which failed to "
            f"import ({type(exc).__name__}: {exc}); reinstall its distribution"
        ) from exc
    return factory(url)


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
