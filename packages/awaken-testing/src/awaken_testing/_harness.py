"""``PluginHarness`` (the ``awaken`` fixture) and the ``PluginRig`` it builds.

A rig is a discovery-free runtime on a scripted model, with the plugins under
test enabled for its one agent (``"agent"``). A plugin given by id is taken
from the installed distributions (entry-point group ``awaken``), so the same
test also proves the plugin is discovered and enabled by ``plugin_ids``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from awaken_runtime import (
    CapabilityBoundError,
    CapabilityBoundFailure,
    Decision,
    InferenceRequest,
    Message,
    Plugin,
    ResumeTicket,
    Runtime,
    ScriptedExecutor,
    ScriptedTurn,
    Tool,
    discover,
)
from awaken_runtime.testing import ScriptedRig, scripted_runtime

from ._result import RunResult, check_bound_failure

TurnSource = ScriptedTurn | str | Callable[[InferenceRequest], ScriptedTurn | str]

__all__ = ["THREAD_ID", "PluginHarness", "PluginRig", "installed_plugin"]

THREAD_ID = "thread"
"""The thread every rig run uses unless given ``thread_id``: runs continue one thread."""


def installed_plugin(plugin_id: str) -> Plugin:
    """The installed plugin ``plugin_id``, or an error saying why it is not there."""
    found = discover()
    item = found.plugins.get(plugin_id)
    if item is not None:
        plugin: Plugin = item.value
        return plugin
    failure = found.failure_for(plugin_id)
    if failure is not None:
        raise LookupError(f"plugin {plugin_id!r} is installed but failed to load: {failure}")
    duplicate = found.duplicates.get(("plugins", plugin_id))
    if duplicate is not None:
        raise LookupError(str(duplicate))
    known = ", ".join(sorted(found.plugins)) or "none"
    raise LookupError(
        f"no installed plugin has id {plugin_id!r} (installed: {known}); install the "
        f"distribution (pip install -e .) and check its [project.entry-points.awaken] table"
    )


class PluginRig:
    """A runtime with the plugins under test; runs return :class:`RunResult`."""

    def __init__(self, scripted: ScriptedRig) -> None:
        self._rig = scripted

    @property
    def runtime(self) -> Runtime:
        """The built runtime."""
        return self._rig.runtime

    @property
    def executor(self) -> ScriptedExecutor:
        """The scripted model."""
        return self._rig.executor

    @property
    def requests(self) -> list[InferenceRequest]:
        """Every request the model received, across all runs of this rig."""
        return self._rig.executor.requests

    def messages(self, thread_id: str = THREAD_ID) -> list[Message]:
        """The committed transcript of a thread."""
        return self._rig.messages(thread_id)

    async def run(self, text: str = "hello", **kwargs: Any) -> RunResult:
        """Run the agent on ``text`` (keywords go to ``Runtime.run``)."""
        kwargs.setdefault("thread_id", THREAD_ID)
        start = len(self.requests)
        state = await self._rig.run(text, **kwargs)
        return RunResult(state, self.requests[start:])

    def run_sync(self, text: str = "hello", **kwargs: Any) -> RunResult:
        """Blocking :meth:`run` (for tests without an event loop)."""
        return asyncio.run(self.run(text, **kwargs))

    async def resume(self, ticket: ResumeTicket, decision: Decision) -> RunResult:
        """Answer a ticket of a parked run."""
        start = len(self.requests)
        state = await self.runtime.resume(ticket, decision)
        return RunResult(state, self.requests[start:])

    def resume_sync(self, ticket: ResumeTicket, decision: Decision) -> RunResult:
        """Blocking :meth:`resume`."""
        return asyncio.run(self.resume(ticket, decision))

    async def bound_violation(
        self, text: str = "hello", plugin_id: str | None = None, *, match: str | None = None
    ) -> str:
        """Run and assert a plugin exceeded its bound; return the message.

        Covers both places the bound is enforced: contributions checked when
        the agent resolves (``CapabilityBoundError``) and writes checked at
        commit (the run ends ``Error(CapabilityBoundFailure)``).
        """
        try:
            result = await self.run(text)
        except CapabilityBoundError as exc:
            failure = CapabilityBoundFailure(
                plugin_id=exc.plugin_id, item=exc.item, message=str(exc)
            )
            return check_bound_failure(failure, plugin_id, match, "").message
        return result.assert_bound_violation(plugin_id, match=match).message

    def assert_bound_violation(
        self, text: str = "hello", plugin_id: str | None = None, *, match: str | None = None
    ) -> str:
        """Blocking :meth:`bound_violation`."""
        return asyncio.run(self.bound_violation(text, plugin_id, match=match))


class PluginHarness:
    """What the ``awaken`` fixture returns: builds rigs for the plugins under test."""

    def rig(
        self,
        *plugins: Plugin | str,
        turns: Sequence[TurnSource] | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        config: dict[str, Any] | None = None,
        plugin_config: dict[str, dict[str, Any]] | None = None,
        **agent_fields: Any,
    ) -> PluginRig:
        """A rig whose agent enables ``plugins`` (objects, or ids of installed plugins).

        ``turns`` script the model (strings are answers, ``ScriptedTurn.call``
        tool calls, callables get the request); without ``turns`` the model
        answers ``"done"`` to every request. ``config`` is the first
        plugin's config; ``plugin_config`` sets any plugin's by id. Other
        keywords (``instructions``, ``max_steps``, ``tool_ids``, ...) go to the
        agent's ``AgentConfig``.
        """
        resolved = [installed_plugin(p) if isinstance(p, str) else p for p in plugins]
        tables = dict(plugin_config or {})
        if config is not None:
            if not resolved:
                raise ValueError("config= is the first plugin's config, but no plugin was given")
            tables[resolved[0].manifest.id] = config
        if tables:
            agent_fields["plugin_config"] = tables
        rig = scripted_runtime(
            turns if turns is not None else ("done",),
            repeat=turns is None,
            tools=tools,
            plugins=resolved,
            **agent_fields,
        )
        return PluginRig(rig)
