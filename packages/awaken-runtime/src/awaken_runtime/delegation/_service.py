"""Delegation: sub-agents behind one tool, ``agent_run``, and ``run_child_agent``.

The runtime routes the tool whose id is ``RunDelegationService.tool_id()`` to
the delegation service instead of the tool registry. The native service runs
children in this process, each with its own run id and a child thread linked
to the parent's (``<parent thread>/<call id>``); their events go to the
parent's stream (tagged by their own ``run_id``), their usage rolls up into
the parent's, and cancelling the parent cancels them. A child that suspends
makes the parent's call park with ``AwaitReason.DELEGATION``; the decision
given for the parent's ticket is applied to the child's ticket.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic_core import to_json

from ..models._model import InferenceRequest, InferenceResponse, TokenUsage
from ..suspension._suspension import ResumeTicket

if TYPE_CHECKING:
    from ..lifecycle._run_state import RunState
    from ..suspension._decisions import Decision
    from ._delegation import ChildOutcome, DelegationRequest

__all__ = ["AGENT_RUN", "ChildRunner", "NativeDelegationService", "RunDelegationService"]

AGENT_RUN = "agent_run"
"""The id of the delegation tool."""

MAX_DELEGATION_DEPTH = 10
"""Default: how many delegations deep a run's children may go."""
MAX_DESCENDANTS = 40
"""Default: how many sub-agent runs, all levels together, one step of a root run may
start (a long run that delegates a little every step is not capped overall)."""


@runtime_checkable
class RunDelegationService(Protocol):
    """Where ``agent_run`` calls go: native in-process children, or a remote (A2A) peer."""

    def tool_id(self) -> str:
        """The tool id the runtime routes to this service."""
        ...

    def supports_parallel(self) -> bool:
        """Whether a response made only of delegation calls may run them concurrently."""
        ...

    async def delegate(self, request: DelegationRequest) -> ChildOutcome:
        """Run a child to an end or a park."""
        ...

    async def resume(
        self, request: DelegationRequest, ticket: ResumeTicket, decision: Decision
    ) -> ChildOutcome:
        """Apply ``decision`` to a waiting child's ``ticket`` and continue it."""
        ...


class ChildHost(Protocol):
    """What native delegation needs of its runtime (``Runtime`` implements it)."""

    async def run_child(self, request: DelegationRequest, text: str) -> RunState:
        """Start a child run for ``request`` with ``text`` as its user message."""
        ...

    async def resume_child(
        self, request: DelegationRequest, ticket: ResumeTicket, decision: Decision
    ) -> RunState:
        """Resume a waiting child run."""
        ...


class NativeDelegationService:
    """Runs children in this process on the parent's runtime and store."""

    def __init__(
        self,
        runtime: ChildHost,
        *,
        max_parallel: int = 4,
        max_depth: int = MAX_DELEGATION_DEPTH,
        max_descendants: int = MAX_DESCENDANTS,
    ) -> None:
        if max_depth < 1 or max_descendants < 1:
            raise ValueError(
                f"max_depth and max_descendants must be at least 1 "
                f"(got {max_depth} and {max_descendants})"
            )
        self.runtime = runtime
        self.max_parallel = max_parallel
        self.max_depth = max_depth
        self.max_descendants = max_descendants

    def tool_id(self) -> str:
        """``agent_run``."""
        return AGENT_RUN

    def supports_parallel(self) -> bool:
        """Native children may run concurrently."""
        return True

    async def delegate(self, request: DelegationRequest) -> ChildOutcome:
        """Start the child on its own thread and run it to an end or a park.

        A child beyond ``max_depth`` levels, or past ``max_descendants``
        sub-agent runs under one step of the root run, is refused with a model-visible reason
        naming the chain, before anything runs.
        """
        refused = self._refusal(request)
        if refused is not None:
            return refused
        text = request.prompt
        if request.context:
            text = f"{text}\n\nContext:\n{to_json(request.context, indent=2).decode()}"
        state = await self.runtime.run_child(request, text)
        from ._delegation import ChildOutcome  # loaded once a run delegates

        return ChildOutcome.of(state)

    def _refusal(self, request: DelegationRequest) -> ChildOutcome | None:
        chain = " -> ".join([*request.lineage, request.agent_id])
        reason = ""
        if len(request.lineage) > self.max_depth:
            reason = (
                f"delegation depth limit: {chain} would be {len(request.lineage)} levels "
                f"deep, limit {self.max_depth}; answer without delegating further"
            )
        elif request.tree is not None:
            if request.tree.started >= self.max_descendants:
                reason = (
                    f"delegation limit: this step of the root run already started "
                    f"{request.tree.started} sub-agent runs, limit {self.max_descendants} "
                    f"(refused: {chain})"
                )
            else:
                request.tree.started += 1
        if not reason:
            return None
        from ._delegation import ChildOutcome

        return ChildOutcome(
            agent_id=request.agent_id, run_id="", thread_id="", status="refused", reason=reason
        )

    async def resume(
        self, request: DelegationRequest, ticket: ResumeTicket, decision: Decision
    ) -> ChildOutcome:
        """Resume the waiting child with the decision made on the parent's ticket."""
        state = await self.runtime.resume_child(request, ticket, decision)
        from ._delegation import ChildOutcome

        return ChildOutcome.of(state)


class ChildRunner:
    """A parent run's handle for starting children (given to tools and hooks).

    It holds its parent run (its ``RunDeps`` and ``LegState``) weakly: the run holds
    its runner (``children``), and a strong reference back would make every run a
    reference cycle that only the cyclic collector frees, which then walks every
    live run's objects (the cost of many concurrent runs). A runner kept past its
    run's end raises ``RuntimeError``.
    """

    __slots__ = ("_leg", "_parent", "service")

    def __init__(self, service: RunDelegationService, parent: Any, leg: Any) -> None:
        self.service = service
        self._parent = weakref.ref(parent)
        self._leg = weakref.ref(leg)

    def __repr__(self) -> str:
        return f"ChildRunner(service={self.service!r}, parent={self._parent()!r})"

    @property
    def parent(self) -> Any:
        """The parent run's ``RunDeps``: its identity, agent and event sink (typed loosely:
        delegation sits below the run layer)."""
        return _alive(self._parent())

    @property
    def leg(self) -> Any:
        """The parent run's ``LegState``: its step, cancellation, usage and delegation tree."""
        return _alive(self._leg())

    def request(
        self, agent_id: str, prompt: str, thread_id: str, **extra: Any
    ) -> DelegationRequest:
        """A request bound to the parent's identity, cancellation and event sink."""
        from ._delegation import DelegationRequest, DelegationTree  # once a run delegates

        run, leg = self.parent, self.leg
        if not run.lineage and (leg.tree is None or leg.tree.step != leg.step):
            leg.tree = DelegationTree(leg.step)  # a root run: each step counts afresh
        return DelegationRequest(
            agent_id=agent_id,
            prompt=prompt,
            parent_run_id=run.run_id,
            thread_id=thread_id,
            profile_id=run.binding.profile_id,
            namespace=run.binding.namespace,
            cancel=leg.cancel.child(),
            on_event=run.emit,
            inherited=run.agent,
            lineage=(*run.lineage, run.config.id),
            tree=leg.tree,
            **extra,
        )

    def child_thread(self, key: str) -> str:
        """The child thread id for ``key`` (a call id), linked to the parent thread."""
        return f"{self.parent.binding.thread_id}/{key}"

    def roll_up(self, outcome: ChildOutcome) -> None:
        """Add a child's usage and cost to the parent run's totals."""
        self.leg.add_usage(outcome.usage, outcome.cost)

    async def run(
        self,
        agent_id: str,
        prompt: str,
        *,
        key: str,
        context: dict[str, Any] | None = None,
    ) -> ChildOutcome:
        """Run ``agent_id`` on ``prompt`` as a child; ``key`` names its thread."""
        request = self.request(agent_id, prompt, self.child_thread(key), context=context)
        outcome = await self.service.delegate(request)
        self.roll_up(outcome)
        return outcome

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        """One inference on the parent's own executor, outside its transcript.

        For helpers that need the run's model but are not agents (e.g. the
        built-in summarizer of the compact plugin): nothing is appended to any
        thread, and the usage and cost roll up into the parent run (cancellation
        is seen at the parent's next boundary).
        """
        response: InferenceResponse | None = None
        async for item in self.parent.executor.stream(request):
            if isinstance(item, InferenceResponse):
                response = item
        if response is None:
            raise RuntimeError("the provider's stream ended without a final response")
        cost = request.model.cost(response.usage)
        self.leg.add_usage(response.usage, cost if cost is not None else response.cost)
        return response

    async def resume(self, payload: dict[str, Any], decision: Decision) -> ChildOutcome:
        """Continue a waiting child from the payload of the parent's DELEGATION ticket."""
        ticket = ResumeTicket.model_validate(payload["child_ticket"])
        request = self.request(payload["agent_id"], "", payload["child_thread_id"])
        outcome = await self.service.resume(request, ticket, decision)
        # The parent restored its parked totals, which hold the child's legs so
        # far: add only what the child used since (at every level of nesting).
        counted = TokenUsage.model_validate(payload.get("child_usage") or {})
        counted_cost = payload.get("child_cost")
        cost = outcome.cost
        if cost is not None and isinstance(counted_cost, (int, float)):
            cost = max(0.0, cost - counted_cost)
        self.leg.add_usage(_since(outcome.usage, counted), cost)
        return outcome


def _alive(run: Any) -> Any:
    """``run`` (a part of the parent run), or the error of a runner kept past its run."""
    if run is None:
        raise RuntimeError(
            "this ChildRunner's parent run has ended: start children, run inferences and "
            "resume them from the tools and hooks of the run itself, while it runs"
        )
    return run


def _since(total: TokenUsage, counted: TokenUsage) -> TokenUsage:
    """``total`` minus what was ``counted`` before (never below zero)."""
    return TokenUsage(
        prompt_tokens=max(0, total.prompt_tokens - counted.prompt_tokens),
        completion_tokens=max(0, total.completion_tokens - counted.completion_tokens),
        cached_tokens=max(0, total.cached_tokens - counted.cached_tokens),
        reasoning_tokens=max(0, total.reasoning_tokens - counted.reasoning_tokens),
    )
