"""Every endpoint matches /openapi.json: schemathesis fuzzes the running server.

The document is the one the server serves; schemathesis generates valid and
invalid requests per operation and checks status codes, content types and
response schemas, and that nothing answers 5xx.
"""

from __future__ import annotations

import httpx
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import Case
from schemathesis.checks import positive_data_acceptance
from srv_util import ALICE, Served

from awaken_server._openapi import openapi_document

schema = schemathesis.openapi.from_dict(openapi_document("http://127.0.0.1"))


def test_served_document_is_the_fuzzed_one(server: Served) -> None:
    served = httpx.get(server.url + "/openapi.json").json()
    assert served["paths"] == schema.raw_schema["paths"]
    assert served["openapi"] == "3.1.0"


@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_api_conforms(case: Case, fuzzed: Served) -> None:
    excluded = []
    if case.operation.path.endswith(("/chat", "/ag-ui")):
        # Their bodies are the AI SDK's and AG-UI's (tested with the real clients); the
        # document declares them as objects, so "schema-valid" says little there.
        excluded.append(positive_data_acceptance)
    case.call_and_validate(
        base_url=fuzzed.url,
        headers={"Authorization": f"Bearer {ALICE}"},
        timeout=30,
        excluded_checks=excluded,
    )
