"""``open_store("postgresql://...")``: the store factory registered for the runtime's URLs.

The awaken options ride in the query string and are taken out before the
rest of the URL goes to libpq (which keeps its own parameters, ``sslmode`` and
the like): ``schema``, ``lease_ttl``, ``durable``, ``min_size``, ``max_size``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from awaken_runtime import AwakenError

from ._store import PostgresStore

__all__ = ["from_url"]

_NUMBERS = {"lease_ttl": float, "min_size": int, "max_size": int}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def from_url(url: str) -> PostgresStore:
    """A :class:`PostgresStore` for ``postgresql://user@host/db?schema=awaken&lease_ttl=30``.

    No I/O happens here: the pool opens and the schema is migrated on first use.
    """
    parts = urlsplit(url)
    options: dict[str, Any] = {}
    libpq: list[tuple[str, str]] = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == "schema":
            options["schema"] = value
        elif name in _NUMBERS:
            try:
                options[name] = _NUMBERS[name](value)
            except ValueError:
                raise AwakenError(
                    f"store URL {url!r}: {name} must be a number, got {value!r}"
                ) from None
        elif name == "durable":
            if value.lower() not in _TRUE | _FALSE:
                raise AwakenError(f"store URL {url!r}: durable must be true or false")
            options["durable"] = value.lower() in _TRUE
        else:
            libpq.append((name, value))
    dsn = urlunsplit(parts._replace(scheme="postgresql", query=urlencode(libpq)))
    return PostgresStore(dsn, **options)
