"""``RunResult``: one run's outcome, what the model saw, and assertions on both.

Every assertion raises ``AssertionError`` with what actually happened (the
end cause and its message), so a failing test explains itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from awaken_runtime import (
    AwaitReason,
    CapabilityBoundFailure,
    Error,
    InferenceRequest,
    NaturalEnd,
    Phase,
    ResumeTicket,
    RunState,
    Scope,
    StateKey,
)

__all__ = ["REMOVED", "KeyLike", "RunResult", "check_bound_failure", "key_name"]

KeyLike = StateKey[Any] | str
"""A state key: a ``StateKey``, ``"scope:key"`` or a bare key (thread scope)."""


class _Removed:
    def __repr__(self) -> str:
        return "REMOVED"


REMOVED: Any = _Removed()
"""The value :meth:`RunResult.delta` reports for a key the run removed."""

_SCOPES = {s.value: s for s in Scope}


def _slot(key: KeyLike) -> tuple[Scope, str]:
    if isinstance(key, StateKey):
        return key.scope, key.key
    scope, sep, name = key.partition(":")
    if sep and scope in _SCOPES:
        return _SCOPES[scope], name
    return Scope.THREAD, key


def key_name(key: KeyLike) -> str:
    """``"scope:key"`` for any key spelling."""
    scope, name = _slot(key)
    return f"{scope.value}:{name}"


def _describe(state: RunState) -> str:
    cause = state.end_cause
    if isinstance(cause, Error):
        return (
            f"{state.phase.value}, Error({type(cause.failure).__name__}): {cause.failure.message}"
        )
    if state.phase is Phase.WAITING:
        calls = ", ".join(f"{t.call.name} ({t.await_reason.value})" for t in state.tickets)
        return f"waiting on {calls}"
    return f"{state.phase.value}, {cause!r}"


def check_bound_failure(
    failure: Any, plugin_id: str | None, match: str | None, described: str
) -> CapabilityBoundFailure:
    """Assert ``failure`` is a capability-bound failure of ``plugin_id`` matching ``match``."""
    assert isinstance(failure, CapabilityBoundFailure), (
        f"expected a capability-bound failure, the run is {described}"
    )
    if plugin_id is not None:
        assert failure.plugin_id == plugin_id, (
            f"the bound of {failure.plugin_id!r} was exceeded, expected {plugin_id!r}: "
            f"{failure.message}"
        )
    if match is not None:
        assert re.search(match, failure.message), (
            f"{match!r} not found in the failure: {failure.message}"
        )
    return failure


@dataclass
class RunResult:
    """A finished (or parked) run and the model requests it made."""

    state: RunState
    requests: list[InferenceRequest]
    """Every request the scripted model received during this run, in order."""

    @property
    def text(self) -> str:
        """The run's final text."""
        return self.state.final_text

    @property
    def last_request(self) -> InferenceRequest:
        """The last request of this run (fails when the model was never called)."""
        assert self.requests, f"the model received no request in this run ({_describe(self.state)})"
        return self.requests[-1]

    def value(self, key: KeyLike, default: Any = None) -> Any:
        """A key's final committed value after this run (JSON data)."""
        scope, name = _slot(key)
        return self.state.value(name, scope, default)

    def delta(self, *, by: str | Iterable[str] | None = None) -> dict[str, Any]:
        """What this run committed: ``{"scope:key": final value}`` per key it wrote.

        ``by`` keeps writes of these producers only (plugin ids or tool call
        ids). Removed keys map to :data:`REMOVED`. Runtime-internal keys
        (``awaken.*``) are left out.
        """
        wanted = {by} if isinstance(by, str) else (set(by) if by is not None else None)
        written: dict[tuple[Scope, str], None] = {}
        for batch in self.state.log:
            for producer, command in batch.entries:
                if command.key.startswith("awaken."):
                    continue
                if wanted is None or producer in wanted:
                    written[(command.scope, command.key)] = None
        return {
            f"{scope.value}:{name}": self.state.state.get((scope, name), REMOVED)
            for scope, name in written
        }

    def assert_natural_end(self) -> RunResult:
        """Assert the run ended normally (the model answered without tool calls)."""
        assert self.state.end_cause == NaturalEnd(), (
            f"expected a natural end, the run is {_describe(self.state)}"
        )
        return self

    def assert_committed(self, key: KeyLike, value: Any = ..., *, by: str | None = None) -> Any:
        """Assert the run committed a write to ``key`` (by ``by``), with final ``value``.

        Returns the final value.
        """
        name = key_name(key)
        delta = self.delta(by=by)
        who = f" by {by!r}" if by else ""
        assert name in delta, (
            f"the run committed no write to {name}{who}; it committed "
            f"{sorted(self.delta()) or 'nothing'} ({_describe(self.state)})"
        )
        if value is not ...:
            assert delta[name] == value, f"{name} is {delta[name]!r}, expected {value!r}"
        return delta[name]

    def assert_bound_violation(
        self, plugin_id: str | None = None, *, match: str | None = None
    ) -> CapabilityBoundFailure:
        """Assert the run failed closed on a capability bound; return the failure.

        ``match`` is a regular expression searched in the failure's message.
        """
        cause = self.state.end_cause
        failure = cause.failure if isinstance(cause, Error) else None
        return check_bound_failure(failure, plugin_id, match, _describe(self.state))

    def assert_suspended(
        self, await_reason: AwaitReason | str | None = None, *, tool: str | None = None
    ) -> ResumeTicket:
        """Assert the run is waiting (on ``tool``, for ``await_reason``); return its ticket."""
        assert self.state.phase is Phase.WAITING, (
            f"expected the run to wait for a decision, it is {_describe(self.state)}"
        )
        tickets = list(self.state.tickets)
        if tool is not None:
            tickets = [t for t in tickets if t.call.name == tool]
            assert tickets, f"no call of {tool!r} is parked; the run is {_describe(self.state)}"
        if await_reason is not None:
            reason = AwaitReason(await_reason)
            tickets = [t for t in tickets if t.await_reason is reason]
            assert tickets, f"no call waits for {reason.value}; the run is {_describe(self.state)}"
        return tickets[0]
