"""Phase execution shared by every leg of a run: hooks, bound checks, commits.

Every phase gathers the commands its producers staged, checks each against
the producing plugin's capability bound, and commits them as one batch. The
thread store receives whole steps (see ``AgentLoop``); ``PhaseRunner`` owns
the state engine, the transcript and the checkpoint.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from .._errors import CapabilityBoundError, StateConflictError
from ..agents._resolve import ResolvedAgent
from ..delegation._delegation import ChildRunner
from ..lifecycle._events import AgentEvent
from ..lifecycle._failures import (
    Cancelled,
    EndCause,
    Error,
    PluginFailure,
    StateConflictFailure,
    Stopped,
    ToolFailure,
)
from ..messages._message import Message, new_id
from ..messages._transcript import Transcript
from ..models._model import TokenUsage
from ..plugins._actions import ACTIONS_KEY, ScheduledAction
from ..plugins._context import CONTEXT_MESSAGES, INFERENCE_PARAMS, REQUEST_WINDOW, TOOL_FILTER
from ..plugins._plugin import HookReaction, PhaseContext, PhaseHookPoint, RunInfo
from ..state._effects import EFFECT_FAILURES_KEY, Effect
from ..state._engine import Command, CommittedBatch, MergePolicy, Scope, StagedCommand, StateEngine
from ..stores._thread_store import RunRecord, ScopeBinding, ThreadStore
from ..suspension._suspension import ParkedRun
from ..tools._cancel import CancellationToken
from ..tools._tool import Tool
from ._request import RequestAssembler

__all__ = ["RUNTIME", "End", "PhaseRunner", "bind", "bind2", "fail"]

log = logging.getLogger("awaken_runtime")

RUNTIME = "runtime"
"""Producer name of commands the loop itself stages."""

Emit = Callable[[AgentEvent], None]
_NO_MESSAGES: list[Message] = []
# Module constants: enum attribute access is slow on the per-step path.
_AFTER_TOOL = PhaseHookPoint.AFTER_TOOL
_RUN = Scope.RUN
_COMMUTATIVE = MergePolicy.COMMUTATIVE

_ACTIONS_SLOT = (_RUN, ACTIONS_KEY)
_USAGE_FIELDS = tuple(
    attrgetter(f)
    for f in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")
)

MAX_ACTION_ROUNDS = 16
"""How many rounds of due scheduled actions one phase point may run."""


class End(Exception):
    """Internal: unwinds the loop with an end cause."""

    def __init__(self, cause: EndCause) -> None:
        self.cause = cause


def fail(failure: Any) -> End:
    """An :class:`End` carrying ``Error(failure)``."""
    return End(Error(failure=failure))


class PhaseRunner:
    """State, transcript and phase machinery of one run (see ``AgentLoop``)."""

    def __init__(
        self,
        agent: ResolvedAgent,
        store: ThreadStore,
        binding: ScopeBinding,
        run_id: str,
        *,
        cancel: CancellationToken | None = None,
        emit: Emit | None = None,
    ) -> None:
        self.agent = agent
        self.config = config = agent.snapshot.config
        # What the step path reads of the (pydantic) snapshot and config, as plain
        # attributes: an attribute read on a pydantic model is several times slower.
        self._model = agent.snapshot.model
        self._policy = config.context_policy
        self._params = config.params
        self._max_steps = config.max_steps
        self.store = store
        self.binding = binding
        self.run_id = run_id
        self.cancel = cancel or CancellationToken()
        self.emit = emit
        self.engine = StateEngine()
        self.transcript = Transcript()
        self.version = 0
        self.step = 0
        self._tokens = [0, 0, 0, 0]  # prompt, completion, cached, reasoning
        self._uncounted: list[TokenUsage] = []  # folded into _tokens when read
        self.cost: float | None = None
        self.step_usage = TokenUsage()
        self.step_delta: list[Command] = []
        self.pending: list[CommittedBatch] = []
        self.persisted: list[Message] = []
        self.final_text = ""
        self.stop_reason: str | None = None
        self.assembler = RequestAssembler(self.config.instructions)
        self.tools: dict[str, Tool] = dict(agent.tools)
        self.visible: set[str] | None = None
        self._seq = 0
        self.children: ChildRunner | None = None
        self._decision: Any = None
        self._ticket: Any = None
        self.parent_run_id: str | None = None
        self._effects: list[tuple[str, Effect]] = []
        self._new_actions: list[tuple[str, ScheduledAction]] = []
        self._hooks = agent.hooks
        self.tool_owner: dict[str, str] = dict(agent.tool_owner)
        self._all_descriptors = [t.descriptor for t in self.tools.values()]

    def refresh_descriptors(self) -> None:
        """Recompute the tool list after tools were added (dynamic tools)."""
        self._all_descriptors = [t.descriptor for t in self.tools.values()]

    # -- events ------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _info(self) -> RunInfo:
        return RunInfo(
            run_id=self.run_id,
            thread_id=self.binding.thread_id,
            agent_id=self.config.id,
            profile_id=self.binding.profile_id,
            namespace=self.binding.namespace,
            step=self.step,
        )

    # -- committing --------------------------------------------------------

    def _check_bound(self, plugin_id: str, command: Command) -> None:
        bound = self.agent.bounds[plugin_id]
        if command.key == CONTEXT_MESSAGES and command.scope is _RUN:
            value = getattr(command.action, "value", None) or {}
            bands = {str(entry.get("band")) for entry in value.values() if isinstance(entry, dict)}
            allowed = {b.value for b in bound.context_bands}
            if not allowed or not bands <= allowed:
                extra = ", ".join(sorted(bands - allowed)) or "any band"
                raise CapabilityBoundError(
                    plugin_id, f"context_bands {{{extra}}}", f"injects context into {extra}"
                )
            return
        if command.key == TOOL_FILTER and command.scope is _RUN:
            value = getattr(command.action, "value", None) or {}
            if not bound.narrows_tools or set(value) - {plugin_id}:
                raise CapabilityBoundError(
                    plugin_id, "narrows_tools=True", "narrows tools (only its own filter entry)"
                )
            return
        if command.key == INFERENCE_PARAMS and command.scope is _RUN:
            value = getattr(command.action, "value", None) or {}
            beyond = set(value) - bound.inference_params
            if beyond:
                names = ", ".join(sorted(beyond))
                raise CapabilityBoundError(
                    plugin_id, f"inference_params {{{names}}}", f"overrides {names}"
                )
            return
        if command.key == REQUEST_WINDOW and command.scope is _RUN:
            if not bound.narrows_window:
                raise CapabilityBoundError(
                    plugin_id, "narrows_window=True", "narrows the request window"
                )
            return
        if not bound.allows_key(command.scope, command.key):
            raise CapabilityBoundError(
                plugin_id,
                f"state key {command.scope.value}:{command.key}",
                f"writes {command.scope.value}:{command.key!r}",
            )

    def _stage(
        self,
        batch: list[StagedCommand],
        producer: str,
        plugin_id: str | None,
        cmds: Sequence[Command],
    ) -> None:
        for command in cmds:
            if plugin_id is not None:
                self._check_bound(plugin_id, command)
            batch.append(StagedCommand(producer, command))

    def _commit(self, phase: str, batch: list[StagedCommand]) -> None:
        if not batch:
            return
        try:
            committed = self.engine.commit(phase, batch)
        except StateConflictError as exc:
            raise fail(
                StateConflictFailure(
                    key=exc.key, scope=exc.scope, producers=exc.producers, message=str(exc)
                )
            ) from exc
        if committed is not None:
            self.pending.append(committed)
            self.step_delta.extend(c for _p, c in committed.entries)

    async def _checkpoint(
        self, record: RunRecord | None = None, parked: ParkedRun | None = None, force: bool = False
    ) -> None:
        messages = self.transcript.uncommitted()
        if not (messages or self.pending or record or parked or force):
            return
        self.version = await self.store.commit(
            self.binding, self.version, messages, self.pending, record, parked
        )
        self.transcript.mark_committed()
        self.persisted.extend(messages)
        if self.pending:
            self.pending = []

    # -- hooks ---------------------------------------------------------------

    def _ctx(self, point: PhaseHookPoint | str, plugin_id: str, **extra: Any) -> PhaseContext:
        return PhaseContext(
            point=point,
            store=self.engine.store,
            run=self._info(),
            messages=self.transcript.view(),
            plugin_id=plugin_id,
            children=self.children,
            decision=self._decision,
            ticket=self._ticket,
            **extra,
        )

    @property
    def usage(self) -> TokenUsage:
        """Tokens used by this run so far."""
        p, c, cached, reasoning = self._totals()
        return TokenUsage(
            prompt_tokens=p, completion_tokens=c, cached_tokens=cached, reasoning_tokens=reasoning
        )

    @usage.setter
    def usage(self, value: TokenUsage) -> None:
        self._uncounted = []
        self._tokens = [
            value.prompt_tokens,
            value.completion_tokens,
            value.cached_tokens,
            value.reasoning_tokens,
        ]

    def _totals(self) -> list[int]:
        """Prompt, completion, cached and reasoning tokens so far.

        Steps only append their usage (one list append on the step path); the
        sums are folded in here, when something reads them.
        """
        uncounted = self._uncounted
        if uncounted:
            self._tokens = [
                total + sum(map(field, uncounted))
                for total, field in zip(self._tokens, _USAGE_FIELDS, strict=True)
            ]
            self._uncounted = []
        return self._tokens

    def add_usage(self, usage: TokenUsage, cost: float | None) -> None:
        """Add usage (e.g. a sub-agent's) to this run's and this step's totals."""
        self._uncounted.append(usage)
        self.step_usage = self.step_usage + usage
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    async def _call_all(
        self, label: str, calls: list[tuple[str, Callable[[], Any]]]
    ) -> list[tuple[str, Any]]:
        """Run producer callables concurrently; results in producer order."""

        async def one(plugin_id: str, fn: Callable[[], Any]) -> Any:
            try:
                result = fn()
                if inspect.isawaitable(result):
                    result = await result
                return result
            except End:
                raise
            except Exception as exc:
                log.exception("plugin %r raised in %s", plugin_id, label)
                raise fail(
                    PluginFailure(
                        plugin_id=plugin_id,
                        hook=label,
                        message=f"{type(exc).__name__}: {exc}",
                    )
                ) from exc

        if len(calls) == 1:
            pid, fn = calls[0]
            return [(pid, await one(pid, fn))]
        results = await asyncio.gather(*(one(pid, fn) for pid, fn in calls))
        return [(pid, r) for (pid, _fn), r in zip(calls, results, strict=True)]

    def _collect(
        self,
        point: PhaseHookPoint | str,
        reactions: list[tuple[str, Any]],
        batch: list[StagedCommand],
        allow_messages: bool = False,
    ) -> list[Message]:
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
            self._stage(batch, plugin_id, plugin_id, reaction.commands)
            if reaction.effects:
                self._stage_effects(plugin_id, reaction.effects, tool=False)
            for action in reaction.schedule:
                if action.name not in self.agent.action_handlers:
                    raise fail(
                        PluginFailure(
                            plugin_id=plugin_id,
                            hook=_label(point),
                            message=f"scheduled action {action.name!r}, which no enabled "
                            f"plugin handles; register an action handler for it",
                        )
                    )
                self._new_actions.append((plugin_id, action))
            if reaction.stop and self.stop_reason is None:
                self.stop_reason = f"{plugin_id}: {reaction.stop}"
        return messages

    def _stage_effects(self, producer: str, effects: Sequence[Effect], *, tool: bool) -> None:
        """Queue effects to run after the next commit; unknown names are refused now."""
        for effect in effects:
            if effect.name not in self.agent.effect_handlers:
                message = (
                    f"emitted effect {effect.name!r}, which no enabled plugin handles; "
                    f"register an effect handler for it"
                )
                if tool:
                    raise fail(ToolFailure(tool_id=producer, call_id="", message=message))
                raise fail(PluginFailure(plugin_id=producer, hook="effects", message=message))
            self._effects.append((producer, effect))

    def _actions_command(self, done: Sequence[str] = ()) -> StagedCommand:
        """The write replacing the pending-actions table: minus ``done``, plus new ones."""
        table = dict(self.engine.data.get((_RUN, ACTIONS_KEY)) or {})
        for action_id in done:
            table.pop(action_id, None)
        for plugin_id, action in self._new_actions:
            table[new_id("act_")] = {
                "action": action.model_dump(mode="json"),
                "due_step": self.step + action.after_steps,
                "scheduled_by": plugin_id,
            }
        self._new_actions = []
        return StagedCommand(RUNTIME, Command.set(ACTIONS_KEY, table, scope=_RUN))

    def _idle(self, point: PhaseHookPoint) -> bool:
        """Whether ``point`` has nothing to run: no hooks, effects or pending actions.

        The step path checks this first, so a phase with nothing to do costs no
        coroutine at all.
        """
        return (
            point not in self._hooks and not self._effects and _ACTIONS_SLOT not in self.engine.data
        )

    async def _phase(
        self,
        point: PhaseHookPoint,
        batch: list[StagedCommand] | None = None,
        **extra: Any,
    ) -> list[Message]:
        """Run the hooks of ``point`` on one snapshot and commit once."""
        hooks = self._hooks.get(point)
        if not hooks:
            if batch:
                self._commit(point, batch)
            if self._effects or (_RUN, ACTIONS_KEY) in self.engine.data:
                await self._after_commit(point)
            return _NO_MESSAGES
        batch = batch if batch is not None else []
        reactions = await self._call_all(
            point.name,
            [(pid, bind(hook, self._ctx(point, pid, **extra))) for pid, hook in hooks],
        )
        messages = self._collect(point, reactions, batch, allow_messages=point is _AFTER_TOOL)
        if self._new_actions:
            batch.append(self._actions_command())
        self._commit(point, batch)
        if self._effects or (_RUN, ACTIONS_KEY) in self.engine.data:
            await self._after_commit(point)
        return messages

    async def _after_commit(self, point: PhaseHookPoint) -> None:
        """Run queued effects, then due scheduled actions until none remain."""
        await self._run_effects(point)
        for _round in range(MAX_ACTION_ROUNDS):
            pending = self.engine.data.get((_RUN, ACTIONS_KEY)) or {}
            now = datetime.now(UTC)
            due = [
                (aid, entry)
                for aid, entry in pending.items()
                if _is_due(entry, point, self.step, now)
            ]
            if not due:
                return
            batch: list[StagedCommand] = []
            calls = []
            for _aid, entry in due:
                action = ScheduledAction.model_validate(entry["action"])
                owner, handler = self.agent.action_handlers[action.name]
                ctx = self._ctx(point, owner)
                calls.append((owner, bind2(handler, action, ctx)))
            reactions = await self._call_all(f"action at {point.name}", calls)
            self._collect(point, reactions, batch)
            batch.append(self._actions_command([aid for aid, _ in due]))
            self._commit(f"{point}:actions", batch)
            await self._run_effects(point)
        raise fail(
            PluginFailure(
                plugin_id=RUNTIME,
                hook=point.name,
                message=f"scheduled actions at {point.name} kept scheduling more for "
                f"{MAX_ACTION_ROUNDS} rounds; an action handler must not reschedule itself "
                f"for the same point forever",
            )
        )

    async def _run_effects(self, point: PhaseHookPoint) -> None:
        if not self._effects:
            return
        queued, self._effects = self._effects, []
        failures: dict[str, Any] = {}
        for producer, effect in queued:
            owner, handler = self.agent.effect_handlers[effect.name]
            try:
                await handler(effect, self._ctx(point, owner))
            except Exception as exc:
                log.exception("effect %r (from %r) failed in %r", effect.name, producer, owner)
                failures[new_id("eff_")] = {
                    "effect": effect.name,
                    "producer": producer,
                    "handler": owner,
                    "error": f"{type(exc).__name__}: {exc}",
                    "step": self.step,
                }
        if failures:
            record = Command.set(EFFECT_FAILURES_KEY, failures, scope=_RUN, merge=_COMMUTATIVE)
            self._commit(f"{point}:effects", [StagedCommand(RUNTIME, record)])

    def _boundary(self) -> None:
        """End the run here if it was cancelled or a plugin asked to stop."""
        if self.cancel.cancelled:
            raise End(Cancelled())
        if self.stop_reason is not None:
            raise End(Stopped(reason=self.stop_reason))


def _label(point: PhaseHookPoint | str) -> str:
    """How failures name a hook point: ``BEFORE_INFERENCE``, ``TOOL_GATE``, ..."""
    return point.name if isinstance(point, PhaseHookPoint) else point.upper()


def bind(fn: Callable[[Any], Any], arg: Any) -> Callable[[], Any]:
    """``fn(arg)`` as a thunk (for ``_call_all``)."""
    return lambda: fn(arg)


def bind2(fn: Callable[[Any, Any], Any], a: Any, b: Any) -> Callable[[], Any]:
    """``fn(a, b)`` as a thunk (for ``_call_all``)."""
    return lambda: fn(a, b)


def _is_due(entry: dict[str, Any], point: PhaseHookPoint, step: int, now: datetime) -> bool:
    action = entry["action"]
    if step < entry["due_step"]:
        return False
    wanted = action.get("point")
    if wanted is not None and wanted != point:
        return False
    at = action.get("at")
    return at is None or datetime.fromisoformat(at) <= now
