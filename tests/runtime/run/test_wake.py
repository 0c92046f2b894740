"""Waking a thread for a time-based scheduled action its ended run left pending."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from awaken_runtime import (
    AgentConfigError,
    CapabilityBound,
    Command,
    Contributions,
    HookReaction,
    PhaseContext,
    PhaseHookPoint,
    ScheduledAction,
    Scope,
)

P = PhaseHookPoint


def _reminder_plugin(make_plugin: Any, ran: list[tuple[ScheduledAction, int]], at: datetime):
    """Schedules a reminder at ``at`` on the thread's first run; records each run of it."""

    async def schedule(ctx: PhaseContext) -> HookReaction | None:
        if ctx.store.get_value("reminded", Scope.THREAD) is not None:
            return None
        return HookReaction(
            commands=[Command.set("reminded", "scheduled", scope=Scope.THREAD)],
            schedule=[ScheduledAction(name="remind", payload={"why": "follow up"}, at=at)],
        )

    async def remind(action: ScheduledAction, ctx: PhaseContext) -> HookReaction:
        ran.append((action, ctx.run.step))
        return HookReaction(commands=[Command.set("reminded", "done", scope=Scope.THREAD)])

    return make_plugin(
        "reminders",
        CapabilityBound(
            phase_hooks={P.RUN_START}, action_handlers={"remind"}, state_keys=["thread:reminded"]
        ),
        Contributions(phase_hooks={P.RUN_START: schedule}, action_handlers={"remind": remind}),
    )


async def test_a_due_action_carried_into_a_new_run_runs_once_at_its_start(
    make_runtime, make_plugin
):
    ran: list[tuple[ScheduledAction, int]] = []
    soon = datetime.now(UTC) + timedelta(milliseconds=500)
    rig = make_runtime(["first", "woken"], plugins=[_reminder_plugin(make_plugin, ran, soon)])
    first = await rig.run(thread_id="t")
    assert first.final_text == "first" and ran == []
    assert [a.name for a in first.pending_actions] == ["remind"]
    await asyncio.sleep((soon - datetime.now(UTC)).total_seconds() + 0.01)
    woken = await rig.runtime.run(rig.agent_id, [], thread_id="t", actions=first.pending_actions)
    assert [(a.payload, step) for a, step in ran] == [({"why": "follow up"}, 0)]
    assert woken.final_text == "woken" and woken.pending_actions == []
    assert woken.state[(Scope.THREAD, "reminded")] == "done"


async def _woken_early(make_runtime: Any, make_plugin: Any) -> tuple[Any, Any, list[Any]]:
    """A reminder a day out, and a run carrying it now: (first run, early run, ran)."""
    ran: list[tuple[ScheduledAction, int]] = []
    later = datetime.now(UTC) + timedelta(days=1)
    rig = make_runtime(["first", "early"], plugins=[_reminder_plugin(make_plugin, ran, later)])
    first = await rig.run(thread_id="t")
    early = await rig.runtime.run(rig.agent_id, [], thread_id="t", actions=first.pending_actions)
    return first, early, ran


async def test_an_action_not_yet_due_stays_pending_and_is_reported_again(make_runtime, make_plugin):
    first, early, ran = await _woken_early(make_runtime, make_plugin)
    assert ran == []  # never early
    assert early.pending_actions == first.pending_actions


async def test_an_action_no_plugin_handles_is_refused_before_anything_runs(make_runtime):
    rig = make_runtime(["never"])
    with pytest.raises(AgentConfigError, match=r"'nobody'.*no enabled plugin"):
        await rig.runtime.run(
            rig.agent_id, [], thread_id="t", actions=[ScheduledAction(name="nobody")]
        )
    assert rig.executor.calls == 0
    assert rig.messages("t") == []


async def test_carried_actions_are_committed_with_run_start(make_runtime, make_plugin):
    """A crash after RunStart must still find them pending: they are in its first commit."""
    _first, early, _ran = await _woken_early(make_runtime, make_plugin)
    start = next(b for b in early.log if str(b.phase).upper().endswith("RUN_START"))
    written = {cmd.key: cmd for producer, cmd in start.entries if producer == "runtime"}
    table = written["awaken.scheduled_actions"].action.value
    assert [entry["action"]["name"] for entry in table.values()] == ["remind"]


async def test_an_ended_runs_record_keeps_its_pending_actions(make_runtime, make_plugin):
    """Whoever wakes the thread after a crash finds them in the store, not only in memory."""
    ran: list[tuple[ScheduledAction, int]] = []
    later = datetime.now(UTC) + timedelta(days=1)
    rig = make_runtime(["first"], plugins=[_reminder_plugin(make_plugin, ran, later)])
    first = await rig.run(thread_id="t")
    record = await rig.store.get_run(first.run_id)
    assert record is not None and record.pending_actions == first.pending_actions
    assert [a.name for a in record.pending_actions] == ["remind"]
