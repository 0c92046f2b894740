"""What tools and hooks may do with ``ctx.children``: start linked sub-agent runs.

The contract layer names only this protocol; the implementation
(``ChildRunner``, in ``delegation``) is given to each context by the run, so
the contracts never import the delegation machinery.
"""

from __future__ import annotations

from typing import Any, Protocol

from ._tool import ToolOutput

__all__ = ["ChildResult", "ChildRuns"]


class ChildResult(Protocol):
    """How a child run went (``ChildOutcome`` implements it)."""

    @property
    def status(self) -> str:
        """``completed``, ``failed``, ``cancelled``, ``max_steps``, ``stopped`` or ``waiting``."""
        ...

    @property
    def text(self) -> str:
        """The child's final answer."""
        ...

    @property
    def reason(self) -> str:
        """Why it did not complete, if it did not."""
        ...

    def to_output(self) -> ToolOutput:
        """The default tool result for the parent (parks the call if the child waits)."""
        ...


class ChildRuns(Protocol):
    """Starts sub-agent runs linked to the calling run (``ChildRunner`` implements it)."""

    async def run(
        self,
        agent_id: str,
        prompt: str,
        *,
        key: str,
        context: dict[str, Any] | None = None,
    ) -> ChildResult:
        """Run ``agent_id`` on ``prompt`` as a child; ``key`` names its thread."""
        ...

    async def infer(self, request: Any) -> Any:
        """One inference (an ``InferenceRequest``) on the parent's executor, outside its
        transcript; returns the ``InferenceResponse``."""
        ...
