"""RFC 9457 problem details: every error the server answers with."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

__all__ = ["Problem", "problem_response", "validation_problem"]

PROBLEM_TYPE = "https://awaken.dev/problems/"
"""Prefix of the ``type`` URI; the suffix is the problem's short code."""


class Problem(Exception):
    """An HTTP error answered as ``application/problem+json``.

    ``field`` names the request part at fault (a JSON pointer into the body, or
    ``header:...``/``path:...``); ``fix`` says what to do instead.
    """

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        field: str | None = None,
        fix: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.field = field
        self.fix = fix
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """The problem document."""
        out: dict[str, Any] = {
            "type": PROBLEM_TYPE + self.code,
            "title": self.code.replace("-", " "),
            "status": self.status,
            "detail": self.detail,
        }
        if self.field is not None:
            out["field"] = self.field
        if self.fix is not None:
            out["fix"] = self.fix
        return out


def problem_response(problem: Problem) -> Response:
    """The response for ``problem``."""
    return JSONResponse(
        problem.body(),
        status_code=problem.status,
        headers=problem.headers,
        media_type="application/problem+json",
    )


def validation_problem(exc: ValidationError, *, where: str = "body") -> Problem:
    """A 422 naming the first invalid field of a request part."""
    err = exc.errors()[0]
    pointer = "/" + "/".join(str(p) for p in err["loc"]) if err["loc"] else ""
    return Problem(
        422,
        "invalid-request",
        f"{where}{pointer or ' (root)'}: {err['msg']}",
        field=f"{where}{pointer}",
        fix="send a value matching the schema in /openapi.json",
    )


async def handle_problem(_request: Request, exc: Exception) -> Response:
    """Starlette exception handler for :class:`Problem`."""
    assert isinstance(exc, Problem)
    return problem_response(exc)
