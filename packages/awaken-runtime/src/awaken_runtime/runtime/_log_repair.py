"""Finishing the event log of a run that stopped while its log did not.

A run's events are appended to its log after the commits they describe (a
step's at its ``StepEnd``, the run's ``RunFinish`` after its end record), so a
process that dies in between leaves a run ``ENDED`` (or ``WAITING``) in the
store with a log that stops short: a follower (``tail_events``, an SSE client)
would wait for its finish forever. :func:`finish_event_log` repairs such a log
from the committed record: the steps the record counts but the log lacks, each
rebuilt from the thread's committed messages (``StepStart``, the answer's text,
its tool calls and results, ``StepEnd``), then the ``RunFinish`` the record
stands for.

Whoever finds such a run calls it: the ingress worker that gets the dead run's
job again, ``Runtime.read_events``, the Postgres store's ``tail_events``. It is
safe against the writer it replaces: appends are checked (a log's seqs strictly
increase), so of a late writer and a repair only the first append of each seq
lands, and the repair re-reads and tries again after losing such a race; the
runtime's own log writers stop writing a run's log once an append of theirs was
refused. A log never started (a run nobody streamed) is left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..lifecycle._failures import Phase
from ..models._model import TokenUsage
from ..stores._records import StreamEvent
from ..stores._thread_store import ScopeBinding
from ._event_log import has_event_log

__all__ = ["finish_event_log"]

log = logging.getLogger("awaken_runtime")

_ATTEMPTS = 5
"""Races lost to a concurrent appender before the repair gives up (the log then has
appends from that writer, which re-reading would find)."""


def is_run_finish(event: StreamEvent, phase: Phase | None = None) -> bool:
    """Whether ``event`` is a logged ``RunFinish`` (of ``phase``, if given)."""
    data = event.data
    return data.get("type") == "run_finish" and (phase is None or data.get("phase") == phase)


async def finish_event_log(store: Any, run_id: str) -> bool:
    """Append what a stopped run's started log lacks; ``True`` if anything was appended.

    Does nothing for a run still ``RUNNING``, a run without a record, a store
    without an event log, a log never started, or a log that already ends with
    a ``RunFinish`` of the record's phase.
    """
    get_run = getattr(store, "get_run", None)
    if not has_event_log(store) or not callable(get_run):
        return False
    for _attempt in range(_ATTEMPTS):
        record = await get_run(run_id)
        if record is None or record.phase is Phase.RUNNING:
            return False
        logged = await _read_all(store, run_id)
        if not logged or is_run_finish(logged[-1], record.phase):
            return False
        missing = await _missing_events(store, record, logged)
        try:
            await store.append_events(run_id, missing)
        except ValueError:
            continue  # a writer appended meanwhile: look again
        log.warning(
            "run %s stopped (%s) but its event log did not: appended %d event(s) rebuilt "
            "from the committed record",
            run_id,
            record.phase.value,
            len(missing),
        )
        return True
    return False


async def _read_all(store: Any, run_id: str) -> list[StreamEvent]:
    out: list[StreamEvent] = []
    after = 0
    while True:
        page = await store.read_events(run_id, after)
        if not page:
            return out
        out.extend(page)
        after = page[-1].seq


async def _missing_events(store: Any, record: Any, logged: list[StreamEvent]) -> list[StreamEvent]:
    """The steps the record has and the log lacks, then the record's ``RunFinish``."""
    from ..lifecycle import _events as ev  # only a repair loads the event models here

    snap = await store.load(ScopeBinding(record.thread_id, "default", "default"))
    latest = snap.latest_run
    ours = latest is not None and latest.run_id == record.run_id
    messages = list(snap.messages) if ours else []
    run_id = record.run_id
    seq = logged[-1].seq
    out: list[Any] = []

    def add(event_type: Any, **fields: Any) -> None:
        nonlocal seq
        seq += 1
        out.append(event_type(seq=seq, run_id=run_id, **fields))

    last_step = max(
        (int(e.data.get("step", 0)) for e in logged if e.data.get("type") == "step_end"), default=0
    )
    for offset, (answer, results) in enumerate(
        _unlogged_steps(messages, logged, record, last_step)
    ):
        step = last_step + offset + 1
        add(ev.StepStart, step=step)
        if answer.text:
            add(ev.TextDelta, delta=answer.text)
        for call in answer.tool_calls or ():
            add(ev.ToolCallReady, call_id=call.id, name=call.name, arguments=call.arguments)
        for result in results:
            outcome = "error" if (result.metadata or {}).get("is_error") else "success"
            add(ev.ToolCallDone, call_id=result.tool_call_id, output=result.text, outcome=outcome)
        reason = (answer.metadata or {}).get("finish_reason")
        add(
            ev.StepEnd,
            step=step,
            usage=TokenUsage(),
            state_delta=[],
            finish_reason=reason if isinstance(reason, str) else None,
        )
    parked = snap.parked if record.phase is Phase.WAITING else None
    tickets = list(parked.tickets) if parked is not None and parked.run_id == run_id else []
    natural = record.end_cause is not None and record.end_cause.kind == "natural_end"
    final = next((m.text for m in reversed(messages) if m.role == "assistant"), "")
    add(
        ev.RunFinish,
        phase=record.phase,
        end_cause=record.end_cause,
        ticket=tickets[0] if tickets else None,
        tickets=tickets,
        final_text=final if natural else "",
        usage=record.usage,
        cost=record.cost,
        pending_actions=list(record.pending_actions),
    )
    return [StreamEvent(seq=e.seq, data=e.model_dump(mode="json")) for e in out]


def _unlogged_steps(
    messages: Sequence[Any], logged: list[StreamEvent], record: Any, last_step: int
) -> list[tuple[Any, list[Any]]]:
    """``(assistant message, its tool results)`` of each step the log lacks.

    Every step commits one assistant message. The steps the log lacks are the
    record's last ``steps - last_step``; they lie after the last message the log
    names (a tool call it announced or answered), so a step counted without an
    answer (one cancelled before its inference) cannot pull in a logged one.
    """
    wanted = record.steps - last_step
    if wanted <= 0 or not messages:
        return []
    named = {
        e.data.get("call_id")
        for e in logged
        if e.data.get("type") in ("tool_call_ready", "tool_call_done")
    }
    start = 0
    for index, message in enumerate(messages):
        if message.tool_call_id in named or any(c.id in named for c in message.tool_calls or ()):
            start = index + 1
    steps: list[tuple[Any, list[Any]]] = []
    for message in messages[start:]:
        if message.role == "assistant":
            steps.append((message, []))
        elif steps and message.role == "tool":
            steps[-1][1].append(message)
    return steps[-wanted:]
