"""Bearer keys mapped to profiles (``--keys FILE`` or ``AWAKEN_SERVER_KEYS``)."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import HTTPConnection

from ._problems import Problem

__all__ = ["KEYS_ENV", "KeyConfigError", "KeyRing", "Principal"]

KEYS_ENV = "AWAKEN_SERVER_KEYS"
"""Comma list of ``key:profile`` pairs."""

_PROFILE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_MIN_KEY = 16


class KeyConfigError(ValueError):
    """A key list that cannot be used (names the entry and the fix)."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the profile a key maps to, and an id for per-key limits."""

    profile_id: str
    key_id: str
    """A short digest of the key (never the key itself), for logs and caps."""


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


class KeyRing:
    """Looks bearer keys up in constant time per key; ``None`` means auth is off."""

    def __init__(self, pairs: dict[str, str] | None) -> None:
        self._keys = (
            None
            if pairs is None
            else [(_digest(k), Principal(p, _digest(k).hex()[:12])) for k, p in pairs.items()]
        )

    @property
    def enabled(self) -> bool:
        """Whether requests need a key."""
        return self._keys is not None

    @classmethod
    def parse(cls, text: str, *, source: str) -> KeyRing:
        """Read ``key:profile`` pairs separated by commas or newlines (``#`` comments)."""
        pairs: dict[str, str] = {}
        where: dict[str, int] = {}
        for n, raw in enumerate(re.split(r"[,\n]", text), 1):
            entry = raw.partition("#")[0].strip()
            if not entry:
                continue
            key, sep, profile = entry.rpartition(":")
            key, profile = key.strip(), profile.strip()
            if not sep or not key:
                raise KeyConfigError(f"{source}: entry {n} is not 'key:profile'; write KEY:PROFILE")
            if len(key) < _MIN_KEY:
                raise KeyConfigError(
                    f"{source}: entry {n} has a key of {len(key)} characters; use at least "
                    f"{_MIN_KEY} random characters (e.g. `openssl rand -hex 24`)"
                )
            if not _PROFILE.match(profile):
                raise KeyConfigError(
                    f"{source}: entry {n} has profile {profile!r}; use 1-64 of A-Z a-z 0-9 _ . -"
                )
            if key in pairs:
                # Name the entries and profiles, never the key: the message reaches logs.
                raise KeyConfigError(
                    f"{source}: entries {where[key]} and {n} repeat a key (key id "
                    f"{_digest(key).hex()[:12]}, profiles {pairs[key]!r} and {profile!r}); "
                    f"each key maps to one profile: remove one entry or give it a new key"
                )
            pairs[key] = profile
            where[key] = n
        if not pairs:
            raise KeyConfigError(f"{source}: no keys; give KEY:PROFILE pairs or run with --no-auth")
        return cls(pairs)

    @classmethod
    def from_sources(cls, keys_file: str | None, *, no_auth: bool) -> KeyRing:
        """The keys of ``--keys FILE``, else ``AWAKEN_SERVER_KEYS``, else off if ``no_auth``."""
        if keys_file is not None:
            try:
                text = Path(keys_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise KeyConfigError(
                    f"cannot read keys file {keys_file!r}: {exc.strerror}"
                ) from None
            return cls.parse(text, source=keys_file)
        env = os.environ.get(KEYS_ENV)
        if env:
            return cls.parse(env, source=KEYS_ENV)
        if no_auth:
            return cls(None)
        raise KeyConfigError(
            f"no keys: give --keys FILE or set {KEYS_ENV}=key:profile,... "
            f"(or --no-auth on a loopback host, for local development only)"
        )

    def authenticate(self, conn: HTTPConnection) -> Principal:
        """The caller of ``conn``; raises a 401 problem for a missing or unknown key."""
        if self._keys is None:
            return Principal("default", "no-auth")
        header = conn.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Problem(
                401,
                "unauthorized",
                "this endpoint needs a bearer key",
                field="header:Authorization",
                fix="send 'Authorization: Bearer <key>'",
                headers={"WWW-Authenticate": 'Bearer realm="awaken"'},
            )
        given = _digest(token.strip())
        found: Principal | None = None
        for digest, principal in self._keys:
            # Compare against every key so timing does not tell how far a guess got.
            if hmac.compare_digest(digest, given):
                found = principal
        if found is None:
            raise Problem(
                401,
                "unauthorized",
                "the bearer key is not known to this server",
                field="header:Authorization",
                fix="use a key listed in the server's --keys file or AWAKEN_SERVER_KEYS",
                headers={"WWW-Authenticate": 'Bearer realm="awaken", error="invalid_token"'},
            )
        return found
