"""The phase engine: run the hooks of one point on one snapshot, check bounds, commit once.

Every phase gathers the commands its producers staged, checks each against
the producing plugin's capability bound, and commits them as one batch; then
queued effects run and due scheduled actions, until none remain. The hot
path is ``PhaseEngine.phase`` and ``start_all``: one place to read and to
measure what a hook point costs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from .._errors import StateConflictError
from ..lifecycle._failures import (
    Cancelled,
    PluginFailure,
    StateConflictFailure,
    Stopped,
    ToolFailure,
)
from ..messages._message import Message, ToolCall, new_id
from ..models._model import InferenceRequest, InferenceResponse
from ..plugins._actions import ACTIONS_KEY, ScheduledAction
from ..plugins._plugin import HookReaction, PhaseContext, PhaseHookPoint, RunInfo
from ..state._effects import EFFECT_FAILURES_KEY, Effect
from ..state._engine import Command, MergePolicy, Scope, StagedCommand
from ..stores._errors import LeaseLost
from ..stores._thread_store import RunRecord
from ..suspension._suspension import ParkedRun
from ..tools._tool import ToolOutput
from ._bounds import check_bound
from ._deps import RunDeps
from ._dispatch import Producer, call_all, start_all
from ._leg import LegState
from ._signals import End, fail, lease_lost, log

__all__ = ["MAX_ACTION_ROUNDS", "RUNTIME", "PhaseEngine"]


RUNTIME = "runtime"
"""Producer name of commands the loop itself stages."""

_NO_MESSAGES: list[Message] = []
# Module constants: enum attribute access is slow on the per-step path.
_AFTER_TOOL = PhaseHookPoint.AFTER_TOOL
_RUN = Scope.RUN
_COMMUTATIVE = MergePolicy.COMMUTATIVE
_ACTIONS_SLOT = (_RUN, ACTIONS_KEY)
_LABELS = {point: point.name for point in PhaseHookPoint}

MAX_ACTION_ROUNDS = 16
"""How many rounds of due scheduled actions one phase point may run."""


class PhaseEngine:
    """Hooks, bound checks, commits and checkpoints of one run leg (its ``RunDeps`` and
    ``LegState``)."""

    __slots__ = ("deps", "hooks", "leg")

    def __init__(self, deps: RunDeps, leg: LegState) -> None:
        self.deps = deps
        self.leg = leg
        self.hooks = deps.hooks  # read at every idle check: one attribute, not two

    # -- hook contexts -------------------------------------------------------

    def info(self) -> RunInfo:
        """The run's identity as hooks see it (one object per step, shared by its hooks)."""
        leg = self.leg
        info = leg.run_info
        if info is None or info.step != leg.step:
            deps = self.deps
            binding = deps.binding
            info = leg.run_info = RunInfo(
                run_id=deps.run_id,
                thread_id=binding.thread_id,
                agent_id=deps.config.id,
                profile_id=binding.profile_id,
                namespace=binding.namespace,
                step=leg.step,
            )
        return info

    def hook_context(
        self,
        point: PhaseHookPoint | str,
        plugin_id: str,
        request: InferenceRequest | None = None,
        response: InferenceResponse | None = None,
        tool_call: ToolCall | None = None,
        tool_output: ToolOutput | None = None,
    ) -> PhaseContext:
        """The read-only context one hook of ``plugin_id`` gets at ``point``."""
        leg = self.leg
        rest = self._after_plugin_id(request, response, tool_call, tool_output)
        return PhaseContext(
            point, leg.engine.store, self.info(), leg.transcript.view(), plugin_id, *rest
        )

    def hook_calls(
        self,
        point: PhaseHookPoint | str,
        hooks: Sequence[tuple[str, Callable[[PhaseContext], Any]]],
        request: InferenceRequest | None = None,
        response: InferenceResponse | None = None,
        tool_call: ToolCall | None = None,
        tool_output: ToolOutput | None = None,
    ) -> list[Producer]:
        """The producers running each of ``hooks`` at ``point`` on the same snapshot.

        The snapshot, run info and transcript view are read once and shared;
        each hook's context differs only in its ``plugin_id``.
        """
        leg = self.leg
        store, info, view = leg.engine.store, self.info(), leg.transcript.view()
        rest = self._after_plugin_id(request, response, tool_call, tool_output)
        return [
            (pid, hook, PhaseContext(point, store, info, view, pid, *rest)) for pid, hook in hooks
        ]

    def _after_plugin_id(
        self,
        request: InferenceRequest | None,
        response: InferenceResponse | None,
        tool_call: ToolCall | None,
        tool_output: ToolOutput | None,
    ) -> tuple[Any, ...]:
        """``PhaseContext``'s fields after ``plugin_id``, in its field order: contexts are
        built positionally (a keyword call of the dataclass ``__init__`` costs more, once
        per hook, on every phase)."""
        leg = self.leg
        return (
            request,
            response,
            tool_call,
            tool_output,
            self.deps.children,
            leg.decision,
            leg.ticket,
        )

    # -- committing --------------------------------------------------------

    def stage(
        self,
        batch: list[StagedCommand],
        producer: str,
        plugin_id: str | None,
        cmds: Sequence[Command],
    ) -> None:
        """Add ``cmds`` to ``batch``, each checked against ``plugin_id``'s bound."""
        if plugin_id is not None:
            deps = self.deps
            leg = self.leg
            bound, owners = deps.bounds[plugin_id], leg.context_owners
            for command in cmds:
                check_bound(bound, plugin_id, command, owners)
                batch.append(StagedCommand(producer, command))
        else:
            for command in cmds:
                batch.append(StagedCommand(producer, command))

    def commit(self, phase: str, batch: list[StagedCommand]) -> None:
        """Commit ``batch`` to the state engine; a conflict ends the run, committing nothing."""
        if not batch:
            return
        leg = self.leg
        try:
            committed = leg.engine.commit(phase, batch)
        except StateConflictError as exc:
            raise fail(
                StateConflictFailure(
                    key=exc.key, scope=exc.scope, producers=exc.producers, message=str(exc)
                )
            ) from exc
        if committed is not None:
            delta = leg.step_delta
            durable = False
            for _producer, command in committed.entries:
                delta.append(command)
                if command.scope is not _RUN:
                    durable = True
            if durable:
                # Stores keep no run-scope state: a batch of run-scope writes alone
                # (request context and its clearing, run audits) is not theirs to write.
                leg.pending.append(committed)

    async def checkpoint(
        self, record: RunRecord | None = None, parked: ParkedRun | None = None, force: bool = False
    ) -> None:
        """Write what is new (messages, committed batches, records) to the thread store."""
        deps = self.deps
        leg = self.leg
        messages = leg.transcript.uncommitted()
        if not (messages or leg.pending or record or parked or force):
            return
        lease = deps.lease
        if lease is None:
            leg.version = await deps.store.commit(
                deps.binding, leg.version, messages, leg.pending, record, parked
            )
        else:  # fenced: once another holder took the thread, nothing more is written
            leg.version = await deps.store.commit(
                deps.binding, leg.version, messages, leg.pending, record, parked, lease=lease.lease
            )
        leg.transcript.mark_committed()
        leg.persisted.extend(messages)
        if leg.pending:
            leg.pending = []

    # -- hooks ---------------------------------------------------------------

    call_all = staticmethod(call_all)
    """Run the producers ``(id, fn, arg)`` of one point: eagerly, concurrently once one
    waits (``_dispatch``)."""

    def collect(
        self,
        point: PhaseHookPoint | str,
        reactions: list[tuple[str, Any]],
        batch: list[StagedCommand],
        allow_messages: bool = False,
    ) -> list[Message]:
        """Stage what hooks returned; transcript messages only where ``allow_messages``."""
        deps = self.deps
        leg = self.leg
        messages: list[Message] = []
        for plugin_id, reaction in reactions:
            if reaction is None:
                continue
            if not isinstance(reaction, HookReaction):
                raise fail(
                    PluginFailure(
                        plugin_id=plugin_id,
                        hook=_label(point),
                        message=f"returned {type(reaction).__name__}; "
                        "return a HookReaction or None",
                    )
                )
            if reaction.messages:
                if not allow_messages:
                    raise fail(
                        PluginFailure(
                            plugin_id=plugin_id,
                            hook=_label(point),
                            message="returned transcript messages; only AFTER_TOOL hooks may "
                            "(use inject(ContextMessage(...)) for request-only context)",
                        )
                    )
                messages.extend(reaction.messages)
            self.stage(batch, plugin_id, plugin_id, reaction.commands)
            if reaction.effects:
                self.stage_effects(plugin_id, reaction.effects, tool=False)
            for action in reaction.schedule:
                if action.name not in deps.action_handlers:
                    raise fail(
                        PluginFailure(
                            plugin_id=plugin_id,
                            hook=_label(point),
                            message=f"scheduled action {action.name!r}, which no enabled "
                            f"plugin handles; register an action handler for it",
                        )
                    )
                leg.new_actions.append((plugin_id, action))
            if reaction.stop and leg.stop_reason is None:
                leg.stop_reason = f"{plugin_id}: {reaction.stop}"
        return messages

    def stage_effects(self, producer: str, effects: Sequence[Effect], *, tool: bool) -> None:
        """Queue effects to run after the next commit; unknown names are refused now."""
        deps = self.deps
        leg = self.leg
        for effect in effects:
            if effect.name not in deps.effect_handlers:
                message = (
                    f"emitted effect {effect.name!r}, which no enabled plugin handles; "
                    f"register an effect handler for it"
                )
                if tool:
                    raise fail(ToolFailure(tool_id=producer, call_id="", message=message))
                raise fail(PluginFailure(plugin_id=producer, hook="effects", message=message))
            leg.effects.append((producer, effect))

    def discard(self) -> None:
        """Forget what was staged but never committed: its effects and new actions.

        Every commit runs its effects right after it (``after_commit``), so
        whatever is still queued when the run ends came from a batch that
        failed (a capability bound, a state conflict, a plugin error) or was
        cut short (a cancel): it must not reach a handler or the action table.
        """
        leg = self.leg
        leg.effects = []
        leg.new_actions = []

    def unrun_actions(self) -> list[ScheduledAction]:
        """The scheduled actions still pending (at run end: never to run; logged)."""
        pending = self.leg.engine.data.get(_ACTIONS_SLOT)
        if not pending:
            return []
        actions = [ScheduledAction.model_validate(entry["action"]) for entry in pending.values()]
        log.warning(
            "run %s ended with %d scheduled action(s) never run: %s",
            self.deps.run_id,
            len(actions),
            ", ".join(a.name for a in actions),
        )
        return actions

    def actions_command(self, done: Sequence[str] = ()) -> StagedCommand:
        """The write replacing the pending-actions table: minus ``done``, plus new ones."""
        leg = self.leg
        table = dict(leg.engine.data.get(_ACTIONS_SLOT) or {})
        for action_id in done:
            table.pop(action_id, None)
        for plugin_id, action in leg.new_actions:
            table[new_id("act_")] = {
                "action": action.model_dump(mode="json"),
                "due_step": leg.step + action.after_steps,
                "scheduled_by": plugin_id,
            }
        leg.new_actions = []
        return StagedCommand(RUNTIME, Command.set(ACTIONS_KEY, table, scope=_RUN))

    def idle(self, point: PhaseHookPoint) -> bool:
        """Whether ``point`` has nothing to run: no hooks, effects or pending actions.

        The step path checks this first, so a phase with nothing to do costs no
        coroutine at all.
        """
        leg = self.leg
        return point not in self.hooks and not leg.effects and _ACTIONS_SLOT not in leg.engine.data

    async def phase(
        self,
        point: PhaseHookPoint,
        batch: list[StagedCommand] | None = None,
        request: InferenceRequest | None = None,
        response: InferenceResponse | None = None,
        tool_call: ToolCall | None = None,
        tool_output: ToolOutput | None = None,
    ) -> list[Message]:
        """Run the hooks of ``point`` on one snapshot and commit once.

        Hooks that return ``None`` cost no staging and, when nothing else was
        staged, no commit: a point whose hooks all return nothing commits nothing.
        """
        leg = self.leg
        hooks = self.hooks.get(point)
        if not hooks:
            if batch:
                self.commit(point, batch)
            if leg.effects or _ACTIONS_SLOT in leg.engine.data:
                await self.after_commit(point)
            return _NO_MESSAGES
        # One snapshot, run info and transcript view for every hook (positional: this
        # is the hot path, and keywords cost more).
        calls = self.hook_calls(point, hooks, request, response, tool_call, tool_output)
        reactions = start_all(_LABELS[point], calls)
        if not isinstance(reactions, list):
            reactions = await reactions
        messages = _NO_MESSAGES
        for _plugin_id, reaction in reactions:
            if reaction is not None:
                if batch is None:
                    batch = []
                messages = self.collect(point, reactions, batch, point is _AFTER_TOOL)
                break
        if leg.new_actions:
            if batch is None:
                batch = []
            batch.append(self.actions_command())
        if batch:
            self.commit(point, batch)
        if leg.effects or _ACTIONS_SLOT in leg.engine.data:
            await self.after_commit(point)
        return messages

    async def after_commit(self, point: PhaseHookPoint) -> None:
        """Run queued effects, then due scheduled actions until none remain."""
        deps = self.deps
        leg = self.leg
        await self.run_effects(point)
        # One check more than rounds: MAX_ACTION_ROUNDS rounds may run, and only
        # an action still due after the last of them is refused.
        for rounds in range(MAX_ACTION_ROUNDS + 1):
            pending = leg.engine.data.get(_ACTIONS_SLOT) or {}
            now = datetime.now(UTC)
            due = [
                (aid, entry)
                for aid, entry in pending.items()
                if _is_due(entry, point, leg.step, now)
            ]
            if not due:
                return
            if rounds == MAX_ACTION_ROUNDS:
                break
            batch: list[StagedCommand] = []
            calls: list[Producer] = []
            for _aid, entry in due:
                action = ScheduledAction.model_validate(entry["action"])
                owner, handler = deps.action_handlers[action.name]
                calls.append((owner, partial(handler, action), self.hook_context(point, owner)))
            reactions = await self.call_all(f"action at {point.name}", calls)
            self.collect(point, reactions, batch)
            batch.append(self.actions_command([aid for aid, _ in due]))
            self.commit(f"{point}:actions", batch)
            await self.run_effects(point)
        raise fail(
            PluginFailure(
                plugin_id=RUNTIME,
                hook=point.name,
                message=f"scheduled actions at {point.name} kept scheduling more for "
                f"{MAX_ACTION_ROUNDS} rounds; an action handler must not reschedule itself "
                f"for the same point forever",
            )
        )

    async def run_effects(self, point: PhaseHookPoint) -> None:
        """Run the queued effects through their handlers; record (never raise) failures."""
        deps = self.deps
        leg = self.leg
        if not leg.effects:
            return
        queued, leg.effects = leg.effects, []
        failures: dict[str, Any] = {}
        for producer, effect in queued:
            owner, handler = deps.effect_handlers[effect.name]
            try:
                await handler(effect, self.hook_context(point, owner))
            except Exception as exc:
                log.exception("effect %r (from %r) failed in %r", effect.name, producer, owner)
                failures[new_id("eff_")] = {
                    "effect": effect.name,
                    "producer": producer,
                    "handler": owner,
                    "error": f"{type(exc).__name__}: {exc}",
                    "step": leg.step,
                }
        if failures:
            record = Command.set(EFFECT_FAILURES_KEY, failures, scope=_RUN, merge=_COMMUTATIVE)
            self.commit(f"{point}:effects", [StagedCommand(RUNTIME, record)])

    async def hold(self) -> None:
        """Before executing anything: renew the lease if due; end the run if it is lost.

        Callers first compare the clock with ``deps.lease.check_at``, so this runs
        only when a renewal is due or the lease is already lost.
        """
        lease = self.deps.lease
        if lease is None:
            return
        try:
            await lease.ensure()
        except LeaseLost as exc:
            raise End(lease_lost(self.deps.binding.thread_id, str(exc))) from exc

    def boundary(self) -> None:
        """End the run here if it was cancelled or a plugin asked to stop."""
        leg = self.leg
        if leg.cancel.cancelled:
            raise End(Cancelled())
        if leg.stop_reason is not None:
            raise End(Stopped(reason=leg.stop_reason))


def _label(point: PhaseHookPoint | str) -> str:
    """How failures name a hook point: ``BEFORE_INFERENCE``, ``TOOL_GATE``, ..."""
    return point.name if isinstance(point, PhaseHookPoint) else point.upper()


def _is_due(entry: dict[str, Any], point: PhaseHookPoint, step: int, now: datetime) -> bool:
    action = entry["action"]
    if step < entry["due_step"]:
        return False
    wanted = action.get("point")
    if wanted is not None and wanted != point:
        return False
    at = action.get("at")
    return at is None or datetime.fromisoformat(at) <= now
