"""Answering tool-permission asks from the terminal, or later from a ticket file.

``awaken run`` hands a run that parked on ``AwaitReason.TOOL_PERMISSION`` to
:func:`drive_with_terminal`. With a terminal it prompts for each ask (approve
once / always for this thread / deny) and resumes until the run ends or waits
for something else. Without one (stdin is not a tty) it writes the pending
tickets to a JSON file and returns; the command then exits with
:data:`EXIT_AWAITING` and a script continues it with
``awaken resume TICKET_FILE --approve`` (:func:`resume_from_file`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import BaseModel, ConfigDict, Field

from ..lifecycle._failures import Error, Phase
from ..plugins._await import AwaitReason
from ..suspension._decisions import Approve, Deny, Replay, Respond
from ..suspension._suspension import ResumeTicket

if TYPE_CHECKING:
    from ..lifecycle._events import AgentEvent
    from ..lifecycle._run_state import RunState
    from ..runtime._runtime import Runtime
    from ..suspension._decisions import Decision

__all__ = [
    "EXIT_AWAITING",
    "TicketFile",
    "drive_with_terminal",
    "exit_status",
    "is_permission_ask",
    "permission_asks",
    "read_ticket_file",
    "resume_from_file",
    "write_ticket_file",
]

EXIT_AWAITING = 3
"""Exit status of ``awaken run`` when the run waits for an approval and no terminal is there."""

_ANSWERS: dict[str, Decision] = {
    "o": Approve(),
    "once": Approve(),
    "y": Approve(),
    "yes": Approve(),
    "a": Approve(remember="thread"),
    "always": Approve(remember="thread"),
    "d": Deny(reason="denied in the terminal"),
    "deny": Deny(reason="denied in the terminal"),
    "n": Deny(reason="denied in the terminal"),
    "no": Deny(reason="denied in the terminal"),
}
PROMPT = "approve [o]nce / [a]lways for this thread / [d]eny? "
"""The question asked for each pending permission."""


class TicketFile(BaseModel):
    """What a ticket file holds: the pending permission tickets plus caller context.

    ``context`` is free-form data the CLI stores to rebuild the runtime later
    (for example the agent file and the store URL).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)
    awaken_ticket_file: int = 1
    run_id: str
    thread_id: str
    tickets: list[ResumeTicket]
    context: dict[str, Any] = Field(default_factory=dict)


def _innermost(ticket: ResumeTicket | dict[str, Any]) -> dict[str, Any]:
    """The ticket a human actually answers: follows delegation tickets to the child's."""
    data = ticket.model_dump(mode="json") if isinstance(ticket, ResumeTicket) else ticket
    for _ in range(32):
        child = data.get("payload", {}).get("child_ticket")
        if data.get("await_reason") != AwaitReason.DELEGATION.value or not isinstance(child, dict):
            break
        data = child
    return data


def is_permission_ask(ticket: ResumeTicket) -> bool:
    """Whether ``ticket`` (or the sub-agent ticket it stands for) asks for tool permission."""
    return _innermost(ticket).get("await_reason") == AwaitReason.TOOL_PERMISSION.value


def permission_asks(state: RunState) -> list[ResumeTicket]:
    """The waiting run's tickets that a human answers with approve / deny."""
    if state.phase is not Phase.WAITING:
        return []
    return [t for t in state.tickets if is_permission_ask(t)]


def exit_status(state: RunState) -> int:
    """0 for a finished run, 1 for one that ended in an error, 3 for one still waiting."""
    if state.phase is Phase.WAITING:
        return EXIT_AWAITING
    return 1 if isinstance(state.end_cause, Error) else 0


def _describe(ticket: ResumeTicket) -> str:
    inner = _innermost(ticket)
    call = inner.get("call", {})
    payload = inner.get("payload", {})
    args = json.dumps(call.get("arguments", {}), ensure_ascii=False, sort_keys=True)
    lines = [f"permission needed: {call.get('name', '?')} {args}"]
    reason = payload.get("reason") or payload.get("rule")
    if reason:
        lines.append(f"  why: {reason}")
    if ticket.await_reason is AwaitReason.DELEGATION:
        lines.append(f"  (asked by a sub-agent on thread {inner.get('thread_id')})")
    return "\n".join(lines) + "\n"


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (ValueError, OSError):  # closed stream
        return False


async def _ask(ticket: ResumeTicket, stdin: TextIO, stdout: TextIO) -> Decision | None:
    """Prompt until a valid answer; ``None`` at end of input."""
    stdout.write(_describe(ticket))
    while True:
        stdout.write(PROMPT)
        stdout.flush()
        line = await asyncio.to_thread(stdin.readline)
        if not line:
            stdout.write("\n")
            return None
        answer = _ANSWERS.get(line.strip().lower())
        if answer is not None:
            return answer
        stdout.write("please answer o (once), a (always for this thread) or d (deny)\n")


def write_ticket_file(
    state: RunState, path: str | Path | None = None, context: dict[str, Any] | None = None
) -> Path:
    """Write the run's pending permission tickets to ``path``.

    The default path is ``./awaken-ticket-<run id>.json``; the write is atomic.
    """
    target = Path(path) if path is not None else Path(f"awaken-ticket-{state.run_id}.json")
    data = TicketFile(
        run_id=state.run_id,
        thread_id=state.thread_id,
        tickets=permission_asks(state),
        context=context or {},
    )
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(data.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(target)
    return target


def read_ticket_file(path: str | Path) -> TicketFile:
    """Load a ticket file (or a bare ticket's JSON, as ``runtime.resume`` accepts)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, dict) and "tickets" in data:
        return TicketFile.model_validate(data)
    ticket = ResumeTicket.model_validate(data)
    return TicketFile(run_id=ticket.run_id, thread_id=ticket.thread_id, tickets=[ticket])


async def drive_with_terminal(
    runtime: Runtime,
    state: RunState,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    ticket_path: str | Path | None = None,
    context: dict[str, Any] | None = None,
    on_event: Callable[[AgentEvent], None] | None = None,
) -> RunState:
    """Answer the run's tool-permission asks in the terminal and resume it.

    Loops while the run waits on a permission ask: prompts for each, resumes
    with ``Approve()``, ``Approve(remember="thread")`` or ``Deny(...)``, and
    continues with the state that comes back. Returns the run as soon as it
    ended, waits for something else, or input ends. When ``stdin`` is not a
    tty it writes the tickets to ``ticket_path`` (with ``context``), says how
    to resume, and returns the waiting state (``exit_status`` gives 3).
    """
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    while True:
        asks = permission_asks(state)
        if not asks:
            return state
        if not _isatty(stdin):
            saved = write_ticket_file(state, ticket_path, context)
            stdout.write(
                f"waiting for approval of {len(asks)} tool call(s); tickets saved to {saved}\n"
                f"continue with: awaken resume {saved} --approve   (or --deny)\n"
            )
            stdout.flush()
            return state
        ticket = asks[0]
        decision = await _ask(ticket, stdin, stdout)
        if decision is None:
            return state
        state = await runtime.resume(ticket, decision, on_event=on_event)


def _decision(value: Decision | str) -> Decision:
    if isinstance(value, (Approve, Deny, Respond, Replay)):
        return value
    table: dict[str, Decision] = {
        "approve": Approve(),
        "approve-thread": Approve(remember="thread"),
        "approve-profile": Approve(remember="profile"),
        "deny": Deny(),
    }
    if value not in table:
        raise ValueError(f"unknown decision {value!r}; use one of {', '.join(table)}")
    return table[value]


async def resume_from_file(
    runtime: Runtime,
    path: str | Path,
    decision: Decision | str,
    *,
    on_event: Callable[[AgentEvent], None] | None = None,
) -> RunState:
    """Apply ``decision`` to every ticket in the file at ``path`` and continue the run.

    ``decision`` is a decision object or ``"approve"``, ``"approve-thread"``,
    ``"approve-profile"`` or ``"deny"``. Raises ``ResumeRejected`` when the
    tickets are no longer pending (already answered, or from another run).
    """
    saved = read_ticket_file(path)
    answer = _decision(decision)
    return await runtime.resume_many([(t, answer) for t in saved.tickets], on_event=on_event)
