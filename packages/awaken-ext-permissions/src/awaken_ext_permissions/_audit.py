"""The audit trail: one entry per gated call, committed to state.

Every call the permissions plugin sees reaches the ``AFTER_TOOL`` hook (run,
blocked, or answered by a human after an ask). The hook stages one entry under
:data:`AUDIT_KEY`, keyed by call id, so each decision appears in the run's
committed log (``RunState.log``) with the producing plugin id: what the policy
said, the deciding rule, the final decision, who gave it and when.
"""

from __future__ import annotations

from typing import Any, Literal

from awaken_runtime import Command, MergePolicy, Scope

__all__ = ["AUDIT_KEY", "AuditScope", "audit_command"]

AUDIT_KEY = "permissions.audit"
"""RUN- (default) or THREAD-scope COMMUTATIVE key: ``{call id: entry}``."""

AuditScope = Literal["run", "thread", "off"]
"""Where audit entries go: run scope (in the run's log only), thread scope (also
persisted with the thread), or nowhere."""


def audit_command(scope: Literal["run", "thread"], call_id: str, entry: dict[str, Any]) -> Command:
    """The write recording ``entry`` for ``call_id``."""
    return Command.set(
        AUDIT_KEY, {call_id: entry}, scope=_SCOPES[scope], merge=MergePolicy.COMMUTATIVE
    )


_SCOPES = {"run": Scope.RUN, "thread": Scope.THREAD}
