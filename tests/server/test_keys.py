"""The keys file and the auth middleware: what a key list may hold, and who a header is.

Hostile key lists (a key twice, short keys, bad profiles) are refused at load
with the entries named; a valid key under any scheme but ``Bearer`` is a 401,
in process (the middleware around a one-route app) and on a real server.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from srv_util import ALICE, BOB, Served
from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from awaken_server import KEYS_ENV, KeyConfigError, KeyRing, Principal
from awaken_server._app import AuthMiddleware

K1 = "k1-0123456789abcdef"
K2 = "k2-0123456789abcdef"
K3 = "k3-0123456789abcdef"


def _key_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _refused(text: str, *needles: str) -> str:
    with pytest.raises(KeyConfigError) as info:
        KeyRing.parse(text, source="keys.txt")
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    return message


# -- loading -----------------------------------------------------------------------------


def test_a_key_listed_twice_is_refused_naming_both_entries_and_profiles() -> None:
    message = _refused(
        f"{K1}:alice\n{K2}:bob\n{K1}:mallory\n",
        "keys.txt: entries 1 and 3 repeat a key",
        f"key id {_key_id(K1)},",
        "profiles 'alice' and 'mallory'",
        "remove one entry",
    )
    assert K1 not in message  # the key itself never reaches a log


def test_a_key_listed_twice_for_the_same_profile_is_refused_too() -> None:
    _refused(f"{K1}:alice, {K1}:alice", "entries 1 and 2 repeat a key", "'alice' and 'alice'")


def test_blanks_and_comments_do_not_hide_a_repeat_and_keep_the_entry_numbers() -> None:
    # Entries are the pieces between commas and newlines (`bob,` then a line break: 2).
    text = f"# keys\n\n{K1}:alice  # first\n{K2}:bob,\n  {K1}  :  carol  \n"
    _refused(text, "entries 3 and 6 repeat a key", "profiles 'alice' and 'carol'")


@settings(max_examples=100, deadline=None)
@given(
    keys=st.lists(
        st.text(alphabet="abcdef0123456789-_", min_size=16, max_size=24),
        min_size=1,
        max_size=6,
        unique=True,
    ),
    data=st.data(),
)
def test_any_repeated_key_is_refused_at_its_second_entry(keys: list[str], data: Any) -> None:
    entries = [f"{k}:p{i}" for i, k in enumerate(keys)]
    first = data.draw(st.integers(0, len(keys) - 1))
    at = data.draw(st.integers(first + 1, len(keys)))
    entries.insert(at, f"{keys[first]}:other")
    message = _refused(",".join(entries), f"entries {first + 1} and {at + 1} repeat a key")
    assert f"profiles 'p{first}' and 'other'" in message


def test_everything_after_the_first_hash_is_a_comment() -> None:
    ring = KeyRing.parse(f"{K1}:alice # a # b\n{K2}:bob#x#y", source="keys.txt")
    assert ring.authenticate(_conn(f"Bearer {K1}")).profile_id == "alice"
    assert ring.authenticate(_conn(f"Bearer {K2}")).profile_id == "bob"


def test_distinct_keys_load_each_to_its_profile() -> None:
    ring = KeyRing.parse(f"{K1}:alice\n{K2}:bob # b\n,{K3}:carol", source="keys.txt")
    assert ring.enabled
    for key, profile in ((K1, "alice"), (K2, "bob"), (K3, "carol")):
        assert ring.authenticate(_conn(f"Bearer {key}")) == Principal(profile, _key_id(key))


def test_a_key_may_hold_colons_the_profile_is_after_the_last() -> None:
    key = "a:b:c-0123456789abcdef"
    ring = KeyRing.parse(f"{key}:alice", source="keys.txt")
    assert ring.authenticate(_conn(f"Bearer {key}")).profile_id == "alice"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "keys.txt: no keys"),
        ("# only a comment\n\n", "keys.txt: no keys"),
        ("no-separator-0123456789", "entry 1 is not 'key:profile'"),
        (f"{K1}:alice\n:bob", "entry 2 is not 'key:profile'"),
        ("k" * 15 + ":alice", "entry 1 has a key of 15 characters; use at least 16"),
        (f"{K1}:", "entry 1 has profile ''"),
        (f"{K1}:bad profile", "has profile 'bad profile'"),
        (f"{K1}:" + "p" * 65, "use 1-64 of"),
        (f"{K1}:alice\n{K2}:b/ob", "entry 2 has profile 'b/ob'"),
    ],
)
def test_broken_entries_are_refused_by_position(text: str, needle: str) -> None:
    _refused(text, needle)


def test_the_bounds_themselves_are_accepted() -> None:
    key = "k" * 16
    ring = KeyRing.parse(f"{key}:" + "p" * 64 + f",{K1}:a.b_c-D9", source="keys.txt")
    assert ring.authenticate(_conn(f"Bearer {key}")).profile_id == "p" * 64
    assert ring.authenticate(_conn(f"Bearer {K1}")).profile_id == "a.b_c-D9"


def test_sources_file_first_then_environment_then_no_auth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"{K1}:from-file\n", encoding="utf-8")
    monkeypatch.setenv(KEYS_ENV, f"{K2}:from-env")
    ring = KeyRing.from_sources(str(keys), no_auth=True)
    assert ring.authenticate(_conn(f"Bearer {K1}")).profile_id == "from-file"
    _unauthorized(ring, f"Bearer {K2}")
    ring = KeyRing.from_sources(None, no_auth=True)
    assert ring.authenticate(_conn(f"Bearer {K2}")).profile_id == "from-env"
    monkeypatch.setenv(KEYS_ENV, f"{K2}:a,{K2}:b")
    with pytest.raises(KeyConfigError, match=f"{KEYS_ENV}: entries 1 and 2 repeat a key"):
        KeyRing.from_sources(None, no_auth=True)
    monkeypatch.delenv(KEYS_ENV)
    off = KeyRing.from_sources(None, no_auth=True)
    assert not off.enabled
    assert off.authenticate(_conn(None)) == Principal("default", "no-auth")
    with pytest.raises(KeyConfigError, match="no keys: give --keys FILE"):
        KeyRing.from_sources(None, no_auth=False)
    with pytest.raises(KeyConfigError, match="cannot read keys file"):
        KeyRing.from_sources(str(tmp_path / "missing"), no_auth=True)
    keys.write_text(f"{K1}:a\n{K1}:b\n", encoding="utf-8")
    with pytest.raises(KeyConfigError, match=f"{keys}: entries 1 and 2 repeat a key"):
        KeyRing.from_sources(str(keys), no_auth=True)


# -- the header ----------------------------------------------------------------------------


def _conn(authorization: str | None) -> HTTPConnection:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return HTTPConnection({"type": "http", "headers": headers, "path": "/", "method": "GET"})


def _unauthorized(ring: KeyRing, authorization: str | None) -> Any:
    from awaken_server._problems import Problem

    with pytest.raises(Problem) as info:
        ring.authenticate(_conn(authorization))
    assert info.value.status == 401
    return info.value


RING = KeyRing({K1: "alice", K2: "bob"})

NOT_BEARER = [
    f"Basic {K1}",
    f"Token {K1}",
    f"Digest {K1}",
    f"Bearerx {K1}",
    f"Bear {K1}",
    f"Bearer: {K1}",
    f" Bearer {K1}",
    f"Bearer\t{K1}",
    f"{K1}",
    f"{K1} Bearer",
    f"Bearer{K1}",
]


NEEDS_KEY = (
    {
        "type": "https://awaken.dev/problems/unauthorized",
        "title": "unauthorized",
        "status": 401,
        "detail": "this endpoint needs a bearer key",
        "field": "header:Authorization",
        "fix": "send 'Authorization: Bearer <key>'",
    },
    {"WWW-Authenticate": 'Bearer realm="awaken"'},
)
UNKNOWN_KEY = (
    {
        "type": "https://awaken.dev/problems/unauthorized",
        "title": "unauthorized",
        "status": 401,
        "detail": "the bearer key is not known to this server",
        "field": "header:Authorization",
        "fix": "use a key listed in the server's --keys file or AWAKEN_SERVER_KEYS",
    },
    {"WWW-Authenticate": 'Bearer realm="awaken", error="invalid_token"'},
)


def _exactly(problem: Any, expected: tuple[dict[str, Any], dict[str, str]]) -> None:
    assert (problem.body(), problem.headers) == expected


@pytest.mark.parametrize("header", NOT_BEARER)
def test_a_valid_key_under_another_scheme_is_refused(header: str) -> None:
    _exactly(_unauthorized(RING, header), NEEDS_KEY)


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer ", "Bearer    ", "bearer \t"])
def test_no_key_is_refused(header: str | None) -> None:
    _exactly(_unauthorized(RING, header), NEEDS_KEY)


@pytest.mark.parametrize(
    "header", [f"Bearer {K3}", f"Bearer {K1}x", f"Bearer {K1[:-1]}", f"Bearer {K1} {K2}"]
)
def test_an_unknown_key_is_refused(header: str) -> None:
    _exactly(_unauthorized(RING, header), UNKNOWN_KEY)


@pytest.mark.parametrize(
    "header", [f"Bearer {K2}", f"bearer {K2}", f"BEARER {K2}", f"Bearer  {K2} ", f"Bearer {K2}\t"]
)
def test_the_scheme_ignores_case_and_the_key_its_surrounding_blanks(header: str) -> None:
    assert RING.authenticate(_conn(header)) == Principal("bob", _key_id(K2))


# -- the middleware, in process and on a real server ---------------------------------------


async def _whoami(request: Request) -> Response:
    principal = request.scope["state"]["principal"]
    return JSONResponse({"profile": principal.profile_id})


def _client() -> TestClient:
    app = Starlette(routes=[Route("/v1/whoami", _whoami)])
    return TestClient(AuthMiddleware(app, RING))


@pytest.mark.parametrize("header", NOT_BEARER[:4])
def test_the_middleware_answers_401_to_a_valid_key_under_another_scheme(header: str) -> None:
    r = _client().get("/v1/whoami", headers={"Authorization": header})
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["field"] == "header:Authorization"


def test_the_middleware_passes_the_principal_of_a_bearer_key() -> None:
    r = _client().get("/v1/whoami", headers={"Authorization": f"Bearer {K1}"})
    assert (r.status_code, r.json()) == (200, {"profile": "alice"})


@pytest.mark.parametrize("scheme", ["Basic", "Token", "bearer:"])
def test_a_real_server_refuses_a_valid_key_under_another_scheme(
    server: Served, scheme: str
) -> None:
    for key in (ALICE, BOB):
        r = httpx.get(server.url + "/v1/agents", headers={"Authorization": f"{scheme} {key}"})
        assert r.status_code == 401, r.text
    ok = httpx.get(server.url + "/v1/agents", headers={"Authorization": f"bearer {ALICE}"})
    assert ok.status_code == 200
