"""``RunDeps``: what one run leg is given and never changes while it runs.

The run's parts (see ``run/AGENTS.md``) each receive two explicit objects:
``RunDeps`` (this file: the agent's registries, the store and binding, the
model and its settings, gates, observers, limits, the event sink) and
``LegState`` (``_leg.py``: what the leg changes as it goes). Nothing here is
written after the leg starts; the runtime fills the optional parts
(delegation, lease, observer) right after building it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import AgentConfigError
from ._output import OutputCheck
from ._request import RequestAssembler

if TYPE_CHECKING:
    from ..agents._resolve import ResolvedAgent
    from ..delegation._service import ChildRunner
    from ..lifecycle._events import AgentEvent
    from ..lifecycle._observer import RunObserver
    from ..stores._lease import LeaseGuard
    from ..stores._thread_store import ScopeBinding, ThreadStore
    from ..tools._tool import Tool

__all__ = ["Emit", "RunDeps"]

Emit = Callable[["AgentEvent"], None]


class RunDeps:
    """The fixed dependencies of one run leg, as plain attributes.

    The agent's registries are copied out of the ``ResolvedAgent`` (and what
    the step path reads of the pydantic snapshot and config), so each read on
    the per-step path is one attribute of a plain object: an attribute read on a
    pydantic model is several times slower.
    """

    # __weakref__: the run's ChildRunner refers back to it weakly (no reference cycle).
    __slots__ = (
        "__weakref__",
        "action_handlers",
        "agent",
        "assembler",
        "binding",
        "bounds",
        "cancel_child",
        "children",
        "config",
        "delegation_tool_id",
        "descriptors",
        "effect_handlers",
        "emit",
        "executor",
        "gates",
        "guards",
        "hooks",
        "lease",
        "lineage",
        "max_steps",
        "model",
        "observer",
        "observers",
        "output_spec",
        "parallel_limit",
        "params",
        "parent_run_id",
        "policy",
        "progress",
        "run_id",
        "stop_conditions",
        "store",
        "ticket_secret",
        "tool_owner",
        "tools",
    )

    def __init__(
        self,
        agent: ResolvedAgent,
        store: ThreadStore,
        binding: ScopeBinding,
        run_id: str,
        *,
        emit: Emit | None = None,
    ) -> None:
        self.agent = agent
        self._copy_agent(agent)
        self.store = store
        self.binding = binding
        self.run_id = run_id
        self.emit = emit
        self.parent_run_id: str | None = None
        self.lineage: tuple[str, ...] = ()
        """Agent ids from the root run down to this run's parent (for delegation limits)."""
        self.ticket_secret: bytes | None = None
        self.children: ChildRunner | None = None
        self.cancel_child: Callable[[dict[str, Any]], Awaitable[object]] | None = None
        """Cancels the waiting child of a DELEGATION ticket payload (set by the runtime)."""
        self.delegation_tool_id = "agent_run"
        self.parallel_limit = 1
        """How many delegation calls of one response may run at once (1: sequential)."""
        self.lease: LeaseGuard | None = None
        """The thread's lease (stores with leases): checked before anything executes."""
        self.progress = False
        """Write the run record (steps, usage) at every step's checkpoint, so a run whose
        process died can be continued from its last step (``Runtime.continue_run``)."""
        self.observer: RunObserver | None = None

    def _copy_agent(self, agent: ResolvedAgent) -> None:
        self.config = config = agent.snapshot.config
        self.model = agent.snapshot.model
        self.policy = config.context_policy
        self.params = config.params
        self.max_steps = config.max_steps
        self.output_spec = config.output
        self.assembler = RequestAssembler(config.instructions)
        self.executor = agent.executor
        self.hooks = agent.hooks
        self.gates = agent.gates
        self.observers = agent.observers
        self.guards = agent.guards
        self.stop_conditions = agent.stop_conditions
        self.bounds = agent.bounds
        self.effect_handlers = agent.effect_handlers
        self.action_handlers = agent.action_handlers
        self.tools: dict[str, Tool] = dict(agent.tools)
        self.tool_owner: dict[str, str] = dict(agent.tool_owner)
        self.descriptors = [t.descriptor for t in self.tools.values()]

    def output_check(self) -> OutputCheck | None:
        """A fresh check of the agent's structured output for one leg (``None``: none)."""
        spec = self.output_spec
        return OutputCheck(spec) if spec is not None else None

    def add_dynamic_tools(self, sources: Sequence[tuple[str, Callable[[], Any]]]) -> None:
        """Add the tools each plugin's dynamic source gives now; ids must be new."""
        for plugin_id, source in sources:
            for extra in source():
                tid = extra.descriptor.id
                if tid in self.tools:
                    raise AgentConfigError(
                        f"plugin {plugin_id!r} supplies dynamic tool {tid!r}, which the agent "
                        f"already has; dynamic tool ids must be unique"
                    )
                self.tools[tid] = extra
                self.tool_owner[tid] = plugin_id
        self.descriptors = [t.descriptor for t in self.tools.values()]
