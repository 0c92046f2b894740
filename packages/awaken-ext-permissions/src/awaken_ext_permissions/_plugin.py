"""``PermissionsPlugin``: the ``permissions`` plugin, its gate, hooks and bound.

* The **tool gate** evaluates each call: ``deny`` becomes ``Block`` (a
  model-visible error naming the rule), ``allow`` no decision, ``ask``
  ``Suspend(AwaitReason.TOOL_PERMISSION)`` with the tool, arguments and rule.
* A **BEFORE_INFERENCE** hook hides tools denied unconditionally
  (``ToolFilter(hide=...)``), so the model never sees them.
* An **AFTER_TOOL** hook records the audit entry of every call and, when a
  human answered an ask with ``remember="thread"|"profile"``, stores the
  exact-match rule; with ``on_deny="stop"`` it stops the run after a denial.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from awaken_runtime import (
    Approve,
    AwaitReason,
    Block,
    CapabilityBound,
    Command,
    Contributions,
    Deny,
    HookReaction,
    PhaseContext,
    PhaseHookPoint,
    PluginManifest,
    Respond,
    Scope,
    StateKeyDecl,
    Suspend,
    ToolCall,
    ToolFilter,
)

from ._audit import AUDIT_KEY, audit_command
from ._config import PermissionsConfig
from ._model import Behavior
from ._policy import Verdict
from ._remember import REMEMBERED_KEY, remember_command, remembered

__all__ = ["MANIFEST", "PLUGIN_ID", "PermissionsPlugin", "deny_message"]

PLUGIN_ID = "permissions"
"""The plugin id agents list in ``plugin_ids``."""

MANIFEST = PluginManifest(
    id=PLUGIN_ID,
    version="0.1.0",
    description="Allow / deny / ask rules on tool calls; asks suspend for a human decision "
    "that can be remembered per thread or profile; unconditional denies are hidden.",
    config_model=PermissionsConfig,
    bound=CapabilityBound(
        tool_gates=True,
        phase_hooks=frozenset({PhaseHookPoint.BEFORE_INFERENCE, PhaseHookPoint.AFTER_TOOL}),
        narrows_tools=True,
        state_keys=frozenset(
            {
                StateKeyDecl(key=REMEMBERED_KEY, scope=Scope.THREAD),
                StateKeyDecl(key=REMEMBERED_KEY, scope=Scope.PROFILE),
                StateKeyDecl(key=AUDIT_KEY, scope=Scope.RUN),
                StateKeyDecl(key=AUDIT_KEY, scope=Scope.THREAD),
            }
        ),
    ),
)
"""The manifest of :class:`PermissionsPlugin` (id ``permissions``)."""

_THREAD = Scope.THREAD
_PROFILE = Scope.PROFILE
_VALUES = {behavior: behavior.value for behavior in Behavior}


def _now() -> str:
    return datetime.now(UTC).isoformat()


def deny_message(call: ToolCall, verdict: Verdict) -> str:
    """The model-visible error of a denied call."""
    return (
        f"Permission denied: tool '{call.name}' is not allowed here by "
        f"{verdict.describe()}. Do not retry this call; choose another approach or ask "
        f"the user."
    )


class _Gatekeeper:
    """The gate and hooks of one agent's policy (one instance per resolved config)."""

    def __init__(self, config: PermissionsConfig) -> None:
        self.config = config
        self.policy = config.policy()
        self._fingerprint = config.fingerprint()
        self._hidden: dict[tuple[str, ...], frozenset[str]] = {}
        # A run's requests share one tool list object: its filter command is built once.
        self._tools_seen: object = None
        self._filter_owner = ""
        self._filter: Command | None = None
        self._owner_of: str | None = None
        self._owner = ""
        # The last verdict, keyed by the call and the remembered tables it saw.
        self._last: tuple[ToolCall, object, object, str, Verdict] | None = None
        # The last audited verdict and its rule text (a policy reuses a verdict object
        # for calls no argument decides, so consecutive entries usually share it).
        self._texted: tuple[Verdict, str] | None = None

    def owner(self, ctx: PhaseContext) -> str:
        """Whose remembered decisions count: this agent with this policy, unless shared."""
        if self.config.remember_across_agents:
            return ""
        agent_id = ctx.run.agent_id
        if agent_id != self._owner_of:
            self._owner = f"{agent_id}#{self._fingerprint}"
            self._owner_of = agent_id
        return self._owner

    def verdict(self, ctx: PhaseContext, call: ToolCall) -> Verdict:
        """What the policy says of ``call`` given the snapshot's remembered decisions.

        The gate and the AFTER_TOOL hook ask about the same call on the same
        snapshot: the second asks the answer the first got (a verdict depends on
        nothing else, and committed values are replaced, never mutated).
        """
        store = ctx.store
        thread, profile = remembered(store, _THREAD), remembered(store, _PROFILE)
        owner = self.owner(ctx)
        last = self._last
        if (
            last is not None
            and last[0] is call
            and last[1] is thread
            and last[2] is profile
            and last[3] == owner
        ):
            return last[4]
        verdict = self.policy.evaluate(call.name, call.arguments, thread, profile, owner)
        self._last = (call, thread, profile, owner, verdict)
        return verdict

    def gate(self, ctx: PhaseContext, call: ToolCall) -> Block | Suspend | None:
        verdict = self.verdict(ctx, call)
        behavior = verdict.behavior
        if behavior is Behavior.ALLOW:
            return None
        if behavior is Behavior.DENY:
            return Block(reason=deny_message(call, verdict))
        return Suspend(
            await_reason=AwaitReason.TOOL_PERMISSION,
            payload={
                "plugin": PLUGIN_ID,
                "tool": call.name,
                "arguments": call.arguments,
                "rule": verdict.rule_text,
                "source": verdict.source,
                "detail": verdict.detail,
                "reason": verdict.describe(),
                "remember": ["once", "thread", "profile"],
            },
        )

    async def hide(self, ctx: PhaseContext) -> HookReaction | None:
        request = ctx.request
        if request is None:
            return None
        tools, plugin_id = request.tools, ctx.plugin_id or PLUGIN_ID
        if tools is not self._tools_seen or plugin_id != self._filter_owner:
            names = tuple(t.id for t in tools)
            hidden = self._hidden.get(names)
            if hidden is None:
                hidden = self.policy.hidden(names)
                if len(self._hidden) > 256:
                    self._hidden.clear()
                self._hidden[names] = hidden
            self._filter = ToolFilter(hide=hidden).command(plugin_id) if hidden else None
            self._tools_seen, self._filter_owner = tools, plugin_id
        if self._filter is None:
            return None
        return HookReaction(commands=[self._filter])

    async def record(self, ctx: PhaseContext) -> HookReaction | None:
        call, output = ctx.tool_call, ctx.tool_output
        if call is None:
            return None
        verdict = self.verdict(ctx, call)
        decision = ctx.decision
        at = _now()
        commands: list[Command] = []
        behavior = _VALUES[verdict.behavior]
        run = ctx.run
        texted = self._texted
        if texted is None or texted[0] is not verdict:
            texted = self._texted = (verdict, verdict.rule_text)
        entry: dict[str, Any] = {
            "tool": call.name,
            "policy": behavior,
            "rule": texted[1],
            "source": verdict.source,
            "decision": behavior,
            "by": "policy",
            "at": at,
            "run_id": run.run_id,
            "step": run.step,
        }
        if verdict.detail:
            entry["detail"] = verdict.detail
        stop: str | None = None
        configured = verdict  # what the rules alone say: read only for a call a human decided
        decided = decision is not None  # (isinstance on a model class is an ABC check: skipped)
        if decided:
            configured = self.policy.evaluate(call.name, call.arguments)
        if (
            decided
            and isinstance(decision, (Approve, Deny))
            and configured.behavior is Behavior.ASK
        ):
            # A human answered this call's ask (on resume): record who, and remember it.
            answer = "approve" if isinstance(decision, Approve) else "deny"
            by = str(getattr(decision, "by", None) or "user")
            entry.update(
                policy="ask",
                rule=configured.rule_text,
                source=configured.source,
                decision=answer,
                by=by,
                remember=decision.remember,
            )
            if decision.remember != "once":
                commands.append(
                    remember_command(
                        decision.remember,
                        call.name,
                        call.arguments,
                        "allow" if answer == "approve" else "deny",
                        by=by,
                        at=at,
                        owner=self.owner(ctx),
                    )
                )
        elif decided and isinstance(decision, Respond) and configured.behavior is Behavior.ASK:
            entry.update(decision="respond", by="user")
        elif verdict.behavior is Behavior.DENY and self.config.on_deny == "stop":
            stop = f"tool '{call.name}' was denied by {verdict.describe()}"
        if output is not None and output.is_error:
            entry["outcome"] = "error"
        if self.config.audit != "off":
            commands.append(audit_command(self.config.audit, call.id, entry))
        if not commands and stop is None:
            return None
        return HookReaction(commands=commands, stop=stop)


class PermissionsPlugin:
    """Allow / deny / ask rules as a tool gate, with remembered human decisions.

    Enable it on an agent with ``plugin_ids=["permissions"]`` and configure
    it under ``plugin_config["permissions"]`` (see :class:`PermissionsConfig`).
    The policy also applies to sub-agents unless ``inherit = false``.
    """

    manifest = MANIFEST

    def resolve(self, config: Any) -> Contributions:
        """The gate and hooks for one agent's validated config."""
        if not isinstance(config, PermissionsConfig):
            config = PermissionsConfig.model_validate(config or {})
        keeper = _Gatekeeper(config)
        hooks: dict[PhaseHookPoint, Any] = {PhaseHookPoint.AFTER_TOOL: keeper.record}
        if config.hide_denied and keeper.policy.hides_any():
            # Without an unconditional deny nothing is ever hidden: no hook to run per step.
            hooks[PhaseHookPoint.BEFORE_INFERENCE] = keeper.hide
        return Contributions(tool_gates=[keeper.gate], phase_hooks=hooks, inherit=config.inherit)
