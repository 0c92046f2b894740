"""Hostile request bodies are refused with a 4xx problem, never a 5xx.

Two kinds: raw bodies no schema generator can express (JSON nested 100,000
deep, lone surrogates as JSON escapes, NaN), sent to every operation that
takes a body; and schemathesis cases whose bodies get hostile values spliced
in (wrong types, surrogates in any string, deep values) by hypothesis.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import Case
from srv_util import ALICE, Served

from awaken_server._openapi import openapi_document

DOCUMENT = openapi_document("http://127.0.0.1")
schema = schemathesis.openapi.from_dict(DOCUMENT)

BODY_OPERATIONS = [
    (method.upper(), path.replace("{agent_id}", "assistant").replace("{thread_id}", "t1")
     .replace("{run_id}", "r1"))
    for path, item in DOCUMENT["paths"].items()
    for method, op in item.items()
    if "requestBody" in op
]  # fmt: skip


def _deep(depth: int) -> bytes:
    return b'{"messages": ' + b"[" * depth + b"]" * depth + b"}"


RAW_BODIES = {
    "array nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "object nested 100,000 deep": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "nested 65 deep inside a field": _deep(65),
    "lone surrogate in a value": b'{"id": "c1", "input": "hi \\ud800", "agent_id": "assistant",'
    b' "messages": [{"role": "user", "parts": [{"type": "text", "text": "\\udfff"}]}]}',
    "lone surrogate in a key": b'{"\\ud83d": 1}',
    "NaN": b'{"version": NaN}',
    "not UTF-8": b'{"id": "\xff\xfe"}',
}


def _problem(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code < 500, response.text
    assert 400 <= response.status_code < 500, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == response.status_code and body["detail"] and body["fix"]
    return body


@pytest.mark.parametrize("name", sorted(RAW_BODIES))
def test_raw_hostile_bodies_are_4xx_problems(fuzzed: Served, name: str) -> None:
    with fuzzed.client() as client:
        before = client.get("/v1/threads").json()
        for method, path in BODY_OPERATIONS:
            response = client.request(
                method,
                path,
                content=RAW_BODIES[name],
                headers={"Content-Type": "application/json"},
            )
            body = _problem(response)
            assert body["status"] in (400, 403, 404, 422), (path, body)
        assert client.get("/v1/threads").json() == before, "a refused request changed nothing"


def test_the_deep_and_surrogate_refusals_name_the_place(fuzzed: Served) -> None:
    with fuzzed.client() as client:
        deep = _problem(client.post("/v1/agents/assistant/chat", content=_deep(65)))
        assert deep["status"] == 422 and "64 levels" in deep["detail"]
        text = _problem(
            client.post(
                "/v1/agents/assistant/chat",
                content=b'{"id": "c", "messages": [{"role": "user", "parts": '
                b'[{"type": "text", "text": "ok \\ud800"}]}]}',
            )
        )
        assert text["status"] == 422
        assert text["field"] == "body/messages/0/parts/0/text"
        assert "lone surrogate at index 3" in text["detail"]
        thread = client.post("/v1/threads", json={}).json()["thread_id"]
        run = _problem(
            client.post(f"/v1/threads/{thread}/runs", content=b'{"agent_id": "assistant", '
                        b'"input": "\\udc80"}')
        )  # fmt: skip
        assert run["field"] == "body/input"
        assert client.get(f"/v1/threads/{thread}").json()["messages"] == []


JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.text(alphabet=st.characters(categories=["Cs"]), min_size=1, max_size=3),
)
HOSTILE = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@schema.parametrize()
@schema.given(data=st.data())
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_spliced_hostile_values_never_5xx(case: Case, data: st.DataObject, fuzzed: Served) -> None:
    if isinstance(case.body, dict) and case.body and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(case.body)))
        case.body[key] = data.draw(HOSTILE)
    elif case.operation.body:
        case.body = data.draw(HOSTILE)
    # Sent by hand: schemathesis re-validates a body before sending it, and its validator
    # cannot encode a lone surrogate (json.dumps writes it as the escape a client would).
    has_body = bool(case.operation.body)
    response = httpx.request(
        case.method,
        fuzzed.url + case.formatted_path,
        params=case.query or None,
        headers={
            **{k: str(v) for k, v in (case.headers or {}).items()},
            "Authorization": f"Bearer {ALICE}",
            "Content-Type": "application/json",
        },
        content=json.dumps(case.body) if has_body else None,
        timeout=30,
    )
    assert response.status_code < 500, (case.path, case.body, response.text)
    if response.status_code >= 400:
        assert response.headers["content-type"] == "application/problem+json"
